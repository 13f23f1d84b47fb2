"""Numbers and reductions over items: ``min``/``max`` (symbolic sizes through ``torch.sym_min``
and ``sym_max``), ``sum``, ``pow``, ``any``/``all``, and the conversions ``int``, ``float``,
``str``, ``complex`` (a symbolic number stays symbolic; a tensor's value is not read); ``str``,
``repr`` and ``format`` of user objects (their Python methods, or object's run where the object
exists). Handlers register in ``object_protocol.HANDLERS`` like the builtins'."""

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
    """``str(obj)`` or ``repr(obj)`` of an object whose class keeps object's ``__repr__`` (and
    ``__str__``): the text names the object's address, known only where the object exists, so
    generated code makes it (``repr(obj)``, the object rebuilt if the trace made it). Nothing of
    it is known while tracing: any other use breaks the graph."""

    models = str  # (object.__repr__'s text of one object)

    def __init__(self, obj: VariableTracker) -> None:
        super().__init__(None)
        self.obj = obj

    def python_type(self) -> type:
        return str

    def describe(self) -> str:
        return f"repr() of {self.obj.describe()}"

    def subvalues(self) -> list[VariableTracker]:
        return [self.obj]

    def reconstruct(self, cg: Any) -> None:
        cg.call_const(repr, lambda: [cg.reconstruct(self.obj)])


class SymTextVariable(VariableTracker):
    """The text of symbolic numbers (``f"{x.shape[0]}"``, ``f"rows={n:>4}"``, ``format(n,
    spec)``, ``str(n)`` on 3.13's CONVERT_VALUE): made by the generated code from the numbers,
    so they stay symbolic while the text is only kept, returned or printed at a break
    (torch.compile does not guard a size only formatted). Any use of the text while tracing
    makes it a constant: the numbers are specialised then, with their guards, as before.
    ``parts``: constant strings, and ``(number, conversion, spec)`` for each formatted number."""

    models = str  # (the text of ints, floats or bools known at run time)
    _CONVERSIONS = {0: None, 1: str, 2: repr, 3: ascii}

    def __init__(self, parts: list[Any]) -> None:
        super().__init__(None)
        self.parts = parts

    @classmethod
    def of(cls, number: VariableTracker, conversion: int = 0, spec: str = "") -> "SymTextVariable":
        return cls([(number, conversion, spec)])

    def python_type(self) -> type:
        return str

    def describe(self) -> str:
        return "the text of a symbolic number"

    def is_python_constant(self) -> bool:
        return True  # (it becomes one when asked: the numbers specialised, as they always were)

    def as_python_constant(self) -> Any:
        text = []
        for part in self.parts:
            if isinstance(part, str):
                text.append(part)
                continue
            number, conversion, spec = part
            value, convert = number.as_python_constant(), self._CONVERSIONS[conversion]
            text.append(format(convert(value) if convert else value, spec))
        return "".join(text)

    def subvalues(self) -> list[VariableTracker]:
        return [part[0] for part in self.parts if not isinstance(part, str)]

    def reconstruct(self, cg: Any) -> None:
        for part in self.parts:
            if isinstance(part, str):
                cg.load_const(part)
                continue
            number, conversion, spec = part
            convert = self._CONVERSIONS[conversion]
            if convert is None:
                cg.call_const(format, lambda: [cg.reconstruct(number), cg.load_const(spec)])
            else:
                cg.call_const(format, lambda: [cg.call_const(convert, lambda: [cg.reconstruct(number)]),
                                               cg.load_const(spec)])
        if len(self.parts) != 1:
            cg.emit("BUILD_STRING", len(self.parts))


def _object_text(tx: TracerContext, obj: ObjectVariableBase, name: str,
                 args: tuple[VariableTracker, ...] = ()) -> VariableTracker | None:
    """``str(obj)`` (``name`` "__str__"), ``repr(obj)`` or ``format(obj, spec)``, as CPython's
    slots run them: the class's Python method, its result exactly a str; object's ``__format__``
    (an empty spec) is ``str``, its ``__str__`` ``repr``; object's ``__repr__`` names the address,
    made where the object exists (``RuntimeStrVariable``). None (the graph breaks) for a C one."""
    if obj.has_python_method(tx, name):
        result = obj.call_method(tx, name, list(args), {})
        if result.python_type() is not str:  # (CPython's TypeError, or a str subclass: not modelled)
            raise Unsupported(f"{name} of {obj.describe()} returned {result.describe()}")
        return result
    static = class_static(tx, obj.cls, name)
    if name == "__format__" and (static is not _OBJECT_SLOTS[name] or args[0].as_python_constant() != ""):
        return None  # (a C __format__, or object's with a spec: its TypeError, not modelled)
    if name != "__repr__" and static is _OBJECT_SLOTS[name]:  # (object's __format__ is str(), its __str__ repr())
        return _object_text(tx, obj, "__str__" if name == "__format__" else "__repr__")
    return RuntimeStrVariable(obj) if static is _OBJECT_SLOTS["__repr__"] else None


_OBJECT_SLOTS = {name: object.__dict__[name] for name in ("__str__", "__repr__", "__format__")}


@handler(repr)
def _repr(tx: TracerContext, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker | None:
    if len(args) == 1 and not kwargs and isinstance(args[0], ObjectVariableBase):
        return _object_text(tx, args[0], "__repr__")
    return None


@handler(format)
def _format(tx: TracerContext, value: VariableTracker, spec: VariableTracker | None = None) -> VariableTracker | None:
    spec = spec if spec is not None else ConstantVariable("")
    if isinstance(value, ObjectVariableBase) and spec.is_python_constant() and type(spec.as_python_constant()) is str:
        return _object_text(tx, value, "__format__", (spec,))
    return None


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
        return _object_text(tx, args[0], "__str__")
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
