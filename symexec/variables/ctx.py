"""Context managers: grad mode (``torch.no_grad()``, ``torch.enable_grad()``,
``torch.set_grad_enabled(b)``), traced into the graph as ``torch._C._set_grad_enabled`` calls;
``torch.autocast``; ``torch.autograd.profiler.record_function`` while nothing records it.

While tracing, the real grad mode follows the traced code too, so fake tensors get the same
``requires_grad`` as eager ones; convert.py restores it when the trace ends. Other context
managers go through BEFORE_WITH unsupported, which graph-breaks: CPython enters them for real.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

import torch

from ..context import TracerContext
from ..exc import Unsupported
from ..source import AttrSource, Source
from .base import VariableTracker, find_on_class
from .constant import ConstantVariable


def set_grad_mode(tx: TracerContext, enabled: bool) -> None:
    state = tx.trace.torch
    if state.grad_enabled == enabled:
        return
    torch._C._set_grad_enabled(enabled)
    state.grad_enabled = enabled
    graph = tx.trace.graph.graph
    last = next(reversed(graph.nodes), None)
    if last is not None and last.op == "call_function" and last.target is torch._C._set_grad_enabled:
        # switched again with nothing run in between: the earlier switch has no effect (and
        # this one none either if it goes back to the mode before it), as torch.compile keeps it
        graph.erase_node(last)
        if enabled != last.args[0]:
            return
    tx.trace.graph.create_call("call_function", torch._C._set_grad_enabled, (enabled,), {}, example=False)


class GradModeVariable(VariableTracker):
    """``torch.no_grad()`` and friends: ``target`` is the mode inside the block; for
    ``set_grad_enabled`` the mode is set when the object is made, as torch does."""

    models = (torch.no_grad, torch.enable_grad, torch.set_grad_enabled)

    def __init__(self, target: bool, cls: type, prev: bool | None = None) -> None:
        super().__init__()
        self.target = target
        self.cls = cls
        self.prev = prev

    @classmethod
    def create(cls, tx: TracerContext, torch_cls: type, args: list[VariableTracker]) -> "GradModeVariable":
        if torch_cls is torch.set_grad_enabled:
            target = bool(args[0].as_python_constant())
            var = cls(target, torch_cls, prev=tx.trace.torch.grad_enabled)
            set_grad_mode(tx, target)
            return var
        if args:
            raise Unsupported(f"{torch_cls.__qualname__}() with arguments")
        return cls(torch_cls is torch.enable_grad, torch_cls)

    def python_type(self) -> type:
        return self.cls

    def describe(self) -> str:
        return f"{self.cls.__qualname__}()"

    def enter(self, tx: TracerContext) -> tuple[VariableTracker, VariableTracker]:
        prev = self.prev if self.prev is not None else tx.trace.torch.grad_enabled
        set_grad_mode(tx, self.target)
        return GradModeExitVariable(prev), ConstantVariable(None)

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        """``torch.no_grad()(fn)``, the decorator: ``fn`` run in the mode at each call. A
        generator function (torch steps its generator in the mode) or anything but a Python
        function, or ``set_grad_enabled`` (whose mode is set when it is made), breaks."""
        code = getattr(args[0], "code", None) if len(args) == 1 and not kwargs else None
        if self.prev is not None or not isinstance(code, types.CodeType) or args[0].python_type() is not types.FunctionType \
                or code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
            raise Unsupported(f"decorating {args[0].describe() if args else 'nothing'} with {self.describe()}")
        return GradModeFunctionVariable(self, args[0])

    def reconstruct(self, cg: Any) -> None:
        raise Unsupported(f"keeping a {self.describe()} object across a graph break")


class GradModeFunctionVariable(VariableTracker):
    """A Python function decorated by ``torch.no_grad()`` or ``torch.enable_grad()`` inside the
    trace: each call runs it in that mode and restores the mode after, as torch's wrapper does."""

    models = types.FunctionType  # (torch's functools.wraps wrapper of the function)

    def __init__(self, mode: GradModeVariable, fn: VariableTracker) -> None:
        super().__init__()
        self.mode, self.fn = mode, fn

    def python_type(self) -> type:
        return types.FunctionType

    def describe(self) -> str:
        return f"{self.fn.describe()} decorated by {self.mode.describe()}"

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        prev = tx.trace.torch.grad_enabled
        set_grad_mode(tx, self.mode.target)
        try:
            return self.fn.call_function(tx, args, kwargs)
        finally:
            set_grad_mode(tx, prev)

    def reconstruct(self, cg: Any) -> None:
        """Decorated again by the generated code (``torch.no_grad()(fn)``): torch's wrapper."""
        cg.call_const(self.mode.cls(), lambda: [cg.reconstruct(self.fn)])


