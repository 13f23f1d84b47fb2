"""Dicts whose keys are constants known while tracing (strings, ints, enums, ...), and input
dicts keyed by tensors (an optimizer's ``state``, keyed by its parameters).

Values are trackers; insertion order is kept, as in CPython. An input dict is guarded on its
length and on its keys when wrapped (its key set decides iteration and membership); one keyed
by tensors is read lazily, one key at a time (``TensorKeyedDictVariable``).
Mutating a pre-existing dict is a side effect, replayed after the graph (side_effects.py).
"""

from __future__ import annotations

import collections
import types
from typing import Any

import torch

from ..context import TracerContext
from ..exc import AttributeMissing, TracedException, Unsupported, raised_in_the_trace
from ..guards import GuardKind
from ..source import AttrSource, DictItemSource, Source
from .base import DELETED, Identity, Methods, VariableTracker, class_static, hash_key, subclass_check
from .builtin_subclasses import SubclassInstance, overrides_protocol, own_method_call, python_override, run_python
from .object_protocol import type_is_callable
from .constant import COMPUTED_WRAPPERS, ConstantVariable, wrap_constant
from .lists import BaseListVariable, IteratorVariable, TupleVariable
from .sets import SetVariable
from .tensor import TensorVariable


class ConstDictVariable(VariableTracker):
    """A ``dict`` (also an ``OrderedDict``, a ``defaultdict``: ``user_cls``) whose keys are
    known: constants, tensors (by identity) or objects hashed by identity; the values are
    trackers. Made inside, or read from an input (keys and order guarded); mutations of one
    that existed before the call are side effects, replayed after the graph; one whose change
    cannot be written back says why in ``not_replayable``."""

    models = dict  # dict, OrderedDict, defaultdict

    built_once = True
    not_replayable: str | None = None  # why a change of this dict cannot be written back, if it cannot

    def __init__(self, items: dict[Any, VariableTracker], source: Source | None = None, user_cls: type = dict,
                 default_factory: VariableTracker | None = None) -> None:
        super().__init__(source)
        self.items = dict(items)
        self.user_cls = user_cls
        self.default_factory = default_factory  # a defaultdict's

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        if name == "default_factory" and self.user_cls is collections.defaultdict and self.default_factory is not None:
            return self.default_factory  # (a defaultdict's: what it was made with, or read from the input)
        return super().var_getattr(tx, name)

    def python_type(self) -> type:
        return self.user_cls

    def describe(self) -> str:
        return f"the dict {self.source.name}" if self.source else "a dict"

    def as_python_constant(self) -> Any:
        if any(isinstance(k, Identity) for k in self.items):
            raise Unsupported("a dict keyed by objects is not a constant")
        items = ((k, v.as_python_constant()) for k, v in self.items.items())
        if self.user_cls is collections.defaultdict:  # (its first argument is the factory)
            factory = self.default_factory.as_python_constant() if self.default_factory is not None else None
            return collections.defaultdict(factory, items)
        return self.user_cls(items)

    def as_proxy(self) -> Any:
        return {k: (v.as_proxy() if hasattr(v, "as_proxy") else v.as_python_constant()) for k, v in self.items.items()}

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        return [key_var(k) for k in self.items]

    def subvalues(self) -> list[VariableTracker]:
        return list(self.items.values())

    def is_callable(self, tx: TracerContext) -> bool:
        return type_is_callable(tx, self.python_type())  # (a subclass may have a __call__: LogitsProcessorList)

    def truth(self, tx: TracerContext) -> bool:
        return bool(self.items)

    def length(self, tx: TracerContext) -> int:
        return len(self.items)

    def getitem(self, tx: TracerContext, key: VariableTracker) -> VariableTracker:
        k = _key(key, tx)
        if k not in self.items:
            if self.default_factory is not None and not (self.default_factory.is_python_constant()
                                                         and self.default_factory.as_python_constant() is None):
                tx.trace.side_effects.mutate(self)
                self.items[k] = self.default_factory.call_function(tx, [], {})
                return self.items[k]
            raise _missing(k)
        return self.items[k]

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if self.user_cls is not dict:
            own = own_method_call(tx, self, self.user_cls, dict, name, args, kwargs)  # a dict subclass's
            if own is not None:
                return own
        return self.native_call_method(tx, name, args, kwargs)

    def native_call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        """The method of dict itself (also what ``super().get(...)`` reaches in a subclass)."""
        result = self.methods.call(self, tx, name, args, kwargs)
        if result is None:
            raise Unsupported(f"method {name!r} of {self.describe()}")
        return result

    # dict's, OrderedDict's and defaultdict's methods. One that changes the dict checks that
    # the change can be replayed and marks it changed first (on a dict passed in, the change
    # is replayed after the graph).
    methods = Methods("dict")

    @methods("__getitem__")
    def _getitem_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        return self.getitem(tx, args[0]) if len(args) == 1 else None

    @methods("__len__")
    def _len(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        return ConstantVariable(self.length(tx))

    @methods("__contains__")
    def _contains(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        return ConstantVariable(_key(args[0], tx) in self.items) if len(args) == 1 else None

    @methods("get")
    def _get(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not 1 <= len(args) <= 2:
            return None
        return self.items.get(_key(args[0], tx), args[1] if len(args) == 2 else ConstantVariable(None))

    @methods("keys", "values", "items")
    def _view(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        return None if args or kwargs else DictViewVariable(self, name)  # live: it sees later changes of the dict

    @methods("copy")
    def _copy(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if args or kwargs:
            return None
        if self.user_cls not in (dict, collections.OrderedDict, collections.defaultdict):
            if issubclass(self.user_cls, (collections.OrderedDict, collections.defaultdict)):
                raise Unsupported(f"{self.user_cls.__qualname__}.copy() calls the subclass")
            return ConstDictVariable(self.items)  # dict.copy of a subclass: a plain dict
        return ConstDictVariable(self.items, user_cls=self.user_cls, default_factory=self.default_factory)

    @methods("__init__")
    def _init(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        """``dict.__init__`` (reached through ``super()``): update's arguments."""
        return self.native_call_method(tx, "update", args, kwargs)

    def _changing(self, tx: TracerContext) -> dict[Any, VariableTracker]:
        """The items, before a change: checked replayable, and the dict marked changed."""
        self.check_replayable(tx)
        tx.trace.side_effects.mutate(self)
        return self.items

    @methods("__setitem__")
    def _setitem(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        self._changing(tx)[_key(args[0], tx)] = args[1]
        return ConstantVariable(None)

    @methods("update")
    def _update(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        items = self._changing(tx)
        for other in args:
            update_items(tx, items, other)
        for k, v in kwargs.items():
            items[k] = v
        return ConstantVariable(None)

    @methods("pop")
    def _pop(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        items = self._changing(tx)
        k = _key(args[0], tx)
        if k in items:
            return items.pop(k)
        if len(args) == 2:
            return args[1]
        raise _missing(k)

    @methods("setdefault")
    def _setdefault(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        items = self._changing(tx)
        k = _key(args[0], tx)
        if k not in items:
            items[k] = args[1] if len(args) > 1 else ConstantVariable(None)
        return items[k]

    @methods("__delitem__")
    def _delitem(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        k = _key(args[0], tx)
        if k not in self.items:
            raise _missing(k)
        del self._changing(tx)[k]
        return ConstantVariable(None)

    @methods("clear")
    def _clear(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        self._changing(tx).clear()
        return ConstantVariable(None)

    @methods("move_to_end")
    def _move_to_end(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        """OrderedDict's: to the end, or (``last=False``) to the front."""
        if not issubclass(self.user_cls, collections.OrderedDict):
            return None
        items = self._changing(tx)
        bound = _bind(tx, ("key", "last"), (True,), args, kwargs, "move_to_end")
        k = _key(bound[0], tx)
        if k not in items:
            raise TracedException(KeyError(k))
        value = items.pop(k)
        if bound[1].truth(tx):
            items[k] = value
        else:
            rest = dict(items)
            items.clear()
            items[k] = value
            items.update(rest)
        return ConstantVariable(None)

    @methods("popitem")
    def _popitem(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        """The last item (OrderedDict's, with ``last=False``, the first)."""
        items = self._changing(tx)
        ordered = issubclass(self.user_cls, collections.OrderedDict)
        last = _bind(tx, ("last",), (True,), args, kwargs, "popitem")[0].truth(tx) if ordered else True
        if args and not ordered:
            raise Unsupported("dict.popitem() takes no arguments")
        if not items:
            raise TracedException(KeyError("dictionary is empty" if ordered else "popitem(): dictionary is empty"))
        k = next(reversed(items)) if last else next(iter(items))
        value = items.pop(k)
        return TupleVariable([key_var(k), value])

    def check_replayable(self, tx: TracerContext) -> None:
        """A change of a dict passed in is replayed by its ``clear`` and ``update``: they must
        be the builtin ones (a subclass's own would run its code, or refuse)."""
        if self.not_replayable:
            raise Unsupported(self.not_replayable)

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
            if isinstance(k, Identity):  # (an object key: rebuilt from its tracker)
                cg.reconstruct(k.var)
            else:
                cg.load_const(k)
            cg.reconstruct(v)
        cg.build(dict, len(self.items))

    def __repr__(self) -> str:
        return f"ConstDictVariable({list(self.items)[:6]!r})"


class DictViewVariable(VariableTracker):
    """``d.keys()``, ``d.values()`` or ``d.items()``: a live view of the dict tracker ``d``
    (it reads the dict's items whenever it is used, so it sees later insertions and
    deletions, as CPython's views do)."""

    models = (type({}.keys()), type({}.values()), type({}.items()))

    def __init__(self, dict_var: ConstDictVariable, kind: str) -> None:
        super().__init__()
        self.dict_var = dict_var
        self.kind = kind  # "keys", "values" or "items"

    def _base(self) -> type:
        """The builtin dict class whose view this is (dict or OrderedDict)."""
        cls = self.dict_var.user_cls
        if cls is types.MappingProxyType and getattr(self.dict_var, "view_base", None) is not None:
            return self.dict_var.view_base  # type: ignore[attr-defined]  # (the mapping's own views)
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
        return self.dict_var.items

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        items = self._items()
        if self.kind == "keys":
            return [key_var(k) for k in items]
        if self.kind == "values":
            return list(items.values())
        return [TupleVariable([key_var(k), v]) for k, v in items.items()]

    def subvalues(self) -> list[VariableTracker]:
        return [self.dict_var]

    def truth(self, tx: TracerContext) -> bool:
        return bool(self.dict_var.items)

    def as_python_constant(self) -> Any:
        # A view of an equal dict: it compares, hashes and combines (``&``, ``|``) the same.
        return getattr(self.dict_var.as_python_constant(), self.kind)()

    def keys_view(self) -> Any:
        """A keys view of the same constant keys: what a keys view's comparisons and set
        operations read (whatever the values are)."""
        if any(isinstance(k, Identity) for k in self.dict_var.items):
            raise Unsupported("a keys view of a dict keyed by objects, compared")
        return dict.fromkeys(self.dict_var.items).keys()

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        if name == "mapping":
            raise Unsupported("reading the mapping of a dict view")
        return super().var_getattr(tx, name)

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        self._base()
        if name == "__len__" and not args and not kwargs:
            return ConstantVariable(len(self.dict_var.items))
        if name == "__iter__" and not args and not kwargs:
            return IteratorVariable(self.unpack(tx), self.iterator_type())
        if name == "__contains__" and len(args) == 1 and not kwargs:
            if self.kind == "keys":
                return ConstantVariable(_key(args[0], tx) in self.dict_var.items)
            if self.kind == "items":
                pair = args[0]
                if not isinstance(pair, TupleVariable) or len(pair.items) != 2:
                    raise Unsupported("`in` a dict_items with something other than a pair")
                k = _key(pair.items[0], tx)
                if k not in self.dict_var.items:
                    return ConstantVariable(False)
                value, other = self.dict_var.items[k], pair.items[1]
                if value is other:
                    return ConstantVariable(True)
                return ConstantVariable(value.as_python_constant() == other.as_python_constant())
        if not kwargs:  # comparisons and set operations of views of constants: run for real
            try:
                const_args = [a.keys_view() if isinstance(a, DictViewVariable) and a.kind == "keys"
                              else a.as_python_constant() for a in args]
                view = self.keys_view() if self.kind == "keys" else self.as_python_constant()
            except Unsupported:
                pass
            else:
                method = getattr(type(view), name, None)
                if method is not None and name in _VIEW_PURE_METHODS:
                    with raised_in_the_trace(Exception):
                        result = method(view, *const_args)
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


def _bind(tx: TracerContext, names: tuple[str, ...], defaults: tuple[Any, ...], args: list[VariableTracker],
          kwargs: dict[str, VariableTracker], method: str) -> list[VariableTracker]:
    """The arguments of a builtin method, positional or by name, the last ones defaulted."""
    values: list[VariableTracker | None] = [*args, *[None] * (len(names) - len(args))]
    if len(args) > len(names) or any(k not in names or values[names.index(k)] is not None for k in kwargs):
        raise Unsupported(f"{method}() with these arguments")
    for k, v in kwargs.items():
        values[names.index(k)] = v
    first_default = len(names) - len(defaults)
    for i, value in enumerate(values):
        if value is None:
            if i < first_default:
                raise Unsupported(f"{method}() without its argument {names[i]!r}")
            values[i] = ConstantVariable(defaults[i - first_default])
    return values  # type: ignore[return-value]


def mapping_items(tx: TracerContext, other: VariableTracker) -> dict[Any, VariableTracker] | None:
    """The items ``dict.update`` (and ``{**other}``, ``f(**other)``) takes from ``other``, in
    CPython's order: a dict's own; of another object with a ``keys`` attribute, ``keys()``
    iterated, then ``other[key]`` for each key; None where ``other`` has no ``keys`` (not a
    mapping: ``dict.update`` takes pairs from it)."""
    if isinstance(other, ConstDictVariable) and not (
            isinstance(other, DictSubclassVariable) and python_override(tx, other.user_cls, other.base, "__iter__")):
        return dict(other.items)  # (one with its own __iter__: CPython asks its keys(), as below)
    if isinstance(other, (ConstantVariable, BaseListVariable, IteratorVariable, SetVariable)):
        return None  # (builtin values without ``keys``)
    try:
        keys = other.var_getattr(tx, "keys")
    except AttributeMissing as missing:
        if missing.error is None:  # (absent, but not as CPython would say exactly)
            raise
        return None
    items: dict[Any, VariableTracker] = {}
    for key in keys.call_function(tx, [], {}).unpack(tx):
        items[_key(key, tx)] = other.call_method(tx, "__getitem__", [key], {})
    return items


def _key(key: VariableTracker, tx: TracerContext) -> Any:
    return hash_key(key, tx)


def _missing(k: Any) -> Exception:
    """The KeyError of a key missing from a dict (an object's message is its repr: not modelled)."""
    if isinstance(k, Identity):
        return Unsupported("the KeyError of an object missing from a dict (its repr)")
    return TracedException(KeyError(k))


def key_var(key: Any) -> VariableTracker:
    """The tracker of a dict key as ``hash_key`` made it: the object's own tracker for an
    ``Identity`` (a tensor key), a constant otherwise."""
    return key.var if isinstance(key, Identity) else ConstantVariable(key)


def update_items(tx: TracerContext, items: dict[Any, VariableTracker], other: VariableTracker) -> None:
    """``dict.update(other)`` (and ``dict(other)``) into ``items``: a mapping's items
    (``mapping_items``), else key/value pairs, each checked as CPython checks it."""
    mapping = mapping_items(tx, other)
    if mapping is not None:
        items.update(mapping)
        return
    for i, pair in enumerate(other.unpack(tx)):
        both = pair.unpack(tx)
        if len(both) != 2:
            raise TracedException(ValueError(f"dictionary update sequence element #{i} has length "
                                             f"{len(both)}; 2 is required"))
        items[_key(both[0], tx)] = both[1]


COMPUTED_WRAPPERS[dict] = lambda v: ConstDictVariable({k: wrap_constant(x) for k, x in v.items()})


class MappingProxyVariable(ConstDictVariable):
    """A read-only ``types.MappingProxyType`` over a mapping private to the trace (the
    ``parameters`` of an ``inspect.signature`` it made): reads as a dict's, nothing else."""

    models = types.MappingProxyType

    _READS = frozenset({"__getitem__", "__len__", "__contains__", "get", "keys", "values", "items"})

    def __init__(self, items: dict[Any, VariableTracker], source: Source, view_base: type | None = None) -> None:
        super().__init__(items, source, user_cls=types.MappingProxyType)
        self.view_base = view_base  # whose keys/values/items its own are (dict or OrderedDict), if known

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name not in self._READS:
            raise Unsupported(f"method {name!r} of a mappingproxy")
        return self.native_call_method(tx, name, args, kwargs)


# The builtin dicts a user subclass may store its items in (a defaultdict's factory, a
# Counter's Python methods: not modelled here).
_BUILTIN_DICTS = (dict, collections.OrderedDict)


def dict_base(tx: TracerContext, cls: type) -> type | None:
    """The builtin dict class (dict or OrderedDict) storing the items of a ``cls`` instance
    (None for a defaultdict's subclass); the answers are guarded."""
    if subclass_check(tx, cls, collections.defaultdict):
        return None
    return collections.OrderedDict if subclass_check(tx, cls, collections.OrderedDict) else dict


def make_dict(cls: type, base: type, items: dict, attributes: dict) -> Any:
    """An instance of the dict subclass ``cls`` with these items and attributes, made without
    running its ``__init__``, ``__setitem__`` or ``__setattr__`` (generated code: an object the
    trace created survives it)."""
    obj = base.__new__(cls)
    for key, value in items.items():
        base.__setitem__(obj, key, value)
    for name, value in attributes.items():
        object.__setattr__(obj, name, value)
    return obj


def construct_dict_subclass(tx: TracerContext, cls: type, args: list[VariableTracker],
                            kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """``cls(*args, **kwargs)`` for a user subclass of dict or OrderedDict: the builtin
    ``__new__`` makes it empty, then its ``__init__`` runs (inlined, or the builtin's update)."""
    base = dict_base(tx, cls)
    if base is None or class_static(tx, cls, "__new__") is not dict.__new__ or overrides_protocol(tx, cls, base):
        raise Unsupported(f"constructing {cls.__qualname__}, a dict subclass with its own __new__ or protocol")
    obj = DictSubclassVariable({}, cls, base)
    init = class_static(tx, cls, "__init__")
    if isinstance(init, types.FunctionType):
        run_python(tx, init, [obj, *args], kwargs)
    elif init in (dict.__init__, collections.OrderedDict.__init__) and len(args) <= 1:
        obj.native_call_method(tx, "update", args, kwargs)
    else:
        raise Unsupported(f"constructing {cls.__qualname__}: its __init__ is not Python")
    return obj


class DictSubclassVariable(SubclassInstance, ConstDictVariable):
    """An instance of a user subclass of dict or OrderedDict (a config object): its items as a
    dict's, and its attributes as an object's (``SubclassInstance``: a config's
    ``__getattr__ = dict.__getitem__`` reads an item)."""

    models = dict  # (user subclasses of)

    native_classes = _BUILTIN_DICTS

    def __init__(self, items: dict[Any, VariableTracker], user_cls: type, base: type, source: Source | None = None,
                 instance: Any = None) -> None:
        super().__init__(items, source, user_cls=user_cls)
        self.base = base  # dict or OrderedDict (dict_base)
        self.instance = instance  # the real object, when passed in
        self.attributes: dict[str, VariableTracker] = {}  # written by the trace (all of a new one's)

    def subvalues(self) -> list[VariableTracker]:
        return [*self.items.values(), *self.attributes.values()]

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        """Its keys, or what its own ``__iter__`` gives (one passed in may have one: iterating
        it runs it, as CPython's ``iter()`` does; the dict's items are read natively elsewhere)."""
        own = python_override(tx, self.user_cls, self.base, "__iter__")
        if own is None:
            return super().unpack(tx)
        it = run_python(tx, own, [self], {})
        if not isinstance(it, IteratorVariable):
            raise Unsupported(f"{self.user_cls.__qualname__}.__iter__ returned {it.describe()}, not an iterator it knows")
        return it.unpack(tx)

    def native_call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if self.native_setattr(tx, name, args, kwargs):
            return ConstantVariable(None)
        return super().native_call_method(tx, name, args, kwargs)

    def check_replayable(self, tx: TracerContext) -> None:
        if self.source is not None and any(python_override(tx, self.user_cls, dict, m) for m in ("clear", "update")):
            raise Unsupported(f"changing {self.describe()}: its own clear or update would replay it")

    maker = staticmethod(make_dict)

    def push_contents(self, cg: Any) -> int:
        cg.load_const(self.user_cls)
        cg.load_const(self.base)
        self.reconstruct_items(cg)
        return 3

    def __repr__(self) -> str:
        return f"DictSubclassVariable({self.user_cls.__qualname__}, {list(self.items)[:6]!r})"


class TensorKeyedDictVariable(ConstDictVariable):
    """A dict passed in whose keys are tensors (hashed by identity: ``optimizer.state``, a
    ``defaultdict(dict)`` keyed by parameters), read one key at a time.

    A lookup by a tensor reached through a source ``P`` asks the real dict once, and guards the
    answer: ``P in S`` (the value is then an input reached by ``S[P]``) or ``P not in S``. A
    tensor made by the trace is in no dict passed in. Nothing else of the dict is read but its
    length, guarded when used; iterating over it, or looking it up by anything but a tensor,
    breaks the graph. The trace's writes are replayed in order after the graph, as
    ``S[k] = v`` and ``del S[k]`` (insertion order is CPython's)."""

    models = dict

    def __init__(self, value: dict, source: Source, default_factory: VariableTracker | None) -> None:
        self.known: dict[Identity, VariableTracker] = {}  # the entries the trace has looked at
        super().__init__({}, source, user_cls=type(value), default_factory=default_factory)
        self.real = value
        self.resolved: set[Identity] = set()  # keys whose presence the trace knows
        self.added = 0  # keys the trace inserted minus keys it deleted
        self.writes: list[list[Any]] = []  # [key, value or DELETED], in replay order

    @property  # type: ignore[override]
    def items(self) -> dict[Any, VariableTracker]:
        # What reads every item of a dict (iteration, ``dict(d)``, ``**d``, a match) breaks.
        raise Unsupported(f"reading every item of {self.describe()}")

    @items.setter
    def items(self, value: dict[Any, VariableTracker]) -> None:
        self.known = dict(value)

    def describe(self) -> str:
        return f"the dict {self.source.name} (keyed by tensors)"  # type: ignore[union-attr]

    def as_python_constant(self) -> Any:
        raise Unsupported("a dict keyed by tensors is not a constant")

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        raise Unsupported(f"iterating over {self.describe()}")

    def subvalues(self) -> list[VariableTracker]:
        written = [v for _, v in self.writes if v is not DELETED]
        return [*self.known.values(), *written, *(k.var for k, _ in self.writes)]

    def truth(self, tx: TracerContext) -> bool:
        return self.length(tx) > 0

    def length(self, tx: TracerContext) -> int:
        tx.guards.len_match(self.source, len(self.real))
        return len(self.real) + self.added

    def resolve(self, tx: TracerContext, key: VariableTracker) -> Identity:
        """The key ``key`` stands for, with its entry in ``items`` if the dict holds it now."""
        if not isinstance(key, TensorVariable):
            raise Unsupported(f"looking up {self.describe()} by {key.describe()}")
        k = hash_key(key, tx)
        if k in self.resolved:
            return k
        self.resolved.add(k)
        if key.source is None:
            return k  # (made by the trace: a new object, in no dict passed in)
        real = key.real_value(tx)  # type: ignore[attr-defined]
        present = real in self.real
        op = "in" if present else "not in"
        tx.guards.add(GuardKind.LEN_MATCH, f"{key.source.name} {op} {self.source.name}",  # type: ignore[union-attr]
                      tx.guards.code(key.source, f" {op} ", self.source), self.source, key.source)  # type: ignore[union-attr]
        if present:
            self.known[k] = tx.wrap(self.real[real], DictItemSource(self.source, key.source))  # type: ignore[arg-type]
        return k

    def getitem(self, tx: TracerContext, key: VariableTracker) -> VariableTracker:
        k = self.resolve(tx, key)
        if k in self.known:
            return self.known[k]
        if self.default_factory is None or self.default_factory.is_python_constant() and \
                self.default_factory.as_python_constant() is None:
            raise Unsupported("the KeyError of a tensor missing from a dict (its repr)")
        value = self.default_factory.call_function(tx, [], {})
        self.write(tx, k, value)
        return value

    def write(self, tx: TracerContext, k: Identity, value: Any) -> None:
        """``S[k] = value``, or ``del S[k]`` (value DELETED) for a key it holds."""
        tx.trace.side_effects.mutate(self)
        if value is DELETED:
            del self.known[k]
            self.added -= 1
            self.writes.append([k, DELETED])
            return
        if k not in self.known:
            self.added += 1
        self.known[k] = value
        last = next((w for w in reversed(self.writes) if w[0] == k), None)
        if last is not None and last[1] is not DELETED:
            last[1] = value  # (a key set again keeps its place: one write says it)
        else:
            self.writes.append([k, value])

    def native_call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        result = None if kwargs else self.methods.call(self, tx, name, args, kwargs)
        if result is None:
            raise Unsupported(f"method {name!r} of {self.describe()}")
        return result

    # The dict methods modelled, one key at a time (none of dict's others: not ``extends``).
    methods = Methods("dict keyed by tensors")

    @methods("__len__")
    def _len(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        return None if args else ConstantVariable(self.length(tx))

    @methods("__getitem__")
    def _getitem_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        return self.getitem(tx, args[0]) if len(args) == 1 else None

    @methods("__contains__")
    def _contains(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        return ConstantVariable(self.resolve(tx, args[0]) in self.known) if len(args) == 1 else None

    @methods("get")
    def _get(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if len(args) not in (1, 2):
            return None
        k = self.resolve(tx, args[0])
        return self.known[k] if k in self.known else (args[1] if len(args) == 2 else ConstantVariable(None))

    @methods("__setitem__")
    def _setitem(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if len(args) != 2:
            return None
        self.write(tx, self.resolve(tx, args[0]), args[1])
        return ConstantVariable(None)

    @methods("setdefault")
    def _setdefault(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if len(args) not in (1, 2):
            return None
        k = self.resolve(tx, args[0])
        if k not in self.known:
            self.write(tx, k, args[1] if len(args) == 2 else ConstantVariable(None))
        return self.known[k]

    @methods("pop", "__delitem__")
    def _remove(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if len(args) not in ((1, 2) if name == "pop" else (1,)):
            return None
        k = self.resolve(tx, args[0])
        if k not in self.known:  # pop without a default, del: a KeyError
            if name == "pop" and len(args) == 2:
                return args[1]
            raise Unsupported("the KeyError of a tensor missing from a dict (its repr)")
        value = self.known[k]
        self.write(tx, k, DELETED)
        return value if name == "pop" else ConstantVariable(None)

    def build_replay(self, cg: Any) -> list[tuple[str, str | None]]:
        """First half of the replay: each write's key and value into temporaries."""
        temps = []
        for k, value in self.writes:
            key_temp = cg.new_temp()
            cg.reconstruct(k.var)
            cg.store_fast(key_temp)
            value_temp = None
            if value is not DELETED:
                value_temp = cg.new_temp()
                cg.reconstruct(value)
                cg.store_fast(value_temp)
            temps.append((key_temp, value_temp))
        return temps

    def apply_replay(self, cg: Any, temps: list[tuple[str, str | None]], target: str) -> None:
        """Second half: ``S[k] = v`` and ``del S[k]`` in the trace's order (``S`` loaded into
        ``target`` before any write)."""
        for key_temp, value_temp in temps:
            if value_temp is not None:
                cg.load_fast(value_temp)
            cg.load_fast(target)
            cg.load_fast(key_temp)
            cg.emit("STORE_SUBSCR" if value_temp is not None else "DELETE_SUBSCR")

    def __repr__(self) -> str:
        return f"TensorKeyedDictVariable({len(self.known)} read, {len(self.writes)} written)"


def wrap_tensor_keyed_dict(tx: TracerContext, value: dict, source: Source | None) -> VariableTracker:
    """A dict passed in whose keys are all tensors hashed by identity (not a subclass: its own
    methods would run)."""
    if source is None or type(value) not in (dict, collections.defaultdict) or not all(
            isinstance(k, torch.Tensor) and type(k).__hash__ is torch.Tensor.__hash__ for k in value):
        raise Unsupported("a dict whose keys are not constants (str, int, ...) nor all tensors")
    tx.guards.type_match(source, value)
    factory = None
    if type(value) is collections.defaultdict:
        factory = tx.wrap(value.default_factory, AttrSource(source, "default_factory"))
    return TensorKeyedDictVariable(value, source, factory)
