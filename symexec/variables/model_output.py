"""transformers' ``ModelOutput`` dataclasses (model outputs), and diffusers' ``BaseOutput`` ones
(an older copy of the same class), modelled exactly.

A ModelOutput is an OrderedDict and a dataclass at once: its dict holds the fields set to
something other than None, in the order they were set; setting a field (attribute or item)
updates both. symexec never imports transformers or diffusers: the base classes are found in
``sys.modules``. Where the two bases differ (``_OutputKind``), the trackers model the part they
share and break the graph on the rest.
Objects built while tracing (``ModelOutputVariable``) are rebuilt by generated code as
``cls(**fields)``; objects passed in (``InputModelOutputVariable``, what a continuation gets
after a graph break) are read through their sources, and the trace's writes replayed on them.
"""

from __future__ import annotations

import collections
import dataclasses
import sys
import types
from typing import Any

from ..context import TracerContext
from ..exc import TracedException, Unsupported
from ..guards import GuardKind
from ..source import AttrSource, Source
from .base import BoundMethodVariable, Methods, VariableTracker, class_static, find_on_class, is_data_descriptor
from .constant import ConstantVariable, is_literal
from .dicts import ConstDictVariable, DictViewVariable
from .lists import TupleVariable
from .tensor import TensorVariable
from .object_protocol import class_attribute
from .user_objects import ObjectVariableBase


@dataclasses.dataclass(frozen=True)
class _OutputKind:
    """A library's model-output base class, by where it is defined. ``any_field_becomes_item``:
    whether setting a field to a value makes it an item even when it was not one (transformers'
    ``__setattr__`` tests the field names; diffusers' tests the keys, so it only updates an item
    that exists). Both rebuild from their fields as ``_rebuilt_items`` says: they differ only in
    how they unpack a lone first field that is not a tensor, which the trackers refuse."""

    module: str
    name: str
    any_field_becomes_item: bool

    def base(self) -> type | None:
        """The base class when its library is loaded (symexec never imports it)."""
        return getattr(sys.modules.get(self.module), self.name, None)


_KINDS = (
    _OutputKind("transformers.utils.generic", "ModelOutput", any_field_becomes_item=True),
    _OutputKind("diffusers.utils.outputs", "BaseOutput", any_field_becomes_item=False),
)


def _kind_of(cls: type) -> tuple[_OutputKind, type] | None:
    """The kind of model output ``cls`` is, with its base class; None for any other class."""
    for kind in _KINDS:
        base = kind.base()
        if base is not None and isinstance(cls, type) and issubclass(cls, base):
            return kind, base
    return None


def _items_after_setattr(kind: _OutputKind, items: dict[str, VariableTracker], name: str,
                         value: VariableTracker) -> dict[str, VariableTracker]:
    """The items after ``obj.name = value`` (the base's ``__setattr__``) on an object with ``items``."""
    if _is_none(value) or (name not in items and not kind.any_field_becomes_item):
        return dict(items)
    return {**items, name: value}


# What ModelOutput does through these names is what the trackers model: a subclass (or a class
# before ModelOutput in its MRO) defining one of them is traced as any object.
_PROTOCOL = (
    "__post_init__", "__setattr__", "__delattr__", "__setitem__", "__getitem__", "__delitem__", "__contains__",
    "__len__", "__iter__", "__bool__", "keys", "values", "items", "get", "setdefault", "pop", "update",
    "_replace_old_cache_name", "__getattribute__", "__getattr__", "__new__", "__init__",
)
# Names ModelOutput's own code reaches only as ``self.name(...)`` (``o[1]`` is
# ``self.to_tuple()[1]``): a subclass may define them in Python (CLIPOutput's ``to_tuple``
# flattens its nested outputs), and every such call runs the subclass's code.
_OVERRIDABLE = ("to_tuple",)
# The protocol methods the trackers' call_method handles.
_METHODS = frozenset({"__getitem__", "__setitem__", "__contains__", "__len__", "get", "to_tuple",
                      "keys", "values", "items"})
