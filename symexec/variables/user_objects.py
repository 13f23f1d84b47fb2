"""Objects of user classes: attribute reads, methods, properties, dunder methods, objects
created while tracing, ``super()``.

Class attributes resolve like CPython's lookup does (``class_attribute``): a property runs
its getter (inlined), a function becomes a bound method, a classmethod binds the class, a
staticmethod stays a function. Instances that existed before the call read their attributes
from the real object (with a source, so they are guarded and re-fetched); writes are side
effects, replayed after the graph. Instances created by the trace (``NewObjectVariable``) keep
their attributes as trackers and are rebuilt by generated code if they survive the trace.
"""

from __future__ import annotations

import dataclasses
import sys
import types
from typing import Any

from ..exc import AttributeMissing, TracedException, Unsupported
from ..source import AttrSource, ConstSource, GetItemSource, PrivateObjectSource, Source
from .base import DELETED, BoundMethodVariable, VariableTracker, class_static, find_on_class
from .constant import ConstantVariable, is_literal
from .dicts import ConstDictVariable, DictViewVariable
from .functions import UserFunctionVariable, UserMethodVariable
from .lists import CLASS_ATTRIBUTE, NamedTupleVariable, TupleVariable
from .tensor import TensorVariable


def _function(fn: types.FunctionType, source: Source | None) -> UserFunctionVariable:
    return UserFunctionVariable(fn, source if source is not None else ConstSource.of(fn))


def lookup_on_class(tx: Any, cls: type, name: str, start_after: type | None = None) -> tuple[type, Any]:
    """``find_on_class``, where a missing name is an AttributeError."""
    klass, static = find_on_class(tx, cls, name, start_after)
    if klass is None:
        raise AttributeMissing(f"AttributeError: {cls.__qualname__} has no attribute {name!r}")
    return klass, static


def class_attribute(tx: Any, obj: VariableTracker | None, cls: type, name: str, start_after: type | None = None,
                    class_source: Source | None = None) -> VariableTracker:
    """``name`` looked up on ``cls`` (after ``start_after`` in its MRO, for super()), bound to
    ``obj`` when it is an instance attribute access."""
    try:
        klass, static = lookup_on_class(tx, cls, name, start_after)
    except AttributeMissing:
        if obj is None or start_after is not None or class_static(tx, cls, "__getattr__") is not None or \
                not generic_access(tx, cls, "__getattribute__"):
            raise
        raise AttributeMissing.exactly(no_attribute(cls, name)) from None
    # `type(obj).name` re-fetches it through the MRO; without a source for the class, the
    # class that holds it is a constant of the trace.
    if class_source is not None and start_after is None:
        source: Source = AttrSource(class_source, name)
    else:
        source = AttrSource(ConstSource.of(klass), name)
    if isinstance(static, staticmethod) and isinstance(static.__func__, types.FunctionType):
        return _function(static.__func__, None)
    if isinstance(static, classmethod) and isinstance(static.__func__, types.FunctionType):
        return UserMethodVariable(_function(static.__func__, None), tx.wrap(cls, class_source))
    if isinstance(static, types.FunctionType):
        fn = _function(static, source)
        return fn if obj is None else UserMethodVariable(fn, obj)
    if isinstance(static, property) and obj is not None:
        if not isinstance(static.fget, types.FunctionType):
            raise Unsupported(f"the property {cls.__qualname__}.{name} has no Python getter")
        return _function(static.fget, None).call_function(tx, [obj], {})
    if hasattr(static, "__get__") and not isinstance(static, type):
        getter = class_static(tx, type(static), "__get__")
        if not isinstance(getter, types.FunctionType):
            raise Unsupported(f"reading {cls.__qualname__}.{name}, a {type(static).__name__} descriptor")
        # A descriptor written in Python (a lazy property): its __get__ runs, inlined. It is
        # read from the class's __dict__ (reading it as an attribute would run __get__ again).
        descriptor = tx.wrap(static, GetItemSource(AttrSource(ConstSource.of(klass), "__dict__"), name))
        owner = tx.wrap(cls, class_source)
        return _function(getter, None).call_function(tx, [descriptor, obj if obj is not None else ConstantVariable(None), owner], {})
    return tx.wrap(static, source)


CLASS_ATTRIBUTE.append(class_attribute)

# C classes whose __getattribute__/__setattr__ slots are CPython's generic ones, set explicitly.
_GENERIC_ACCESS = frozenset({types.SimpleNamespace})


