"""Custom ``torch.autograd.Function``s: ``MyFn.apply(...)`` captured as one node of the graph.

The node calls the real ``MyFn.apply`` on the real tensors when the graph runs, so autograd
builds the backward graph itself: the ctx is a real one, and ``backward`` (``once_differentiable``
or not) is the user's own, run by autograd exactly as in eager. Before recording it, the trace
proves that running ``forward`` inside the graph is the same as running it where the call stands:

1. ``forward`` (and ``setup_context``) are traced on trackers under ``no_grad``, as autograd
   runs them, with a modelled ctx (``AutogradCtxVariable``). Whatever the trace cannot hold (a
   print, ``.item()``, a branch on a value, a mutation of an outside object) raises
   ``Unsupported``: the graph breaks at the call and CPython runs it. The nodes this trace made
   are then erased: the graph runs the real ``forward`` instead.
2. The node's fake result comes from running ``apply`` on fake tensors (like an
   ``allow_in_graph`` function), so ``requires_grad`` of the outputs (``mark_non_differentiable``
   included) is what eager gives.

The graph runs before the trace's side effects are replayed: a ``forward`` could see an
object before a mutation made earlier in the same graph. A call with pending side effects is
therefore not captured. Arguments are tensors, numbers and other constants, and tuples of them:
a list or object argument could be mutated by ``forward`` behind the trace's back. A call with
no input requiring grad records nothing for autograd: its ``forward`` is traced as a plain call,
whatever its arguments (a module, a list it appends to).

Guards: the class's identity (builder), and what its lookups of ``apply``, ``forward``,
``setup_context``, ``backward`` and ``vjp`` found (a method replaced on the class retraces);
the ``__code__`` of the traced ``forward`` and ``setup_context``.
"""

from __future__ import annotations

import inspect
import operator
import types
from typing import Any

import torch
from torch.autograd.function import (
    BackwardCFunction,
    FunctionMeta,
    _SingleLevelFunction,
)

from ..context import TracerContext
from ..exc import TracedException, Unsupported
from ..source import AttrSource, ConstSource, Source
from .base import BoundMethodVariable, VariableTracker, as_proxy, find_on_class
from .constant import ConstantVariable, is_literal
from .functions import UserFunctionVariable
from .lists import TupleVariable
from .classes import UserDefinedClassVariable
from .ctx import set_grad_mode
from .tensor import SymNodeVariable, TensorVariable, wrap_fx_value

# What ``apply`` is when the class does not override it, and what marks the old style
# (``forward(ctx, ...)``, no ``setup_context``).
_BASE_APPLY = torch.autograd.Function.__dict__["apply"]
_NO_SETUP_CONTEXT = _SingleLevelFunction.__dict__["setup_context"]
# Attributes pinned by guards although the trace does not run them: autograd calls them later.
_BACKWARD_NAMES = ("backward", "vjp")


def is_user_function_class(value: Any) -> bool:
    """A subclass of ``torch.autograd.Function`` with a forward of its own (not torch's bases)."""
    return isinstance(value, FunctionMeta) and value.__module__ != "torch.autograd.function"


def is_apply_method(value: Any) -> bool:
    """``MyFn.apply`` read earlier and kept (``op = MyFn.apply``): a classmethod bound to the class."""
    return (isinstance(value, types.MethodType) and value.__func__ is _BASE_APPLY.__func__
            and is_user_function_class(value.__self__))


class AutogradFunctionVariable(UserDefinedClassVariable):
    """A ``torch.autograd.Function`` subclass: ``apply`` is captured, other reads as any class."""

    models = type  # a user's autograd.Function class (the class itself)

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        if name == "apply" and find_on_class(tx, self.cls, "apply")[1] is _BASE_APPLY:
            return AutogradApplyVariable(self.cls, self.source or ConstSource.of(self.cls))
        return super().var_getattr(tx, name)

    def __repr__(self) -> str:
        return f"AutogradFunctionVariable({self.cls.__qualname__})"


