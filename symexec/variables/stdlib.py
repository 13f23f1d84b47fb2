"""The standard library, modelled on trackers: ``itertools`` over iterables known while
tracing, ``operator.itemgetter``/``attrgetter``/``methodcaller`` (made inside or passed in),
``tuple.__new__`` (a namedtuple's ``_make``), ``dict.fromkeys``, and ``inspect``'s predicates
and signatures. Handlers register in ``object_protocol.HANDLERS`` like the builtins'."""

from __future__ import annotations

import collections
import functools
import inspect
import itertools
import operator
import os
import types
from typing import Any, Callable

from .. import versions
from ..context import TracerContext
from ..exc import TracedException, Unsupported
from ..guards import GuardKind
from ..source import AttrSource, EnvironItemSource, PrivateObjectSource
from .base import VariableTracker, class_static
from .builtin_functions import CLASS_METHODS, HANDLERS, BuiltinVariable, Handler, handler, held_elsewhere, lazy_source, run_pure
from .dicts import ConstDictVariable
from .constant import ConstantVariable, is_literal, wrap_constant
from .functions import UserMethodVariable
from .lists import IteratorVariable, NamedTupleVariable, TupleVariable
from .user_objects import UserDefinedObjectVariable


# -- itertools over iterables known while tracing: their items, computed at once (as zip and
# enumerate over containers are); each keeps the real iterator's type. CPython's chain, islice,
# pairwise, zip_longest, accumulate and filterfalse take their items as they are asked for: over
# an iterator that someone else holds or whose items run code when taken (a generator, a lazy
# map), they run lazily (``PulledIteratorVariable``); product, combinations and permutations
# take every item at once, as CPython's do (over an iterator held elsewhere, they break). Arguments
# itertools would reject (a wrong count, a negative bound) break the graph, and CPython raises
# for real.
_AT_ONCE = (itertools.product, itertools.combinations, itertools.permutations)