def tp_name(cls: type) -> str:
    """How CPython's messages name a class: its C-level name, with the module of a static type."""
    heap_type = cls.__flags__ & (1 << 9)  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement
    return cls.__name__ if heap_type or cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"


def no_attribute(cls: type, name: str) -> AttributeError:
    """The AttributeError CPython raises for a missing attribute of a ``cls`` instance."""
    return AttributeError(f"'{tp_name(cls)}' object has no attribute '{name}'")


def is_slot(static: Any, name: str) -> bool:
    """Whether a class attribute is the descriptor of one of the class's ``__slots__``, which
    stores the value in the object as an attribute would."""
    return type(static) is types.MemberDescriptorType and name not in ("__dict__", "__weakref__")


def generic_access(tx: Any, cls: type, name: str) -> bool:
    """Whether ``cls``'s ``name`` (``__getattribute__`` or ``__setattr__``) is object's own
    behaviour (the class lookup guarded)."""
    static = class_static(tx, cls, name)
    return static is getattr(object, name) or (
        type(static) is types.WrapperDescriptorType and static.__objclass__ in _GENERIC_ACCESS)


# Binary operators and the dunder methods that implement them for user objects.
DUNDERS = {
    "add": ("__add__", "__radd__"), "sub": ("__sub__", "__rsub__"), "mul": ("__mul__", "__rmul__"),
    "truediv": ("__truediv__", "__rtruediv__"), "floordiv": ("__floordiv__", "__rfloordiv__"),
    "mod": ("__mod__", "__rmod__"), "pow": ("__pow__", "__rpow__"), "matmul": ("__matmul__", "__rmatmul__"),
    "and_": ("__and__", "__rand__"), "or_": ("__or__", "__ror__"), "xor": ("__xor__", "__rxor__"),
    "lshift": ("__lshift__", "__rlshift__"), "rshift": ("__rshift__", "__rrshift__"),
    "lt": ("__lt__", "__gt__"), "le": ("__le__", "__ge__"), "gt": ("__gt__", "__lt__"), "ge": ("__ge__", "__le__"),
    "eq": ("__eq__", "__eq__"), "ne": ("__ne__", "__ne__"),
}


