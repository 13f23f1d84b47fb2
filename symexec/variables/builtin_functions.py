"""Python builtins and the ``operator`` module, which the arithmetic instructions reuse.

``BuiltinVariable(fn).call_function`` looks ``fn`` up in ``HANDLERS``; a handler returns a
tracker, or None when these arguments are not its case. Then pure builtins fold over
constants; anything else is unsupported (a graph break).
"""

from __future__ import annotations

import abc
import builtins
import collections
import copy
import inspect
import types
import math
import operator
import os
import weakref
from typing import Any, Callable

import torch

from ..context import TracerContext
from ..exc import AttributeMissing, TracedException, Unsupported, raised_in_the_trace
from ..guards import GuardKind
from ..source import ConstSource, PrivateObjectSource, Source, value_of
from .base import VariableTracker
from .constant import ConstantVariable, is_literal, wrap_constant
from .dicts import ConstDictVariable, DictViewVariable, update_items
from .lists import (BaseListVariable, IteratorVariable, ListVariable, RangeVariable, SliceVariable, TupleVariable,
                    sort_keys)
from .functions import UserFunctionVariable, UserMethodVariable
from .sets import SetVariable
from .snapshots import same_state, state_check
from .tensor import SymNodeVariable, TensorVariable
from .base import Registry, class_static, find_on_class, subclass_check
from .user_objects import ObjectVariableBase, SuperVariable, checked_len
from .native_methods import CONTAINER_CLASSES, NativeDescriptorVariable
from .object_protocol import HANDLERS, Handler  # noqa: F401 - (the families register in it through here)

# (builtin class, name) -> one instance of that class method (``dict.fromkeys``), a key of HANDLERS.
CLASS_METHODS: dict[tuple[type, str], Any] = Registry("builtins.CLASS_METHODS")

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
    operator.ixor: operator.xor, operator.iconcat: operator.concat,
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


_IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: a type whose attributes cannot be set


class BuiltinVariable(VariableTracker):
    """A builtin function or type (``len``, ``isinstance``, ``list``, ``operator.add``...), or a
    Python function symexec models itself (``copy.deepcopy``, ``inspect.signature``): called
    through ``HANDLERS``, one handler per callable. One without a handler, or whose handler
    declines (returns None), is folded only where every argument is a constant and the callable
    is one of the pure builtins (``FOLDABLE``), or run for real on the trace's own objects;
    else the graph breaks (``print`` always does)."""

    models = (types.BuiltinFunctionType, type, types.FunctionType)  # builtins, and Python functions symexec models itself

    # False for a builtin bound to an object whose identity the guards do not pin (one made per
    # call): no call of it may run while tracing (it would run on the traced object).
    owner_pinned = True

    def __init__(self, fn: Any, source: Source | None = None) -> None:
        super().__init__(source)
        self.fn = fn

    def python_type(self) -> type:
        return type(self.fn)

    def as_python_constant(self) -> Any:
        return self.fn

    def describe(self) -> str:
        return f"builtin {getattr(self.fn, '__name__', self.fn)}"

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        fn = self.fn
        handle = HANDLERS.get(fn)
        if handle is not None:
            try:
                result = handle(tx, *args, **kwargs)
            except TypeError as e:
                if _binds(handle, tx, args, kwargs):  # raised inside: symexec's own error
                    raise
                # the user's call does not fit the builtin's parameters: CPython raises the TypeError
                raise Unsupported(f"calling {self.describe()} with arguments it does not take: {e}") from e
            if result is not None:
                return result
        if (fn in FOLDABLE or _bound_to_constant(fn)) and not any(is_tensor(a) for a in args):
            try:
                const_args = [a.as_python_constant() for a in args]
                const_kwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
            except Unsupported:
                pass
            else:
                with raised_in_the_trace(Exception):  # the user's code raises here: let eager raise it
                    value = fn(*const_args, **const_kwargs)
                return wrap_constant(value)
        if _text_method_call(fn, args, kwargs):
            with raised_in_the_trace(Exception):  # the user's code raises here: let eager raise it
                value = fn(*[a.as_python_constant() for a in args], **{k: v.as_python_constant() for k, v in kwargs.items()})
            return wrap_constant(value)
        if fn is print:
            raise Unsupported("print() writes outside the graph", hint="the graph breaks around it; move it out of the hot code to keep one graph")
        if args and self.owner_pinned and any(
                a.source is not None and isinstance(a.source.root(), PrivateObjectSource) for a in args):
            # The trace's own objects (a copy, a signature): builtins run on them for real.
            return run_pure(tx, fn, tuple(args), kwargs)
        names = ", ".join(a.describe() for a in args)
        raise Unsupported(f"calling {self.describe()} with {names or 'no arguments'}")

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        method = CLASS_METHODS.get((self.fn, name)) if isinstance(self.fn, type) else None
        if method is not None:  # dict.fromkeys: a builtin class's method with a handler
            return BuiltinVariable(method)
        if self.fn in _TEXT_CLASSES and not name.startswith("_"):
            static = class_static(tx, self.fn, name)  # (a builtin class's: it cannot change)
            if type(static) is types.MethodDescriptorType and static.__objclass__ is self.fn:
                return BuiltinVariable(static)  # ``str.count``
        if self.fn in CONTAINER_CLASSES:
            static = class_static(tx, self.fn, name)  # (a builtin class's: it cannot change)
            if type(static) in (types.MethodDescriptorType, types.WrapperDescriptorType) and static.__objclass__ is self.fn:
                return NativeDescriptorVariable(static)  # ``set.difference``, called with a set
        fn = self.fn
        if isinstance(fn, type) and fn.__flags__ & _IMMUTABLE_TYPE and type(fn) is type:
            # An immutable builtin type (``int``, ``str``: no attribute can be set on one, what it
            # has never changes): missing (``getattr(type(n), "foo", 0)``), or a number it holds.
            klass, value = find_on_class(tx, fn, name)
            if klass is None and find_on_class(tx, type, name)[0] is None:  # (nor on its metaclass, type)
                raise AttributeMissing.exactly(AttributeError(f"type object '{fn.__name__}' has no attribute '{name}'"),
                                               guarded=True)
            if type(value) in (int, float, bool):
                return ConstantVariable(value)
        return super().var_getattr(tx, name)

    def reconstruct(self, cg: Any) -> None:
        if self.source is not None:
            self.source.emit_load(cg)
        else:
            cg.load_const(self.fn)

    def __repr__(self) -> str:
        return f"BuiltinVariable({getattr(self.fn, '__name__', self.fn)})"



