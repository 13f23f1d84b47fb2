"""Python builtins and the ``operator`` module, which the arithmetic instructions reuse.

``BuiltinVariable(fn).call_function`` looks ``fn`` up in ``HANDLERS``; a handler returns a
tracker, or None when these arguments are not its case. Then pure builtins fold over
constants; anything else is unsupported (a graph break).
"""

from __future__ import annotations

import builtins
import collections
import copy
import functools
import inspect
import types
import math
import operator
from typing import Any, Callable

from ..exc import AttributeMissing, TracedException, Unsupported
from ..guards import GuardKind
from ..source import _CONSTANTS, PrivateObjectSource, Source
from .base import VariableTracker
from .constant import ConstantVariable, is_literal, wrap_constant
from .dicts import ConstDictVariable
from .lists import BaseListVariable, IteratorVariable, ListVariable, RangeVariable, SliceVariable, TupleVariable, sort_keys
from .functions import UserMethodVariable
from .misc import SetVariable, UserDefinedClassVariable
from .tensor import SymNodeVariable, TensorVariable, record_call
from .user_objects import DUNDERS, ExceptionVariable, ObjectVariableBase, SuperVariable

Handler = Callable[..., "VariableTracker | None"]
HANDLERS: dict[Any, Handler] = {}

# Operators that compute on tensors as graph nodes.
BINARY_OPERATORS = (
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
    operator.pow, operator.matmul, operator.lshift, operator.rshift, operator.and_, operator.or_,
    operator.xor, operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge,
)
INPLACE_OPERATORS = {
    operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
    operator.itruediv: operator.truediv, operator.ifloordiv: operator.floordiv, operator.imod: operator.mod,
    operator.ipow: operator.pow, operator.imatmul: operator.matmul, operator.ilshift: operator.lshift,
    operator.irshift: operator.rshift, operator.iand: operator.and_, operator.ior: operator.or_,
    operator.ixor: operator.xor,
}
UNARY_OPERATORS = (operator.neg, operator.pos, operator.invert, operator.abs, abs)

# Builtins that are pure functions of constant arguments: they run while tracing.
FOLDABLE = frozenset({
    abs, all, any, ascii, bin, bool, chr, complex, divmod, float, format, frozenset, hash, hex, int,
    isinstance, issubclass, len, max, min, oct, ord, pow, repr, round, sorted, str, sum, tuple,
    callable, slice,
    *[getattr(operator, name) for name in dir(operator) if not name.startswith("_") and name not in (
        "setitem", "delitem", "attrgetter", "itemgetter", "methodcaller", "call")],
    *[getattr(math, name) for name in dir(math) if callable(getattr(math, name))],
})


def handler(*fns: Any) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for f in fns:
            HANDLERS[f] = fn
        return fn
    return register


def is_tensor(value: VariableTracker) -> bool:
    return isinstance(value, TensorVariable)


def in_graph(value: VariableTracker) -> bool:
    """A tensor or a symbolic number: operations on it are graph nodes."""
    return isinstance(value, (TensorVariable, SymNodeVariable))


