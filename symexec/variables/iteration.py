"""Iteration builtins: ``iter``, ``next``, ``enumerate``, ``zip``, ``map``, ``filter`` and
``operator.length_hint``. Over containers the iterators they make compute their items at once
(no one else can see when); over an iterator someone else holds, or whose items run code (a
user iterator, a generator, a lazy ``map``), they are lazy as CPython's (``LazyIteratorVariable``),
and one not yet consumed at a graph break is rebuilt for real from its sources."""

from __future__ import annotations

import functools
import operator
from typing import Any

import torch

from ..context import TracerContext
from ..exc import TracedException, Unsupported
from .base import VariableTracker, class_static, reachable
from .builtin_subclasses import SubclassInstance
from .builtin_functions import FOLDABLE, BuiltinVariable, handler
from .constant import ConstantVariable
from .dicts import ConstDictVariable, DictViewVariable
from .lists import BaseListVariable, IteratorVariable, ListVariable, RangeVariable, TupleVariable, iterator_type, rebuilt_exactly
from .sets import SetVariable
from .tensor import TensorVariable
from .user_objects import ObjectVariableBase, UserIteratorVariable


@handler(operator.length_hint)
def _length_hint(tx: TracerContext, obj: VariableTracker, default: VariableTracker | None = None) -> VariableTracker | None:
    """``len(obj)`` where it has a length; an iterator of the trace's over items known while
    tracing: how many remain, where its real type has ``__length_hint__`` (else the default)."""
    if default is not None and not (default.is_python_constant() and type(default.as_python_constant()) is int):
        return None  # (folded: the TypeError, or a constant's answer)
    if isinstance(obj, IteratorVariable) and obj.cls is not None and not obj.pending() \
            and type(obj) in (IteratorVariable, LazyIteratorVariable):
        if class_static(tx, obj.cls, "__length_hint__") is not None:
            return ConstantVariable(len(obj.items) - obj.index)
        if class_static(tx, obj.cls, "__len__") is None:
            return default if default is not None else ConstantVariable(0)
    if default is not None and isinstance(obj, IteratorVariable):
        return None
    return BuiltinVariable(len).call_function(tx, [obj], {})


def _iter_type(obj: VariableTracker) -> type | None:
    """The type of ``iter(obj)``, where it is known exactly (None otherwise)."""
    if isinstance(obj, RangeVariable):
        return type(iter(obj.value))
    if isinstance(obj, TensorVariable) and obj.python_type() is torch.Tensor:
        return type(iter(()))  # (Tensor.__iter__: a tuple iterator over its unbound rows)
    if isinstance(obj, ConstantVariable):
        return iterator_type(None, obj.as_python_constant())
    if isinstance(obj, DictViewVariable):
        return obj.iterator_type()
    if isinstance(obj, (BaseListVariable, ConstDictVariable, SetVariable)):
        try:  # (a list or dict subclass iterates as its builtin base: its own __iter__ makes it an object)
            return iterator_type(obj.base if isinstance(obj, SubclassInstance) else obj.python_type())
        except Unsupported:
            return None
    return None


@handler(iter)
def _iter(tx: TracerContext, obj: VariableTracker, *rest: VariableTracker) -> VariableTracker:
    if rest:
        raise Unsupported("iter(callable, sentinel)")
    it = iterator_of(tx, obj)
    # (a user iterator is its own object: ``iter(it)`` hands that object back)
    return it.obj if isinstance(it, UserIteratorVariable) and not it.by_index else it


def iterator_of(tx: TracerContext, obj: VariableTracker) -> IteratorVariable:
    """The iterator a consumer takes ``obj``'s items from: a user object's takes them one at a
    time (``__next__`` or ``__getitem__``), as CPython does."""
    if isinstance(obj, IteratorVariable):
        return obj
    if isinstance(obj, ObjectVariableBase) and type(obj).unpack is ObjectVariableBase.unpack:
        return obj.iterate(tx)  # (a generator of its __iter__ too: taken item by item, when CPython does)
    it = IteratorVariable(obj.unpack(tx), _iter_type(obj))
    if type(obj) is ListVariable:
        it.origin = obj
    return it


