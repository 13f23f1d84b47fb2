"""Mutations of objects that existed before the call, replayed after the graph.

Trackers of pre-existing objects (they have a source) are mutated in place while tracing, like
any other tracker, and report the mutation here. The replacement code then makes the real
objects agree with the traced ones, in the order the trace first touched them: a list gets its
final items by slice assignment (its identity kept), a dict is cleared and refilled, an
attribute is set or deleted, a global rebound, a closure cell written; a dict read lazily
(keyed by tensors) gets the trace's writes, one by one. Objects created by the
trace need no replay: they are rebuilt by their trackers where the code needs them.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from .exc import Unsupported
from .source import PrivateObjectSource, advance
from .variables.base import DELETED, VariableTracker, made_after, reachable


class SideEffects:
    def __init__(self) -> None:
        # Containers whose final contents are written back, by tracker identity, in order.
        self.containers: dict[int, VariableTracker] = {}
        # (object tracker, attribute, value tracker or DELETED), latest value per (object, name).
        self.attributes: dict[tuple[int, str], tuple[VariableTracker, str, Any]] = {}
        self.globals: dict[str, VariableTracker] = {}
        # The value an attribute the trace set, then deleted, had: set again at the replay, then
        # deleted, as eager did.
        self.set_before_delete: dict[tuple[int, str], VariableTracker] = {}
        # The class whose ``__setattr__``/``__delattr__`` replays a write that the trace reached
        # as that class's method (``super().__setattr__`` inside a class's own ``__setattr__``):
        # ``cls.__setattr__(obj, name, value)``, not ``obj.name = value``, which would run the
        # object's own again.
        self.replay_class: dict[tuple[int, str], type] = {}
        # The trace's writes to attributes of classes that existed before the call, by the class
        # itself (one class reached through two sources is two trackers): (id, name) -> (the
        # class, held while its id is the key; the value).
        self.class_attrs: dict[tuple[int, str], tuple[type, VariableTracker]] = {}
        self.cells: dict[int, tuple[Any, VariableTracker]] = {}
        # Iterators passed in that the trace took items from (each knows how many).
        self.iterators: dict[int, VariableTracker] = {}
        # Counts every change the trace makes (to any object, the trace's own copies too): what
        # was read before the count moved may read otherwise now.
        self.version = 0
        # While not None, what each change recorded here changed, in order (a tracker; None for
        # a global or a real cell): a higher-order operator's callable may change only what it made.
        self.changed: list[Any] | None = None

    def note(self, var: VariableTracker) -> None:
        """``var``, made by the trace (a closure cell of a function defined inside), changed:
        nothing to replay, but the change is counted."""
        self._change(var)

    def _change(self, target: Any) -> None:
        self.version += 1
        if self.changed is not None:
            self.changed.append(target)

    @contextlib.contextmanager
    def watch(self) -> Iterator["ChangeWatch"]:
        """Around code whose changes must stay inside it (a higher-order operator's body, an
        lru_cache'd function): ``only_its_own()`` inside the block says whether every change
        recorded since it began was to an object made in it."""
        outer, self.changed = self.changed, []
        try:
            yield ChangeWatch(self)
        finally:
            self.changed = outer if outer is None else outer + self.changed

    def __bool__(self) -> bool:
        return bool(self.containers or self.attributes or self.globals or self.cells or self.iterators)

    # -- recording -------------------------------------------------------------------------------
    def mutate(self, var: VariableTracker) -> None:
        """``var`` (a list, a dict) changed its contents; pre-existing ones are replayed."""
        self._change(var)
        if var.source is not None:
            self.containers.setdefault(id(var), var)

    def store_attr(self, obj: VariableTracker, name: str, value: Any, through: type | None = None) -> None:
        """``obj.name = value`` (``del obj.name`` for DELETED), replayed after the graph as
        that statement, or as ``through.__setattr__(obj, name, value)`` (``__delattr__``)."""
        self._change(obj)
        if obj.source is None:
            raise Unsupported(f"setting attribute {name!r} of {obj.describe()} created while tracing")
        key = (id(obj), name)
        if key in self.attributes and self.replay_class.get(key) is not through:
            raise Unsupported(f"attribute {name!r} of {obj.describe()} written through two different __setattr__")
        if through is not None:
            self.replay_class[key] = through
        previous = self.attributes.pop(key, None)  # re-insert: the latest write goes last
        if value is DELETED and previous is not None and previous[2] is not DELETED:
            # ``o.a = v; ...; del o.a``: replayed as both (``o.a`` need not have been there before)
            self.set_before_delete[key] = previous[2]
        elif value is not DELETED:
            self.set_before_delete.pop(key, None)
        self.attributes[key] = (obj, name, value)

    @staticmethod
    def _load_target(cg: Any, target: str | None, obj: VariableTracker) -> None:
        if target is not None:
            cg.load_fast(target)
        else:  # (an object the trace made: rebuilt)
            cg.reconstruct(obj)

    def _apply_through(self, cg: Any, through: type, target: str | None, obj: VariableTracker, name: str,
                       key: tuple[int, str], values: dict[Any, Any]) -> None:
        """A write replayed as ``through.__setattr__(obj, name, value)`` (``__delattr__``)."""
        value = self.attributes[key][2]
        if key in self.set_before_delete:  # (its value is not seen before the delete: any will do)
            cg.call_const(through.__setattr__, lambda: [self._load_target(cg, target, obj), cg.load_const(name),
                                                        cg.load_const(None)])
            cg.emit("POP_TOP")
        if value is DELETED:
            cg.call_const(through.__delattr__, lambda: [self._load_target(cg, target, obj), cg.load_const(name)])
        else:
            cg.call_const(through.__setattr__, lambda: [self._load_target(cg, target, obj), cg.load_const(name),
                                                        cg.load_fast(values[key])])
        cg.emit("POP_TOP")

    def store_class_attr(self, cls_var: VariableTracker, cls: type, name: str, value: VariableTracker) -> None:
        """``cls.name = value`` on a class that existed before the call: replayed as that
        statement; reads in the trace find it through ``pending_class_attr``."""
        self.store_attr(cls_var, name, value)
        self.class_attrs[(id(cls), name)] = (cls, value)

    def pending_class_attr(self, cls: type, name: str) -> VariableTracker | None:
        """The value the trace gave ``name`` on a class along ``cls``'s MRO, where no class
        before it in the MRO holds ``name`` itself; None when no class there was written."""
        if not self.class_attrs:
            return None
        for klass in cls.__mro__:
            written = self.class_attrs.get((id(klass), name))
            if written is not None:
                return written[1]
            if name in klass.__dict__:
                return None
        return None

    def pending_attr(self, obj: VariableTracker, name: str) -> Any:
        """The value a traced write gave ``obj.name``, DELETED, or None when not written."""
        entry = self.attributes.get((id(obj), name))
        return None if entry is None else entry[2]

    def advance(self, iterator: VariableTracker) -> None:
        """An iterator passed in gave the trace one more item: the real one is advanced as many."""
        self._change(iterator)
        self.iterators.setdefault(id(iterator), iterator)

    def store_global(self, name: str, value: VariableTracker) -> None:
        self._change(None)
        self.globals.pop(name, None)
        self.globals[name] = value

    def store_cell(self, cell: Any, value: VariableTracker) -> None:
        self._change(cell if isinstance(cell, VariableTracker) else None)
        self.cells.pop(id(cell), None)
        self.cells[id(cell)] = (cell, value)

    def drop_unreachable_private(self, roots: list[VariableTracker]) -> None:
        """Forget the writes to the trace's own copies (``copy.deepcopy`` of an input, made while
        tracing) that nothing after the call can reach: not the result, not a live value at a
        break, not any value written into a real object. Replaying them would rebuild each copy
        at every call for nothing (a config's ``to_dict`` copies and edits a dict per call)."""
        def private(var: Any) -> bool:
            source = getattr(var, "source", None)
            return source is not None and isinstance(source.root(), PrivateObjectSource)

        reached: set[int] = set()

        def mark(var: Any) -> None:
            for _ in reachable([var], reached):  # (marks as it goes)
                pass

        for var in roots:
            mark(var)
        for value in self.globals.values():
            mark(value)
        for _, value in self.cells.values():
            mark(value)
        changed = True
        while changed:  # a write kept makes what it writes reachable
            changed = False
            for var in self.containers.values():
                if not private(var) and id(var) not in reached:  # (a reachable copy: marked already)
                    mark(var)
                    changed = True
            for obj, _, value in self.attributes.values():
                if (not private(obj) or id(obj) in reached) and isinstance(value, VariableTracker) \
                        and id(value) not in reached:
                    mark(value)
                    changed = True
        self.containers = {k: v for k, v in self.containers.items() if not private(v) or id(v) in reached}
        self.attributes = {k: (o, n, v) for k, (o, n, v) in self.attributes.items() if not private(o) or id(o) in reached}

    # -- replay ----------------------------------------------------------------------------------
    def values(self) -> Iterator[VariableTracker]:
        """Every tracker the replay will rebuild (their graph tensors become graph outputs)."""
        yield from self.containers.values()
        for _, _, value in self.attributes.values():
            if value is not DELETED:
                yield value
        yield from self.globals.values()
        for _, value in self.cells.values():
            yield value

    def build(self, cg: Any) -> dict[Any, Any]:
        """First half of the replay: build every new value into a temporary. Every value the
        generated code needs is built before any write (``apply``): some are read through
        sources that the writes change, like an item of a list about to be refilled."""
        writes: list[tuple[Any, Any]] = []
        for var in self.containers.values():
            if hasattr(var, "build_replay"):  # (a dict read lazily: its writes, one by one)
                writes.append((var.build_replay(cg), var))
                continue
            temp = cg.new_temp()
            if isinstance(var.items, list):  # type: ignore[attr-defined]
                for item in var.items:  # type: ignore[attr-defined]
                    cg.reconstruct(item)
                cg.build(list, len(var.items))  # type: ignore[attr-defined]
            else:  # a dict or a set: a new one with the traced contents
                var.reconstruct_items(cg)  # type: ignore[attr-defined]
            cg.store_fast(temp)
            writes.append((temp, var))
        for key, (obj, name, value) in self.attributes.items():
            if value is not DELETED:
                temp = cg.new_temp()
                cg.reconstruct(value)
                cg.store_fast(temp)
                writes.append((temp, key))
        for key, (cell, value) in self.cells.items():
            temp = cg.new_temp()
            cg.reconstruct(value)
            cg.store_fast(temp)
            writes.append((temp, ("cell", key)))
        for name, value in self.globals.items():
            temp = cg.new_temp()
            cg.reconstruct(value)
            cg.store_fast(temp)
            writes.append((temp, ("global", name)))
        # The objects written to, loaded through their sources before any write too: a write
        # can cut the way a source goes (``del state[p]`` before the dict ``state[p]`` is
        # refilled), never the object.
        targets = [*self.containers.values(), *self.iterators.values()]
        targets += [obj for obj, _, _ in self.attributes.values() if obj.source is not None]
        for var in {id(var): var for var in targets}.values():  # (each object once)
            temp = cg.new_temp()
            var.source.emit_load(cg)  # type: ignore[union-attr]
            cg.store_fast(temp)
            writes.append((temp, ("target", id(var))))
        return {id(target) if isinstance(target, VariableTracker) else target: temp for temp, target in writes}

    def apply(self, cg: Any, values: dict[Any, Any]) -> None:
        """Second half: write the values built by ``build`` into the real objects (as loaded
        by ``build``)."""
        for var in self.containers.values():
            temp, target = values[id(var)], values[("target", id(var))]
            if hasattr(var, "apply_replay"):
                var.apply_replay(cg, temp, target)
            elif isinstance(var.items, list):  # type: ignore[attr-defined]
                cg.load_fast(temp)
                cg.load_fast(target)
                cg.load_const(None)
                cg.load_const(None)
                cg.build(slice, 2)
                cg.emit("STORE_SUBSCR")  # lst[:] = new items: the same list object
            else:
                cg.load_fast(target)
                cg.call_method("clear", lambda: [])
                cg.emit("POP_TOP")
                cg.load_fast(target)
                cg.call_method("update", lambda: [cg.load_fast(temp)])  # noqa: B023 - called at once
                cg.emit("POP_TOP")
        for key, (obj, name, value) in self.attributes.items():
            target = values.get(("target", id(obj)))
            through = self.replay_class.get(key)
            if through is not None:
                self._apply_through(cg, through, target, obj, name, key, values)
                continue
            if key in self.set_before_delete:
                cg.load_const(None)  # (its value is not seen before the delete: any will do)
                self._load_target(cg, target, obj)
                cg.emit("STORE_ATTR", name)
            if value is not DELETED:
                cg.load_fast(values[key])
            self._load_target(cg, target, obj)
            cg.emit("DELETE_ATTR" if value is DELETED else "STORE_ATTR", name)
        for key, (cell, _) in self.cells.items():
            cg.load_fast(values[("cell", key)])
            cell.emit_store(cg)
        for var in self.iterators.values():
            cg.call_const(advance, lambda: [cg.load_fast(values[("target", id(var))]),  # noqa: B023 - called at once
                                            cg.load_const(var.index)])  # type: ignore[attr-defined]
            cg.emit("POP_TOP")
        for name in self.globals:
            cg.load_fast(values[("global", name)])
            cg.emit("STORE_GLOBAL", name)


class ChangeWatch:
    """What ``SideEffects.watch`` hands its block: the count and the first tracker at its start."""

    def __init__(self, effects: SideEffects) -> None:
        self.effects, self.version = effects, effects.version
        self.first = VariableTracker().serial  # (every tracker the block makes comes after it)

    def only_its_own(self) -> bool:
        changed = self.effects.changed or []
        return self.effects.version - self.version == len(changed) and all(made_after(c, self.first) for c in changed)