class ObjectVariableBase(VariableTracker):
    """What instances of user classes share: method calls and dunders through the class."""

    cls: type

    def python_type(self) -> type:
        return self.cls

    def _class_source(self) -> Source | None:
        return AttrSource(self.source, "__class__") if self.source is not None else None

    def has_python_method(self, tx: Any, name: str) -> bool:
        return isinstance(class_static(tx, self.cls, name), types.FunctionType)

    def class_variable(self, tx: Any) -> VariableTracker:
        return tx.wrap(self.cls, self._class_source())

    def call_method(self, tx: Any, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name.startswith("__") and name.endswith("__") and not self.has_python_method(tx, name):
            raise Unsupported(f"{self.cls.__qualname__} has no Python {name}")
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def call_function(self, tx: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.call_method(tx, "__call__", args, kwargs)

    def truth(self, tx: Any) -> bool:
        if self.has_python_method(tx, "__bool__"):
            return self.call_method(tx, "__bool__", [], {}).truth(tx)
        if self.has_python_method(tx, "__len__"):
            return self.call_method(tx, "__len__", [], {}).truth(tx)
        if class_static(tx, self.cls, "__bool__") is None and class_static(tx, self.cls, "__len__") is None:
            return True
        raise Unsupported(f"the truth of a {self.cls.__qualname__} (a C __bool__ or __len__)")

    def unpack(self, tx: Any) -> list[VariableTracker]:
        if self.has_python_method(tx, "__iter__"):
            return self.call_method(tx, "__iter__", [], {}).unpack(tx)
        if self.has_python_method(tx, "__getitem__") and self.has_python_method(tx, "__len__"):
            n = self.call_method(tx, "__len__", [], {}).as_python_constant()
            return [self.call_method(tx, "__getitem__", [ConstantVariable(i)], {}) for i in range(n)]
        raise Unsupported(f"iterating over a {self.cls.__qualname__}")


class UserDefinedObjectVariable(ObjectVariableBase):
    """An instance of a user class that existed before the call."""

    def __init__(self, value: Any, source: Source | None = None) -> None:
        super().__init__(source)
        self.value = value
        self.cls = type(value)

    def describe(self) -> str:
        return f"{self.cls.__qualname__} object" + (f" {self.source.name}" if self.source else "")

    def written_attribute(self, tx: Any, name: str) -> VariableTracker | None:
        """What the trace itself wrote into ``obj.name``, if it did (the real object does not
        have it yet: the write is replayed after the graph)."""
        if self.source is None:
            raise Unsupported(f"reading {name!r} of {self.describe()} without a source")
        pending = tx.output.side_effects.pending_attr(self, name)
        if pending is DELETED:
            raise AttributeMissing(f"AttributeError: {name!r} was deleted")
        if name == "__class__":
            return self.class_variable(tx)
        return pending

    def var_getattr(self, tx: Any, name: str) -> VariableTracker:
        written = self.written_attribute(tx, name)
        if written is not None:
            return written
        cls = self.cls
        if not generic_access(tx, cls, "__getattribute__"):
            return self.real_attribute(tx, name)
        if name == "__dict__":
            return InstanceDictVariable.of(tx, self)
        static = class_static(tx, cls, name)
        if static is not None and type(static).__name__ == "member_descriptor":  # __slots__
            return tx.wrap(getattr(self.value, name), AttrSource(self.source, name))
        is_data_descriptor = hasattr(static, "__set__") or hasattr(static, "__delete__")
        if is_data_descriptor and not isinstance(static, property):
            raise Unsupported(f"reading the data descriptor {cls.__qualname__}.{name}")
        instance_dict = getattr(self.value, "__dict__", None)
        if instance_dict is not None and name in instance_dict and not is_data_descriptor:
            return tx.wrap(instance_dict[name], AttrSource(self.source, name))
        if static is None:
            return self.missing_attribute(tx, name)
        if instance_dict is not None and not is_data_descriptor:  # an instance attribute set later shadows it
            tx.guards.not_in_instance_dict(self.source, name)
        return class_attribute(tx, self, cls, name, class_source=self._class_source())

    def missing_attribute(self, tx: Any, name: str) -> VariableTracker:
        if class_static(tx, self.cls, "__getattr__") is not None:
            return self.real_attribute(tx, name)
        raise AttributeMissing.exactly(no_attribute(self.cls, name))

    def real_attribute(self, tx: Any, name: str) -> VariableTracker:
        """Where the class customises attribute access (a config object mapping names), read
        the attribute for real: its value is wrapped with the source ``obj.name``, so it is
        guarded and re-fetched like any input."""
        try:
            value = getattr(self.value, name)
        except AttributeError as e:
            raise AttributeMissing.exactly(e) from e
        if isinstance(value, types.MethodType) and value.__self__ is self.value:
            return UserMethodVariable(_function(value.__func__, None), self)
        return tx.wrap(value, AttrSource(self.source, name))

    def store_attr(self, tx: Any, name: str, value: VariableTracker | None) -> None:
        if isinstance(self.source, PrivateObjectSource):  # the trace's own object: change it now
            if value is None:
                delattr(self.value, name)
            else:
                setattr(self.value, name, value.as_python_constant())
            tx.output.input_trackers.pop(AttrSource(self.source, name), None)  # read it afresh
            return
        static = class_static(tx, self.cls, name)
        if (hasattr(static, "__set__") and not is_slot(static, name)) or not generic_access(tx, self.cls, "__setattr__"):
            raise Unsupported(f"setting {self.cls.__qualname__}.{name} runs Python code (a descriptor or __setattr__)")
        tx.output.side_effects.store_attr(self, name, DELETED if value is None else value)

    def __repr__(self) -> str:
        return f"UserDefinedObjectVariable({self.cls.__qualname__})"


def make_object(cls: type, attributes: dict[str, Any]) -> Any:
    """An instance of ``cls`` with these attributes, without running ``__init__`` again
    (generated code: an object the trace created survives it)."""
    obj = cls.__new__(cls)
    for name, value in attributes.items():
        object.__setattr__(obj, name, value)
    return obj


class NewObjectVariable(ObjectVariableBase):
    """An instance of a plain user class created by the trace (``Box(x)``, a dataclass)."""

    built_once = True

    def __init__(self, cls: type) -> None:
        super().__init__()
        self.cls = cls
        self.attributes: dict[str, VariableTracker] = {}

    def describe(self) -> str:
        return f"a new {self.cls.__qualname__}"

    def subvalues(self) -> list[VariableTracker]:
        return list(self.attributes.values())

    def var_getattr(self, tx: Any, name: str) -> VariableTracker:
        if name in self.attributes:
            return self.attributes[name]
        if name == "__class__":
            return self.class_variable(tx)
        if name == "__dict__":
            return InstanceDictVariable.of(tx, self)
        if is_slot(class_static(tx, self.cls, name), name) and generic_access(tx, self.cls, "__getattribute__"):
            raise AttributeMissing.exactly(no_attribute(self.cls, name))
        return class_attribute(tx, self, self.cls, name, class_source=None)

    def store_attr(self, tx: Any, name: str, value: VariableTracker | None) -> None:
        static = class_static(tx, self.cls, name)
        if (hasattr(static, "__set__") and not is_slot(static, name)) or not generic_access(tx, self.cls, "__setattr__"):
            raise Unsupported(f"setting {self.cls.__qualname__}.{name} runs Python code")
        if not is_slot(static, name) and class_static(tx, self.cls, "__dict__") is None:
            raise Unsupported(f"setting {name!r} of a {self.cls.__qualname__}, which has __slots__ and no __dict__")
        if value is None:
            if name not in self.attributes:
                raise AttributeMissing(f"AttributeError: {name!r}")
            del self.attributes[name]
        else:
            self.attributes[name] = value

    def reconstruct(self, cg: Any) -> None:
        def arguments() -> list[None]:
            cg.load_const(self.cls)
            for key, value in self.attributes.items():
                cg.load_const(key)
                cg.reconstruct(value)
            cg.build(dict, len(self.attributes))
            return [None, None]

        cg.call_const(make_object, arguments)

    def __repr__(self) -> str:
        return f"NewObjectVariable({self.cls.__qualname__}, {list(self.attributes)})"


class InstanceDictVariable(VariableTracker):
    """``obj.__dict__`` of a user object: its items are the object's own attributes. A write is
    the object's attribute write (which refuses a name a data descriptor or ``__setattr__``
    would handle, where the two differ); a read is the instance-dict part of a lookup."""

    def __init__(self, obj: "UserDefinedObjectVariable | NewObjectVariable") -> None:
        super().__init__()
        self.obj = obj

    @classmethod
    def of(cls, tx: Any, obj: Any) -> "InstanceDictVariable":
        static = class_static(tx, obj.cls, "__dict__")
        if type(static) is not types.GetSetDescriptorType or not generic_access(tx, obj.cls, "__getattribute__"):
            raise Unsupported(f"reading __dict__ of {obj.describe()}")
        return cls(obj)

    def python_type(self) -> type:
        return dict

    def describe(self) -> str:
        return f"the __dict__ of {self.obj.describe()}"

    def _lookup(self, tx: Any, key: VariableTracker) -> VariableTracker | None:
        name = key.as_python_constant()
        if type(name) is not str:
            raise Unsupported(f"a {type(name).__name__} key of {self.describe()}")
        obj = self.obj
        if isinstance(obj, NewObjectVariable):
            return obj.attributes.get(name)
        written = obj.written_attribute(tx, name)
        if written is not None:
            return written
        instance_dict = vars(obj.value)
        if name in instance_dict:
            return tx.wrap(instance_dict[name], AttrSource(obj.source, name))
        tx.guards.not_in_instance_dict(obj.source, name)
        return None

    def call_method(self, tx: Any, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if kwargs:
            raise Unsupported(f"{self.describe()}.{name}() with keyword arguments")
        if name == "__setitem__" and len(args) == 2:
            if type(args[0].as_python_constant()) is not str:
                raise Unsupported(f"a non-str key written into {self.describe()}")
            self.obj.store_attr(tx, args[0].as_python_constant(), args[1])
            return ConstantVariable(None)
        if name in ("__getitem__", "__contains__") and len(args) == 1 or name == "get" and 1 <= len(args) <= 2:
            found = self._lookup(tx, args[0])
            if name == "__contains__":
                return ConstantVariable(found is not None)
            if found is None and name == "get":
                return args[1] if len(args) > 1 else ConstantVariable(None)
            if found is None:
                raise TracedException(KeyError(args[0].as_python_constant()))
            return found
        raise Unsupported(f"calling {name!r} of {self.describe()}")

    def reconstruct(self, cg: Any) -> None:
        cg.reconstruct(self.obj)
        cg.load_attr("__dict__")

    def subvalues(self) -> list[VariableTracker]:
        return [self.obj]


class ExceptionVariable(VariableTracker):
    """An exception made while tracing (``ValueError("bad")``, a KeyError of a lookup)."""

    def __init__(self, cls: type, args: list[VariableTracker]) -> None:
        super().__init__()
        self.cls = cls
        self.args = args

    @classmethod
    def of(cls, tx: Any, value: VariableTracker) -> "ExceptionVariable":
        """What ``raise value`` raises: an instance, or a class called with no arguments."""
        if isinstance(value, ExceptionVariable):
            return value
        if value.is_python_constant() and isinstance(value.as_python_constant(), type):
            exc_cls = value.as_python_constant()
            if issubclass(exc_cls, BaseException):
                return cls(exc_cls, [])
        raise Unsupported(f"raising {value.describe()}")

    @classmethod
    def from_python(cls, error: BaseException) -> "ExceptionVariable":
        return cls(type(error), [ConstantVariable(a) for a in error.args if is_literal(a)])

    def python_type(self) -> type:
        return self.cls

    def describe(self) -> str:
        args = ", ".join(repr(a.as_python_constant()) if a.is_python_constant() else "..." for a in self.args)
        return f"{self.cls.__name__}({args})"

    def var_getattr(self, tx: Any, name: str) -> VariableTracker:
        if name == "args":
            return TupleVariable(list(self.args))
        raise Unsupported(f"reading {name!r} of an exception made while tracing")

    def call_method(self, tx: Any, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name == "__str__" and not args:
            return ConstantVariable(str(self.cls(*[a.as_python_constant() for a in self.args])))
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg: Any) -> None:
        def arguments() -> list[None]:
            for arg in self.args:
                cg.reconstruct(arg)
            return [None] * len(self.args)

        cg.call_const(self.cls, arguments)

    def subvalues(self) -> list[VariableTracker]:
        return list(self.args)


def model_output_base() -> type | None:
    """transformers' ``ModelOutput`` when transformers is loaded (symexec never imports it)."""
    return getattr(sys.modules.get("transformers.utils.generic"), "ModelOutput", None)


# What ModelOutput does through these names is what ModelOutputVariable models: a subclass
# (or a class before ModelOutput in its MRO) defining one of them is traced as any object.
_MODEL_OUTPUT_PROTOCOL = (
    "__post_init__", "__setattr__", "__delattr__", "__setitem__", "__getitem__", "__delitem__", "__contains__",
    "__len__", "__iter__", "__bool__", "keys", "values", "items", "get", "to_tuple", "setdefault", "pop", "update",
    "_replace_old_cache_name", "__getattribute__", "__getattr__", "__new__",
)
# The protocol methods ModelOutputVariable.call_method handles.
_MODEL_OUTPUT_METHODS = frozenset({"__getitem__", "__setitem__", "__contains__", "__len__", "get", "to_tuple",
                                   "keys", "values", "items"})
# Names that ModelOutput renames (with a logged deprecation warning): not modelled.
_MODEL_OUTPUT_RENAMED = frozenset({"past_key_values", "cache_params"})


def is_model_output_class(tx: Any, cls: type) -> bool:
    """Whether ``cls`` is a dataclass subclass of ``ModelOutput`` whose dict protocol is
    ModelOutput's own (the lookups that decide it are guarded)."""
    base = model_output_base()
    if base is None or not issubclass(cls, base) or cls is base or not dataclasses.is_dataclass(cls):
        return False
    later = cls.__mro__[cls.__mro__.index(base):]
    for name in _MODEL_OUTPUT_PROTOCOL:
        klass, _ = find_on_class(tx, cls, name)  # (ModelOutput relies on some being absent)
        if klass is not None and klass not in later:
            return False
    return True


class ModelOutputVariable(VariableTracker):
    """An instance of a ``ModelOutput`` dataclass (transformers' model outputs) built while
    tracing, modelled exactly: its dict holds the fields set to something other than None, in
    the order they were set; setting a field (attribute or item) updates both. Generated code
    rebuilds it as ``cls(**fields)``, so a change after which that call would not give the same
    dict (a field set to None while its key stays, keys out of field order, an attribute that is
    not a field) breaks the graph instead, as does anything else not modelled here."""

    built_once = True

    def __init__(self, cls: type, fields: dict[str, VariableTracker]) -> None:
        super().__init__()
        self.cls = cls
        self.fields = fields  # every field's attribute value, in field order
        self.dict = _ModelOutputDict(self)  # the dict part, kept in step with the fields

    def python_type(self) -> type:
        return self.cls

    def describe(self) -> str:
        return f"a {self.cls.__qualname__}"

    def subvalues(self) -> list[VariableTracker]:
        return list(self.fields.values())

    @staticmethod
    def _rebuilt_items(fields: dict[str, VariableTracker]) -> dict[str, VariableTracker] | None:
        """The dict ``cls(**fields)`` makes (ModelOutput.__post_init__): the non-None fields, in
        field order; None when __post_init__ would instead unpack the first field as pairs."""
        values = list(fields.values())
        if values and not _is_none(values[0]) and all(_is_none(v) for v in values[1:]) and not isinstance(values[0], TensorVariable):
            return None
        return {k: v for k, v in fields.items() if not _is_none(v)}

    def _set(self, name: str, value: VariableTracker, items: dict[str, VariableTracker]) -> None:
        """Set field ``name`` to ``value`` with the dict becoming ``items``, if rebuilding gives it."""
        fields = {**self.fields, name: value}
        rebuilt = self._rebuilt_items(fields)
        if rebuilt is None or [(k, id(v)) for k, v in rebuilt.items()] != [(k, id(v)) for k, v in items.items()]:
            raise Unsupported(f"setting {self.cls.__qualname__}.{name}: the object could not be rebuilt from its fields")
        self.fields = fields
        self.dict.items.clear()
        self.dict.items.update(items)

    def _field_name(self, name: Any, what: str) -> str:
        if not isinstance(name, str) or name in _MODEL_OUTPUT_RENAMED or name not in self.fields:
            raise Unsupported(f"{what} {name!r} of {self.describe()}, which is not one of its fields")
        return name

    def var_getattr(self, tx: Any, name: str) -> VariableTracker:
        if name in self.fields:
            return self.fields[name]
        if name in _MODEL_OUTPUT_METHODS:  # checked to be ModelOutput's or OrderedDict's
            return BoundMethodVariable(self, name)
        return class_attribute(tx, self, self.cls, name)

    def store_attr(self, tx: Any, name: str, value: VariableTracker | None) -> None:
        if value is None:
            raise Unsupported(f"deleting attribute {name!r} of {self.describe()}")
        name = self._field_name(name, "setting the attribute")
        items = dict(self.dict.items)
        if not _is_none(value):  # ModelOutput.__setattr__: a field set to a value is also an item
            items[name] = value
        self._set(name, value, items)

    def truth(self, tx: Any) -> bool:
        return bool(self.dict.items)

    def unpack(self, tx: Any) -> list[VariableTracker]:
        return [ConstantVariable(k) for k in self.dict.items]

    def call_method(self, tx: Any, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        items = self.dict.items
        if name in ("__getitem__", "__contains__", "get") and args and not kwargs:
            key = args[0].as_python_constant()
            if isinstance(key, str) and key in _MODEL_OUTPUT_RENAMED:
                raise Unsupported(f"the renamed key {key!r} of {self.describe()}")
            if name == "__contains__" and len(args) == 1:
                return ConstantVariable(key in items)
            if name == "get" and len(args) <= 2:
                return items.get(key, args[1] if len(args) == 2 else ConstantVariable(None))
            if name == "__getitem__" and len(args) == 1:
                if isinstance(key, str):
                    if key not in items:
                        raise TracedException(KeyError(key))
                    return items[key]
                return TupleVariable(list(items.values())).getitem(tx, args[0])
        if name == "__setitem__" and len(args) == 2 and not kwargs:
            key = self._field_name(args[0].as_python_constant(), "setting the item")
            self._set(key, args[1], {**items, key: args[1]})
            return ConstantVariable(None)
        if name == "to_tuple" and not args and not kwargs:
            return TupleVariable(list(items.values()))
        if name == "__len__" and not args and not kwargs:
            return ConstantVariable(len(items))
        if name in ("keys", "values", "items") and not args and not kwargs:
            return DictViewVariable(self.dict, name)  # live, like OrderedDict's views
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def reconstruct(self, cg: Any) -> None:
        cg.push_callable(lambda: cg.load_const(self.cls))
        cg.build(tuple, 0)
        for key, value in self.fields.items():
            cg.load_const(key)
            cg.reconstruct(value)
        cg.build(dict, len(self.fields))
        cg.emit("CALL_FUNCTION_EX", 1)

    def __repr__(self) -> str:
        return f"ModelOutputVariable({self.cls.__qualname__}, {list(self.dict.items)})"


def _is_none(var: VariableTracker) -> bool:
    return var.is_python_constant() and var.as_python_constant() is None


class _ModelOutputDict(ConstDictVariable):
    """The dict part of a ModelOutputVariable, for its live views: the object itself when rebuilt."""

    built_once = False  # the owner is built once

    def __init__(self, owner: ModelOutputVariable) -> None:
        super().__init__(ModelOutputVariable._rebuilt_items(owner.fields) or {}, user_cls=owner.cls)
        self.owner = owner

    def call_method(self, tx: Any, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.owner.call_method(tx, name, args, kwargs)

    def reconstruct(self, cg: Any) -> None:
        cg.reconstruct(self.owner)


def construct(tx: Any, cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """``cls(*args, **kwargs)`` for a user class, while tracing."""
    if is_model_output_class(tx, cls):
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
        if ModelOutputVariable._rebuilt_items(values) is None:
            raise Unsupported(f"{cls.__qualname__}() with only its first field, not a tensor: "
                              f"ModelOutput unpacks it as key/value pairs")
        return ModelOutputVariable(cls, values)
    if issubclass(cls, BaseException) and not kwargs and not any(
            isinstance(class_static(tx, cls, m), (types.FunctionType, staticmethod)) for m in ("__init__", "__new__")):
        return ExceptionVariable(cls, list(args))
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        fields = cls._fields
        defaults = class_static(tx, cls, "_field_defaults") or {}
        values = dict(zip(fields, args))
        values.update(kwargs)
        missing = [f for f in fields if f not in values and f not in defaults]
        if missing or len(args) > len(fields):
            raise Unsupported(f"TypeError: {cls.__qualname__}() arguments do not match its fields")
        items = [values[f] if f in values else ConstantVariable(defaults[f]) for f in fields]
        return NamedTupleVariable(items, cls)
    if class_static(tx, type(cls), "__call__") is not type.__call__:  # ABCMeta is fine; a metaclass __call__ is not
        raise Unsupported(f"constructing {cls.__qualname__}, whose metaclass is {type(cls).__qualname__}")
    if cls is types.SimpleNamespace and not args:  # its attributes are the keyword arguments
        obj = NewObjectVariable(cls)
        obj.attributes.update(kwargs)
        return obj
    if class_static(tx, cls, "__new__") is not object.__new__:
        raise Unsupported(f"constructing {cls.__qualname__}, which has its own __new__")
    obj = NewObjectVariable(cls)
    init = class_static(tx, cls, "__init__")
    if isinstance(init, types.FunctionType):
        _function(init, None).call_function(tx, [obj, *args], kwargs)
    elif init is not object.__init__ or args or kwargs:
        raise Unsupported(f"constructing {cls.__qualname__}: its __init__ is not Python")
    return obj


class NativeMethodVariable(VariableTracker):
    """A builtin base class's method reached through ``super()`` (``super().get(key)`` in a
    dict subclass, ``super().__init__()`` reaching ``object``)."""

    def __init__(self, obj: VariableTracker, name: str) -> None:
        super().__init__()
        self.obj, self.name = obj, name

    def call_function(self, tx: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if self.name == "__init__" and not args and not kwargs:
            return ConstantVariable(None)  # object.__init__
        native = getattr(self.obj, "native_call_method", None)
        if native is None:
            raise Unsupported(f"calling the builtin base method {self.name!r} through super()")
        return native(tx, self.name, args, kwargs)


class SuperVariable(VariableTracker):
    """``super()`` inside a method: attribute lookups start after ``cls`` in the MRO of ``obj``."""

    def __init__(self, cls: type, obj: VariableTracker) -> None:
        super().__init__()
        self.cls = cls
        self.obj = obj

    def python_type(self) -> type:
        return super

    def var_getattr(self, tx: Any, name: str) -> VariableTracker:
        obj_cls = self.obj.python_type()
        if self.obj.is_python_constant() and isinstance(self.obj.as_python_constant(), type):
            obj_cls = self.obj.as_python_constant()  # super() in a classmethod: cls's own MRO
        klass, _ = find_on_class(tx, obj_cls, name, start_after=self.cls)
        if klass is not None and klass.__module__ == "builtins":
            return NativeMethodVariable(self.obj, name)
        return class_attribute(tx, self.obj, obj_cls, name, start_after=self.cls)