# Names that ModelOutput renames (with a logged deprecation warning): not modelled.
_RENAMED = frozenset({"past_key_values", "cache_params"})


def is_model_output_class(tx: TracerContext, cls: type) -> bool:
    """Whether ``cls`` is a dataclass subclass of ``ModelOutput`` whose dict protocol is
    ModelOutput's own (the lookups that decide it are guarded)."""
    found = _kind_of(cls)
    if found is None or cls is found[1] or not dataclasses.is_dataclass(cls):
        return False
    later = _from_model_output(cls)
    for name in _PROTOCOL:
        klass, static = find_on_class(tx, cls, name)  # (ModelOutput relies on some being absent)
        if name == "__init__":  # the dataclass's generated __init__ (a wrapper renames old keywords)
            if klass is None or not _generated_init(tx, static):
                return False
        elif klass is not None and klass not in later:
            return False
    for name in _OVERRIDABLE:
        klass, static = find_on_class(tx, cls, name)
        if klass not in later and not isinstance(static, types.FunctionType):
            return False
    return True


def _from_model_output(cls: type) -> tuple[type, ...]:
    """The base (ModelOutput, BaseOutput) and the classes after it in ``cls``'s MRO (which the
    lookups guard)."""
    mro = cls.__mro__
    return mro[mro.index(_kind_of(cls)[1]):]


@dataclasses.dataclass
class _Probe:
    field: int


# Where dataclasses' generated functions say their code comes from ("<string>").
_GENERATED_FILE = _Probe.__init__.__code__.co_filename


def _generated_init(tx: TracerContext, init: Any) -> bool:
    """Whether ``init`` is the ``__init__`` ``@dataclass`` made (as ModelOutput's metaclass
    wraps it, to rename old keywords), not one written in the class, which may do anything."""
    if isinstance(init, types.FunctionType) and init.__code__ in _bc_wrapper_codes(tx, _KINDS[0].base()):
        init = init.__closure__[init.__code__.co_freevars.index("init")].cell_contents
    return isinstance(init, types.FunctionType) and init.__code__.co_filename == _GENERATED_FILE \
        and init.__name__ == "__init__"


def _bc_wrapper_codes(tx: TracerContext, base: type | None) -> tuple[types.CodeType, ...]:
    """The code of the wrapper ModelOutput's metaclass puts around a dataclass ``__init__``
    (which calls the closed-over ``init`` after renaming keywords this model does not take)."""
    if base is None:
        return ()
    setter = class_static(tx, type(base), "__setattr__")
    if not isinstance(setter, types.FunctionType):
        return ()
    return tuple(c for c in setter.__code__.co_consts
                 if isinstance(c, types.CodeType) and "init" in c.co_freevars)


def _is_none(var: VariableTracker) -> bool:
    return var.is_python_constant() and var.as_python_constant() is None


def _rebuilt_items(kind: _OutputKind, fields: dict[str, VariableTracker]) -> dict[str, VariableTracker] | None:
    """The dict ``cls(**fields)`` makes (the base's ``__post_init__``): the non-None fields, in
    field order; None when ``__post_init__`` would instead unpack a lone first field as pairs
    (transformers' tries any first field that is not a tensor; diffusers' only a dict)."""
    values = list(fields.values())
    if values and not _is_none(values[0]) and all(_is_none(v) for v in values[1:]) and not _never_unpacked(kind, values[0]):
        return None
    return {k: v for k, v in fields.items() if not _is_none(v)}


def _never_unpacked(kind: _OutputKind, first: VariableTracker) -> bool:
    """Whether a lone first field ``first`` is kept as the item by the kind's ``__post_init__``."""
    if isinstance(first, TensorVariable):
        return True
    if kind.any_field_becomes_item:  # transformers: iterated unless it is a tensor
        return False
    try:
        return not issubclass(first.python_type(), dict)  # diffusers: unpacked only if a dict
    except Unsupported:
        return False


