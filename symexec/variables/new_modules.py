"""torch's own ``nn.Module`` classes constructed inside a compiled function.

``nn.Softmax(dim=-1)(x)``, ``nn.ReLU()(x)``, ``nn.Identity()``: a module without parameters or
buffers is made for real while tracing (its constructor is torch's, run with constant
arguments) and becomes an object private to the trace; its call is inlined like any module's,
and where it reaches the user's world generated code hands out a fresh copy per call, as eager
makes a new one. A module that makes parameters or buffers (``nn.Linear(2, 2)``) draws them from
the RNG on each eager call: the graph breaks there and CPython constructs it, RNG and all, as
torch.compile does; the trace's own attempt runs with the RNG state restored, leaving no trace.

A user's subclass (``class Act(nn.Module)``, ``ACT2FN["silu"]``) is made the same way, private
to the trace, but its ``__init__`` is the user's code: it is traced, on the new module.
torch's ``nn.Module.__init__`` that it reaches (through ``super().__init__()``, or as its
only ``__init__``) runs for real on it: torch's code, setting only the module's own
bookkeeping. A constant the user's code then sets on it is set for real too (through
``nn.Module.__setattr__``, torch's); any other write is a traced one, replayed on the copy
generated code hands out, as for any module.
"""

from __future__ import annotations

import inspect

import torch

from ..context import TracerContext
from ..exc import Unsupported
from ..source import AttrSource, PrivateObjectSource
from .base import VariableTracker, class_static
from .constant import is_literal
from .nn_module import NNModuleVariable, has_writes
from .object_protocol import class_attribute

def construct_torch_module(tx: TracerContext, cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    if not cls.__module__.startswith("torch.nn.modules."):
        raise Unsupported(f"constructing {cls.__qualname__} inside a compiled function")
    try:
        const_args = [a.as_python_constant() for a in args]
        const_kwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
    except Unsupported:
        raise Unsupported(f"constructing {cls.__qualname__} with values not known while tracing") from None
    try:
        with torch.random.fork_rng(devices=[]):  # (the RNG state as it was, whatever happens)
            module = cls(*const_args, **const_kwargs)
    except Exception as e:  # the user's arguments are wrong: CPython raises it, at the break
        raise Unsupported(f"constructing {cls.__qualname__} raises {type(e).__name__}: {e}") from e
    if next(module.parameters(), None) is not None or next(module.buffers(), None) is not None:
        raise Unsupported(f"constructing {cls.__qualname__} inside a compiled function makes parameters or buffers, "
                          f"from the RNG on every call", hint="the graph breaks; CPython constructs it")
    return tx.wrap(module, PrivateObjectSource.of(module))


def construct_user_module(tx: TracerContext, cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """``cls(*args, **kwargs)`` for a user's subclass of ``nn.Module``: a new object private to
    the trace (``object.__new__``, as ``type.__call__`` makes it: nn.Module has no ``__new__``),
    then its ``__init__``, traced."""
    if class_static(tx, type(cls), "__call__") is not type.__call__:
        raise Unsupported(f"constructing {cls.__qualname__}, whose metaclass is {type(cls).__qualname__}")
    if class_static(tx, cls, "__new__") is not object.__new__:
        raise Unsupported(f"constructing {cls.__qualname__}, which has its own __new__")
    for protocol in _COPY_PROTOCOL:
        if class_static(tx, cls, protocol) is not inspect.getattr_static(torch.nn.Module, protocol, None):
            # generated code hands out a copy.deepcopy of the trace's module per call, which
            # would go through the class's own copying (a __getstate__ that keeps part of it)
            raise Unsupported(f"constructing {cls.__qualname__}, which defines its own {protocol}",
                              hint="the graph breaks; CPython constructs it")
    if class_static(tx, cls, "__abstractmethods__"):  # (object.__new__ raises CPython's TypeError)
        raise Unsupported(f"TypeError: can't instantiate the abstract class {cls.__qualname__}")
    module = object.__new__(cls)
    source = PrivateObjectSource.of(module)
    var = tx.trace.memos.input_trackers[source] = NewModuleVariable(module, source)  # (what wrapping it gives)
    class_attribute(tx, var, cls, "__init__").call_function(tx, args, kwargs)
    if "_parameters" not in vars(module):
        raise Unsupported(f"constructing {cls.__qualname__}, whose __init__ does not call nn.Module.__init__")
    return var


_COPY_PROTOCOL = ("__copy__", "__deepcopy__", "__reduce_ex__", "__reduce__", "__getstate__", "__setstate__")


class NewModuleVariable(NNModuleVariable):
    """A module of a user's class made by the trace, private to it."""

    models = torch.nn.Module

    def store_attr(self, tx: TracerContext, name: str, value: VariableTracker | None) -> None:
        if value is not None and self._settable_now(tx, name, value):
            setattr(self.module, name, value.as_python_constant())
            tx.trace.memos.input_trackers.pop(AttrSource(self.source, name), None)  # read afresh
        else:
            super().store_attr(tx, name, value)  # a traced write, replayed

    def _settable_now(self, tx: TracerContext, name: str, value: VariableTracker) -> bool:
        """Whether ``module.name = value`` may run now: a constant, set by torch's own
        ``__setattr__`` as a plain attribute (no descriptor, no parameter, buffer or submodule
        of that name), with no traced write to the module waiting (replayed after, it would win)."""
        if not value.is_python_constant() or not is_literal(value.as_python_constant()) or has_writes(tx, self):
            return False
        if class_static(tx, self.cls, "__setattr__") is not torch.nn.Module.__setattr__ or \
                hasattr(class_static(tx, self.cls, name), "__set__"):
            return False
        return not any(name in vars(self.module).get(store, ()) for store in ("_parameters", "_buffers", "_modules"))

    def __repr__(self) -> str:
        return f"NewModuleVariable({self.cls.__qualname__})"