@handler(next)
def _next(tx: TracerContext, it: VariableTracker, default: VariableTracker | None = None) -> VariableTracker:
    if isinstance(it, ObjectVariableBase) and it.has_python_method(tx, "__next__"):
        it = UserIteratorVariable(tx, it, it.cls, by_index=False)
    if not isinstance(it, IteratorVariable):
        raise Unsupported(f"next() on {it.describe()}")
    item = it.next_item()
    if item is None:
        if default is None:
            raise it.stop_error()
        return default
    return item


# enumerate, zip, map and filter over containers compute their items at once: the iterators
# they make over them are their own, so when items are taken cannot be seen. Over an iterator
# someone else holds too (the caller, a local, a loop, a container) they are lazy, as in
# CPython: each item taken from it when asked for.
def held_elsewhere(tx: TracerContext, iterator: VariableTracker) -> bool:
    """Whether an iterator handed to a combinator can be seen by anyone else: one passed in
    (the caller holds it), or one that a frame's locals, stack or cells, or a value the trace
    wrote somewhere, reach."""
    if not isinstance(iterator, IteratorVariable):
        return False
    if iterator.source is not None:
        return True
    effects = tx.trace.side_effects
    roots: list[Any] = [*effects.globals.values(), *(v for _, v in effects.cells.values()),
                        *(v for _, _, v in effects.attributes.values()), *effects.containers.values()]
    for frame in tx.trace.translators:
        roots += [*frame.locals.values(), *frame.stack, *frame.cells.values()]
    return any(var is iterator for var in reachable(roots, set()))


def lazy_source(tx: TracerContext, iterable: VariableTracker) -> bool:
    """Whether a combinator over ``iterable`` must take its items when CPython would: someone
    else holds the iterator, or taking an item runs code (a generator, a lazy ``map``)."""
    return isinstance(iterable, IteratorVariable) and (iterable.pending() or held_elsewhere(tx, iterable))


@handler(enumerate)
def _enumerate(tx: TracerContext, iterable: VariableTracker, start: VariableTracker | None = None) -> VariableTracker:
    first = start.as_python_constant() if start is not None else 0
    if isinstance(iterable, ObjectVariableBase):
        iterable = iterator_of(tx, iterable)
    if lazy_source(tx, iterable):
        return LazyIteratorVariable(tx, enumerate, ConstantVariable(first), [iterable])
    return IteratorVariable([TupleVariable([ConstantVariable(first + i), v]) for i, v in enumerate(iterable.unpack(tx))],
                            enumerate)


@handler(zip)
def _zip(tx: TracerContext, *iterables: VariableTracker, strict: VariableTracker | None = None) -> VariableTracker:
    iterables = tuple(iterator_of(tx, it) if isinstance(it, ObjectVariableBase) else it for it in iterables)  # (lazy)
    # (lazy unless strict: a zip returned or alive at a graph break is rebuilt as a zip)
    if strict is None or any(lazy_source(tx, it) for it in iterables):
        if strict is not None and strict.as_python_constant():
            raise Unsupported("zip(strict=True) over an iterator")
        return LazyIteratorVariable(tx, zip, ConstantVariable(None), [iterator_of(tx, it) for it in iterables])
    columns = [it.unpack(tx) for it in iterables]
    if strict is not None and strict.as_python_constant() and len({len(c) for c in columns}) > 1:
        raise Unsupported("zip(strict=True) with iterables of different lengths")
    return IteratorVariable([TupleVariable(list(row)) for row in zip(*columns)], zip)


@handler(map)
def _map(tx: TracerContext, fn: VariableTracker, *iterables: VariableTracker) -> VariableTracker:
    if not iterables:
        raise Unsupported("TypeError: map() must have at least two arguments.")
    return LazyIteratorVariable(tx, map, fn, [iterator_of(tx, it) for it in iterables],
                                shared=any(lazy_source(tx, it) for it in iterables))


@handler(filter)
def _filter(tx: TracerContext, fn: VariableTracker, iterable: VariableTracker) -> VariableTracker:
    return LazyIteratorVariable(tx, filter, fn, [iterator_of(tx, iterable)], shared=lazy_source(tx, iterable))