class AutogradApplyVariable(VariableTracker):
    """``MyFn.apply``: calling it records one node that runs the real ``apply``."""

    models = types.MethodType  # ``Function.apply`` of such a class

    def __init__(self, cls: type, class_source: Source, source: Source | None = None) -> None:
        super().__init__(source or AttrSource(class_source, "apply"))
        self.cls = cls
        self.class_source = class_source

    def python_type(self) -> type:
        return types.MethodType

    def describe(self) -> str:
        return f"{self.cls.__qualname__}.apply"

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if not any(_requires_grad(arg) for arg in [*args, *kwargs.values()]):
            # forward runs as a plain call: any argument a user's function may take (a module,
            # a list it appends to), its effects tracked as any call's.
            return _inline(tx, self.cls, self.class_source, args, kwargs)
        for arg in [*args, *kwargs.values()]:
            _check_argument(self.cls, arg)
        returns_tuple = _speculate(tx, self.cls, self.class_source, args, kwargs)
        return _record(tx, self.cls, args, kwargs, returns_tuple)

    def __repr__(self) -> str:
        return f"AutogradApplyVariable({self.cls.__qualname__})"


def _check_argument(cls: type, arg: VariableTracker) -> None:
    """Arguments the node can take and ``forward`` cannot change behind the trace's back."""
    if isinstance(arg, (TensorVariable, SymNodeVariable)):
        return
    if type(arg) is TupleVariable:
        for item in arg.items:
            _check_argument(cls, item)
        return
    if isinstance(arg, ConstantVariable) and is_literal(arg.as_python_constant()):
        return
    raise Unsupported(f"{cls.__qualname__}.apply() with {arg.describe()} as an argument",
                      hint="pass tensors, numbers and tuples of them; the call runs as plain Python")


def _requires_grad(arg: VariableTracker) -> bool:
    """Whether an argument is (or holds) a tensor that requires grad (guarded with the tensor)."""
    if type(arg) is TupleVariable:
        return any(_requires_grad(item) for item in arg.items)
    return isinstance(arg, TensorVariable) and bool(arg.example.requires_grad)


