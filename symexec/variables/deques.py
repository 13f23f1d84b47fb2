"""``collections.deque``: made while tracing (``deque(iterable, maxlen)``) or passed in.

A deque is a list of item trackers and a ``maxlen`` known while tracing (an input's is guarded,
its items read by index as a list's are). Its methods are CPython's, bounds included: an append
to a full deque drops the item at the other end, an insert into one raises IndexError. A deque
passed in and changed is refilled after the graph (``clear`` and ``extend``: the same object).
"""

from __future__ import annotations

import collections
import operator
from typing import Any

from ..context import TracerContext
from ..exc import TracedException, Unsupported
from ..source import AttrSource, GetItemSource, Source
from .base import Methods, VariableTracker
from .builtin_functions import handler
from .constant import ConstantVariable
from .lists import BaseListVariable, items_one_by_one

class DequeVariable(BaseListVariable):
    """A ``collections.deque`` (not a subclass): items, ``maxlen``; ``append``/``appendleft``,
    ``pop``/``popleft``, ``extend``/``extendleft``, ``insert``, ``remove``, ``rotate``,
    ``reverse``, ``clear``, ``copy``, item reads and writes by index. Not modelled: slicing
    (CPython refuses it too), comparisons of items not known while tracing."""

    models = collections.deque

    python_cls = collections.deque
    built_once = True

    def __init__(self, items: list[VariableTracker], maxlen: int | None = None, source: Source | None = None) -> None:
        super().__init__(items, source)
        self.maxlen = maxlen
        self._trim(left=True)

    def as_python_constant(self) -> Any:
        return collections.deque([item.as_python_constant() for item in self.items], self.maxlen)

    def as_proxy(self) -> Any:
        raise Unsupported("a deque as an argument of a graph operation")

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        if name == "maxlen":
            return ConstantVariable(self.maxlen)
        return super().var_getattr(tx, name)

    def getitem(self, tx: TracerContext, index: VariableTracker) -> VariableTracker:
        return self.items[self._index(index)]

    def _index(self, index: VariableTracker) -> int:
        key = index.as_python_constant()
        try:
            position = operator.index(key)
        except TypeError as e:
            raise TracedException(TypeError(f"sequence index must be integer, not '{type(key).__name__}'")) from e
        if not -len(self.items) <= position < len(self.items):
            raise TracedException(IndexError("deque index out of range"))
        return position

    def _trim(self, left: bool) -> None:
        """Drop what a bounded deque no longer holds: from the left after appending on the
        right (``left``), from the right after appending on the left."""
        if self.maxlen is not None and len(self.items) > self.maxlen:
            extra = len(self.items) - self.maxlen
            self.items[:] = self.items[extra:] if left else self.items[:self.maxlen]

    def reconstruct(self, cg: Any) -> None:
        if self.source is not None:
            self.source.emit_load(cg)
            return

        def arguments() -> list[None]:
            for item in self.items:
                cg.reconstruct(item)
            cg.build(list, len(self.items))
            cg.load_const(self.maxlen)
            return [None, None]

        cg.call_const(collections.deque, arguments)

    def apply_replay(self, cg: Any, temp: str, target: str) -> None:
        """After the graph: the deque passed in refilled with the traced items (``temp``, a list)."""
        for name, args in (("clear", []), ("extend", [temp])):
            cg.load_fast(target)
            cg.call_method(name, lambda args=args: [cg.load_fast(a) for a in args])
            cg.emit("POP_TOP")

    def _changing(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker], arity: int) -> bool:
        if kwargs or len(args) != arity:
            return False
        tx.trace.side_effects.mutate(self)
        return True

    # deque's own methods (and tuple's and list's readers: ``index``, ``count``, ``len``).
    methods = Methods("deque", extends=BaseListVariable.methods)

    @methods("append", "appendleft")
    def _append(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not self._changing(tx, args, kwargs, 1):
            return None
        left = name == "appendleft"
        self.items.insert(0, args[0]) if left else self.items.append(args[0])
        self._trim(left=not left)
        return ConstantVariable(None)

    @methods("extend", "extendleft", "__iadd__")
    def _extend(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not self._changing(tx, args, kwargs, 1):
            return None
        left = name == "extendleft"
        new = list(self.items) if args[0] is self else items_one_by_one(tx, args[0])
        for item in new:  # (one at a time, as CPython's: a lazy map sees each)
            self.items.insert(0, item) if left else self.items.append(item)
            self._trim(left=not left)
        return self if name == "__iadd__" else ConstantVariable(None)

    @methods("pop", "popleft")
    def _pop(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not self._changing(tx, args, kwargs, 0):
            return None
        if not self.items:
            raise TracedException(IndexError(f"{name} from an empty deque"))
        return self.items.pop(0 if name == "popleft" else -1)

    @methods("insert")
    def _insert(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not self._changing(tx, args, kwargs, 2):
            return None
        if self.maxlen is not None and len(self.items) >= self.maxlen:
            raise TracedException(IndexError("deque already at its maximum size"))
        self.items.insert(operator.index(args[0].as_python_constant()), args[1])
        return ConstantVariable(None)

    @methods("remove")
    def _remove(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if kwargs or len(args) != 1:
            return None
        real = self.as_python_constant()  # (the items compared: constants only)
        try:
            position = list(real).index(args[0].as_python_constant())
        except ValueError as e:
            raise TracedException(ValueError(f"{args[0].as_python_constant()!r} is not in deque")) from e
        tx.trace.side_effects.mutate(self)
        del self.items[position]
        return ConstantVariable(None)

    @methods("rotate")
    def _rotate(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if kwargs or len(args) > 1:
            return None
        tx.trace.side_effects.mutate(self)
        if self.items:
            steps = operator.index(args[0].as_python_constant()) if args else 1
            shift = steps % len(self.items)
            self.items[:] = self.items[len(self.items) - shift:] + self.items[:len(self.items) - shift]
        return ConstantVariable(None)

    @methods("clear", "reverse")
    def _clear_or_reverse(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not self._changing(tx, args, kwargs, 0):
            return None
        getattr(self.items, name)()
        return ConstantVariable(None)

    @methods("__setitem__")
    def _setitem(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if kwargs or len(args) != 2:
            return None
        position = self._index(args[0])
        tx.trace.side_effects.mutate(self)
        self.items[position] = args[1]
        return ConstantVariable(None)

    @methods("__delitem__")
    def _delitem(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if kwargs or len(args) != 1:
            return None
        position = self._index(args[0])
        tx.trace.side_effects.mutate(self)
        del self.items[position]
        return ConstantVariable(None)

    @methods("copy", "__copy__")
    def _copy(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        return None if args or kwargs else DequeVariable(list(self.items), self.maxlen)


@handler(collections.deque)
def _deque(tx: TracerContext, iterable: VariableTracker | None = None, maxlen: VariableTracker | None = None) -> VariableTracker:
    bound = maxlen.as_python_constant() if maxlen is not None else None
    if bound is not None:
        bound = operator.index(bound)
        if bound < 0:
            raise TracedException(ValueError("maxlen must be non-negative"))
    return DequeVariable(list(items_one_by_one(tx, iterable)) if iterable is not None else [], bound)


def wrap_deque(tx: TracerContext, value: collections.deque, source: Source | None) -> VariableTracker:
    """A deque passed in (exactly ``collections.deque``): its length and ``maxlen`` guarded, its
    items read by index."""
    if type(value) is not collections.deque:
        raise Unsupported(f"a subclass of deque ({type(value).__qualname__})")
    if source is None:
        raise Unsupported("a deque that cannot be re-fetched from the inputs")
    tx.guards.type_match(source, value)
    tx.guards.len_match(source, len(value))
    tx.wrap(value.maxlen, AttrSource(source, "maxlen")).as_python_constant()  # (guarded by value)
    return DequeVariable([tx.wrap(item, GetItemSource(source, i)) for i, item in enumerate(value)], value.maxlen, source)
