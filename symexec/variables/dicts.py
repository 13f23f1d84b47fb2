"""Dicts whose keys are constants known while tracing (strings, ints, enums, ...).

Values are trackers; insertion order is kept, as in CPython. An input dict is guarded on its
length and on its keys when wrapped (its key set decides iteration and membership).
Mutating a pre-existing dict is a side effect, replayed after the graph (side_effects.py).
"""

from __future__ import annotations

import collections
import types
from typing import Any

from ..exc import TracedException, Unsupported
from ..source import ConstSource, Source
from .base import Identity, VariableTracker, hash_key
from .constant import COMPUTED_WRAPPERS, ConstantVariable, wrap_constant
from .lists import ListVariable, TupleVariable


class ConstDictVariable(VariableTracker):
    def __init__(self, items: dict[Any, VariableTracker], source: Source | None = None, user_cls: type = dict,
                 default_factory: VariableTracker | None = None) -> None:
        super().__init__(source)
        self.items = dict(items)
        self.user_cls = user_cls
        self.default_factory = default_factory  # a defaultdict's

    def python_type(self) -> type:
        return self.user_cls

    def describe(self) -> str:
        return f"the dict {self.source.name}" if self.source else "a dict"

    def as_python_constant(self) -> Any:
        if any(isinstance(k, Identity) for k in self.items):
            raise Unsupported("a dict keyed by objects is not a constant")
        return self.user_cls((k, v.as_python_constant()) for k, v in self.items.items())

    def as_proxy(self) -> Any:
        return {k: (v.as_proxy() if hasattr(v, "as_proxy") else v.as_python_constant()) for k, v in self.items.items()}

    def unpack(self, tx: Any) -> list[VariableTracker]:
        if any(isinstance(k, Identity) for k in self.items):
            raise Unsupported("iterating over a dict keyed by objects")
        return [ConstantVariable(k) for k in self.items]

    def subvalues(self) -> list[VariableTracker]:
        return list(self.items.values())

    def truth(self, tx: Any) -> bool:
        return bool(self.items)

    def getitem(self, tx: Any, key: VariableTracker) -> VariableTracker:
        k = _key(key)
        if k not in self.items:
            if self.default_factory is not None and not (self.default_factory.is_python_constant()
                                                         and self.default_factory.as_python_constant() is None):
                tx.output.side_effects.mutate(self)
                self.items[k] = self.default_factory.call_function(tx, [], {})
                return self.items[k]
            raise TracedException(KeyError(k))
        return self.items[k]

    def call_method(self, tx: Any, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if self.user_cls is not dict:
            override = python_override(self.user_cls, dict, name)
            if override is not None:  # a dict subclass's own Python method
                return tx.wrap(override, ConstSource.of(override)).call_function(tx, [self, *args], kwargs)
        return self.native_call_method(tx, name, args, kwargs)

    def native_call_method(self, tx: Any, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        """The method of dict itself (also what ``super().get(...)`` reaches in a subclass)."""
        items = self.items
        if name == "__getitem__" and len(args) == 1:
            return self.getitem(tx, args[0])
        if name == "__len__":
            return ConstantVariable(len(items))
        if name == "__contains__" and len(args) == 1:
            return ConstantVariable(_key(args[0]) in items)
        if name == "get" and 1 <= len(args) <= 2:
            default = args[1] if len(args) == 2 else ConstantVariable(None)
            return items.get(_key(args[0]), default)
        if name == "keys":
            return ListVariable([ConstantVariable(k) for k in items])  # iteration only
        if name == "values":
            return ListVariable(list(items.values()))
        if name == "items":
            return ListVariable([TupleVariable([ConstantVariable(k), v]) for k, v in items.items()])
        if name == "copy":
            return ConstDictVariable(items, user_cls=self.user_cls)
        if name in ("__setitem__", "update", "pop", "setdefault", "__delitem__", "clear", "popitem"):
            tx.output.side_effects.mutate(self)
            if name == "__setitem__":
                items[_key(args[0])] = args[1]
            elif name == "update":
                for other in args:
                    if isinstance(other, ConstDictVariable):
                        items.update(other.items)
                    else:  # pairs
                        for pair in other.unpack(tx):
                            key, value = pair.unpack(tx)
                            items[_key(key)] = value
                for k, v in kwargs.items():
                    items[k] = v
            elif name == "pop":
                k = _key(args[0])
                if k in items:
                    return items.pop(k)
                if len(args) == 2:
                    return args[1]
                raise TracedException(KeyError(k))
            elif name == "setdefault":
                return items.setdefault(_key(args[0]), args[1] if len(args) > 1 else ConstantVariable(None))
            elif name == "__delitem__":
                del items[_key(args[0])]
            elif name == "clear":
                items.clear()
            else:
                raise Unsupported("dict.popitem")
            return ConstantVariable(None)
        raise Unsupported(f"method {name!r} of {self.describe()}")

    def reconstruct(self, cg: Any) -> None:
        if self.source is not None:
            self.source.emit_load(cg)
        elif self.user_cls is dict:
            self.reconstruct_items(cg)
        elif self.user_cls is collections.OrderedDict:
            cg.call_const(collections.OrderedDict, lambda: [self.reconstruct_items(cg)])
        elif self.user_cls is collections.defaultdict and self.default_factory is not None:
            cg.call_const(collections.defaultdict, lambda: [cg.reconstruct(self.default_factory), self.reconstruct_items(cg)])
        else:
            raise Unsupported(f"re-creating a {self.user_cls.__name__}")

    def reconstruct_items(self, cg: Any) -> None:
        """Push a new plain dict with the traced items."""
        for k, v in self.items.items():
            cg.load_const(k)
            cg.reconstruct(v)
        cg.build(dict, len(self.items))

    def __repr__(self) -> str:
        return f"ConstDictVariable({list(self.items)[:6]!r})"


def python_override(cls: type, base: type, name: str) -> types.FunctionType | None:
    """The Python function ``cls`` defines for ``name`` above the builtin ``base``, if any."""
    for klass in cls.__mro__:
        if klass is base:
            return None
        method = klass.__dict__.get(name)
        if isinstance(method, types.FunctionType):
            return method
    return None


def _key(key: VariableTracker) -> Any:
    return hash_key(key)


COMPUTED_WRAPPERS[dict] = lambda v: ConstDictVariable({k: wrap_constant(x) for k, x in v.items()})
