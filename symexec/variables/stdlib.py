"""The standard library, modelled on trackers (``itertools`` is in ``itertools_objects.py``):
``operator.itemgetter``/``attrgetter``/``methodcaller`` (made inside or passed in),
``tuple.__new__`` (a namedtuple's ``_make``), ``dict.fromkeys``, and ``inspect``'s predicates
and signatures. Handlers register in ``object_protocol.HANDLERS`` like the builtins'."""

from __future__ import annotations

import collections
import functools
import inspect
import operator
import os
import pickle
import sys
import types
import weakref
from typing import Any, Callable

from .. import versions
from ..context import TracerContext
from ..exc import TracedException, Unsupported
from ..guards import GuardKind
from ..source import AttrSource, EnvironItemSource, LocalSource, PrivateObjectSource, Source, WeakRefTargetSource
from .base import VariableTracker, class_static, hash_key
from .builtin_functions import CLASS_METHODS, HANDLERS, BuiltinVariable, Handler, handler, run_pure
from .dicts import ConstDictVariable
from .constant import ConstantVariable, is_literal, wrap_constant
from .functions import UserMethodVariable
from .lists import NamedTupleVariable, TupleVariable
from .user_objects import UserDefinedObjectVariable


# -- operator.itemgetter, attrgetter and methodcaller ---------------------------------------------
class OperatorCallableVariable(VariableTracker):
    """``operator.itemgetter(1)`` and its kin: what it was made with, as trackers. Made from
    constants, the real object (immutable) stands for itself; a ``methodcaller`` made in the
    trace with other values (a tensor to add) is rebuilt from them. Calling it does what it
    does, on trackers."""

    models = (operator.itemgetter, operator.attrgetter, operator.methodcaller)

    def __init__(self, kind: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker], value: Any = None) -> None:
        super().__init__()
        self.kind, self.args, self.kwargs, self.value = kind, args, kwargs, value

    def python_type(self) -> type:
        return self.kind

    def as_python_constant(self) -> Any:
        if self.value is None:
            raise Unsupported(f"{self.describe()} of values not known while tracing is not a constant")
        return self.value

    def describe(self) -> str:
        return f"operator.{self.kind.__name__}"

    def subvalues(self) -> list[VariableTracker]:
        return [*self.args, *self.kwargs.values()]

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if len(args) != 1 or kwargs:
            raise Unsupported(f"calling {self.describe()} with {len(args)} arguments")
        obj = args[0]
        if self.kind is operator.methodcaller:
            return obj.call_method(tx, self.args[0].as_python_constant(), list(self.args[1:]), dict(self.kwargs))
        if self.kind is operator.itemgetter:
            got = [BuiltinVariable(operator.getitem).call_function(tx, [obj, i], {}) for i in self.args]
        else:
            got = []
            for dotted in self.args:
                value = obj
                for part in dotted.as_python_constant().split("."):
                    value = BuiltinVariable(getattr).call_function(tx, [value, ConstantVariable(part)], {})
                got.append(value)
        return got[0] if len(got) == 1 else TupleVariable(got)

    def reconstruct(self, cg: Any) -> None:
        if self.value is not None:
            cg.load_const(self.value)
            return
        cg.call_const(_methodcaller, lambda: [cg.reconstruct(TupleVariable(list(self.args))),
                                              cg.reconstruct(ConstDictVariable(dict(self.kwargs)))])


def _methodcaller(args: tuple, kwargs: dict) -> operator.methodcaller:
    """``operator.methodcaller(*args, **kwargs)`` (generated code: one made in the trace, rebuilt)."""
    return operator.methodcaller(*args, **kwargs)


def operator_callable(value: Any) -> OperatorCallableVariable:
    """An itemgetter/attrgetter/methodcaller made outside: what it does, read from how it pickles
    (the object is immutable: pinned by identity, it does the same on every call)."""
    maker, args = value.__reduce__()
    kwargs: dict[str, Any] = {}
    if isinstance(maker, functools.partial):  # methodcaller with keyword arguments
        args, kwargs = (*maker.args, *args), dict(maker.keywords)
    if not is_literal(args) or not all(is_literal(v) for v in kwargs.values()):
        raise Unsupported(f"an operator.{type(value).__name__} of values that are not constants")
    return OperatorCallableVariable(type(value), [wrap_constant(a) for a in args],
                                    {k: wrap_constant(v) for k, v in kwargs.items()}, value)


