"""Sets and frozensets: items are trackers, keyed by what ``hash`` and ``==`` see (constants by
value, other objects by identity); a change of a set passed in is replayed after the graph."""

from __future__ import annotations

from typing import Any

import torch

from ..context import TracerContext
from ..exc import TracedException, Unsupported
from .base import Identity, Methods, VariableTracker, hash_key
from .constant import COMPUTED_WRAPPERS, ConstantVariable
from .object_protocol import type_is_callable


_SET_CHANGING = frozenset({"add", "update", "remove", "discard", "pop", "clear", "intersection_update",
                           "difference_update", "symmetric_difference_update"})


class SetVariable(VariableTracker):
    """A set (or frozenset) of constants, built while tracing."""

    models = (set, frozenset)

    built_once = True

    def __init__(self, items: list[VariableTracker], frozen: bool = False, tx: TracerContext | None = None) -> None:
        super().__init__()
        self.frozen = frozen
        self.items: dict[Any, VariableTracker] = {}
        for item in items:
            self.add(item, tx)

    @classmethod
    def of(cls, tx: TracerContext, iterable: VariableTracker | None, frozen: bool) -> SetVariable:
        """``set(iterable)`` / ``frozenset(iterable)``. A set's members are copied as they are:
        the copy has the same members whatever order they iterate in (CPython copies the table,
        so the copy iterates as the original does), so a set of tensors, which the trace
        cannot iterate (see ``unpack``), can still be copied."""
        if isinstance(iterable, SetVariable):
            if frozen and iterable.frozen:
                return iterable  # (frozenset(f) is f)
            copy = cls([], frozen)
            copy.items.update(iterable.items)
            return copy
        return cls(iterable.unpack(tx) if iterable is not None else [], frozen, tx)

    def add(self, item: VariableTracker, tx: TracerContext | None = None) -> None:
        """(``tx`` guards what a tensor input's identity as a member relies on: see hash_key.)"""
        self.items.setdefault(hash_key(item, tx), item)

    def python_type(self) -> type:
        return frozenset if self.frozen else set

    def as_python_constant(self) -> Any:
        if any(isinstance(k, Identity) for k in self.items):
            raise Unsupported("a set of objects is not a constant")
        return self.python_type()(self.items)

    def subvalues(self) -> list[VariableTracker]:
        return list(self.items.values())

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        # The same order as the real set would iterate in (objects by their real hashes); a
        # tensor's hash is its address, which no trace knows for the tensors of later calls.
        if any(isinstance(k, Identity) and isinstance(k.obj, torch.Tensor) for k in self.items):
            raise Unsupported("iterating over a set of tensors (its order follows their addresses)")
        real = {(k.obj if isinstance(k, Identity) else k): k for k in self.items}
        return [self.items[real[v]] for v in self.python_type()(real)]

    def is_callable(self, tx: TracerContext) -> bool:
        return type_is_callable(tx, self.python_type())  # (a subclass may have a __call__: LogitsProcessorList)

    def truth(self, tx: TracerContext) -> bool:
        return bool(self.items)

    # set's and frozenset's methods. One that changes the set marks it changed first (on a set
    # passed in, the change is replayed after the graph); a frozenset has none of them.
    methods = Methods("set and frozenset")

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name in _SET_CHANGING and not self.frozen:
            tx.trace.side_effects.mutate(self)
        result = self.methods.call(self, tx, name, args, kwargs)
        if result is None:
            raise Unsupported(f"method {name!r} of a set")
        return result

    @methods("intersection_update", "difference_update", "symmetric_difference_update")
    def _update_by(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if self.frozen or len(args) != 1 or not isinstance(args[0], SetVariable) or kwargs:
            return None
        other = args[0].items
        if name == "intersection_update":
            keep = {k: v for k, v in self.items.items() if k in other}
        elif name == "difference_update":
            keep = {k: v for k, v in self.items.items() if k not in other}
        else:
            keep = {k: v for k, v in self.items.items() if k not in other}
            keep.update((k, v) for k, v in other.items() if k not in self.items)
        self.items.clear()
        self.items.update(keep)
        return ConstantVariable(None)

    @methods("add")
    def _add(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if len(args) != 1 or self.frozen:
            return None
        self.add(args[0], tx)
        return ConstantVariable(None)

    @methods("update")
    def _update(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if self.frozen:
            return None
        for arg in args:
            for item in arg.unpack(tx):
                self.add(item, tx)
        return ConstantVariable(None)

    @methods("remove", "discard")
    def _remove(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if len(args) != 1 or self.frozen:
            return None
        key = _member_key(args[0], tx)
        if key not in self.items and name == "remove":
            if isinstance(key, Identity):
                raise Unsupported("the KeyError of an object missing from a set (its repr)")
            raise TracedException(KeyError(key))
        self.items.pop(key, None)
        return ConstantVariable(None)

    @methods("clear")
    def _clear(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if args or self.frozen:
            return None
        self.items.clear()
        return ConstantVariable(None)

    @methods("__contains__")
    def _contains(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        return ConstantVariable(_member_key(args[0], tx) in self.items) if len(args) == 1 else None

    @methods("__len__")
    def _len(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not args and not kwargs:
            return ConstantVariable(len(self.items))
        return self._run_on_constants(tx, name, args, kwargs)

    @methods("union", "intersection", "difference", "symmetric_difference", "issubset", "issuperset", "isdisjoint", "copy")
    def _run_on_constants(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        """Methods that make a new value: run on the constants (items and arguments), or on the
        members' keys where an object hashed by identity is one (see ``_by_keys``)."""
        if kwargs:
            return None
        if not self.is_python_constant() or not all(a.is_python_constant() for a in args):
            return self._by_keys(tx, name, [_members(tx, a) for a in args])
        result = getattr(self.as_python_constant(), name)(*[a.as_python_constant() for a in args])
        return wrap_other_constant(result) if isinstance(result, (set, frozenset)) else ConstantVariable(result)

    def _by_keys(self, tx: TracerContext, name: str, others: list[dict[Any, VariableTracker]]) -> VariableTracker:
        """``name`` computed on the members' keys, for a set with a member hashed by identity
        (whose real order no trace knows: the result is never iterated, see ``unpack``). Where
        CPython's choice of which of two equal members to keep shows (``1`` and ``True``), the
        graph breaks."""
        if name == "copy" and self.frozen:
            return self  # (frozenset.copy() is the frozenset)
        items = dict(self.items)
        for other in others:
            common = [k for k in items if k in other]
            if any(type(k) is not type(next(o for o in other if o == k)) for k in common):
                raise Unsupported(f"set.{name} of equal members of different types (which one it keeps)")
            if name in ("issubset", "issuperset", "isdisjoint"):
                return ConstantVariable({"issubset": len(common) == len(items), "issuperset": len(common) == len(other),
                                         "isdisjoint": not common}[name])
            if name == "union":
                items.update((k, v) for k, v in other.items() if k not in items)
            elif name == "intersection":
                items = {k: items[k] for k in common}
            elif name == "difference":
                items = {k: v for k, v in items.items() if k not in other}
            elif name == "symmetric_difference":
                items = {**{k: v for k, v in items.items() if k not in other},
                         **{k: v for k, v in other.items() if k not in items}}
        result = SetVariable([], self.frozen)
        result.items.update(items)
        return result

    def reconstruct(self, cg: Any) -> None:
        if self.source is not None:
            self.source.emit_load(cg)
        elif self.frozen and self.is_python_constant():
            cg.load_const(self.as_python_constant())
        elif self.frozen:
            cg.call_const(frozenset, lambda: [self.reconstruct_items(cg)])
        else:
            self.reconstruct_items(cg)

    def reconstruct_items(self, cg: Any) -> None:
        """Push a new set with the traced items."""
        for item in self.items.values():
            cg.reconstruct(item)
        cg.build(set, len(self.items))

    def __repr__(self) -> str:
        return f"SetVariable({list(self.items)[:6]!r})"


def _member_key(var: VariableTracker, tx: TracerContext) -> Any:
    """The key ``in``, ``remove`` and ``discard`` look for: a set (unhashable) is looked for as
    the frozenset of its items, as CPython's set does."""
    if isinstance(var, SetVariable) and not var.frozen:
        var = SetVariable(list(var.items.values()), frozen=True, tx=tx)
    return hash_key(var, tx)


def _members(tx: TracerContext, var: VariableTracker) -> dict[Any, VariableTracker]:
    """The members of an argument of a set's method (any iterable), by key."""
    return dict(var.items) if isinstance(var, SetVariable) else SetVariable(var.unpack(tx), tx=tx).items


def wrap_other_constant(value: Any) -> VariableTracker:
    if isinstance(value, (set, frozenset)):
        return SetVariable([ConstantVariable(v) for v in value], frozen=isinstance(value, frozenset))
    raise Unsupported(f"a {type(value).__name__} computed while tracing")


COMPUTED_WRAPPERS.update({set: wrap_other_constant, frozenset: wrap_other_constant})