# What an autocast object holds of its arguments, in ``_enter_autocast``'s order.
_SETTINGS = ("device", "fast_dtype", "_enabled", "_cache_enabled")


class AutocastVariable(VariableTracker):
    """``torch.autocast(device_type, dtype=..., enabled=..., cache_enabled=...)``: entered in the
    graph (``torch.amp.autocast_mode._enter_autocast``) and for real while tracing, so fake
    tensors get the dtypes autocast gives."""

    models = torch.autocast

    def __init__(self, values: tuple, source: Source | None = None) -> None:
        super().__init__(source)
        self.values = values  # device_type, dtype, enabled, cache_enabled

    @classmethod
    def create(cls, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> "AutocastVariable":
        bound = inspect.signature(torch.autocast.__init__).bind(None, *[a.as_python_constant() for a in args],
                                                                **{k: v.as_python_constant() for k, v in kwargs.items()})
        bound.apply_defaults()
        arguments = bound.arguments
        dtype = arguments["dtype"] if arguments["dtype"] is not None else torch.get_autocast_dtype(arguments["device_type"])
        return cls((arguments["device_type"], dtype, arguments["enabled"], arguments["cache_enabled"]))

    @classmethod
    def wrap(cls, tx: TracerContext, value: Any, source: Source | None) -> "AutocastVariable":
        """An autocast object made outside (``ac = torch.autocast(...)``, the one a
        ``@torch.autocast(...)`` decorator holds): its settings guarded, and torch's own
        ``__enter__``/``__exit__`` (the class lookups guarded), which the trace models."""
        if source is None or type(value) is not torch.amp.autocast_mode.autocast:
            raise Unsupported("an autocast object of a subclass, or without a source")
        tx.guards.type_match(source, value)
        for name in ("__enter__", "__exit__"):
            if find_on_class(tx, type(value), name)[0] is not torch.amp.autocast_mode.autocast:
                raise Unsupported(f"an autocast object whose {name} is not torch's")
        values = tuple(getattr(value, name) for name in _SETTINGS)
        for name, setting in zip(_SETTINGS, values):
            tx.guards.equals_match(AttrSource(source, name), setting)
        return cls(values, source)

    def python_type(self) -> type:
        return torch.autocast

    def enter(self, tx: TracerContext) -> tuple[VariableTracker, VariableTracker]:
        if self.source is not None:  # the object's own __enter__ records what it restores
            device = self.values[0]
            for name, prev in (("prev_cache_enabled", torch.is_autocast_cache_enabled()),
                               ("prev", torch.is_autocast_enabled(device)),
                               ("prev_fastdtype", torch.get_autocast_dtype(device))):
                tx.trace.side_effects.store_attr(self, name, ConstantVariable(prev))
        real = torch.amp.autocast_mode._enter_autocast(*self.values)
        tx.trace.torch.active_contexts.append(real)
        node, _ = tx.trace.graph.create_call("call_function", torch.amp.autocast_mode._enter_autocast, self.values, {},
                                        example=real)
        return AutocastExitVariable(node, real), self if self.source is not None else ConstantVariable(None)

    def reconstruct(self, cg: Any) -> None:
        if self.source is None:
            raise Unsupported("keeping a torch.autocast object made by the trace across a graph break")
        self.source.emit_load(cg)


class AutocastExitVariable(VariableTracker):
    """The ``__exit__`` of a ``torch.autocast`` block entered inside the graph: records the exit
    node and leaves the real autocast state as it was before the block."""

    models = types.MethodType  # the block's bound ``__exit__``

    def __init__(self, node: Any, real: Any) -> None:
        super().__init__()
        self.node, self.real = node, real

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        tx.trace.graph.create_call("call_function", torch.amp.autocast_mode._exit_autocast, (self.node,), {}, example=True)
        torch.amp.autocast_mode._exit_autocast(self.real)
        tx.trace.torch.active_contexts.remove(self.real)
        return ConstantVariable(None)

    def reconstruct(self, cg: Any) -> None:
        raise Unsupported("a graph break inside a torch.autocast block")


class GradModeExit:
    """What a ``with torch.no_grad():`` block leaves on the stack, rebuilt by generated code at
    a break inside the block: calling it (as CPython does when the block ends) restores the
    grad mode of before the block."""

    def __init__(self, prev: bool) -> None:
        self.prev = prev

    def __call__(self, *exc_info: Any) -> None:
        torch._C._set_grad_enabled(self.prev)

    def __repr__(self) -> str:
        return f"GradModeExit(prev={self.prev})"


class GradModeExitVariable(VariableTracker):
    """The ``__exit__`` of a grad-mode block (``no_grad``, ``enable_grad``, ``set_grad_enabled``):
    restores the grad mode the block found (``prev``), in the graph and while tracing."""

    models = GradModeExit

    def __init__(self, prev: bool, source: Source | None = None) -> None:
        super().__init__(source)
        self.prev = prev

    def python_type(self) -> type:
        return GradModeExit

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        set_grad_mode(tx, self.prev)
        return ConstantVariable(None)

    def reconstruct(self, cg: Any) -> None:
        cg.load_const(GradModeExit(self.prev))

    @classmethod
    def wrap(cls, tx: TracerContext, value: GradModeExit, source: Source | None) -> "GradModeExitVariable":
        if source is not None:
            tx.guards.type_match(source, value)
            tx.guards.equals_match(AttrSource(source, "prev"), value.prev)
        return cls(value.prev, source)


def record_function_records() -> bool:
    """Whether a ``record_function`` entered now would record anything: a profiler is on (on
    this thread or globally: legacy, Kineto, NVTX, ITT) or the CUPTI monitor collects user
    annotations. The guard of an entry that traced one as a no-op."""
    if torch._C._autograd._profiler_type() != torch._C._profiler.ActiveProfilerType.NONE:
        return True
    monitor = torch.autograd.profiler._cupti_monitor_module
    return monitor is not None and monitor._monitor_singleton is not None


class RecordFunctionVariable(VariableTracker):
    """``torch.autograd.profiler.record_function(name, args)`` (``torch.profiler``'s too) while
    no profiler records: entering and leaving it has no effect (torch.compile drops it always).
    The entry is guarded on nothing recording; with a profiler on, the graph breaks and CPython
    makes the object."""

    models = torch.autograd.profiler.record_function

    @classmethod
    def create(cls, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> "RecordFunctionVariable":
        bound = inspect.signature(torch.autograd.profiler.record_function.__init__).bind(
            None, *[a.as_python_constant() for a in args], **{k: v.as_python_constant() for k, v in kwargs.items()})
        name, arguments = bound.arguments["name"], bound.arguments.get("args")
        if type(name) is not str or arguments is not None and type(arguments) is not str:
            raise Unsupported("record_function with a name or args that are not strings (entering it raises)")
        # (its __enter__ imports the CUPTI monitor once, for good: done now, so the guard sees it)
        torch.autograd.profiler._maybe_cupti_monitor()
        tx.guards.global_state([("a record_function records", record_function_records, False)])
        if record_function_records():
            raise Unsupported("a record_function while a profiler records", hint="the graph breaks; CPython makes it")
        return cls()

    def python_type(self) -> type:
        return torch.autograd.profiler.record_function

    def describe(self) -> str:
        return "a record_function"

    def enter(self, tx: TracerContext) -> tuple[VariableTracker, VariableTracker]:
        return RecordFunctionExitVariable(), self

    def reconstruct(self, cg: Any) -> None:
        raise Unsupported("keeping a record_function object across a graph break")


def record_function_exit(*exc_info: Any) -> None:
    """What a ``with record_function(...)`` block entered while nothing recorded leaves on the
    stack, rebuilt by generated code at a break inside the block: leaving it does nothing."""


class RecordFunctionExitVariable(VariableTracker):
    """The ``__exit__`` of a ``record_function`` block traced as a no-op (no profiler records):
    does nothing."""

    models = types.FunctionType  # the block's ``__exit__``

    def python_type(self) -> type:
        return type(record_function_exit)

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return ConstantVariable(None)

    def reconstruct(self, cg: Any) -> None:
        cg.load_const(record_function_exit)