def _make_operator_handler(kind: type) -> Callable[..., VariableTracker]:
    def make(tx: TracerContext, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker:
        try:
            const_args = tuple(a.as_python_constant() for a in args)
            const_kwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
        except Unsupported:
            if kind is not operator.methodcaller or not args or not args[0].is_python_constant() or \
                    type(args[0].as_python_constant()) is not str:
                raise Unsupported(f"operator.{kind.__name__} of values not known while tracing") from None
            return OperatorCallableVariable(kind, list(args), dict(kwargs))  # (its name a str: it cannot raise)
        try:
            value = kind(*const_args, **const_kwargs)
        except (TypeError, ValueError) as e:
            raise Unsupported(f"operator.{kind.__name__} raises {type(e).__name__}: {e}") from e
        return OperatorCallableVariable(kind, list(args), dict(kwargs), value)
    return make


for _kind in (operator.itemgetter, operator.attrgetter, operator.methodcaller):
    HANDLERS[_kind] = _make_operator_handler(_kind)


# -- weakref.ref passed in ------------------------------------------------------------------------
class WeakRefVariable(VariableTracker):
    """A ``weakref.ref`` passed in (exactly that type): calling it gives what it refers to, read
    through ``L['w']()`` (guarded as any input: None once the referent is dead)."""

    models = weakref.ReferenceType

    def __init__(self, ref: weakref.ReferenceType, source: Source) -> None:
        super().__init__(source)
        self.ref = ref

    def python_type(self) -> type:
        return weakref.ReferenceType

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if args or kwargs:
            raise Unsupported("calling a weakref.ref with arguments (CPython's TypeError)")
        target = WeakRefTargetSource(self.source)
        return tx.wrap(self.ref(), target)

    def reconstruct(self, cg: Any) -> None:
        self.source.emit_load(cg)


# -- weakref.ref(obj) made inside -----------------------------------------------------------------
class NewWeakRefVariable(VariableTracker):
    """``weakref.ref(x)`` made by the trace, of an object held by a local of the compiled frame
    (an argument): calling it gives that object while the local still holds it (then CPython's
    referent is alive); once the local is rebound the graph breaks (it may be dead). Rebuilt as
    ``weakref.ref(x)`` (CPython hands back the one plain reference of an object). Not modelled:
    a callback, a referent not held by a local of the frame."""

    models = weakref.ReferenceType

    def __init__(self, tx: TracerContext, referent: VariableTracker) -> None:
        super().__init__(None)
        self.referent = referent
        self.frame = tx.trace.translators[0]  # (the compiled frame, whose local holds the referent)

    def python_type(self) -> type:
        return weakref.ReferenceType

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        name = self.referent.source.local  # type: ignore[union-attr]
        if args or kwargs or self.frame.locals.get(name) is not self.referent:
            raise Unsupported("calling a weak reference whose referent the frame no longer holds in its local")
        return self.referent

    def subvalues(self) -> list[VariableTracker]:
        return [self.referent]

    def reconstruct(self, cg: Any) -> None:
        cg.call_const(weakref.ref, lambda: [cg.reconstruct(self.referent)])


@handler(weakref.ref)
def _weakref_new(tx: TracerContext, obj: VariableTracker, *rest: VariableTracker) -> VariableTracker | None:
    if rest or not isinstance(obj.source, LocalSource) or obj.python_type().__weakrefoffset__ == 0 \
            or tx.trace.translators[0].locals.get(obj.source.local) is not obj:
        return None
    return NewWeakRefVariable(tx, obj)


# -- sys.intern(s): the one str object of that value (namedtuple() interns its field names) ----
@handler(sys.intern)
def _intern(tx: TracerContext, string: VariableTracker) -> VariableTracker | None:
    value = string.as_python_constant() if string.is_python_constant() else None
    if type(value) is not str:
        return None  # (a str subclass, or not a str: CPython's TypeError, not modelled)
    return ConstantVariable(sys.intern(value))


# -- tuple.__new__(cls, iterable): a namedtuple's ``_make`` (and so ``_replace``) -------------
@handler(tuple.__new__)
def _tuple_new(tx: TracerContext, cls: VariableTracker, iterable: VariableTracker | None = None) -> VariableTracker | None:
    klass = cls.as_python_constant()
    items = iterable.unpack(tx) if iterable is not None else []
    if klass is tuple:
        return TupleVariable(items)
    if isinstance(klass, type) and issubclass(klass, tuple) and class_static(tx, klass, "_fields") is not None:
        # (no length check: _make checks it, as CPython's does; a class the trace made is rebuilt
        # per run, and its instances through it)
        return NamedTupleVariable(items, klass, class_var=cls if cls.built_once else None)
    return None


# -- dict.fromkeys(keys, value): every key maps to the one value object -------------------------
def _fromkeys_handler(cls: type) -> Callable[..., VariableTracker]:
    def fromkeys(tx: TracerContext, keys: VariableTracker, value: VariableTracker | None = None) -> VariableTracker:
        shared = value if value is not None else ConstantVariable(None)
        # (a defaultdict made so has no factory: a missing key is a KeyError)
        factory = ConstantVariable(None) if cls is collections.defaultdict else None
        return ConstDictVariable({hash_key(k, tx): shared for k in keys.unpack(tx)}, user_cls=cls, default_factory=factory)
    return fromkeys


for _cls in (dict, collections.OrderedDict, collections.defaultdict):
    CLASS_METHODS[(_cls, "fromkeys")] = _cls.fromkeys
    HANDLERS[CLASS_METHODS[(_cls, "fromkeys")]] = _fromkeys_handler(_cls)


# Pure functions of the inspect module: they run for real on the objects the trace holds.
for _fn in (inspect.isclass, inspect.isfunction, inspect.ismethod, inspect.iscoroutinefunction,
            inspect.isgeneratorfunction):
    HANDLERS[_fn] = lambda tx, *args, _fn=_fn, **kwargs: run_pure(tx, _fn, args, kwargs)


def _signature_handler(inspector: Any, follows_wrapped: bool) -> Handler:
    def signature(tx: TracerContext, fn: VariableTracker, **kwargs: VariableTracker) -> VariableTracker:
        follow = kwargs["follow_wrapped"].as_python_constant() if "follow_wrapped" in kwargs else follows_wrapped
        _guard_signature_facts(tx, fn, bool(follow))
        return run_pure(tx, inspector, (fn,), kwargs)
    return signature


def _guard_signature_facts(tx: TracerContext, fn: VariableTracker, follow_wrapped: bool) -> None:
    """What ``inspect.signature`` reads of a function besides its code: the ``__wrapped__``
    chain it follows (functools.wraps; not with ``follow_wrapped=False`` nor for
    ``getfullargspec``), and, of the function at its end, its defaults and annotations
    (assignable) and the ``__signature__`` or partialmethod mark it would take instead."""
    if fn.source is not None and isinstance(fn.source.root(), PrivateObjectSource):
        return
    if isinstance(fn, UserMethodVariable):  # a bound method: its function's signature, less self
        fn = fn.fn
    value = fn.as_python_constant() if fn.is_python_constant() else None
    source = fn.source
    if source is None or not isinstance(value, types.FunctionType):
        raise Unsupported(f"the signature of {fn.describe()}")
    for _ in range(_WRAPPERS_FOLLOWED):
        if hasattr(value, "__signature__"):
            raise Unsupported(f"the signature of {fn.describe()}, which has __signature__")
        tx.guards.hasattr_match(source, "__signature__", False)
        if not follow_wrapped or not hasattr(value, "__wrapped__"):
            break
        value, source = value.__wrapped__, AttrSource(source, "__wrapped__")
        tx.guards.id_match(source, value)
        if not isinstance(value, types.FunctionType):
            raise Unsupported(f"the signature of {fn.describe()}, which wraps a {type(value).__name__}")
    else:
        raise Unsupported(f"the signature of {fn.describe()}: more than {_WRAPPERS_FOLLOWED} wrappers")
    if follow_wrapped:
        tx.guards.hasattr_match(source, "__wrapped__", False)
    partial = versions.V.partialmethod_attr  # (functools.partialmethod's mark)
    if hasattr(value, partial):
        raise Unsupported(f"the signature of {fn.describe()}, which has {partial}")
    tx.guards.hasattr_match(source, partial, False)
    for name in ("__defaults__", "__kwdefaults__", "__annotations__"):
        tx.guards.id_match(AttrSource(source, name), getattr(value, name))


_WRAPPERS_FOLLOWED = 8


HANDLERS[inspect.signature] = _signature_handler(inspect.signature, follows_wrapped=True)
HANDLERS[inspect.getfullargspec] = _signature_handler(inspect.getfullargspec, follows_wrapped=False)


# -- pickle.dumps of plain data: the bytes are a function of the value (memoize keys) -----------
_PLAIN_SCALARS = (type(None), bool, int, float, complex, str, bytes)


def _plain_data(value: Any) -> bool:
    """Builtin scalars and builtin containers of them, by exact type: what pickles the same
    every time, running no Python code (no ``__reduce__``, no subclass)."""
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return True
    if kind in (tuple, list):  # (not sets: their order is their history's, not the trace's copy's)
        return all(_plain_data(v) for v in value)
    return kind is dict and all(_plain_data(k) and _plain_data(v) for k, v in value.items())


@handler(pickle.dumps)
def _pickle_dumps(tx: TracerContext, obj: VariableTracker, protocol: VariableTracker | None = None) -> VariableTracker | None:
    """``pickle.dumps(value)`` of a value known while tracing made of plain data: computed (dict
    order included, as the trace holds it); anything else breaks the graph."""
    if not obj.is_python_constant() or (protocol is not None and not protocol.is_python_constant()):
        return None
    value = obj.as_python_constant()
    chosen = None if protocol is None else protocol.as_python_constant()
    if not _plain_data(value) or type(chosen) not in (type(None), int):
        return None
    try:
        return ConstantVariable(pickle.dumps(value, chosen))
    except ValueError as e:  # an unsupported protocol: raised as CPython raises it
        raise TracedException(e) from e


# -- os.environ ---------------------------------------------------------------------------------
# The methods of os._Environ that read one variable by its name (their stdlib functions).
_ENVIRON_READS = {"get": os._Environ.get, "__getitem__": os._Environ.__getitem__,
                  "__contains__": os._Environ.__contains__}


class EnvironVariable(UserDefinedObjectVariable):
    """``os.environ``: a variable read by its name (``get``, ``[name]``, ``in``) is guarded by
    its value alone, ``os.environ.get(name) == 'value'`` (or ``is None``). Traced as Python, the
    read went through ``Mapping.get`` into the environment's dict, and guarded the list of every
    variable's name: any variable set later recompiled (inductor sets one while it compiles).
    Anything else (a write, iteration, ``len``) is the object's own code, traced as it is."""

    models = os._Environ

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        found = super().var_getattr(tx, name)  # (the class lookup, guarded)
        if name in _ENVIRON_READS and isinstance(found, UserMethodVariable) and found.obj is self \
                and getattr(found.fn, "fn", None) is _ENVIRON_READS[name]:
            return EnvironReadVariable(found.fn, self, found.source, name)
        return found


class EnvironReadVariable(UserMethodVariable):
    """``os.environ.get`` / ``__getitem__`` / ``__contains__``, bound."""

    models = types.MethodType

    def __init__(self, fn: Any, obj: EnvironVariable, source: Any, name: str) -> None:
        super().__init__(fn, obj, source)
        self.name = name

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        arity = (1, 2) if self.name == "get" else (1,)
        if kwargs or len(args) not in arity or not args[0].is_python_constant() \
                or type(args[0].as_python_constant()) is not str:
            return super().call_function(tx, args, kwargs)
        key = args[0].as_python_constant()
        source = EnvironItemSource(self.obj.source, key)
        value = self.obj.value.get(key)  # type: ignore[attr-defined]
        test = "is None" if value is None else "is not None"  # (what the value is: guarded when used)
        tx.guards.add(GuardKind.EQUALS_MATCH, f"{source.name} {test}", tx.guards.code(source, f" {test}"), source)
        if self.name == "__contains__":
            return ConstantVariable(value is not None)
        if value is not None:
            return tx.wrap(value, source)
        if self.name == "get":
            return args[1] if len(args) == 2 else ConstantVariable(None)
        raise TracedException(KeyError(key))