# -- methods of str and bytes read from the class (``str.count(expression, ".")``) -------------
_TEXT_CLASSES = (str, bytes)
# (what may run Python code: a codec registered by the user)
_TEXT_METHODS_NOT_PURE = frozenset({"encode", "decode"})
_EXACT_SCALARS = (type(None), bool, int, float, str, bytes)


def _exact_constant(var: VariableTracker) -> bool:
    """A constant of builtin scalars (or tuples of them) by exact type: no subclass's
    ``__format__``, ``__index__`` or ``__eq__`` runs when a str method takes it."""
    if not var.is_python_constant():
        return False
    value = var.as_python_constant()
    return type(value) in _EXACT_SCALARS or type(value) is tuple and all(type(v) in _EXACT_SCALARS for v in value)


def _text_method_call(fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> bool:
    """``str.method(s, ...)`` of exact constants: computed while tracing (pure, on values that
    cannot change)."""
    return type(fn) is types.MethodDescriptorType and fn.__objclass__ in _TEXT_CLASSES and \
        fn.__name__ not in _TEXT_METHODS_NOT_PURE and bool(args) and _exact_constant(args[0]) and \
        type(args[0].as_python_constant()) is fn.__objclass__ and \
        all(_exact_constant(a) for a in [*args[1:], *kwargs.values()])


# -- builtins -------------------------------------------------------------------------------
def _binds(handle: Callable[..., Any], tx: TracerContext, args: list[VariableTracker],
           kwargs: dict[str, VariableTracker]) -> bool:
    try:
        inspect.signature(handle).bind(tx, *args, **kwargs)
    except TypeError:
        return False
    return True


@handler(len)
def _len(tx: TracerContext, obj: VariableTracker) -> VariableTracker | None:
    if obj.source is not None and isinstance(obj.source.root(), PrivateObjectSource) and \
            not isinstance(obj, (ConstDictVariable, BaseListVariable, SetVariable)):  # (those know their items)
        return ConstantVariable(len(_private_value(tx, obj)))
    if is_tensor(obj):
        if obj.example.dim() == 0:
            raise Unsupported("TypeError: len() of a 0-d tensor")
        return obj.call_method(tx, "size", [ConstantVariable(0)], {})
    if isinstance(obj, RangeVariable):
        with raised_in_the_trace(OverflowError):  # (past sys.maxsize items)
            return ConstantVariable(len(obj.value))
    if isinstance(obj, ConstDictVariable):
        return ConstantVariable(obj.length(tx))  # (a dict keyed by tensors knows its length, not its items)
    if isinstance(obj, (BaseListVariable, SetVariable)):
        return ConstantVariable(len(obj.items))
    if isinstance(obj, ConstantVariable):
        return None
    if isinstance(obj, ObjectVariableBase) and obj.has_python_method(tx, "__len__"):
        return checked_len(tx, obj.call_method(tx, "__len__", [], {}))
    return obj.call_method(tx, "__len__", [], {})


@handler(os.fspath)
def _fspath(tx: TracerContext, path: VariableTracker) -> VariableTracker | None:
    """``os.fspath`` of an exact str or bytes constant is that value; anything else (a
    ``__fspath__`` to run) declines."""
    if path.is_python_constant() and type(path.as_python_constant()) in (str, bytes):
        return path
    return None


@handler(super)
def _super(tx: TracerContext, *args: VariableTracker) -> VariableTracker:
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




_MISSING = object()


def _bound_to_constant(fn: Any) -> bool:
    """A builtin method of an immutable constant (``frozenset(kwlist).__contains__``, ``"-".join``):
    on constant arguments it computes a constant, as the method of a foldable builtin does."""
    owner = getattr(fn, "__self__", None)
    return isinstance(fn, types.BuiltinMethodType) and type(owner) in (frozenset, tuple, str, bytes, int, float) \
        and is_literal(owner)




def _private_value(tx: TracerContext, var: VariableTracker) -> Any:
    """The real object behind a tracker reached from an object private to the trace, while the
    trace has changed nothing inside that object through a tracker (a dict of the copy edited:
    the real copy is behind, and the trace breaks instead of reading it)."""
    if var.source is None or not isinstance(var.source.root(), PrivateObjectSource):
        raise Unsupported(f"{var.describe()} is not the trace's own object")
    root, effects = var.source.root(), tx.trace.side_effects
    edited = [v for v in effects.containers.values() if v.source is not None and v.source.root() == root]
    edited += [o for o, _, _ in effects.attributes.values() if o.source is not None and o.source.root() == root]
    if edited:
        raise Unsupported(f"reading {var.describe()} for real after the trace changed {edited[0].describe()}")
    return value_of(var.source)


def _real_value(tx: TracerContext, var: VariableTracker) -> Any:
    """The real object a tracker stands for, where the trace has it (not a graph value)."""
    if var.source is not None and isinstance(var.source.root(), PrivateObjectSource):
        return _private_value(tx, var)
    if isinstance(var, ObjectVariableBase) and hasattr(var, "value"):
        return var.value
    if isinstance(var, UserMethodVariable) and var.fn.is_python_constant():
        return types.MethodType(var.fn.as_python_constant(), _real_value(tx, var.obj))
    return var.as_python_constant()


def _copy_handler(copier: Any) -> Handler:
    def copy_object(tx: TracerContext, obj: VariableTracker, *rest: VariableTracker) -> VariableTracker | None:
        return _copy(tx, copier, obj, rest)
    return copy_object


def _copy(tx: TracerContext, copier: Any, obj: VariableTracker, rest: tuple) -> VariableTracker | None:
    if rest:
        return None
    if obj.source is not None and isinstance(obj.source.root(), PrivateObjectSource):
        value = copier(_private_value(tx, obj))
        return tx.wrap(value, PrivateObjectSource.of(value))
    if not isinstance(obj, ObjectVariableBase) or not hasattr(obj, "value"):
        return None
    if tx.trace.side_effects.attributes and any(o is obj for o, _, _ in tx.trace.side_effects.attributes.values()):
        raise Unsupported("copying an object whose attributes the trace changed")
    # A copy of an input object, made for real now and private to the trace. What it copied
    # is guarded: the object's attributes must still equal those it had.
    state = getattr(obj.value, "__dict__", None)
    if obj.source is None or state is None:
        raise Unsupported(f"copying {obj.describe()}")
    for protocol in ("__copy__", "__deepcopy__", "__reduce_ex__", "__reduce__", "__getstate__", "__setstate__"):
        class_static(tx, obj.python_type(), protocol)  # how the class copies: guarded too
    snapshot = copy.deepcopy(state)
    taken = tx.guards.snapshots.get(obj.source)
    if taken is None or not same_state(snapshot, taken):  # (copied twice, guarded once)
        tx.guards.snapshots[obj.source] = snapshot
        check = tx.guards.constant(state_check(snapshot))
        tx.guards.add(GuardKind.EQUALS_MATCH, f"{obj.source.name}.__dict__ == <its state when traced>",
                      tx.guards.code(f"{check}(", obj.source, ".__dict__)"), obj.source)
    value = copier(obj.value)
    return tx.wrap(value, PrivateObjectSource.of(value))


HANDLERS[copy.deepcopy] = _copy_handler(copy.deepcopy)
HANDLERS[copy.copy] = _copy_handler(copy.copy)


@handler(id)
def _id(tx: TracerContext, obj: VariableTracker) -> VariableTracker:
    """``id(obj)`` of an object the call was given (a module, a parameter, an input tensor):
    its address now, guarded to stay that (``id(L['m']) == 1403...``, the fact the result is:
    another object retraces). What the trace made has no address it could know."""
    source = obj.source
    if source is None or isinstance(source.root(), PrivateObjectSource):
        raise Unsupported(f"id() of {obj.describe()}, an object made by the trace")
    if isinstance(obj, TensorVariable):
        real = obj.real_value(tx)
    elif isinstance(obj, ObjectVariableBase) and hasattr(obj, "value"):
        real = obj.value
    else:
        raise Unsupported(f"id() of {obj.describe()}")
    address = id(real)
    tx.guards.add(GuardKind.ID_MATCH, f"id({source.name}) == {address}", tx.guards.code("___id(", source, f") == {address}"), source)
    return ConstantVariable(address)



def run_pure(tx: TracerContext, fn: Any, args: tuple, kwargs: dict) -> VariableTracker:
    value = fn(*[_real_value(tx, a) for a in args], **{k: _real_value(tx, v) for k, v in kwargs.items()})
    if is_literal(value):
        return ConstantVariable(value)
    return tx.wrap(value, PrivateObjectSource.of(value))


_LEGACY_TENSOR_TYPE = type(torch.FloatTensor)  # torch.FloatTensor, torch.cuda.HalfTensor...


def _flat_classes(cls: Any) -> list[Any]:
    if isinstance(cls, tuple):
        return [c for item in cls for c in _flat_classes(item)]
    return [cls]


def _instancecheck(tx: TracerContext, obj: VariableTracker, cls: Any) -> bool:
    """``isinstance(obj, cls)`` for one class, as its metaclass's __instancecheck__ decides."""
    check = class_static(tx, type(cls), "__instancecheck__")
    if check is None or check is type.__instancecheck__ or not isinstance(cls, type):
        # A plain class, or a typing alias (whose check is a subclass check of the type); where
        # the type is no subclass, CPython asks obj.__class__ too.
        if subclass_check(tx, obj.python_type(), cls):
            return True
        _class_read(tx, obj, cls)
        return False
    if isinstance(cls, type) and isinstance(type(cls), type) and issubclass(type(cls), abc.ABCMeta) and (
            check is abc.ABCMeta.__instancecheck__):
        # ABCMeta checks obj.__class__, then the type.
        _class_read(tx, obj, cls)
        return subclass_check(tx, obj.python_type(), cls)
    if type(cls) is _LEGACY_TENSOR_TYPE:
        # torch.FloatTensor: the dtype and the device (guarded on inputs, derived in the graph).
        if is_tensor(obj):
            return isinstance(obj.example, cls)
        return False if isinstance(obj, (ConstantVariable, BaseListVariable, ConstDictVariable, SetVariable)) else \
            _unsupported_check(cls)
    if cls is torch.nn.Parameter:
        # _ParameterMeta: a Parameter, or a plain tensor marked `_is_param` (never a graph
        # intermediate; an input tensor would have to be asked for real).
        if issubclass(obj.python_type(), cls):
            return True
        if is_tensor(obj) and obj.source is not None:
            raise Unsupported("isinstance(input tensor, nn.Parameter) reads its `_is_param` mark")
        return False
    if isinstance(check, types.FunctionType):  # the metaclass's own check, in Python: traced
        answer = UserFunctionVariable(check, ConstSource.of(check)).call_function(
            tx, [tx.wrap(cls, ConstSource.of(cls)), obj], {})
        return answer.truth(tx)
    if obj.is_python_constant() and isinstance(obj, ConstantVariable):
        return isinstance(obj.as_python_constant(), cls)  # a C check on a constant: the real check
    return _unsupported_check(cls)


_OBJECT_CLASS = object.__dict__["__class__"]
_FORWARDING_TYPES = (weakref.ProxyType, weakref.CallableProxyType)  # (their __class__ is the referent's)


def _class_read(tx: TracerContext, obj: VariableTracker, cls: Any) -> None:
    """``isinstance`` reads ``obj.__class__``: that is ``type(obj)``, with no code of the
    user's run, unless the object's class answers it itself, with a Python ``__getattribute__``
    or a ``__class__`` of its own (the class lookups guarded). Then the call breaks the graph
    and runs for real: its answer and the method's effects are eager's."""
    kind = obj.python_type()
    if (class_static(tx, kind, "__class__") is not _OBJECT_CLASS or kind in _FORWARDING_TYPES
            or type(class_static(tx, kind, "__getattribute__")) is types.FunctionType):
        raise Unsupported(f"isinstance() of a {kind.__qualname__} with {getattr(cls, '__qualname__', cls)!r} reads "
                          f"its __class__, which its class answers with its own code")


def _unsupported_check(cls: Any) -> bool:
    raise Unsupported(f"isinstance with {getattr(cls, '__qualname__', cls)!r}, whose metaclass "
                      f"{type(cls).__qualname__} has its own __instancecheck__")


@handler(isinstance)
def _isinstance(tx: TracerContext, obj: VariableTracker, classes: VariableTracker) -> VariableTracker:
    cls = _real_value(tx, classes)  # a class, a tuple of them, or a typing alias
    return ConstantVariable(any(_instancecheck(tx, obj, c) for c in _flat_classes(cls)))


@handler(issubclass)
def _issubclass(tx: TracerContext, cls: VariableTracker, classes: VariableTracker) -> VariableTracker:
    # Classes are constants of the trace: the real check (their metaclass's __subclasscheck__),
    # guarded on its answer.
    with raised_in_the_trace(TypeError):
        return ConstantVariable(subclass_check(tx, cls.as_python_constant(), classes.as_python_constant()))


@handler(setattr)
def _setattr(tx: TracerContext, obj: VariableTracker, name: VariableTracker, value: VariableTracker) -> VariableTracker:
    # The same path as STORE_ATTR: later reads of the attribute see the write.
    attr = name.as_python_constant()
    if type(attr) is not str:
        raise Unsupported("setattr() with a name that is not a str")
    obj.store_attr(tx, attr, value)
    return ConstantVariable(None)


@handler(delattr)
def _delattr(tx: TracerContext, obj: VariableTracker, name: VariableTracker) -> VariableTracker:
    attr = name.as_python_constant()
    if type(attr) is not str:
        raise Unsupported("delattr() with a name that is not a str")
    obj.store_attr(tx, attr, None)  # DELETE_ATTR's path
    return ConstantVariable(None)


@handler(type)
def _type(tx: TracerContext, obj: VariableTracker, *rest: VariableTracker) -> VariableTracker | None:
    if rest:
        return None
    return tx.wrap(obj.python_type(), None)


def _lookup(tx: TracerContext, obj: VariableTracker, attr: str) -> VariableTracker | None:
    """``obj.attr``, or None when it does not exist (then, for an input, guarded absent)."""
    try:
        return obj.var_getattr(tx, attr)
    except AttributeMissing as e:
        if obj.source is not None and not e.guarded:
            tx.guards.hasattr_match(obj.source, attr, False)
        return None


def read_attribute(tx: TracerContext, obj: VariableTracker, name: str) -> VariableTracker:
    """``obj.name`` (LOAD_ATTR, ``getattr``): where the trace knows the AttributeError CPython
    raises, the trace raises it (its absence guarded), for an ``except`` to handle."""
    try:
        return obj.var_getattr(tx, name)
    except AttributeMissing as e:
        if e.error is None:
            raise
        if obj.source is not None and not e.guarded:
            tx.guards.hasattr_match(obj.source, name, False)
        raise TracedException(e.error) from None


@handler(getattr)
def _getattr(tx: TracerContext, obj: VariableTracker, name: VariableTracker, default: VariableTracker | None = None) -> VariableTracker:
    attr = name.as_python_constant()
    if default is None:
        return read_attribute(tx, obj, attr)
    found = _lookup(tx, obj, attr)
    return default if found is None else found


@handler(hasattr)
def _hasattr(tx: TracerContext, obj: VariableTracker, name: VariableTracker) -> VariableTracker:
    return ConstantVariable(_lookup(tx, obj, name.as_python_constant()) is not None)


@handler(range)
def _range(tx: TracerContext, *args: VariableTracker) -> VariableTracker:
    bounds = [a.as_python_constant() for a in args]
    with raised_in_the_trace(TypeError, ValueError):  # (a zero step, a float bound: as eager raises)
        return RangeVariable(range(*bounds))


@handler(slice)
def _slice(tx: TracerContext, *args: VariableTracker) -> VariableTracker:
    parts = list(args) + [ConstantVariable(None)] * (3 - len(args))
    if len(args) == 1:
        parts = [ConstantVariable(None), args[0], ConstantVariable(None)]
    return SliceVariable(*parts)


@handler(reversed)
def _reversed(tx: TracerContext, seq: VariableTracker) -> VariableTracker:
    if isinstance(seq, ObjectVariableBase) or not isinstance(
            seq, (BaseListVariable, ConstDictVariable, ConstantVariable, DictViewVariable)):
        raise Unsupported(f"reversed() of {seq.describe()}")
    if isinstance(seq, ConstantVariable):
        cls = type(reversed(seq.as_python_constant()))
    elif isinstance(seq, RangeVariable):
        cls = type(reversed(seq.value))
    elif isinstance(seq, DictViewVariable):
        cls = seq.reversed_type()
    else:
        real = seq.python_type()
        if real not in (list, tuple, dict, collections.OrderedDict, torch.Size):  # a subclass may define __reversed__
            raise Unsupported(f"reversed() of a {real.__name__}")
        cls = type(reversed(real()))
    return IteratorVariable(list(reversed(seq.unpack(tx))), cls)


HANDLERS[list] = lambda tx, iterable=None: ListVariable(iterable.unpack(tx) if iterable is not None else [])
HANDLERS[tuple] = lambda tx, iterable=None: TupleVariable(iterable.unpack(tx) if iterable is not None else [])


@handler(dict)
def _dict(tx: TracerContext, arg: VariableTracker | None = None, **kwargs: VariableTracker) -> VariableTracker:
    items: dict[Any, VariableTracker] = {}
    if arg is not None:
        update_items(tx, items, arg)
    items.update(kwargs)
    return ConstDictVariable(items)


@handler(collections.OrderedDict)
def _ordered_dict(tx: TracerContext, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker:
    plain = _dict(tx, *args, **kwargs)
    return ConstDictVariable(plain.items, user_cls=collections.OrderedDict)


@handler(collections.defaultdict)
def _defaultdict(tx: TracerContext, factory: VariableTracker | None = None, *args: VariableTracker) -> VariableTracker:
    plain = _dict(tx, *args)
    return ConstDictVariable(plain.items, user_cls=collections.defaultdict, default_factory=factory or ConstantVariable(None))


HANDLERS[set] = lambda tx, iterable=None: SetVariable.of(tx, iterable, False)
HANDLERS[frozenset] = lambda tx, iterable=None: SetVariable.of(tx, iterable, True)


@handler(callable)
def _callable(tx: TracerContext, obj: VariableTracker) -> VariableTracker | None:
    answer = obj.is_callable(tx)
    return None if answer is None else ConstantVariable(answer)  # (None: a constant, folded)


@handler(sorted)
def _sorted(tx: TracerContext, iterable: VariableTracker, *, key: VariableTracker | None = None,
            reverse: VariableTracker | None = None) -> VariableTracker:
    items = iterable.unpack(tx)
    keys = sort_keys(tx, items, key)
    order = sorted(range(len(items)), key=keys.__getitem__, reverse=bool(reverse.as_python_constant()) if reverse else False)
    return ListVariable([items[i] for i in order])


# Builtins everyone can reach by name through LOAD_GLOBAL.
BUILTIN_NAMES = {name: value for name, value in vars(builtins).items() if callable(value)}
