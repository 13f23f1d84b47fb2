"""Numbers and reductions over items: ``min``/``max`` (symbolic sizes through ``torch.sym_min``
and ``sym_max``), ``sum``, ``pow``, ``any``/``all``, and the conversions ``int``, ``float``,
``str``, ``complex`` (a symbolic number stays symbolic; a tensor's value is not read). Handlers
register in ``object_protocol.HANDLERS`` like the builtins'."""

from __future__ import annotations

import operator
from typing import Any

import torch

from ..context import TracerContext
from ..exc import Unsupported
from .base import VariableTracker, class_static
from .builtin_functions import HANDLERS, BuiltinVariable, Handler, handler, in_graph, is_tensor
from .constant import ConstantVariable
from .lists import items_one_by_one, sort_keys
from .tensor import SymNodeVariable, record_call
from .user_objects import ExceptionVariable, ObjectVariableBase


def _fold_items(tx: TracerContext, args: tuple[VariableTracker, ...]) -> list[VariableTracker]:
    return list(args[0].unpack(tx)) if len(args) == 1 else list(args)


def _make_minmax(fn: Any) -> Handler:
    def minmax(tx: TracerContext, *args: VariableTracker, key: VariableTracker | None = None,
               default: VariableTracker | None = None) -> VariableTracker | None:
        items = _fold_items(tx, args)
        if any(is_tensor(i) for i in items):
            # max(a, b) compares with `>`, whose truth is data-dependent in eager.
            raise Unsupported(f"{fn.__name__}() of tensors compares their values: data-dependent",
                              hint=f"use torch.{'maximum' if fn is max else 'minimum'} or torch.{fn.__name__}")
        if not items:
            if default is None:
                raise Unsupported(f"ValueError: {fn.__name__}() arg is an empty sequence")
            return default
        if key is None and _symbolic_ints(items):
            # Sizes stay symbolic: torch.sym_min/sym_max record the choice instead of guarding
            # on the comparison (for ints, which item is picked shows only in its value).
            sym_fn = torch.sym_min if fn is min else torch.sym_max
            result = items[0]
            for item in items[1:]:
                result = record_call(tx, "call_function", sym_fn, [result, item], {})
            return result
        keys = sort_keys(tx, items, key)
        return items[fn(range(len(items)), key=keys.__getitem__)]
    return minmax


def _symbolic_ints(items: list[VariableTracker]) -> bool:
    """Symbolic ints, with plain ints among them."""
    return any(isinstance(i, SymNodeVariable) for i in items) and all(
        i.python_type() is int for i in items if isinstance(i, SymNodeVariable)) and all(
        isinstance(i, SymNodeVariable) or (i.is_python_constant() and type(i.as_python_constant()) is int)
        for i in items)


HANDLERS[min] = _make_minmax(min)
HANDLERS[max] = _make_minmax(max)


@handler(sum)
def _sum(tx: TracerContext, iterable: VariableTracker, start: VariableTracker | None = None) -> VariableTracker:
    total = start if start is not None else ConstantVariable(0)
    add = BuiltinVariable(operator.add)
    for item in iterable.unpack(tx):
        total = add.call_function(tx, [total, item], {})
    return total


@handler(pow)
def _pow(tx: TracerContext, base: VariableTracker, exp: VariableTracker, mod: VariableTracker | None = None) -> VariableTracker | None:
    if mod is None and (in_graph(base) or in_graph(exp)):
        return record_call(tx, "call_function", operator.pow, [base, exp], {})
    return None


# any() and all() stop at the first item that decides, as CPython's do.
HANDLERS[any] = lambda tx, iterable: ConstantVariable(any(i.truth(tx) for i in items_one_by_one(tx, iterable)))
HANDLERS[all] = lambda tx, iterable: ConstantVariable(all(i.truth(tx) for i in items_one_by_one(tx, iterable)))


class RuntimeStrVariable(VariableTracker):
    """``str(obj)`` of an object whose class keeps object's ``__str__`` and ``__repr__``: the
    text names the object's address, known only where the object exists, so generated code
    makes it (``str(obj)``, the object rebuilt if the trace made it). Nothing of it is known while
    tracing: any other use breaks the graph."""

    models = str  # (object.__repr__'s text of one object)

    def __init__(self, obj: VariableTracker) -> None:
        super().__init__(None)
        self.obj = obj

    def python_type(self) -> type:
        return str

    def describe(self) -> str:
        return f"str() of {self.obj.describe()}"

    def subvalues(self) -> list[VariableTracker]:
        return [self.obj]

    def reconstruct(self, cg: Any) -> None:
        cg.call_const(str, lambda: [cg.reconstruct(self.obj)])


def _object_str(tx: TracerContext, obj: ObjectVariableBase) -> VariableTracker | None:
    """``str(obj)``: the class's Python ``__str__``, or (``object.__str__`` left in place)
    its Python ``__repr__``, run as CPython's slot does, the result exactly a str; with
    object's both, the text made where the object exists (``RuntimeStrVariable``). None (the
    graph breaks) for a C ``__str__`` or ``__repr__``."""
    name = "__str__" if obj.has_python_method(tx, "__str__") else "__repr__"
    if name == "__repr__" and class_static(tx, obj.cls, "__str__") is _OBJECT_STR \
            and class_static(tx, obj.cls, "__repr__") is _OBJECT_REPR:
        return RuntimeStrVariable(obj)
    if name == "__repr__" and (class_static(tx, obj.cls, "__str__") is not _OBJECT_STR
                               or not obj.has_python_method(tx, "__repr__")):
        return None
    result = obj.call_method(tx, name, [], {})
    if result.python_type() is not str:  # (CPython's TypeError, or a str subclass: not modelled)
        raise Unsupported(f"str() of {obj.describe()}: its {name} returned {result.describe()}")
    return result


_OBJECT_STR = object.__dict__["__str__"]
_OBJECT_REPR = object.__dict__["__repr__"]


@handler(complex)
def _complex(tx: TracerContext, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker | None:
    if len(args) == 1 and isinstance(args[0], (ExceptionVariable, ObjectVariableBase)):
        return None
    return _scalar(tx, *args, **kwargs)


@handler(str)
def _str(tx: TracerContext, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker | None:
    if len(args) == 1 and not kwargs and isinstance(args[0], ExceptionVariable):
        return args[0].call_method(tx, "__str__", [], {})
    if len(args) == 1 and not kwargs and isinstance(args[0], ObjectVariableBase):
        return _object_str(tx, args[0])
    return _scalar(tx, *args, **kwargs)


def _scalar(tx: TracerContext, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker | None:
    if any(is_tensor(a) for a in args):
        raise Unsupported("converting a tensor to a Python number reads its value", hint="keep it a tensor")
    return None


def _make_number(fn: type, symbolic: Any) -> Handler:
    def number(tx: TracerContext, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker | None:
        if len(args) == 1 and not kwargs and isinstance(args[0], SymNodeVariable) and \
                args[0].python_type() in (int, float):
            # A symbolic number stays symbolic: int() truncates as torch.sym_int does,
            # float() converts as torch.sym_float.
            return args[0] if args[0].python_type() is fn else record_call(tx, "call_function", symbolic, [args[0]], {})
        return _scalar(tx, *args, **kwargs)
    return number


HANDLERS[int] = _make_number(int, torch.sym_int)
HANDLERS[float] = _make_number(float, torch.sym_float)
