"""Sets and frozensets: items are trackers, keyed by what ``hash`` and ``==`` see (constants by
value, other objects by identity). Their order is CPython's table's: a set made in the trace
keeps its history and replays it on the real members (guarded where a member hashes by its
address); a change of a set passed in is replayed after the graph as the same calls."""

from __future__ import annotations

from typing import Any

import torch

from ..context import TracerContext
from ..exc import TracedException, Unsupported
from ..guards import replay_set
from ..source import Source
from .base import Identity, Methods, VariableTracker, hash_key
from .constant import COMPUTED_WRAPPERS, ConstantVariable
from .object_protocol import type_is_callable


_SET_CHANGING = frozenset({"add", "update", "remove", "discard", "pop", "clear", "intersection_update",
                           "difference_update", "symmetric_difference_update"})


class SetVariable(VariableTracker):
    """A set (or frozenset): its members by key (``hash_key``: constants by value, objects and
    tensors by identity).

    Its order is CPython's: a set made in the trace keeps the history of its table (``log``:
    adds, discards, pops, clears from an empty set), which ``replay_set`` runs on the real
    members to see how they iterate and pop; where a member hashes by its address (a tensor
    passed in) a guard replays it on the objects of each call. Not modelled: the order of a set
    whose history is not known (passed in and then changed, a copy or the result of set algebra
    holding tensors) and of one holding a tensor the trace made (its address is not known
    before it runs): iterating or popping it breaks the graph."""

    models = (set, frozenset)

    built_once = True

    def __init__(self, items: list[VariableTracker], frozen: bool = False, tx: TracerContext | None = None) -> None:
        super().__init__()
        self.frozen = frozen
        self.items: dict[Any, VariableTracker] = {}
        # The history of the table from an empty set: ops over ``refs`` (see replay_set), or
        # None where it is not known (see ``known_order``: then ``snapshot`` says whether the
        # items are in the real order still).
        self.log: list[tuple[str, int]] | None = []
        self.refs: list[VariableTracker] = []
        self.snapshot = False
        self.changes: list[tuple[str, list[Any]]] = []  # (of a set passed in: replayed as made)
        self.taken: dict[int, list[VariableTracker]] = {}  # (what update took of each argument)
        for item in items:
            self.add(item, tx)

    @classmethod
    def known_order(cls, items: list[VariableTracker], frozen: bool, snapshot: bool = True, real: Any = None) -> SetVariable:
        """A set whose table's history is not known: its items are in the real set's order
        while ``snapshot`` holds (a set passed in, a real set computed: ``real``), until it
        changes."""
        var = cls(items, frozen)
        var.log, var.refs, var.snapshot, var.real = None, [], snapshot, real
        return var

    real: Any = None  # (the real set of constants a known_order one is, while its snapshot holds)

    def _record(self, op: str, var: VariableTracker | None = None) -> None:
        if self.log is None:
            return
        if var is not None:  # (one ref per op: replay_set finds a member by its object)
            self.refs.append(var)
        self.log.append((op, len(self.refs) - 1 if var is not None else -1))

    @classmethod
    def of(cls, tx: TracerContext, iterable: VariableTracker | None, frozen: bool) -> SetVariable:
        """``set(iterable)`` / ``frozenset(iterable)``. A set's members are copied as they are:
        the copy has the same members whatever order they iterate in (CPython copies the table,
        so the copy iterates as the original does), so a set of tensors, which the trace
        cannot iterate (see ``unpack``), can still be copied."""
        if isinstance(iterable, SetVariable):
            if frozen and iterable.frozen:
                return iterable  # (frozenset(f) is f)
            if iterable.order_known() and iterable.is_python_constant():  # copied for real, as CPython copies
                return wrap_other_constant((frozenset if frozen else set)(iterable.as_python_constant()))
            copy = cls.known_order([], frozen, snapshot=False)  # (a copy's table may differ)
            copy.items.update(iterable.items)
            return copy
        return cls(iterable.unpack(tx) if iterable is not None else [], frozen, tx)

    def add(self, item: VariableTracker, tx: TracerContext | None = None) -> None:
        """(``tx`` guards what a tensor input's identity as a member relies on: see hash_key.)"""
        self.items.setdefault(hash_key(item, tx), item)
        self._record("add", item)

    def python_type(self) -> type:
        return frozenset if self.frozen else set

    def order_known(self) -> bool:
        """Whether the real set's table is known: its history, or the real set itself."""
        return self.log is not None or (self.snapshot and self.real is not None)

    def as_python_constant(self) -> Any:
        if any(isinstance(k, Identity) for k in self.items):
            raise Unsupported("a set of objects is not a constant")
        if self.snapshot and self.real is not None:
            return self.real
        if self.log is not None:  # the real set, its table as CPython made it
            members = tuple(ref.as_python_constant() for ref in self.refs)
            if self.frozen:  # (only ever added to)
                return frozenset(members[i] for _, i in self.log)
            return replay_set(tuple(self.log), members)[0]
        return self.python_type()(self.items)

    def subvalues(self) -> list[VariableTracker]:
        if self._rebuilt_by_replay():  # (a member removed is rebuilt too)
            return list({id(v): v for v in (*self.refs, *self.items.values())}.values())
        return list(self.items.values())

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        if self.snapshot:
            return list(self.items.values())
        if self.log is None:
            if self.source is not None:
                raise Unsupported("iterating a set passed in after changing it (its table's history before the "
                                  "call is not known)")
            if any(isinstance(k, Identity) and isinstance(k.obj, torch.Tensor) for k in self.items):
                raise Unsupported("iterating over a set of tensors whose table's history is not known (a copy, "
                                  "the result of set algebra, a set passed in and changed)")
            real = {(k.obj if isinstance(k, Identity) else k): k for k in self.items}
            return [self.items[real[v]] for v in self.python_type()(real)]
        seen = self._replay(tx)
        return [self.refs[i] for i in seen[seen.index(None) + 1:]]

    def _replay(self, tx: TracerContext) -> tuple[Any, ...]:
        """What ``replay_set`` sees of the set's order (guarded where a member hashes by its
        address: a tensor or an object passed in)."""
        reals, members = [], []
        for ref in self.refs:
            key = hash_key(ref, tx)
            if not isinstance(key, Identity):
                reals.append(key)
                members.append(key)
            elif ref.source is not None:  # (a tensor's key is its fake: the real one is this call's)
                reals.append(ref.real_value(tx) if isinstance(key.obj, torch.Tensor) else key.obj)  # type: ignore[attr-defined]
                members.append(ref.source)
            elif isinstance(key.obj, torch.Tensor):
                raise Unsupported("the order of a set holding a tensor the trace made (it follows its address, "
                                  "known only when it runs)")
            else:
                reals.append(key.obj)
                members.append(key.obj)
        ops = tuple(self.log)  # type: ignore[arg-type]
        seen = replay_set(ops, tuple(reals))[1]
        if any(isinstance(m, Source) for m in members):
            tx.guards.set_order(ops, members, seen)
        return seen

    def _rebuilt_by_replay(self) -> bool:
        return self.log is not None and any(op != "add" for op, _ in self.log)

    def is_callable(self, tx: TracerContext) -> bool:
        return type_is_callable(tx, self.python_type())  # (a subclass may have a __call__: LogitsProcessorList)

    def truth(self, tx: TracerContext) -> bool:
        return bool(self.items)

    # set's and frozenset's methods. One that changes the set marks it changed first (on a set
    # passed in, the change is replayed after the graph); a frozenset has none of them.
    methods = Methods("set and frozenset")

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        changes = name in _SET_CHANGING and not self.frozen
        if changes:
            tx.trace.side_effects.mutate(self)
            self.snapshot = False
            self.taken: dict[int, list[VariableTracker]] = {}
        result = self.methods.call(self, tx, name, args, kwargs)
        if result is None:
            raise Unsupported(f"method {name!r} of a set")
        if changes and self.source is not None:
            self.changes.append((name, self._replayed_call(tx, name, args)))
        return result

    def _replayed_call(self, tx: TracerContext, name: str, args: list[VariableTracker]) -> list[Any]:
        """The arguments a change of a set passed in is replayed with, as the call took them: the
        same call on the real set then makes the table CPython's call made (its order after)."""
        if name in ("add", "remove", "discard"):
            return list(args)
        if name == "clear":
            return []
        replayed: list[Any] = []
        for arg in args:
            if isinstance(arg, ConstantVariable) or isinstance(arg, SetVariable) and arg.source is not None and arg.snapshot:
                replayed.append(arg)  # (a constant; a set passed in and not changed yet: the object itself)
            elif isinstance(arg, SetVariable) and arg.source is None and arg.snapshot and arg.real is not None:
                replayed.append(ConstantVariable(arg.real))  # (a real set computed: read, never changed)
            elif isinstance(arg, SetVariable) and arg.log is not None:
                copy = SetVariable([], arg.frozen)  # (as it is now: a later change is not this call's)
                copy.items, copy.log, copy.refs = dict(arg.items), list(arg.log), list(arg.refs)
                replayed.append(copy)
            elif name == "update" and id(arg) in self.taken:
                replayed.append(self.taken[id(arg)])  # (the items it gave, in order)
            else:
                replayed.append(None)
        if any(arg is None for arg in replayed):
            raise Unsupported(f"set.{name} of a set passed in, with arguments whose order the trace does not "
                              f"know (it decides the order of the set's table)")
        return replayed

    def build_replay(self, cg: Any) -> list[str]:
        """First half of the replay of a set passed in: each change's arguments into one
        temporary (see side_effects.build)."""
        temps = []
        for name, args in self.changes:
            for arg in args:
                if isinstance(arg, list):
                    for item in arg:
                        cg.reconstruct(item)
                    cg.build(tuple, len(arg))
                else:
                    cg.reconstruct(arg)
            cg.build(tuple, len(args))
            temps.append(cg.new_temp())
            cg.store_fast(temps[-1])
        return temps

    def apply_replay(self, cg: Any, temps: list[str], target: str) -> None:
        """Second half: the same calls on the real set (``target``), in the trace's order."""
        for (name, _), temp in zip(self.changes, temps):
            cg.call_const(_call_method, lambda: [cg.load_fast(target), cg.load_const(name), cg.load_fast(temp)])  # noqa: B023
            cg.emit("POP_TOP")

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
        self.log, self.refs = None, []  # (CPython's table after these: not modelled)
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
            value = arg.as_python_constant() if isinstance(arg, ConstantVariable) else None
            if type(value) in (set, frozenset) and self.log is not None:
                # a set literal's constant (``{0, 8, 16}`` is SET_UPDATE of a frozenset): merged
                # by the replay as CPython merges it, its members known by their objects
                self._record("update", arg)
                for member in value:
                    self.items.setdefault(member, ConstantVariable(member))
                    self.refs.append(ConstantVariable(member))
                continue
            items = arg.unpack(tx)
            for item in items:
                self.add(item, tx)
            if arg.python_type() in (set, frozenset, dict):  # (CPython sizes the table for them first)
                self.log, self.refs = None, []
            else:
                self.taken[id(arg)] = items
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
        if key in self.items:
            self._record("discard", self.items.pop(key))
        return ConstantVariable(None)

    @methods("clear")
    def _clear(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if args or self.frozen:
            return None
        self.items.clear()
        self._record("clear")
        return ConstantVariable(None)

    @methods("pop")
    def _pop(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        """The member CPython's ``set.pop`` takes: the next one in the table from where the last
        pop stopped, as the replay of the set's history finds it."""
        if args or kwargs or self.frozen:
            return None
        if not self.items:
            raise TracedException(KeyError("pop from an empty set"))
        if self.log is None:
            raise Unsupported("set.pop() of a set whose table's history is not known (passed in, a copy, "
                              "the result of set algebra)")
        self._record("pop")
        seen = self._replay(tx)
        member = self.refs[seen[seen.index(None) - 1]]
        del self.items[hash_key(member, tx)]
        return member

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
        result = SetVariable.known_order([], self.frozen, snapshot=False)
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
        """Push a new set with the traced items (one whose table the trace knows removed
        from: made again by the same history, so it iterates and pops as CPython's would)."""
        if self._rebuilt_by_replay():
            def args() -> list[None]:
                cg.load_const(tuple(self.log))  # type: ignore[arg-type]
                for ref in self.refs:
                    cg.reconstruct(ref)
                cg.build(tuple, len(self.refs))
                return [None, None]
            cg.call_const(rebuild_set, args)
            return
        for item in self.items.values():
            cg.reconstruct(item)
        cg.build(set, len(self.items))

    def __repr__(self) -> str:
        return f"SetVariable({list(self.items)[:6]!r})"


def _call_method(obj: Any, name: str, args: tuple) -> Any:
    """``obj.name(*args)`` (the replay of a change of a set passed in)."""
    return getattr(obj, name)(*args)


def rebuild_set(ops: tuple[tuple[str, int], ...], members: tuple[Any, ...]) -> set:
    """The set ``ops`` make of ``members`` (generated code calls it: see replay_set)."""
    return replay_set(ops, members)[0]


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
    if isinstance(value, (set, frozenset)):  # (in its order: this is the real set)
        return SetVariable.known_order([ConstantVariable(v) for v in value], isinstance(value, frozenset), real=value)
    raise Unsupported(f"a {type(value).__name__} computed while tracing")


COMPUTED_WRAPPERS.update({set: wrap_other_constant, frozenset: wrap_other_constant})