def _same_items(a: dict[str, VariableTracker], b: dict[str, VariableTracker]) -> bool:
    return [(k, id(v)) for k, v in a.items()] == [(k, id(v)) for k, v in b.items()]


class ModelOutputBase(ObjectVariableBase):
    """What both kinds share: the dict protocol over ``self.dict.items`` and the field writes.
    ``fields`` holds the attribute values the trace knows; ``_set`` makes a write, or refuses
    one that the object's kind cannot give back to the real world exactly."""

    models = collections.OrderedDict  # transformers' ModelOutput dataclasses

    cls: type
    fields: dict[str, VariableTracker]
    dict: "_ModelOutputDict"

    @property
    def kind(self) -> _OutputKind:
        return _kind_of(self.cls)[0]

    def _set(self, tx: TracerContext, name: str, value: VariableTracker, items: dict[str, VariableTracker]) -> None:
        raise NotImplementedError

    def _commit(self, name: str, value: VariableTracker, items: dict[str, VariableTracker]) -> None:
        self.fields[name] = value
        self.dict.items.clear()
        self.dict.items.update(items)

    def _field_name(self, name: Any, what: str) -> str:
        if not isinstance(name, str) or name in _RENAMED or name not in self.field_names():
            raise Unsupported(f"{what} {name!r} of {self.describe()}, which is not one of its fields")
        return name

    def field_names(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self.cls)]

    def _overridden(self, tx: TracerContext, name: str) -> bool:
        """Whether the class defines ``name`` (one of ``_OVERRIDABLE``) itself."""
        return name in _OVERRIDABLE and find_on_class(tx, self.cls, name)[0] not in _from_model_output(self.cls)

    def store_attr(self, tx: TracerContext, name: str, value: VariableTracker | None) -> None:
        if value is None:
            raise Unsupported(f"deleting attribute {name!r} of {self.describe()}")
        name = self._field_name(name, "setting the attribute")
        self._set(tx, name, value, _items_after_setattr(self.kind, self.dict.items, name, value))

    def truth(self, tx: TracerContext) -> bool:
        return bool(self.dict.items)

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        return [ConstantVariable(k) for k in self.dict.items]

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        result = None if kwargs else self.methods.call(self, tx, name, args, kwargs)
        return result if result is not None else self.var_getattr(tx, name).call_function(tx, args, kwargs)

    # ModelOutput's dict protocol over the known items; any other method, or these called
    # otherwise, is read and called as the object's (its class's, traced).
    methods = Methods("ModelOutput")

    def _known_key(self, args: list[VariableTracker]) -> Any:
        key = args[0].as_python_constant()
        if isinstance(key, str) and key in _RENAMED:
            raise Unsupported(f"the renamed key {key!r} of {self.describe()}")
        return key

    @methods("__contains__")
    def _contains(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not args:
            return None
        key = self._known_key(args)
        return ConstantVariable(key in self.dict.items) if len(args) == 1 else None

    @methods("get")
    def _get(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not args:
            return None
        key = self._known_key(args)
        return self.dict.items.get(key, args[1] if len(args) == 2 else ConstantVariable(None)) if len(args) <= 2 else None

    @methods("__getitem__")
    def _getitem_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not args:
            return None
        key = self._known_key(args)
        if len(args) != 1:
            return None
        if isinstance(key, str):
            if key not in self.dict.items:
                raise TracedException(KeyError(key))
            return self.dict.items[key]
        return self.call_method(tx, "to_tuple", [], {}).call_method(tx, "__getitem__", args, {})

    @methods("__setitem__")
    def _setitem(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if len(args) != 2:
            return None
        key = self._field_name(args[0].as_python_constant(), "setting the item")
        self._set(tx, key, args[1], {**self.dict.items, key: args[1]})
        return ConstantVariable(None)

    @methods("to_tuple")
    def _to_tuple(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if args or self._overridden(tx, name):
            return None
        return TupleVariable(list(self.dict.items.values()))

    @methods("__len__")
    def _len(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        return None if args else ConstantVariable(len(self.dict.items))

    @methods("keys", "values", "items")
    def _view(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        return None if args else DictViewVariable(self.dict, name)  # live, like OrderedDict's views

    def native_call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        """OrderedDict's own reads reached through ``super()`` (ModelOutput's ``get`` and
        ``__contains__`` call them after renaming a key): over the items, as the dict's."""
        if name in _NATIVE_READS:
            return self.dict.native_call_method(tx, name, args, kwargs)
        return super().native_call_method(tx, name, args, kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.cls.__qualname__}, {list(self.dict.items)})"


_NATIVE_READS = frozenset({"get", "__contains__", "__getitem__", "__len__", "keys", "values", "items"})


class ModelOutputVariable(ModelOutputBase):
    """A ModelOutput built while tracing. Generated code rebuilds it as ``cls(**fields)``, so
    a change after which that call would not give the same dict (a field set to None while its
    key stays, keys out of field order, an attribute that is not a field) breaks the graph
    instead, as does anything else not modelled here."""

    models = collections.OrderedDict  # transformers' ModelOutput dataclasses

    built_once = True

    def __init__(self, cls: type, fields: dict[str, VariableTracker]) -> None:
        super().__init__()
        self.cls = cls
        self.fields = fields  # every field's attribute value, in field order
        self.dict = _ModelOutputDict(self, _rebuilt_items(self.kind, fields) or {})

    def describe(self) -> str:
        return f"a {self.cls.__qualname__}"

    def subvalues(self) -> list[VariableTracker]:
        return list(self.fields.values())

    def field_names(self) -> list[str]:
        return list(self.fields)

    def _set(self, tx: TracerContext, name: str, value: VariableTracker, items: dict[str, VariableTracker]) -> None:
        """Set field ``name`` to ``value`` with the dict becoming ``items``, if rebuilding gives it."""
        rebuilt = _rebuilt_items(self.kind, {**self.fields, name: value})
        if rebuilt is None or not _same_items(rebuilt, items):
            raise Unsupported(f"setting {self.cls.__qualname__}.{name}: the object could not be rebuilt from its fields")
        self._commit(name, value, items)

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        if name in self.fields:
            return self.fields[name]
        if name in _METHODS and not self._overridden(tx, name):  # ModelOutput's or OrderedDict's
            return BoundMethodVariable(self, name)
        return class_attribute(tx, self, self.cls, name)

    def reconstruct(self, cg: Any) -> None:
        cg.push_callable(lambda: cg.load_const(self.cls))
        cg.build(tuple, 0)
        for key, value in self.fields.items():
            cg.load_const(key)
            cg.reconstruct(value)
        cg.build(dict, len(self.fields))
        cg.emit("CALL_FUNCTION_EX", 1)


class InputModelOutputVariable(ModelOutputBase):
    """A ModelOutput passed in (a continuation's, after a graph break). It is guarded on its
    type, on its keys in order, and on each item being its attribute (as ModelOutput keeps
    them, unless a field was later set to None); items are read through the attributes.
    A write is replayed after the graph as ``obj.name = value`` (ModelOutput.__setattr__, which
    also sets the item), so a write after which that replay would not give the traced dict (an
    item set to None, a new key written again after another) breaks the graph instead."""

    models = collections.OrderedDict  # transformers' ModelOutput dataclasses

    def __init__(self, value: Any, source: Source, items: dict[str, VariableTracker]) -> None:
        super().__init__(source)
        self.value = value
        self.cls = type(value)
        self.original = dict(items)
        self.fields = dict(items)  # the attributes read as items, and those the trace wrote
        self.dict = _ModelOutputDict(self, items)

    def describe(self) -> str:
        return f"the {self.cls.__qualname__} {self.source.name}"

    def subvalues(self) -> list[VariableTracker]:
        return list(self.fields.values())

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        if name in self.fields:
            return self.fields[name]
        if name in _METHODS and not self._overridden(tx, name):
            return BoundMethodVariable(self, name)
        if name in vars(self.value) and not is_data_descriptor(class_static(tx, self.cls, name)):
            return tx.wrap(vars(self.value)[name], AttrSource(self.source, name))
        if name not in vars(self.value):
            tx.guards.not_in_instance_dict(self.source, name)
        return class_attribute(tx, self, self.cls, name, class_source=AttrSource(self.source, "__class__"))

    def _set(self, tx: TracerContext, name: str, value: VariableTracker, items: dict[str, VariableTracker]) -> None:
        side_effects = tx.trace.side_effects
        side_effects.store_attr(self, name, value)
        replayed = dict(self.original)  # what the attribute writes, replayed in their order, make
        for obj, written, written_value in side_effects.attributes.values():
            if obj is self:
                replayed = _items_after_setattr(self.kind, replayed, written, written_value)
        if not _same_items(replayed, items):
            raise Unsupported(f"setting {self.cls.__qualname__}.{name}: replaying the writes would not give its items")
        self._commit(name, value, items)

    def reconstruct(self, cg: Any) -> None:
        self.source.emit_load(cg)


class _ModelOutputDict(ConstDictVariable):
    """The dict part of a ModelOutput tracker, for its live views: the object itself when rebuilt."""

    models = collections.OrderedDict

    built_once = False  # the owner is built once

    def __init__(self, owner: ModelOutputBase, items: dict[str, VariableTracker]) -> None:
        super().__init__(items, user_cls=owner.cls)
        self.owner = owner

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.owner.call_method(tx, name, args, kwargs)

    def reconstruct(self, cg: Any) -> None:
        cg.reconstruct(self.owner)


def _items_are_attributes(obj: Any) -> bool:
    """Guard: each item of the ModelOutput ``obj`` is the attribute of its name."""
    attributes = vars(obj)
    return all(k in attributes and attributes[k] is v for k, v in dict.items(obj))


def wrap_model_output(tx: TracerContext, value: Any, source: Source | None) -> VariableTracker:
    """Wrap a ModelOutput passed in (``is_model_output_class`` holds for its class)."""
    if source is None:
        raise Unsupported(f"a {type(value).__qualname__} that cannot be re-fetched from the inputs")
    keys = list(dict.keys(value))
    if not _items_are_attributes(value) or not all(type(k) is str and k not in _RENAMED for k in keys):
        raise Unsupported(f"a {type(value).__qualname__} whose items are not its attributes")
    tx.guards.type_match(source, value)
    tx.guards.keys_match(source, keys)
    tx.guards.add(GuardKind.ID_MATCH, f"{source.name}'s items are its attributes",
                  tx.guards.code(f"{tx.guards.constant(_items_are_attributes)}(", source, ")"), source)
    var = InputModelOutputVariable(value, source, {k: tx.wrap(getattr(value, k), AttrSource(source, k)) for k in keys})
    tx.trace.memos.objects_by_id[id(value)] = (value, var)  # reached again through another source: this tracker
    return var


def construct_model_output(tx: TracerContext, cls: type, args: list[VariableTracker],
                           kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """``cls(*args, **kwargs)`` for a ModelOutput class (``is_model_output_class``)."""
    fields = [f for f in dataclasses.fields(cls) if f.init]
    names = {f.name for f in fields}
    if len(args) > len(fields) or set(kwargs) - names:
        raise Unsupported(f"{cls.__qualname__}() with arguments that are not its fields ({sorted(set(kwargs) - names)})")
    values: dict[str, VariableTracker] = {}
    for i, f in enumerate(fields):
        if i < len(args):
            values[f.name] = args[i]
        elif f.name in kwargs:
            values[f.name] = kwargs[f.name]
        elif f.default is not dataclasses.MISSING and is_literal(f.default):
            values[f.name] = ConstantVariable(f.default)
        else:
            raise Unsupported(f"the field {f.name!r} of {cls.__qualname__} has no simple default")
    if _rebuilt_items(_kind_of(cls)[0], values) is None:
        raise Unsupported(f"{cls.__qualname__}() with only its first field, which its base may unpack "
                          f"as key/value pairs")
    return ModelOutputVariable(cls, values)

