"""``itertools``' iterators, lazy as CPython's: each is a Python generator over trackers that
takes its arguments' items (``next_item``) only when an item is asked of it, so the callables
they call (``accumulate``'s function, ``takewhile``'s predicate, a ``map`` they read from) run
when eager runs them, and a loop that stops early leaves the rest untaken. Each follows its C
implementation's order of calls (``islice``'s skipping, ``zip_longest``'s fill, ``groupby``'s
groups that end when the next group is asked for). A wrong call raises what the real
constructor raises (it is run with empty iterables and the same constants)."""

from __future__ import annotations

import inspect
import itertools
import operator
from typing import Any, Callable, Iterator

from ..context import TracerContext
from ..exc import TracedException, Unsupported, raised_in_the_trace
from .base import VariableTracker
from .builtin_functions import CLASS_METHODS, BuiltinVariable, handler, in_graph
from .iteration import iterator_of
from .constant import ConstantVariable, wrap_constant
from .lists import REBUILDERS, IteratorVariable, TupleVariable, rebuilt_exactly

_GROUPER = type(next(itertools.groupby([0]))[1])
# Iterators whose items are their sources' items rearranged (no callable called, no comparison),
# re-created with their own type from the items still to come (lists.REBUILDERS).
REBUILDERS.update({
    itertools.islice: lambda items: itertools.islice(items, None),
    itertools.chain: itertools.chain,
    itertools.zip_longest: lambda rows: itertools.zip_longest(*zip(*rows)),
    itertools.pairwise: lambda rows: itertools.pairwise((rows[0][0], *(row[1] for row in rows)) if rows else ()),
})
_TEE = type(itertools.tee(())[0])


Rebuild = Callable[[int], "list[VariableTracker] | None"]


class ItertoolsIteratorVariable(IteratorVariable):
    """An iterator of ``itertools`` made in the trace (``chain``, ``islice``, ``groupby``'s
    groups...): its items come from ``gen``, a generator over trackers, one per ``next``. What
    it holds (its iterators and callables) is in ``parts``. Not rebuilt at a graph break while
    items may remain (the graph breaks before); one whose generator raised is not resumed."""

    models = (itertools.chain, itertools.islice, itertools.accumulate, itertools.groupby, _GROUPER, _TEE)

    def __init__(self, tx: TracerContext, cls: type, gen: Iterator[VariableTracker], parts: list[VariableTracker],
                 rebuild: Rebuild | None = None) -> None:
        super().__init__([], cls)
        self.tx, self.gen, self.parts = tx, gen, parts
        self.exhausted = self.failed = False
        # How the real object is made again once ``n`` items were taken: its constructor's
        # arguments (its iterators among ``parts``), or None where it cannot be.
        self.rebuild = rebuild

    def pending(self) -> bool:
        return not self.exhausted

    def _pull(self) -> bool:
        if self.exhausted:
            return False
        if self.failed:
            raise Unsupported(f"an itertools.{self.cls.__name__} whose iteration raised, iterated again")
        if len(self.items) >= self.tx.config.max_generator_items:
            raise Unsupported(f"more than {self.tx.config.max_generator_items} items of itertools.{self.cls.__name__}")
        try:
            item = next(self.gen)
        except StopIteration:
            self.exhausted = True
            return False
        except BaseException:
            self.failed = True
            raise
        self.items.append(item)
        return True

    def next_item(self) -> VariableTracker | None:
        if self.index >= len(self.items) and not self._pull():
            return None
        return super().next_item()

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        while self._pull():
            pass
        return super().unpack(tx)

    def subvalues(self) -> list[VariableTracker]:
        return [*self.items[self.index:], *self.parts]

    def exact_rebuild(self) -> bool:
        return self._arguments() is not None

    def _arguments(self) -> list[VariableTracker] | None:
        """The arguments the real constructor is called with again, where the object rebuilt
        so gives the items CPython's would (nothing taken ahead, its iterators rebuilt exactly)."""
        if self.exhausted or self.failed or self.rebuild is None or self.index != len(self.items) or not all(
                not isinstance(part, IteratorVariable) or rebuilt_exactly(part) for part in self.parts):
            return None
        return self.rebuild(len(self.items))

    def reconstruct(self, cg: Any) -> None:
        arguments = self._arguments()
        if arguments is not None:  # the real object over the real iterators, where they are now
            cg.call_const(self.cls, lambda: [cg.reconstruct(a) for a in arguments])
            return
        if not self.exhausted and self._runs_nothing():
            # Taking its items runs no code and reads only items known already: taken now, as
            # an iterator over them (a tuple iterator, as for any exhausted one).
            while self._pull():
                pass
        if not self.exhausted:
            raise Unsupported(f"an itertools.{self.cls.__name__} not yet consumed at a graph break")
        super().reconstruct(cg)

    def _runs_nothing(self) -> bool:
        """Whether taking the rest of the items calls nothing: an iterator that only rearranges
        items, over iterators of the trace's whose items are known."""
        return self.cls in REBUILDERS and all(
            rebuilt_exactly(part) or type(part) is TupleVariable  # (not a list: it may change before its turn)
            or (isinstance(part, ItertoolsIteratorVariable) and part._runs_nothing())
            or isinstance(part, ConstantVariable) for part in self.parts)

    def __repr__(self) -> str:
        return f"ItertoolsIteratorVariable({self.cls.__name__}, {self.index} read)"