class LazyIteratorVariable(IteratorVariable):
    """``map(fn, ...)`` or ``filter(fn, ...)``, and ``zip``/``enumerate`` over an iterator
    (``fn`` is then None, or enumerate's start): lazy, as in CPython. ``fn`` runs when an item
    is asked for, so what it does (appending to a list...) happens when eager does it, and an
    iterator passed in gives up its items only then."""

    models = (map, filter, zip, enumerate)

    def __init__(self, tx: TracerContext, cls: type, fn: VariableTracker, sources: list[IteratorVariable],
                 shared: bool = False) -> None:
        super().__init__([], cls)
        self.tx, self.fn, self.sources = tx, fn, sources
        self.keep_truthy = cls is filter and fn.is_python_constant() and fn.as_python_constant() is None
        self.exhausted = False
        self.counter = fn.as_python_constant() if cls is enumerate else 0
        if cls in (map, filter) and (self.keep_truthy or (isinstance(fn, BuiltinVariable) and fn.fn in FOLDABLE)) \
                and not shared:
            # A pure function over iterators of its own: computing every item now is the same
            # as computing them later.
            while self._pull(tx):
                pass

    def pending(self) -> bool:
        return not self.exhausted

    def _pull(self, tx: TracerContext) -> bool:
        """Compute one more item; False when the sources are exhausted."""
        if self.exhausted:
            return False
        while True:
            row = []
            for source in self.sources:
                item = source.next_item()
                if item is None:
                    self.exhausted = True
                    return False
                row.append(item)
            if self.cls is map:
                self.items.append(self.fn.call_function(tx, row, {}))
                return True
            if self.cls is zip:
                self.items.append(TupleVariable(row))
                return True
            if self.cls is enumerate:
                self.items.append(TupleVariable([ConstantVariable(self.counter), row[0]]))
                self.counter += 1
                return True
            test = row[0] if self.keep_truthy else self.fn.call_function(tx, row, {})
            if test.truth(tx):
                self.items.append(row[0])
                return True

    def next_item(self) -> VariableTracker | None:
        if self.index >= len(self.items) and not self._pull(self.tx):
            return None
        return super().next_item()

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        while self._pull(tx):
            pass
        return super().unpack(tx)

    def subvalues(self) -> list[VariableTracker]:
        return [*self.items[self.index:], self.fn, *self.sources]

    def exact_rebuild(self) -> bool:
        return not self.exhausted and self.index == len(self.items) and all(map(rebuilt_exactly, self.sources))

    def reconstruct(self, cg: Any) -> None:
        if self.exhausted:  # every item is known: a tuple iterator over those still to come
            super().reconstruct(cg)
            return
        if self.index < len(self.items):
            raise Unsupported(f"a {self.cls.__name__} object with items computed ahead at a graph break")
        if not all(rebuilt_exactly(source) for source in self.sources):
            raise Unsupported(f"a {self.cls.__name__} object over a list or an iterator not rebuilt exactly at a graph break")
        # The real object over its sources as they are now: ``map(fn, *its)``, ``filter(fn, it)``,
        # ``zip(*its)``, ``enumerate(it, next count)``.

        def parts() -> list[None]:
            if self.cls in (map, filter):
                cg.reconstruct(self.fn)
            for source in self.sources:
                cg.reconstruct(source)
            if self.cls is enumerate:
                cg.load_const(self.counter)
            return [None] * (len(self.sources) + (self.cls in (map, filter, enumerate)))
        cg.call_const(self.cls, parts)

    def __repr__(self) -> str:
        return f"LazyIteratorVariable({self.cls.__name__}, {self.index} read)"


@handler(functools.reduce)
def _reduce(tx: TracerContext, fn: VariableTracker, iterable: VariableTracker, initial: VariableTracker | None = None) -> VariableTracker:
    it = iterator_of(tx, iterable)  # (each item taken when CPython takes it: between the calls)
    acc = initial if initial is not None else it.next_item()
    if acc is None:
        raise TracedException(TypeError("reduce() of empty iterable with no initial value"))
    while (item := it.next_item()) is not None:
        acc = fn.call_function(tx, [acc, item], {})
    return acc