def _itertools(cls: type, lazy: Callable[..., Any] | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def checked(tx: TracerContext, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker:
            waits = held_elsewhere if cls in _AT_ONCE else lazy_source
            try:
                if any(waits(tx, a) for a in (*args, *kwargs.values())):
                    if lazy is None:
                        # (computed at once, it would take items before CPython's does)
                        raise Unsupported(f"itertools.{cls.__name__} over an iterator")
                    return lazy(tx, *args, **kwargs)
                return IteratorVariable(fn(tx, *args, **kwargs), cls)
            except (TypeError, ValueError) as e:
                raise Unsupported(f"itertools.{cls.__name__} raises {type(e).__name__}: {e}") from e
        return handler(cls)(checked)
    return register


class PulledIteratorVariable(IteratorVariable):
    """``itertools.chain``, ``islice``, ``pairwise``, ``zip_longest``, ``accumulate`` or
    ``filterfalse`` over iterators whose items must be taken when CPython takes them: the real itertools object, run over the trackers, pulls each item from its
    sources as the consumer asks for one (``iter(source.next_item, None)``: an exception a
    source raises goes on to the consumer and leaves the source in place, as CPython's)."""

    models = (itertools.chain, itertools.islice, itertools.pairwise, itertools.zip_longest, itertools.accumulate,
              itertools.filterfalse)

    def __init__(self, cls: type, pulled: Any, sources: list[VariableTracker]) -> None:
        super().__init__([], cls)
        self.pulled, self.sources = pulled, sources
        self.exhausted = False

    def pending(self) -> bool:
        return not self.exhausted

    def next_item(self) -> VariableTracker | None:
        if self.index >= len(self.items):
            item = None if self.exhausted else next(self.pulled, None)
            if item is None:
                self.exhausted = True
                return None
            self.items.append(item)
        return super().next_item()

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        rest = []
        while (item := self.next_item()) is not None:
            rest.append(item)
        return rest

    def subvalues(self) -> list[VariableTracker]:
        return [*self.items[self.index:], *self.sources]

    def reconstruct(self, cg: Any) -> None:
        if not self.exhausted:
            raise Unsupported(f"an itertools.{self.cls.__name__} object not yet consumed at a graph break")
        super().reconstruct(cg)


def _pulled(tx: TracerContext, iterables: tuple[VariableTracker, ...]) -> tuple[list[Any], list[Any]]:
    """The iterators of ``iterables`` (trackers), and a Python iterator over each one's items."""
    sources = [BuiltinVariable(iter).call_function(tx, [it], {}) for it in iterables]
    return sources, [iter(source.next_item, None) for source in sources]


def _lazy_chain(tx: TracerContext, *iterables: VariableTracker) -> VariableTracker:
    sources, pulled = _pulled(tx, iterables)
    return PulledIteratorVariable(itertools.chain, itertools.chain(*pulled), sources)


def _lazy_islice(tx: TracerContext, iterable: VariableTracker, *bounds: VariableTracker) -> VariableTracker:
    sources, pulled = _pulled(tx, (iterable,))
    return PulledIteratorVariable(itertools.islice, itertools.islice(pulled[0], *[b.as_python_constant() for b in bounds]), sources)


def _rows(rows: Any) -> Any:
    return map(lambda row: TupleVariable(list(row)), rows)


def _lazy_pairwise(tx: TracerContext, iterable: VariableTracker) -> VariableTracker:
    sources, pulled = _pulled(tx, (iterable,))
    return PulledIteratorVariable(itertools.pairwise, _rows(itertools.pairwise(pulled[0])), sources)


def _lazy_zip_longest(tx: TracerContext, *iterables: VariableTracker, fillvalue: VariableTracker | None = None) -> VariableTracker:
    sources, pulled = _pulled(tx, iterables)
    fill = fillvalue if fillvalue is not None else ConstantVariable(None)
    return PulledIteratorVariable(itertools.zip_longest, _rows(itertools.zip_longest(*pulled, fillvalue=fill)), sources)


def _lazy_accumulate(tx: TracerContext, iterable: VariableTracker, func: VariableTracker | None = None, *,
                     initial: VariableTracker | None = None) -> VariableTracker:
    sources, pulled = _pulled(tx, (iterable,))
    step = BuiltinVariable(operator.add) if _none(func) else func
    items = itertools.accumulate(pulled[0], lambda a, b: step.call_function(tx, [a, b], {}),
                                 initial=None if _none(initial) else initial)
    return PulledIteratorVariable(itertools.accumulate, items, [*sources, step])


def _lazy_filterfalse(tx: TracerContext, predicate: VariableTracker, iterable: VariableTracker) -> VariableTracker:
    sources, pulled = _pulled(tx, (iterable,))
    if _none(predicate):
        items = itertools.filterfalse(lambda v: v.truth(tx), pulled[0])
    else:
        items = itertools.filterfalse(lambda v: predicate.call_function(tx, [v], {}).truth(tx), pulled[0])
    return PulledIteratorVariable(itertools.filterfalse, items, [*sources, predicate])


def _none(var: VariableTracker | None) -> bool:
    return var is None or (var.is_python_constant() and var.as_python_constant() is None)


@_itertools(itertools.chain, _lazy_chain)
def _chain(tx: TracerContext, *iterables: VariableTracker) -> list[VariableTracker]:
    return [item for it in iterables for item in it.unpack(tx)]


@_itertools(itertools.product)
def _product(tx: TracerContext, *iterables: VariableTracker, repeat: VariableTracker | None = None) -> list[VariableTracker]:
    pools = [it.unpack(tx) for it in iterables] * (1 if repeat is None else repeat.as_python_constant())
    return [TupleVariable(list(row)) for row in itertools.product(*pools)]


@_itertools(itertools.combinations)
def _combinations(tx: TracerContext, iterable: VariableTracker, r: VariableTracker) -> list[VariableTracker]:
    return [TupleVariable(list(row)) for row in itertools.combinations(iterable.unpack(tx), r.as_python_constant())]


@_itertools(itertools.permutations)
def _permutations(tx: TracerContext, iterable: VariableTracker, r: VariableTracker | None = None) -> list[VariableTracker]:
    count = None if r is None else r.as_python_constant()
    return [TupleVariable(list(row)) for row in itertools.permutations(iterable.unpack(tx), count)]


@_itertools(itertools.pairwise, _lazy_pairwise)
def _pairwise(tx: TracerContext, iterable: VariableTracker) -> list[VariableTracker]:
    return [TupleVariable(list(pair)) for pair in itertools.pairwise(iterable.unpack(tx))]


@_itertools(itertools.islice, _lazy_islice)
def _islice(tx: TracerContext, iterable: VariableTracker, *bounds: VariableTracker) -> list[VariableTracker]:
    return list(itertools.islice(iterable.unpack(tx), *[b.as_python_constant() for b in bounds]))


@_itertools(itertools.zip_longest, _lazy_zip_longest)
def _zip_longest(tx: TracerContext, *iterables: VariableTracker, fillvalue: VariableTracker | None = None) -> list[VariableTracker]:
    fill = fillvalue if fillvalue is not None else ConstantVariable(None)
    return [TupleVariable(list(row)) for row in itertools.zip_longest(*[it.unpack(tx) for it in iterables], fillvalue=fill)]


@_itertools(itertools.accumulate, _lazy_accumulate)
def _accumulate(tx: TracerContext, iterable: VariableTracker, func: VariableTracker | None = None, *,
                initial: VariableTracker | None = None) -> list[VariableTracker]:
    items = iterable.unpack(tx) if _none(initial) else [initial, *iterable.unpack(tx)]
    step = BuiltinVariable(operator.add) if _none(func) else func
    out: list[VariableTracker] = []
    for item in items:
        out.append(item if not out else step.call_function(tx, [out[-1], item], {}))
    return out


@_itertools(itertools.filterfalse, _lazy_filterfalse)
def _filterfalse(tx: TracerContext, predicate: VariableTracker, iterable: VariableTracker) -> list[VariableTracker]:
    items = iterable.unpack(tx)
    if _none(predicate):
        return [v for v in items if not v.truth(tx)]
    return [v for v in items if not predicate.call_function(tx, [v], {}).truth(tx)]


# -- operator.itemgetter, attrgetter and methodcaller made with constants ---------------------
class OperatorCallableVariable(VariableTracker):
    """``operator.itemgetter(1)`` and its kin, made in the trace from constants: the real
    object (immutable) stands for itself; calling it does what it does, on trackers."""

    models = (operator.itemgetter, operator.attrgetter, operator.methodcaller)

    def __init__(self, value: Any, args: tuple, kwargs: dict[str, Any]) -> None:
        super().__init__()
        self.value, self.args, self.kwargs = value, args, kwargs

    def python_type(self) -> type:
        return type(self.value)

    def as_python_constant(self) -> Any:
        return self.value

    def describe(self) -> str:
        return f"operator.{type(self.value).__name__}"

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if len(args) != 1 or kwargs:
            raise Unsupported(f"calling {self.describe()} with {len(args)} arguments")
        obj = args[0]
        kind = type(self.value)
        if kind is operator.methodcaller:
            name, *method_args = self.args
            return obj.call_method(tx, name, [wrap_constant(a) for a in method_args],
                                   {k: wrap_constant(v) for k, v in self.kwargs.items()})
        if kind is operator.itemgetter:
            got = [BuiltinVariable(operator.getitem).call_function(tx, [obj, wrap_constant(i)], {}) for i in self.args]
        else:
            got = []
            for dotted in self.args:
                value = obj
                for part in dotted.split("."):
                    value = BuiltinVariable(getattr).call_function(tx, [value, ConstantVariable(part)], {})
                got.append(value)
        return got[0] if len(got) == 1 else TupleVariable(got)

    def reconstruct(self, cg: Any) -> None:
        cg.load_const(self.value)


def _make_operator_handler(kind: type) -> Callable[..., VariableTracker]:
    def make(tx: TracerContext, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker:
        try:
            const_args = tuple(a.as_python_constant() for a in args)
            const_kwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
        except Unsupported:
            raise Unsupported(f"operator.{kind.__name__} of values not known while tracing") from None
        try:
            value = kind(*const_args, **const_kwargs)
        except (TypeError, ValueError) as e:
            raise Unsupported(f"operator.{kind.__name__} raises {type(e).__name__}: {e}") from e
        return OperatorCallableVariable(value, const_args, const_kwargs)
    return make


for _kind in (operator.itemgetter, operator.attrgetter, operator.methodcaller):
    HANDLERS[_kind] = _make_operator_handler(_kind)


def operator_callable(value: Any) -> OperatorCallableVariable:
    """An itemgetter/attrgetter/methodcaller made outside: what it does, read from how it pickles
    (the object is immutable: pinned by identity, it does the same on every call)."""
    maker, args = value.__reduce__()
    kwargs: dict[str, Any] = {}
    if isinstance(maker, functools.partial):  # methodcaller with keyword arguments
        args, kwargs = (*maker.args, *args), dict(maker.keywords)
    if not is_literal(args) or not all(is_literal(v) for v in kwargs.values()):
        raise Unsupported(f"an operator.{type(value).__name__} of values that are not constants")
    return OperatorCallableVariable(value, tuple(args), kwargs)


# -- tuple.__new__(cls, iterable): a namedtuple's ``_make`` (and so ``_replace``) -------------
@handler(tuple.__new__)
def _tuple_new(tx: TracerContext, cls: VariableTracker, iterable: VariableTracker | None = None) -> VariableTracker | None:
    klass = cls.as_python_constant()
    items = iterable.unpack(tx) if iterable is not None else []
    if klass is tuple:
        return TupleVariable(items)
    if isinstance(klass, type) and issubclass(klass, tuple) and class_static(tx, klass, "_fields") is not None:
        return NamedTupleVariable(items, klass)  # (no length check: _make checks it, as CPython's does)
    return None


# -- dict.fromkeys(keys, value): every key maps to the one value object -------------------------
def _fromkeys_handler(cls: type) -> Callable[..., VariableTracker]:
    def fromkeys(tx: TracerContext, keys: VariableTracker, value: VariableTracker | None = None) -> VariableTracker:
        shared = value if value is not None else ConstantVariable(None)
        return ConstDictVariable({k.as_python_constant(): shared for k in keys.unpack(tx)}, user_cls=cls)
    return fromkeys


for _cls in (dict, collections.OrderedDict):
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