class BuiltinVariable(VariableTracker):
    def __init__(self, fn: Any, source: Source | None = None) -> None:
        super().__init__(source)
        self.fn = fn

    def python_type(self) -> type:
        return type(self.fn)

    def as_python_constant(self) -> Any:
        return self.fn

    def describe(self) -> str:
        return f"builtin {getattr(self.fn, '__name__', self.fn)}"

    def call_function(self, tx: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        fn = self.fn
        handle = HANDLERS.get(fn)
        if handle is not None:
            result = handle(tx, *args, **kwargs)
            if result is not None:
                return result
        if fn in FOLDABLE and not any(is_tensor(a) for a in args):
            try:
                const_args = [a.as_python_constant() for a in args]
                const_kwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
            except Unsupported:
                pass
            else:
                try:
                    value = fn(*const_args, **const_kwargs)
                except Exception as e:  # the user's code raises here: let eager raise it
                    raise TracedException(e) from e
                return wrap_constant(value)
        if fn is print:
            raise Unsupported("print() writes outside the graph", hint="the graph breaks around it; move it out of the hot code to keep one graph")
        if args and any(a.source is not None and isinstance(a.source.root(), PrivateObjectSource) for a in args):
            # The trace's own objects (a copy, a signature): builtins run on them for real.
            return _run_pure(tx, fn, tuple(args), kwargs)
        names = ", ".join(a.describe() for a in args)
        raise Unsupported(f"calling {self.describe()} with {names or 'no arguments'}")

    def reconstruct(self, cg: Any) -> None:
        if self.source is not None:
            self.source.emit_load(cg)
        else:
            cg.load_const(self.fn)

    def __repr__(self) -> str:
        return f"BuiltinVariable({getattr(self.fn, '__name__', self.fn)})"


# -- operators ------------------------------------------------------------------------------
def _make_binary(fn: Any) -> Handler:
    def binary(tx: Any, a: VariableTracker, b: VariableTracker) -> VariableTracker | None:
        if in_graph(a) or in_graph(b):
            return record_call(tx, "call_function", fn, [a, b], {})
        if isinstance(a, BaseListVariable) and isinstance(b, BaseListVariable) and fn is operator.add:
            if a.python_type() is not b.python_type() and not (isinstance(a, TupleVariable) and isinstance(b, TupleVariable)):
                raise Unsupported(f"can only concatenate {a.python_type().__name__} to the same type")
            return type(a)([*a.items, *b.items]) if type(a) in (ListVariable, TupleVariable) else TupleVariable([*a.items, *b.items])
        if fn is operator.mul and isinstance(a, (ListVariable, TupleVariable)) and isinstance(b, ConstantVariable):
            return type(a)(a.items * b.as_python_constant())
        if fn is operator.mul and isinstance(b, (ListVariable, TupleVariable)) and isinstance(a, ConstantVariable):
            return type(b)(b.items * a.as_python_constant())
        dunder, reflected = DUNDERS.get(fn.__name__, (None, None))
        if dunder is not None:
            if isinstance(a, ObjectVariableBase) and a.has_python_method(dunder):
                result = a.call_method(tx, dunder, [b], {})
                if not (result.is_python_constant() and result.as_python_constant() is NotImplemented):
                    return result
            if isinstance(b, ObjectVariableBase) and b.has_python_method(reflected):
                return b.call_method(tx, reflected, [a], {})
        if fn in (operator.eq, operator.ne) and not (a.is_python_constant() and b.is_python_constant()):
            if type(a) is not type(b) and not (isinstance(a, BaseListVariable) and isinstance(b, BaseListVariable)):
                # Different families never compare equal (tensors were handled above).
                return ConstantVariable(fn is operator.ne)
        return None
    return binary


for _fn in BINARY_OPERATORS:
    HANDLERS[_fn] = _make_binary(_fn)


def _make_inplace(inplace: Any, plain: Any) -> Handler:
    def inplace_op(tx: Any, a: VariableTracker, b: VariableTracker) -> VariableTracker | None:
        if is_tensor(a):
            result = record_call(tx, "call_function", inplace, [a, b], {})
            # x += 1 mutates x and keeps its identity; x @= y has no in-place form and rebinds.
            return a if getattr(result, "example", None) is a.example else result
        if isinstance(a, ListVariable) and inplace is operator.iadd:
            return a.call_method(tx, "__iadd__", [b], {})
        return BuiltinVariable(plain).call_function(tx, [a, b], {})
    return inplace_op


for _inplace, _plain in INPLACE_OPERATORS.items():
    HANDLERS[_inplace] = _make_inplace(_inplace, _plain)


def _make_unary(fn: Any) -> Handler:
    def unary(tx: Any, a: VariableTracker) -> VariableTracker | None:
        if in_graph(a):
            return record_call(tx, "call_function", operator.abs if fn is abs else fn, [a], {})
        return None
    return unary


for _fn in UNARY_OPERATORS:
    HANDLERS[_fn] = _make_unary(_fn)


@handler(operator.not_)
def _not(tx: Any, a: VariableTracker) -> VariableTracker:
    return ConstantVariable(not a.truth(tx))


@handler(operator.truth, bool)
def _bool(tx: Any, a: VariableTracker | None = None) -> VariableTracker:
    return ConstantVariable(False if a is None else a.truth(tx))


def identical(a: VariableTracker, b: VariableTracker) -> bool:
    """``a is b`` for trackers: the same tracker, the same source, or constants that are."""
    if a is b or (a.source is not None and a.source == b.source):
        return True
    if isinstance(a, ConstantVariable) and isinstance(b, ConstantVariable):
        return a.as_python_constant() is b.as_python_constant()
    if isinstance(a, (ConstantVariable, UserDefinedClassVariable, BuiltinVariable)) and isinstance(
        b, (ConstantVariable, UserDefinedClassVariable, BuiltinVariable)
    ):
        return a.as_python_constant() is b.as_python_constant()
    # Trackers of different objects: tensors inputs are deduplicated by identity when wrapped,
    # and everything else without a shared source was created separately.
    if a.is_python_constant() and b.is_python_constant() and not isinstance(a, BaseListVariable | ConstDictVariable | SetVariable):
        return a.as_python_constant() is b.as_python_constant()
    return False


HANDLERS[operator.is_] = lambda tx, a, b: ConstantVariable(identical(a, b))
HANDLERS[operator.is_not] = lambda tx, a, b: ConstantVariable(not identical(a, b))


@handler(operator.contains)
def _contains(tx: Any, container: VariableTracker, item: VariableTracker) -> VariableTracker | None:
    if isinstance(container, ObjectVariableBase) and container.has_python_method("__contains__"):
        return ConstantVariable(container.call_method(tx, "__contains__", [item], {}).truth(tx))
    if isinstance(container, (ConstDictVariable, SetVariable)):
        return container.call_method(tx, "__contains__", [item], {})
    if is_tensor(container) or is_tensor(item) and not isinstance(container, BaseListVariable):
        return None
    if isinstance(container, BaseListVariable) and not isinstance(container, RangeVariable):
        for candidate in container.items:
            if identical(candidate, item):
                return ConstantVariable(True)
            if is_tensor(candidate) or is_tensor(item):
                raise Unsupported("`in` compares a tensor by value: data-dependent")
            if candidate.as_python_constant() == item.as_python_constant():
                return ConstantVariable(True)
        return ConstantVariable(False)
    return None


@handler(operator.getitem)
def _getitem(tx: Any, obj: VariableTracker, index: VariableTracker) -> VariableTracker | None:
    if is_tensor(obj):
        return record_call(tx, "call_function", operator.getitem, [obj, index], {})
    if isinstance(obj, (BaseListVariable, ConstDictVariable)):
        return obj.getitem(tx, index)
    if isinstance(obj, ConstantVariable):
        return None  # fold: "abc"[1]
    return obj.call_method(tx, "__getitem__", [index], {})


@handler(operator.setitem)
def _setitem(tx: Any, obj: VariableTracker, index: VariableTracker, value: VariableTracker) -> VariableTracker:
    if is_tensor(obj):
        record_call(tx, "call_function", operator.setitem, [obj, index, value], {})
        return ConstantVariable(None)
    return obj.call_method(tx, "__setitem__", [index, value], {})


@handler(operator.delitem)
def _delitem(tx: Any, obj: VariableTracker, index: VariableTracker) -> VariableTracker:
    return obj.call_method(tx, "__delitem__", [index], {})


# -- builtins -------------------------------------------------------------------------------
@handler(len, operator.length_hint)
def _len(tx: Any, obj: VariableTracker) -> VariableTracker | None:
    if obj.source is not None and isinstance(obj.source.root(), PrivateObjectSource):
        return ConstantVariable(len(_private_value(obj)))
    if is_tensor(obj):
        if obj.example.dim() == 0:
            raise Unsupported("TypeError: len() of a 0-d tensor")
        return obj.call_method(tx, "size", [ConstantVariable(0)], {})
    if isinstance(obj, RangeVariable):
        return ConstantVariable(len(obj.value))
    if isinstance(obj, (BaseListVariable, ConstDictVariable, SetVariable)):
        return ConstantVariable(len(obj.items))
    if isinstance(obj, ConstantVariable):
        return None
    return obj.call_method(tx, "__len__", [], {})


@handler(super)
def _super(tx: Any, *args: VariableTracker) -> VariableTracker:
    if args:
        if len(args) != 2:
            raise Unsupported("super() with one argument")
        return SuperVariable(args[0].as_python_constant(), args[1])
    # Zero-argument super(): the __class__ cell of the method and its first argument.
    cell = tx.cells.get("__class__")
    if cell is None or cell.contents is None or not tx.code.co_argcount:
        raise Unsupported("RuntimeError: super(): no arguments")
    first = tx.code.co_varnames[0]
    obj = tx.cells[first].contents if first in tx.cells else tx.get_local(first)
    return SuperVariable(cell.contents.as_python_constant(), obj)


@handler(functools.partial)
def _partial(tx: Any, fn: VariableTracker, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker:
    return PartialVariable(fn, list(args), kwargs)


class PartialVariable(VariableTracker):
    """``functools.partial(fn, *args, **kwargs)`` made while tracing."""

    def __init__(self, fn: VariableTracker, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> None:
        super().__init__()
        self.fn, self.args, self.kwargs = fn, args, kwargs

    def python_type(self) -> type:
        return functools.partial

    def call_function(self, tx: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.fn.call_function(tx, [*self.args, *args], {**self.kwargs, **kwargs})

    def subvalues(self) -> list[VariableTracker]:
        return [self.fn, *self.args, *self.kwargs.values()]

    def reconstruct(self, cg: Any) -> None:
        def arguments() -> list[None]:
            cg.reconstruct(self.fn)
            for arg in self.args:
                cg.reconstruct(arg)
            return [None] * (1 + len(self.args))

        if self.kwargs:
            raise Unsupported("re-creating a functools.partial with keyword arguments")
        cg.call_const(functools.partial, arguments)


def _private_value(var: VariableTracker) -> Any:
    """The real object behind a tracker reached from an object private to the trace."""
    if var.source is None or not isinstance(var.source.root(), PrivateObjectSource):
        raise Unsupported(f"{var.describe()} is not the trace's own object")
    return eval(var.source.expr(), {"___const": _CONSTANTS})  # noqa: S307 - our own expression


def _real_value(var: VariableTracker) -> Any:
    """The real object a tracker stands for, where the trace has it (not a graph value)."""
    if var.source is not None and isinstance(var.source.root(), PrivateObjectSource):
        return _private_value(var)
    if isinstance(var, ObjectVariableBase) and hasattr(var, "value"):
        return var.value
    if isinstance(var, UserMethodVariable) and var.fn.is_python_constant():
        return types.MethodType(var.fn.as_python_constant(), _real_value(var.obj))
    return var.as_python_constant()


def _copy_handler(copier: Any) -> Handler:
    def copy_object(tx: Any, obj: VariableTracker, *rest: VariableTracker) -> VariableTracker | None:
        return _copy(tx, copier, obj, rest)
    return copy_object


def _copy(tx: Any, copier: Any, obj: VariableTracker, rest: tuple) -> VariableTracker | None:
    if rest:
        return None
    if obj.source is not None and isinstance(obj.source.root(), PrivateObjectSource):
        value = copier(_private_value(obj))
        return tx.wrap(value, PrivateObjectSource.of(value))
    if not isinstance(obj, ObjectVariableBase) or not hasattr(obj, "value"):
        return None
    if tx.output.side_effects.attributes and any(o is obj for o, _, _ in tx.output.side_effects.attributes.values()):
        raise Unsupported("copying an object whose attributes the trace changed")
    # A copy of an input object, made for real now and private to the trace. What it copied
    # is guarded: the object's attributes must still equal those it had.
    state = getattr(obj.value, "__dict__", None)
    if obj.source is None or state is None:
        raise Unsupported(f"copying {obj.describe()}")
    snapshot = copy.deepcopy(state)
    name = tx.guards.constant(snapshot)
    tx.guards.add(GuardKind.EQUALS_MATCH, f"{obj.source.name}.__dict__ == <its state when traced>",
                  f"{obj.source.expr()}.__dict__ == {name}", obj.source)
    value = copier(obj.value)
    return tx.wrap(value, PrivateObjectSource.of(value))


HANDLERS[copy.deepcopy] = _copy_handler(copy.deepcopy)
HANDLERS[copy.copy] = _copy_handler(copy.copy)


# Pure functions of the inspect module: they run for real on the objects the trace holds.
for _fn in (inspect.signature, inspect.isclass, inspect.isfunction, inspect.ismethod, inspect.iscoroutinefunction,
            inspect.isgeneratorfunction, inspect.getfullargspec):
    HANDLERS[_fn] = lambda tx, *args, _fn=_fn, **kwargs: _run_pure(tx, _fn, args, kwargs)


def _run_pure(tx: Any, fn: Any, args: tuple, kwargs: dict) -> VariableTracker:
    value = fn(*[_real_value(a) for a in args], **{k: _real_value(v) for k, v in kwargs.items()})
    if is_literal(value):
        return ConstantVariable(value)
    return tx.wrap(value, PrivateObjectSource.of(value))


@handler(isinstance)
def _isinstance(tx: Any, obj: VariableTracker, classes: VariableTracker) -> VariableTracker:
    cls = _real_value(classes)  # a class, a tuple of them, or a typing alias
    return ConstantVariable(issubclass(obj.python_type(), cls))


@handler(issubclass)
def _issubclass(tx: Any, cls: VariableTracker, classes: VariableTracker) -> VariableTracker:
    return ConstantVariable(issubclass(cls.as_python_constant(), classes.as_python_constant()))


@handler(type)
def _type(tx: Any, obj: VariableTracker, *rest: VariableTracker) -> VariableTracker | None:
    if rest:
        return None
    return tx.wrap(obj.python_type(), None)


def _lookup(tx: Any, obj: VariableTracker, attr: str) -> VariableTracker | None:
    """``obj.attr``, or None when it does not exist (then, for an input, guarded absent)."""
    if is_tensor(obj) and not hasattr(obj.example, attr):
        return None
    try:
        return obj.var_getattr(tx, attr)
    except AttributeMissing:
        if obj.source is not None:
            tx.guards.hasattr_match(obj.source, attr, False)
        return None


@handler(getattr)
def _getattr(tx: Any, obj: VariableTracker, name: VariableTracker, default: VariableTracker | None = None) -> VariableTracker:
    attr = name.as_python_constant()
    if default is None:
        return obj.var_getattr(tx, attr)
    found = _lookup(tx, obj, attr)
    return default if found is None else found


@handler(hasattr)
def _hasattr(tx: Any, obj: VariableTracker, name: VariableTracker) -> VariableTracker:
    return ConstantVariable(_lookup(tx, obj, name.as_python_constant()) is not None)


@handler(range)
def _range(tx: Any, *args: VariableTracker) -> VariableTracker:
    return RangeVariable(range(*[a.as_python_constant() for a in args]))


@handler(slice)
def _slice(tx: Any, *args: VariableTracker) -> VariableTracker:
    parts = list(args) + [ConstantVariable(None)] * (3 - len(args))
    if len(args) == 1:
        parts = [ConstantVariable(None), args[0], ConstantVariable(None)]
    return SliceVariable(*parts)


@handler(iter)
def _iter(tx: Any, obj: VariableTracker) -> VariableTracker:
    return obj if isinstance(obj, IteratorVariable) else IteratorVariable(obj.unpack(tx))


@handler(next)
def _next(tx: Any, it: VariableTracker, default: VariableTracker | None = None) -> VariableTracker:
    if not isinstance(it, IteratorVariable):
        raise Unsupported(f"next() on {it.describe()}")
    item = it.next_item()
    if item is None:
        if default is None:
            raise TracedException(StopIteration())
        return default
    return item


@handler(enumerate)
def _enumerate(tx: Any, iterable: VariableTracker, start: VariableTracker | None = None) -> VariableTracker:
    first = start.as_python_constant() if start is not None else 0
    return IteratorVariable([TupleVariable([ConstantVariable(first + i), v]) for i, v in enumerate(iterable.unpack(tx))])


@handler(zip)
def _zip(tx: Any, *iterables: VariableTracker, strict: VariableTracker | None = None) -> VariableTracker:
    columns = [it.unpack(tx) for it in iterables]
    if strict is not None and strict.as_python_constant() and len({len(c) for c in columns}) > 1:
        raise Unsupported("zip(strict=True) with iterables of different lengths")
    return IteratorVariable([TupleVariable(list(row)) for row in zip(*columns)])


@handler(reversed)
def _reversed(tx: Any, seq: VariableTracker) -> VariableTracker:
    if not isinstance(seq, (BaseListVariable, ConstDictVariable)) and not isinstance(seq, ConstantVariable):
        raise Unsupported(f"reversed() of {seq.describe()}")
    return IteratorVariable(list(reversed(seq.unpack(tx))))


HANDLERS[list] = lambda tx, iterable=None: ListVariable(iterable.unpack(tx) if iterable is not None else [])
HANDLERS[tuple] = lambda tx, iterable=None: TupleVariable(iterable.unpack(tx) if iterable is not None else [])


@handler(dict)
def _dict(tx: Any, arg: VariableTracker | None = None, **kwargs: VariableTracker) -> VariableTracker:
    items: dict[Any, VariableTracker] = {}
    if isinstance(arg, ConstDictVariable):
        items.update(arg.items)
    elif arg is not None:
        for pair in arg.unpack(tx):
            key, value = pair.unpack(tx)
            items[key.as_python_constant()] = value
    items.update(kwargs)
    return ConstDictVariable(items)


@handler(collections.OrderedDict)
def _ordered_dict(tx: Any, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker:
    plain = _dict(tx, *args, **kwargs)
    return ConstDictVariable(plain.items, user_cls=collections.OrderedDict)


@handler(collections.defaultdict)
def _defaultdict(tx: Any, factory: VariableTracker | None = None, *args: VariableTracker) -> VariableTracker:
    plain = _dict(tx, *args)
    return ConstDictVariable(plain.items, user_cls=collections.defaultdict, default_factory=factory or ConstantVariable(None))


HANDLERS[set] = lambda tx, iterable=None: SetVariable(iterable.unpack(tx) if iterable is not None else [])
HANDLERS[frozenset] = lambda tx, iterable=None: SetVariable(iterable.unpack(tx) if iterable is not None else [], frozen=True)


def _fold_items(tx: Any, args: tuple[VariableTracker, ...]) -> list[VariableTracker]:
    return list(args[0].unpack(tx)) if len(args) == 1 else list(args)


def _make_minmax(fn: Any) -> Handler:
    def minmax(tx: Any, *args: VariableTracker, key: VariableTracker | None = None,
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
        keys = sort_keys(tx, items, key)
        return items[fn(range(len(items)), key=keys.__getitem__)]
    return minmax


HANDLERS[min] = _make_minmax(min)
HANDLERS[max] = _make_minmax(max)


@handler(sum)
def _sum(tx: Any, iterable: VariableTracker, start: VariableTracker | None = None) -> VariableTracker:
    total = start if start is not None else ConstantVariable(0)
    add = BuiltinVariable(operator.add)
    for item in iterable.unpack(tx):
        total = add.call_function(tx, [total, item], {})
    return total


@handler(pow)
def _pow(tx: Any, base: VariableTracker, exp: VariableTracker, mod: VariableTracker | None = None) -> VariableTracker | None:
    if mod is None and (in_graph(base) or in_graph(exp)):
        return record_call(tx, "call_function", operator.pow, [base, exp], {})
    return None


HANDLERS[any] = lambda tx, iterable: ConstantVariable(any(i.truth(tx) for i in iterable.unpack(tx)))
HANDLERS[all] = lambda tx, iterable: ConstantVariable(all(i.truth(tx) for i in iterable.unpack(tx)))


@handler(int, float, str, complex)
def _scalar(tx: Any, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker | None:
    if len(args) == 1 and isinstance(args[0], (ExceptionVariable, ObjectVariableBase)):
        return args[0].call_method(tx, "__str__", [], {}) if isinstance(args[0], ExceptionVariable) else None
    if any(is_tensor(a) for a in args):
        raise Unsupported("converting a tensor to a Python number reads its value", hint="keep it a tensor")
    return None


@handler(callable)
def _callable(tx: Any, obj: VariableTracker) -> VariableTracker | None:
    if is_tensor(obj) or isinstance(obj, (BaseListVariable, ConstDictVariable, SetVariable)):
        return ConstantVariable(False)
    if obj.is_python_constant():
        return None
    return ConstantVariable(hasattr(obj, "call_function") and type(obj).call_function is not VariableTracker.call_function)


@handler(sorted)
def _sorted(tx: Any, iterable: VariableTracker, *, key: VariableTracker | None = None,
            reverse: VariableTracker | None = None) -> VariableTracker:
    items = iterable.unpack(tx)
    keys = sort_keys(tx, items, key)
    order = sorted(range(len(items)), key=keys.__getitem__, reverse=bool(reverse.as_python_constant()) if reverse else False)
    return ListVariable([items[i] for i in order])


@handler(map)
def _map(tx: Any, fn: VariableTracker, *iterables: VariableTracker) -> VariableTracker:
    columns = [it.unpack(tx) for it in iterables]
    return IteratorVariable([fn.call_function(tx, list(row), {}) for row in zip(*columns)])


@handler(filter)
def _filter(tx: Any, fn: VariableTracker, iterable: VariableTracker) -> VariableTracker:
    keep_truthy = fn.is_python_constant() and fn.as_python_constant() is None
    items = iterable.unpack(tx)
    return IteratorVariable([i for i in items if (i if keep_truthy else fn.call_function(tx, [i], {})).truth(tx)])


@handler(functools.reduce)
def _reduce(tx: Any, fn: VariableTracker, iterable: VariableTracker, initial: VariableTracker | None = None) -> VariableTracker:
    items = iterable.unpack(tx)
    acc = initial if initial is not None else items.pop(0)
    for item in items:
        acc = fn.call_function(tx, [acc, item], {})
    return acc


# Builtins everyone can reach by name through LOAD_GLOBAL.
BUILTIN_NAMES = {name: value for name, value in vars(builtins).items() if callable(value)}