# -- registration: the call checked against the real constructor first ---------------------------
def _placeholder(var: VariableTracker) -> Any:
    """What stands for an argument when the real constructor checks the call: a constant's
    value, else an empty tuple (an iterable, or a callable never called on no items)."""
    return var.as_python_constant() if var.is_python_constant() else ()


def _itertools(cls: Any, name: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``make(tx, *args, **kwargs) -> (generator, parts)`` as the handler of ``cls``;
    the call is first made for real with placeholders, so a wrong one raises as eagerly."""
    def register(make: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(make)
        kind = name or cls.__name__

        def construct(tx: TracerContext, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker:
            try:
                cls(*[_placeholder(a) for a in args], **{k: _placeholder(v) for k, v in kwargs.items()})
            except (TypeError, ValueError, OverflowError) as e:
                if any(not a.is_python_constant() for a in (*args, *kwargs.values())):
                    # (a placeholder may be what was rejected: only a failure that does not
                    # depend on them is eager's for sure)
                    _reject_if_shape(cls, kind, args, kwargs, e)
                raise TracedException(e) from e
            try:
                signature.bind(tx, *args, **kwargs)
            except TypeError as e:
                raise Unsupported(f"itertools.{kind} called as {len(args)} arguments") from e
            gen, parts, *rebuild = make(tx, *args, **kwargs)
            return ItertoolsIteratorVariable(tx, _real_type(cls), gen, parts, *rebuild)
        return handler(cls)(construct)
    return register


def _reject_if_shape(cls: Any, kind: str, args: tuple, kwargs: dict, error: Exception) -> None:
    """Raise Unsupported unless the same call with other placeholders for the values not known
    fails the same way (then the failure is about the call, not about a placeholder) and none
    of them is a tensor or a symbolic number (which a placeholder cannot stand for)."""
    if any(in_graph(v) for v in (*args, *kwargs.values())):
        raise Unsupported(f"itertools.{kind} of a tensor or symbolic number: {error}")
    try:
        cls(*[_other_placeholder(a) for a in args], **{k: _other_placeholder(v) for k, v in kwargs.items()})
    except type(error) as again:
        if str(again) == str(error):
            return
    except Exception:  # noqa: BLE001 - a different failure: the placeholder decided it
        pass
    raise Unsupported(f"itertools.{kind} rejected a placeholder: {error}")


def _other_placeholder(var: VariableTracker) -> Any:
    return var.as_python_constant() if var.is_python_constant() else [0]


def _real_type(cls: Any) -> type:
    return cls if isinstance(cls, type) else type(cls([]))  # (chain.from_iterable makes a chain)


def _call(tx: TracerContext, fn: VariableTracker, *args: VariableTracker) -> VariableTracker:
    return fn.call_function(tx, list(args), {})


def _truth(tx: TracerContext, value: VariableTracker) -> bool:
    return value.truth(tx)


def _equal(tx: TracerContext, a: VariableTracker, b: VariableTracker) -> bool:
    """``PyObject_RichCompareBool(a, b, Py_EQ)``: the same object is equal without a call."""
    if a is b:
        return True
    return BuiltinVariable(operator.eq).call_function(tx, [a, b], {}).truth(tx)


def _none(var: VariableTracker | None) -> bool:
    return var is None or (var.is_python_constant() and var.as_python_constant() is None)


def _items(it: IteratorVariable) -> Iterator[VariableTracker]:
    while (item := it.next_item()) is not None:
        yield item


# -- the iterators -----------------------------------------------------------------------------
@_itertools(itertools.repeat)
def _repeat(tx: TracerContext, obj: VariableTracker, times: VariableTracker | None = None) -> Any:
    count = None if times is None else max(0, times.as_python_constant())

    def gen() -> Iterator[VariableTracker]:
        n = 0
        while count is None or n < count:
            n += 1
            yield obj

    def rebuild(taken: int) -> list[VariableTracker]:
        return [obj] if count is None else [obj, ConstantVariable(count - taken)]
    return gen(), [obj], rebuild


@_itertools(itertools.count)
def _count(tx: TracerContext, start: VariableTracker | None = None, step: VariableTracker | None = None) -> Any:
    first, by = (v.as_python_constant() if v is not None else d for v, d in ((start, 0), (step, 1)))
    real = itertools.count(first, by)

    def rebuild(taken: int) -> list[VariableTracker] | None:
        if type(first) is not int or type(by) is not int:
            return None  # (a float count adds its step again and again: not start + n * step)
        return [ConstantVariable(first + taken * by), ConstantVariable(by)]
    return (wrap_constant(v) for v in real), [], rebuild


@_itertools(itertools.cycle)
def _cycle(tx: TracerContext, iterable: VariableTracker) -> Any:
    it = iterator_of(tx, iterable)

    def gen() -> Iterator[VariableTracker]:
        saved = []
        for item in _items(it):
            saved.append(item)
            yield item
        while saved:
            yield from saved
    return gen(), [it]


@_itertools(itertools.chain)
def _chain(tx: TracerContext, *iterables: VariableTracker) -> Any:
    def gen() -> Iterator[VariableTracker]:
        for iterable in iterables:  # (each made an iterator when the chain reaches it)
            yield from _items(iterator_of(tx, iterable))
    return gen(), list(iterables)


CLASS_METHODS[(itertools.chain, "from_iterable")] = itertools.chain.from_iterable  # (read as chain.from_iterable)


@_itertools(itertools.chain.from_iterable, "chain.from_iterable")
def _chain_from_iterable(tx: TracerContext, iterable: VariableTracker) -> Any:
    outer = iterator_of(tx, iterable)

    def gen() -> Iterator[VariableTracker]:
        for inner in _items(outer):
            yield from _items(iterator_of(tx, inner))
    return gen(), [outer]


def _pools(tx: TracerContext, iterables: tuple[VariableTracker, ...]) -> list[list[VariableTracker]]:
    return [iterator_of(tx, it).unpack(tx) for it in iterables]  # (taken whole when made, as CPython does)


@_itertools(itertools.product)
def _product(tx: TracerContext, *iterables: VariableTracker, repeat: VariableTracker | None = None) -> Any:
    pools = _pools(tx, iterables) * (1 if repeat is None else repeat.as_python_constant())
    return (TupleVariable(list(row)) for row in itertools.product(*pools)), [v for p in pools for v in p]


@_itertools(itertools.permutations)
def _permutations(tx: TracerContext, iterable: VariableTracker, r: VariableTracker | None = None) -> Any:
    pool, = _pools(tx, (iterable,))
    count = None if _none(r) else r.as_python_constant()
    return (TupleVariable(list(row)) for row in itertools.permutations(pool, count)), pool


@_itertools(itertools.combinations)
def _combinations(tx: TracerContext, iterable: VariableTracker, r: VariableTracker) -> Any:
    pool, = _pools(tx, (iterable,))
    return (TupleVariable(list(row)) for row in itertools.combinations(pool, r.as_python_constant())), pool


@_itertools(itertools.combinations_with_replacement)
def _combinations_with_replacement(tx: TracerContext, iterable: VariableTracker, r: VariableTracker) -> Any:
    pool, = _pools(tx, (iterable,))
    rows = itertools.combinations_with_replacement(pool, r.as_python_constant())
    return (TupleVariable(list(row)) for row in rows), pool


@_itertools(itertools.accumulate)
def _accumulate(tx: TracerContext, iterable: VariableTracker, func: VariableTracker | None = None, *,
                initial: VariableTracker | None = None) -> Any:
    it = iterator_of(tx, iterable)
    step = BuiltinVariable(operator.add) if _none(func) else func

    def gen() -> Iterator[VariableTracker]:
        total = None if _none(initial) else initial
        if total is not None:
            yield total
        for item in _items(it):
            total = item if total is None else _call(tx, step, total, item)
            yield total
    return gen(), [it, step]


@_itertools(itertools.islice)
def _islice(tx: TracerContext, iterable: VariableTracker, *bounds: VariableTracker) -> Any:
    it = iterator_of(tx, iterable)
    values = [None if _none(b) else b.as_python_constant() for b in bounds]
    start, stop, step = (0, values[0], 1) if len(values) == 1 else (
        values[0] or 0, values[1], values[2] if len(values) == 3 and values[2] is not None else 1)

    def gen() -> Iterator[VariableTracker]:  # (CPython's islice_next: skip to ``next``, then take one)
        count, target = 0, start
        while True:
            while count < target:
                if it.next_item() is None:
                    return
                count += 1
            if stop is not None and count >= stop:
                return
            item = it.next_item()
            if item is None:
                return
            count += 1
            target += step
            if stop is not None and target > stop:
                target = stop
            yield item
    return gen(), [it]


@_itertools(itertools.zip_longest)
def _zip_longest(tx: TracerContext, *iterables: VariableTracker, fillvalue: VariableTracker | None = None) -> Any:
    its: list[IteratorVariable | None] = [iterator_of(tx, it) for it in iterables]
    fill = fillvalue if fillvalue is not None else ConstantVariable(None)

    def gen() -> Iterator[VariableTracker]:
        active = len(its)
        while its:
            row = []
            for i, it in enumerate(its):
                item = it.next_item() if it is not None else None
                if item is None:
                    if it is not None:
                        active -= 1
                        its[i] = None
                        if active == 0:
                            return
                    item = fill
                row.append(item)
            yield TupleVariable(row)
    return gen(), [*[it for it in its if it is not None], fill]


@_itertools(itertools.starmap)
def _starmap(tx: TracerContext, func: VariableTracker, iterable: VariableTracker) -> Any:
    it = iterator_of(tx, iterable)
    return (func.call_function(tx, iterator_of(tx, args).unpack(tx), {}) for args in _items(it)), [func, it]


@_itertools(itertools.takewhile)
def _takewhile(tx: TracerContext, predicate: VariableTracker, iterable: VariableTracker) -> Any:
    it = iterator_of(tx, iterable)

    def gen() -> Iterator[VariableTracker]:
        for item in _items(it):
            if not _truth(tx, _call(tx, predicate, item)):
                return
            yield item
    return gen(), [predicate, it]


@_itertools(itertools.dropwhile)
def _dropwhile(tx: TracerContext, predicate: VariableTracker, iterable: VariableTracker) -> Any:
    it = iterator_of(tx, iterable)

    def gen() -> Iterator[VariableTracker]:
        for item in _items(it):
            if not _truth(tx, _call(tx, predicate, item)):
                yield item
                break
        yield from _items(it)
    return gen(), [predicate, it]


@_itertools(itertools.pairwise)
def _pairwise(tx: TracerContext, iterable: VariableTracker) -> Any:
    it = iterator_of(tx, iterable)

    def gen() -> Iterator[VariableTracker]:
        old = it.next_item()
        if old is None:
            return
        for new in _items(it):
            yield TupleVariable([old, new])
            old = new
    return gen(), [it]


@_itertools(itertools.compress)
def _compress(tx: TracerContext, data: VariableTracker, selectors: VariableTracker) -> Any:
    items, chosen = iterator_of(tx, data), iterator_of(tx, selectors)

    def gen() -> Iterator[VariableTracker]:
        while (item := items.next_item()) is not None and (selector := chosen.next_item()) is not None:
            if _truth(tx, selector):
                yield item
    return gen(), [items, chosen], lambda taken: [items, chosen]


@_itertools(itertools.filterfalse)
def _filterfalse(tx: TracerContext, predicate: VariableTracker, iterable: VariableTracker) -> Any:
    it = iterator_of(tx, iterable)
    test = (lambda item: item) if _none(predicate) else (lambda item: _call(tx, predicate, item))
    return (item for item in _items(it) if not _truth(tx, test(item))), [predicate, it]


if hasattr(itertools, "batched"):  # (3.12+)
    @_itertools(itertools.batched)
    def _batched(tx: TracerContext, iterable: VariableTracker, n: VariableTracker) -> Any:
        it, size = iterator_of(tx, iterable), n.as_python_constant()

        def gen() -> Iterator[VariableTracker]:
            while batch := [item for _, item in zip(range(size), _items(it))]:
                yield TupleVariable(batch)
        return gen(), [it]


class _GroupBy:
    """The state a ``groupby`` shares with its groups (CPython's ``groupbyobject``): the key of
    the current group, the item read ahead and its key, and which group is current."""

    _UNSET = object()

    def __init__(self, tx: TracerContext, it: IteratorVariable, key: VariableTracker | None) -> None:
        self.tx, self.it, self.key = tx, it, key
        self.target: Any = self._UNSET
        self.current_key: Any = self._UNSET
        self.current_value: Any = self._UNSET
        self.group: object | None = None

    def step(self) -> bool:
        value = self.it.next_item()
        if value is None:
            return False
        self.current_key = value if self.key is None else _call(self.tx, self.key, value)
        self.current_value = value
        return True

    def groups(self) -> Iterator[VariableTracker]:
        while True:
            self.group = None
            while True:  # skip to the next group
                if self.current_key is not self._UNSET:
                    if self.target is self._UNSET or not _equal(self.tx, self.target, self.current_key):
                        break
                if not self.step():
                    return
            self.target = self.current_key
            token = object()
            self.group = token
            group = ItertoolsIteratorVariable(self.tx, _GROUPER, self.members(token, self.target), [self.it])
            yield TupleVariable([self.current_key, group])

    def members(self, token: object, target: VariableTracker) -> Iterator[VariableTracker]:
        while self.group is token:
            if self.current_value is self._UNSET and not self.step():
                return
            if not _equal(self.tx, target, self.current_key):
                return
            value, self.current_value, self.current_key = self.current_value, self._UNSET, self._UNSET
            yield value


@_itertools(itertools.groupby)
def _groupby(tx: TracerContext, iterable: VariableTracker, key: VariableTracker | None = None) -> Any:
    state = _GroupBy(tx, iterator_of(tx, iterable), None if _none(key) else key)
    return state.groups(), [state.it, *([] if state.key is None else [state.key])]


@handler(itertools.tee)
def _tee(tx: TracerContext, iterable: VariableTracker, n: VariableTracker | None = None) -> VariableTracker:
    count = 2 if n is None else n.as_python_constant()
    with raised_in_the_trace(TypeError, ValueError):
        itertools.tee((), count)
    it = iterator_of(tx, iterable)
    buffer: list[VariableTracker] = []

    def reader() -> Iterator[VariableTracker]:
        position = 0
        while True:
            if position == len(buffer):
                item = it.next_item()
                if item is None:
                    return
                buffer.append(item)
            position += 1
            yield buffer[position - 1]
    return TupleVariable([ItertoolsIteratorVariable(tx, _TEE, reader(), [it]) for _ in range(count)])