# -- no input requires grad: forward traced into the graph ----------------------------------------
def _inline(tx: TracerContext, cls: type, class_source: Source, args: list[VariableTracker],
            kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """``apply`` where autograd records nothing (no input requires grad, in any grad mode): it
    runs forward under no_grad and hands back its outputs, an input returned unchanged as a new
    view of it (``view_as``). The trace does the same, its nodes kept in the graph."""
    forward = _static_function(tx, cls, class_source, "forward")
    for other in _BACKWARD_NAMES:
        find_on_class(tx, cls, other)
    grad_mode = tx.trace.torch.grad_enabled
    set_grad_mode(tx, False)
    try:
        result = _trace_forward(tx, cls, class_source, forward, args, kwargs, False, recorded=False)
    except TracedException as e:
        raise Unsupported(f"{cls.__qualname__}.forward raises {e.exception.describe()}",
                          hint="CPython runs the call") from None
    except BaseException:
        _set_grad_mode(tx.trace.torch, grad_mode)  # the trace is abandoned: torch's mode as it was
        raise
    inputs = [*args, *kwargs.values()]
    inputs += [item for arg in inputs if type(arg) is TupleVariable for item in arg.items]
    if issubclass(result.python_type(), tuple):  # (apply returns a plain tuple for any tuple)
        result = TupleVariable([_fresh_output(tx, item, inputs) for item in result.unpack(tx)])
    else:
        result = _fresh_output(tx, result, inputs)
    set_grad_mode(tx, grad_mode)
    return result


def _fresh_output(tx: TracerContext, item: VariableTracker, inputs: list[VariableTracker]) -> VariableTracker:
    """An output of forward as ``apply`` returns it: a tensor argument returned as it came is a
    view of it (never the same object)."""
    if isinstance(item, TensorVariable) and any(item is arg for arg in inputs):
        return item.call_method(tx, "view_as", [item], {})
    return item


# -- proving forward traceable ---------------------------------------------------------------------
def _speculate(tx: TracerContext, cls: type, class_source: Source, args: list[VariableTracker],
               kwargs: dict[str, VariableTracker]) -> bool:
    """Trace ``forward`` (and ``setup_context``) without keeping what it records; whether
    ``apply`` returns a tuple."""
    trace = tx.trace
    name = cls.__qualname__
    if trace.side_effects:
        raise Unsupported(f"{name}.apply() after a mutation the graph has not written back yet",
                          hint="the graph runs forward before the mutations of the code before it")
    forward = _static_function(tx, cls, class_source, "forward")
    for other in _BACKWARD_NAMES:
        find_on_class(tx, cls, other)
    before = set(trace.graph.graph.nodes)
    grad_mode = trace.torch.grad_enabled
    _set_grad_mode(trace.torch, False)  # autograd runs forward and setup_context under no_grad
    try:
        result = _trace_forward(tx, cls, class_source, forward, args, kwargs, grad_mode, recorded=True)
    except TracedException as e:
        raise Unsupported(f"{name}.forward raises {e.exception.describe()}", hint="CPython runs the call") from None
    finally:
        _set_grad_mode(trace.torch, grad_mode)
        _erase_new_nodes(trace.graph.graph, before)
    if trace.side_effects:
        raise Unsupported(f"{name}.forward changes objects outside it", hint="the call runs as plain Python")
    return issubclass(result.python_type(), tuple)  # (apply returns a plain tuple for any tuple)


def _trace_forward(tx: TracerContext, cls: type, class_source: Source, forward: UserFunctionVariable,
                   args: list[VariableTracker], kwargs: dict[str, VariableTracker], grad_mode: bool, *,
                   recorded: bool) -> VariableTracker:
    """What ``apply`` runs of the user's code, in either style: forward's result (``recorded``:
    for a node, whose arguments are checked)."""
    if find_on_class(tx, cls, "setup_context")[1] is _NO_SETUP_CONTEXT:  # forward(ctx, *args)
        if kwargs:
            raise Unsupported(f"{cls.__qualname__}.apply() with keyword arguments and no setup_context")
        return forward.call_function(tx, [AutogradCtxVariable(cls, _needs_input_grad(args, grad_mode)), *args], {})
    inputs = _bound_inputs(tx, cls, forward, args, kwargs, recorded)
    result = forward.call_function(tx, inputs, {})
    ctx = AutogradCtxVariable(cls, _needs_input_grad(inputs, grad_mode))
    setup = _static_function(tx, cls, class_source, "setup_context")
    setup.call_function(tx, [ctx, TupleVariable(list(inputs)), result], {})
    return result


def _set_grad_mode(state: Any, enabled: bool) -> None:
    """The traced (``trace.TorchState``) and the real grad mode (fake tensors follow the real
    one), with no node."""
    state.grad_enabled = enabled
    torch._C._set_grad_enabled(enabled)


def _static_function(tx: TracerContext, cls: type, class_source: Source, name: str) -> UserFunctionVariable:
    """``cls.name``, a staticmethod whose code the trace runs: guarded by the class lookup
    (the staticmethod object) and its ``__code__``."""
    _, static = find_on_class(tx, cls, name)
    if not isinstance(static, staticmethod) or not isinstance(static.__func__, types.FunctionType):
        raise Unsupported(f"{cls.__qualname__}.{name} is not a plain staticmethod")
    fn = static.__func__
    source = AttrSource(class_source, name)
    tx.guards.id_match(AttrSource(source, "__code__"), fn.__code__)
    # (built here, not through the builder: a Function defined in a torch module is still traced)
    return UserFunctionVariable(fn, source)


def _bound_inputs(tx: TracerContext, cls: type, forward: UserFunctionVariable, args: list[VariableTracker],
                  kwargs: dict[str, VariableTracker], recorded: bool) -> list[VariableTracker]:
    """The positional arguments ``apply`` hands forward and setup_context in the new style:
    the call bound to forward's signature, defaults applied (checked for a node: ``recorded``)."""
    bound = forward.bind(tx, args, kwargs)
    inputs: list[VariableTracker] = []
    for param in inspect.signature(forward.fn).parameters.values():
        value = bound[param.name]
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            inputs.append(value)
        elif param.kind is param.VAR_POSITIONAL:
            inputs.extend(value.items)  # type: ignore[attr-defined]
        elif param.kind is param.KEYWORD_ONLY or value.items:  # type: ignore[attr-defined]
            raise Unsupported(f"{cls.__qualname__}.forward with keyword-only arguments")
    for value in inputs if recorded else ():
        _check_argument(cls, value)  # (defaults included)
    return inputs


def _needs_input_grad(inputs: list[VariableTracker], grad_mode: bool) -> tuple[bool, ...]:
    """``ctx.needs_input_grad`` as autograd computes it: per argument, a tensor that requires
    grad, under grad mode, with some input requiring it."""
    flags = [isinstance(v, TensorVariable) and bool(v.example.requires_grad) for v in inputs]
    return tuple(flags) if grad_mode and any(flags) else (False,) * len(flags)


def _erase_new_nodes(graph: torch.fx.Graph, before: set) -> None:
    """Drop the nodes the speculative trace recorded (inputs it lifted stay, dropped when
    unused at the end)."""
    for node in reversed(list(graph.nodes)):
        if node not in before and node.op != "placeholder" and not node.users:
            graph.erase_node(node)


class AutogradCtxVariable(VariableTracker):
    """The ctx ``forward`` / ``setup_context`` receive, while they are traced: attributes set
    on it, ``needs_input_grad``, and the methods that only declare things for autograd. It
    never leaves the speculative trace (the real ctx is made by the real ``apply``)."""

    models = BackwardCFunction

    _DECLARATIONS = frozenset({"save_for_backward", "save_for_forward", "mark_non_differentiable",
                               "set_materialize_grads"})

    def __init__(self, cls: type, needs_input_grad: tuple[bool, ...]) -> None:
        super().__init__()
        self.cls = cls
        self.needs_input_grad = needs_input_grad
        self.attrs: dict[str, VariableTracker] = {}

    def python_type(self) -> type:
        return BackwardCFunction  # (the real one is a subclass made for the class)

    def describe(self) -> str:
        return f"the ctx of {self.cls.__qualname__}"

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        if name in self.attrs:
            return self.attrs[name]
        if name == "needs_input_grad":
            return ConstantVariable(self.needs_input_grad)
        if name in self._DECLARATIONS:
            return BoundMethodVariable(self, name)
        raise Unsupported(f"reading ctx.{name} in {self.cls.__qualname__}.forward")

    def store_attr(self, tx: TracerContext, name: str, value: VariableTracker | None) -> None:
        if name.startswith("__") or name in self._DECLARATIONS or hasattr(BackwardCFunction, name):
            raise Unsupported(f"setting ctx.{name}, which autograd's ctx defines")
        if value is None:
            if name not in self.attrs:
                raise Unsupported(f"deleting ctx.{name}, never set")
            del self.attrs[name]
        else:
            self.attrs[name] = value

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name in self.attrs:
            return self.attrs[name].call_function(tx, args, kwargs)
        if name not in self._DECLARATIONS:
            raise Unsupported(f"ctx.{name}() in {self.cls.__qualname__}.forward")
        # Declarations for autograd: the real apply makes them, and checks their arguments
        # (the fake run of the node does too).
        return ConstantVariable(None)


# -- the node -----------------------------------------------------------------------------------------
def _record(tx: TracerContext, cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker],
            returns_tuple: bool) -> VariableTracker:
    node, example = tx.trace.graph.create_call("call_function", _apply_target(cls), tuple(as_proxy(a) for a in args),
                                          {k: as_proxy(v) for k, v in kwargs.items()})
    if not isinstance(example, tuple) or (not returns_tuple and len(example) != 1):
        raise Unsupported(f"{cls.__qualname__}.apply() on fake tensors did not return what its trace did")
    items = [_output_item(tx, node, i, value) for i, value in enumerate(example)]
    return TupleVariable(items) if returns_tuple else items[0]


def _output_item(tx: TracerContext, node: torch.fx.Node, index: int, value: Any) -> VariableTracker:
    if is_literal(value):
        return ConstantVariable(value)  # a constant output: the same on every call the guards admit
    item, _ = tx.trace.graph.create_call("call_function", operator.getitem, (node, index), {}, example=value)
    item.meta["pure"] = True  # an output nobody uses is dropped, as torch.compile drops it
    return wrap_fx_value(tx, item, value)


def _apply_target(cls: type) -> Any:
    """The graph's callable: the real ``apply``, its result always a tuple (as torch.compile's
    ``autograd_function_apply``), items taken by ``getitem`` nodes."""
    def autograd_function_apply(*args: Any, **kwargs: Any) -> tuple:
        out = cls.apply(*args, **kwargs)
        return out if type(out) is tuple else (out,)
    autograd_function_apply.__qualname__ = f"{cls.__qualname__}.apply"
    return autograd_function_apply
