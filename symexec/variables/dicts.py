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
from .base import Identity, VariableTracker, find_on_class, hash_key
from .constant import COMPUTED_WRAPPERS, ConstantVariable, wrap_constant
from .lists import TupleVariable


class ConstDictVariable(VariableTracker):
    built_once = True

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
            override = python_override(tx, self.user_cls, dict, name)
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
        if name in ("keys", "values", "items") and not args and not kwargs:
            return DictViewVariable(self, name)  # live: it sees later changes of the dict
        if name == "copy" and not args and not kwargs:
            if self.user_cls not in (dict, collections.OrderedDict, collections.defaultdict):
                if issubclass(self.user_cls, (collections.OrderedDict, collections.defaultdict)):
                    raise Unsupported(f"{self.user_cls.__qualname__}.copy() calls the subclass")
                return ConstDictVariable(items)  # dict.copy of a subclass: a plain dict
            return ConstDictVariable(items, user_cls=self.user_cls, default_factory=self.default_factory)
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
                k = _key(args[0])
                if k in items:
                    return items[k]
                items[k] = args[1] if len(args) > 1 else ConstantVariable(None)
                return items[k]
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


class DictViewVariable(VariableTracker):
    """``d.keys()``, ``d.values()`` or ``d.items()``: a live view of the dict tracker ``d``
    (it reads the dict's items whenever it is used, so it sees later insertions and
    deletions, as CPython's views do)."""

    def __init__(self, dict_var: ConstDictVariable, kind: str) -> None:
        super().__init__()
        self.dict_var = dict_var
        self.kind = kind  # "keys", "values" or "items"

    def _base(self) -> type:
        """The builtin dict class whose view this is (dict or OrderedDict)."""
        cls = self.dict_var.user_cls
        method = getattr(cls, self.kind, None)
        if method is getattr(collections.OrderedDict, self.kind):
            return collections.OrderedDict
        if method is getattr(dict, self.kind):
            return dict
        raise Unsupported(f"{cls.__qualname__}.{self.kind} is not dict's")

    def python_type(self) -> type:
        return type(getattr(self._base()(), self.kind)())

    def iterator_type(self) -> type:
        return type(iter(getattr(self._base()(), self.kind)()))

    def reversed_type(self) -> type:
        return type(reversed(getattr(self._base()(), self.kind)()))

    def describe(self) -> str:
        return f"dict_{self.kind} of {self.dict_var.describe()}"

    def _items(self) -> dict[Any, VariableTracker]:
        items = self.dict_var.items
        if self.kind != "values" and any(isinstance(k, Identity) for k in items):
            raise Unsupported("a view of a dict keyed by objects")
        return items

    def unpack(self, tx: Any) -> list[VariableTracker]:
        items = self._items()
        if self.kind == "keys":
            return [ConstantVariable(k) for k in items]
        if self.kind == "values":
            return list(items.values())
        return [TupleVariable([ConstantVariable(k), v]) for k, v in items.items()]

    def subvalues(self) -> list[VariableTracker]:
        return [self.dict_var]

    def truth(self, tx: Any) -> bool:
        return bool(self.dict_var.items)

    def as_python_constant(self) -> Any:
        # A view of an equal dict: it compares, hashes and combines (``&``, ``|``) the same.
        return getattr(self.dict_var.as_python_constant(), self.kind)()

    def var_getattr(self, tx: Any, name: str) -> VariableTracker:
        if name == "mapping":
            raise Unsupported("reading the mapping of a dict view")
        return super().var_getattr(tx, name)

    def call_method(self, tx: Any, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        self._base()
        if name == "__len__" and not args and not kwargs:
            return ConstantVariable(len(self.dict_var.items))
        if name == "__iter__" and not args and not kwargs:
            from .lists import IteratorVariable
            return IteratorVariable(self.unpack(tx), self.iterator_type())
        if name == "__contains__" and len(args) == 1 and not kwargs:
            if self.kind == "keys":
                return ConstantVariable(_key(args[0]) in self.dict_var.items)
            if self.kind == "items":
                pair = args[0]
                if not isinstance(pair, TupleVariable) or len(pair.items) != 2:
                    raise Unsupported("`in` a dict_items with something other than a pair")
                k = _key(pair.items[0])
                if k not in self.dict_var.items:
                    return ConstantVariable(False)
                value, other = self.dict_var.items[k], pair.items[1]
                if value is other:
                    return ConstantVariable(True)
                return ConstantVariable(value.as_python_constant() == other.as_python_constant())
        if not kwargs:  # comparisons and set operations of views of constants: run for real
            try:
                const_args = [a.as_python_constant() for a in args]
                view = self.as_python_constant()
            except Unsupported:
                pass
            else:
                method = getattr(type(view), name, None)
                if method is not None and name in _VIEW_PURE_METHODS:
                    try:
                        result = method(view, *const_args)
                    except Exception as e:
                        raise TracedException(e) from e
                    return wrap_constant(result)
        raise Unsupported(f"method {name!r} of {self.describe()}")

    def reconstruct(self, cg: Any) -> None:
        base = self._base()
        cg.call_const(getattr(base, self.kind), lambda: [cg.reconstruct(self.dict_var)])

    def __repr__(self) -> str:
        return f"DictViewVariable({self.kind}, {self.dict_var!r})"


_VIEW_PURE_METHODS = frozenset({
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__and__", "__rand__", "__or__", "__ror__",
    "__sub__", "__rsub__", "__xor__", "__rxor__", "isdisjoint",
})


def python_override(tx: Any, cls: type, base: type, name: str) -> types.FunctionType | None:
    """The Python function ``cls`` defines for ``name`` above the builtin ``base``, if any (guarded)."""
    klass, method = find_on_class(tx, cls, name)
    if klass is None or klass in base.__mro__ or not isinstance(method, types.FunctionType):
        return None
    return method


def _key(key: VariableTracker) -> Any:
    return hash_key(key)


COMPUTED_WRAPPERS[dict] = lambda v: ConstDictVariable({k: wrap_constant(x) for k, x in v.items()})


class MappingProxyVariable(ConstDictVariable):
    """A read-only ``types.MappingProxyType`` over a mapping private to the trace (the
    ``parameters`` of an ``inspect.signature`` it made): reads as a dict's, nothing else."""

    _READS = frozenset({"__getitem__", "__len__", "__contains__", "get", "keys", "values", "items"})

    def __init__(self, items: dict[Any, VariableTracker], source: Source) -> None:
        super().__init__(items, source, user_cls=types.MappingProxyType)

    def call_method(self, tx: Any, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name not in self._READS:
            raise Unsupported(f"method {name!r} of a mappingproxy")
        return self.native_call_method(tx, name, args, kwargs)
