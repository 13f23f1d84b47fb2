"""Classes and modules (other than torch's, in ``torch_functions.py``): attribute reads guarded
through the class lookup, ``cls(...)`` constructing an instance (``construct``; instances of
user classes are in ``user_objects.py``)."""

from __future__ import annotations

import collections
import functools
import inspect
import types
import typing
from typing import Any

import torch

from ..context import TracerContext
from ..exc import AttributeMissing, TracedException, Unsupported
from ..source import AttrSource, ConstSource, GetItemSource, GlobalSource, Source
from ..guards import GuardKind
from .base import BoundMethodVariable, VariableTracker, class_static, find_on_class, is_data_descriptor, subclass_check
from .lists import MADE_CLASSES, ListVariable, NamedTupleVariable
from .constant import COMPUTED_WRAPPERS, ConstantVariable
from .enums import enum_class_method, enum_member, enum_members, is_plain_enum
from .new_modules import construct_user_module
from .model_output import construct_model_output, is_model_output_class
from . import user_objects
from .functions import UserMethodVariable
from .object_protocol import HANDLERS, class_attribute, python_function, tp_name
from .builtin_functions import handler
from .partials import construct_partial_subclass
from .user_objects import call_getattr_hook


# What ``type`` holds of every class, plain data.
CLASS_DATA_ATTRS = frozenset({"__name__", "__qualname__", "__module__", "__doc__", "__mro__", "__bases__"})
# Its layout and flags, read-only numbers (``__flags__`` changes as CPython caches lookups: read
# through a source, so guarded equal).
CLASS_LAYOUT_ATTRS = frozenset({"__flags__", "__basicsize__", "__itemsize__", "__dictoffset__", "__weakrefoffset__"})
_TYPE_DICT = type.__dict__["__dict__"]  # (the getset giving a class its own dict's mappingproxy)


_CLASSMETHOD_DESCRIPTOR = type(inspect.getattr_static(dict, "fromkeys"))  # (a C classmethod)


def _makes_alias(static: Any) -> bool:
    """Whether a ``__class_getitem__`` is the standard library's, which only makes a generic
    alias: builtins' (``list``, ``dict``) and ``collections.abc``'s (``types.GenericAlias``)."""
    if type(static) is _CLASSMETHOD_DESCRIPTOR:
        return static.__objclass__.__module__ == "builtins"
    return isinstance(static, classmethod) and isinstance(static.__func__, type) and \
        issubclass(static.__func__, types.GenericAlias)


# Generic aliases and unions (``list[int]``, ``Callable[[T], bool] | None``, ``typing.Optional[T]``):
# immutable descriptions of types, made by annotations evaluated while tracing: constants.
COMPUTED_ALIAS_TYPES = frozenset(type(alias) for alias in (
    list[int], int | None, typing.List[int], typing.Optional[int], typing.Callable[[int], int], typing.Literal[0]))
for _alias_type in COMPUTED_ALIAS_TYPES:
    COMPUTED_WRAPPERS[_alias_type] = ConstantVariable



def construct(tx: TracerContext, cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker],
              metaclass_call: bool = True) -> VariableTracker:
    """``cls(*args, **kwargs)`` for a Python class, while tracing: a class whose instances a
    family models (transformers' ``ModelOutput``) is made by that family; any other by
    ``user_objects.construct``, as CPython's ``type.__call__`` makes an object (``metaclass_call``
    False: ``type.__call__`` itself, past a metaclass's own ``__call__``)."""
    if issubclass(cls, functools.partial) and cls is not functools.partial and type(cls) is type and metaclass_call:
        return construct_partial_subclass(tx, cls, args, kwargs)
    if is_model_output_class(tx, cls):
        if not metaclass_call:
            raise Unsupported(f"constructing {cls.__qualname__} from its metaclass's __call__")
        return construct_model_output(tx, cls, args, kwargs)
    return user_objects.construct(tx, cls, args, kwargs, metaclass_call)


def _object_new(tx: TracerContext, cls: VariableTracker, *rest: VariableTracker) -> VariableTracker | None:
    """``object.__new__(cls)``: a plain object (``user_objects.object_new``); None (the graph
    breaks) for a class whose instances another family models (an nn.Module, a ModelOutput)."""
    klass = cls.as_python_constant() if cls.is_python_constant() else None
    if not isinstance(klass, type) or subclass_check(tx, klass, torch.nn.Module) or is_model_output_class(tx, klass):
        return None
    return user_objects.object_new(tx, cls, *rest)


HANDLERS[object.__new__] = _object_new


class UserDefinedClassVariable(VariableTracker):
    """A class: ``isinstance`` targets, ``type(x)`` results, class attribute reads."""

    models = type  # a class (its type is its metaclass)

    def __init__(self, cls: type, source: Source | None = None) -> None:
        super().__init__(source)
        self.cls = cls

    def python_type(self) -> type:
        return type(self.cls)

    def as_python_constant(self) -> Any:
        return self.cls

    def describe(self) -> str:
        return f"class {self.cls.__qualname__}"

    def store_attr(self, tx: TracerContext, name: str, value: VariableTracker | None) -> None:
        """``cls.name = value``: ``type.__setattr__``, replayed after the graph (a side effect, as
        torch.compile's); the trace's own reads of ``cls.name`` see it. Not modelled (the graph
        breaks): a deletion, a special (dunder) name, a metaclass with its own ``__setattr__`` or
        a data descriptor of that name, a class the trace made, ``type`` and builtin classes."""
        meta = type(self.cls)
        if value is None or (name.startswith("__") and name.endswith("__")) \
                or name in CLASS_DATA_ATTRS or self.cls.__module__ == "builtins" \
                or class_static(tx, meta, "__setattr__") is not type.__setattr__ \
                or is_data_descriptor(class_static(tx, meta, name)):
            super().store_attr(tx, name, value)
            return
        # (a class reached without a source, ``self.__class__`` of an object the trace made, is
        # loaded as a constant by the replay)
        target = self if self.source is not None else UserDefinedClassVariable(self.cls, ConstSource.of(self.cls))
        tx.trace.side_effects.store_class_attr(target, self.cls, name, value)

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        value = tx.trace.side_effects.pending_class_attr(self.cls, name)
        if value is not None:  # (the trace's own write: the real class does not hold it yet)
            try:
                binds = class_static(tx, value.python_type(), "__get__") is not None
            except Unsupported:
                binds = True
            if binds or class_static(tx, type(self.cls), "__getattribute__") is not type.__getattribute__:
                raise Unsupported(f"reading {name!r} of class {self.cls.__qualname__} after the trace set it "
                                  f"(to {value.describe()}: a descriptor, or a metaclass's own lookup)")
            return value
        if name in CLASS_DATA_ATTRS:
            # Assignable on a class: read through a source, so guarded like any attribute.
            return tx.wrap(getattr(self.cls, name), AttrSource(self.source or ConstSource.of(self.cls), name))
        # ``type.__getattribute__``: a data descriptor of the metaclass, then the class's MRO, then
        # the metaclass's attribute (bound to the class), then the metaclass's ``__getattr__``.
        meta = type(self.cls)
        if class_static(tx, meta, "__getattribute__") is not type.__getattribute__:
            raise Unsupported(f"reading {name!r} of class {self.cls.__qualname__}: its metaclass has __getattribute__")
        meta_klass, meta_static = find_on_class(tx, meta, name)
        if meta_klass is type and name in CLASS_LAYOUT_ATTRS:
            return tx.wrap(getattr(self.cls, name), AttrSource(self.source or ConstSource.of(self.cls), name))
        if meta_static is _TYPE_DICT:  # (type's data descriptor: before the class's own names)
            return ClassDictVariable(self)
        from_python_meta = meta_klass is not None and meta_klass.__module__ != "builtins"
        if from_python_meta and is_data_descriptor(meta_static):
            return self._from_metaclass(tx, meta_klass, meta_static, name)
        try:
            return class_attribute(tx, None, self.cls, name, class_source=self.source)
        except AttributeMissing:
            pass
        if from_python_meta:
            return self._from_metaclass(tx, meta_klass, meta_static, name)
        if meta_klass is not None:  # (``type``'s own: ``__subclasses__``, ``mro``...)
            if name == "__subclasses__" and meta is type:
                return BoundMethodVariable(self, name)
            raise Unsupported(f"reading {name!r} of class {self.cls.__qualname__} from its metaclass")
        hook = class_static(tx, meta, "__getattr__")
        if isinstance(hook, types.FunctionType):  # traced, as an instance's __getattr__ is
            return call_getattr_hook(tx, UserMethodVariable(python_function(hook), self), name)
        if hook is not None:
            raise Unsupported(f"reading {name!r} of class {self.cls.__qualname__}: its metaclass has __getattr__")
        raise AttributeMissing.exactly(AttributeError(f"type object '{tp_name(self.cls)}' has no attribute '{name}'"))

    def _from_metaclass(self, tx: TracerContext, meta_klass: type, static: Any, name: str) -> VariableTracker:
        """``cls.name`` found on a Python metaclass: a function bound to the class (a method of
        the metaclass), a property's getter run on the class, a plain value as it is."""
        if isinstance(static, types.FunctionType):
            return UserMethodVariable(python_function(static), self)
        if type(static) is property and isinstance(static.fget, types.FunctionType):
            return python_function(static.fget).call_function(tx, [self], {})
        if class_static(tx, type(static), "__get__") is not None:
            raise Unsupported(f"reading {name!r} of class {self.cls.__qualname__}: a {type(static).__name__} "
                              f"of its metaclass")
        return tx.wrap(static, AttrSource(ConstSource.of(meta_klass), name))

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name == "__subclasses__" and not args and not kwargs and type(self.cls) is type:
            return self._subclasses(tx)
        if name == "__getitem__" and len(args) == 1 and not kwargs:
            return self._class_getitem(tx, args[0])
        if name in ("__len__", "__contains__") and not kwargs:
            found = enum_class_method(tx, self.cls, name, args)
            if found is not None:
                return found
        return super().call_method(tx, name, args, kwargs)

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        members = enum_members(tx, self.cls)  # (iterating an enum class)
        return members if members is not None else super().unpack(tx)

    def _class_getitem(self, tx: TracerContext, index: VariableTracker) -> VariableTracker:
        """``cls[index]`` (``list[int]``, ``Callable[[T], bool]`` in an annotation): the
        metaclass's ``__getitem__``, else the class's ``__class_getitem__`` (lookups guarded).
        The standard library's make an alias object and nothing else: made now, a constant."""
        if is_plain_enum(tx, self.cls):
            return enum_member(tx, self.cls, "_member_map_", index)
        if class_static(tx, type(self.cls), "__getitem__") is not None:
            raise Unsupported(f"subscripting class {self.cls.__qualname__}, whose metaclass has __getitem__")
        static = class_static(tx, self.cls, "__class_getitem__")
        if _makes_alias(static):
            key = index.as_python_constant()
            return ConstantVariable(self.cls[key])  # (immutable, hashable: a constant of the trace)
        if isinstance(static, classmethod) and isinstance(static.__func__, types.FunctionType):
            method = class_attribute(tx, None, self.cls, "__class_getitem__", class_source=self.source)
            return method.call_function(tx, [index], {})
        raise Unsupported(f"subscripting class {self.cls.__qualname__}")

    def _subclasses(self, tx: TracerContext) -> VariableTracker:
        """``cls.__subclasses__()``: the live subclasses, guarded to be these (a class defined,
        or collected, later changes the answer)."""
        found = self.cls.__subclasses__()
        cls_name, found_name = tx.guards.constant(self.cls), tx.guards.constant(found)
        tx.guards.add(GuardKind.EQUALS_MATCH, f"{self.cls.__qualname__}.__subclasses__() == <as traced>",
                      f"{cls_name}.__subclasses__() == {found_name}")
        return ListVariable([tx.wrap(c, None) for c in found])

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if subclass_check(tx, self.cls, torch.nn.Module):
            if isinstance(class_static(tx, self.cls, "__new__"), staticmethod):  # its own __new__ (may make another)
                return user_objects.construct(tx, self.cls, args, kwargs)
            return construct_user_module(tx, self.cls, args, kwargs)
        return construct(tx, self.cls, args, kwargs)

    def native_call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        """``type.__call__(cls, ...)`` reached through ``super()`` in a metaclass's own
        ``__call__``: the construction itself, the metaclass's ``__call__`` not run again."""
        if name != "__call__" or subclass_check(tx, self.cls, torch.nn.Module):
            raise Unsupported(f"calling type.{name} on {self.describe()} through super()")
        return construct(tx, self.cls, args, kwargs, metaclass_call=False)

    def reconstruct(self, cg: Any) -> None:
        if self.source is not None:
            self.source.emit_load(cg)
        elif self.cls in MADE_CLASSES:
            raise Unsupported(f"rebuilding {self.describe()}, a class the trace made, other than through its tracker")
        else:
            cg.load_const(self.cls)

    def __repr__(self) -> str:
        return f"UserDefinedClassVariable({self.cls.__qualname__})"


class NewClassVariable(UserDefinedClassVariable):
    """A class the trace made (``collections.namedtuple(...)`` of constants): made while
    tracing to trace with, and rebuilt by the generated code once per run with the same
    arguments, so each call has its own class as in eager; its instances rebuild through this
    tracker. Not modelled (the graph breaks): setting an attribute of the class."""

    models = type  # (a class made by the trace)
    built_once = True  # (one class per run, however many places hold it)

    def __init__(self, cls: type, maker: functools.partial) -> None:
        super().__init__(cls, None)
        self.maker = maker  # makes the class again, with the arguments the trace made it with

    def store_attr(self, tx: TracerContext, name: str, value: VariableTracker | None) -> None:
        raise Unsupported(f"setting attribute {name!r} of {self.describe()}, a class the trace made")

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        made = super().call_function(tx, args, kwargs)
        if isinstance(made, NamedTupleVariable) and made.cls is self.cls:
            made.class_var = self
        return made

    def reconstruct(self, cg: Any) -> None:
        cg.call_const(self.maker, lambda: [])


@handler(collections.namedtuple)
def _namedtuple(tx: TracerContext, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker | None:
    """``collections.namedtuple(...)`` of constants: the class made now (its ``__module__``
    the calling frame's global ``__name__``, read through its source, as CPython's frame
    lookup finds it); a new class per run in generated code (``NewClassVariable``)."""
    if not all(v.is_python_constant() for v in (*args, *kwargs.values())):
        return None
    const_args = [v.as_python_constant() for v in args]
    const_kwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
    if const_kwargs.get("module") is None:
        if "__name__" not in tx.f_globals or (tx.globals_source is None and "__name__" in tx.trace.side_effects.globals):
            return None
        source = GlobalSource("__name__") if tx.globals_source is None else GetItemSource(tx.globals_source, "__name__")
        module = tx.wrap(tx.f_globals["__name__"], source)
        const_kwargs["module"] = module.as_python_constant() if module.is_python_constant() else None
        if type(const_kwargs["module"]) is not str:
            return None
    maker = functools.partial(collections.namedtuple, *const_args, **const_kwargs)
    try:
        cls = maker()
    except (TypeError, ValueError) as e:
        raise TracedException(e) from None
    MADE_CLASSES.add(cls)
    var = tx.trace.memos.made_classes[id(cls)] = NewClassVariable(cls, maker)
    return var


class ClassDictVariable(VariableTracker):
    """``cls.__dict__``: the live mappingproxy of a class's own names. Reads of one name
    (``in``, ``[name]``, ``get``) are guarded on that name alone; what needs every key
    (iterating, ``len``, ``keys()``) is not modelled."""

    models = types.MappingProxyType  # (of a class's own dict)

    def __init__(self, owner: UserDefinedClassVariable) -> None:
        super().__init__(None)
        self.owner = owner

    def python_type(self) -> type:
        return types.MappingProxyType

    def describe(self) -> str:
        return f"{self.owner.cls.__qualname__}.__dict__"

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        key = args[0].as_python_constant() if args and not kwargs and args[0].is_python_constant() else None
        if type(key) is not str or name not in ("__contains__", "__getitem__", "get") or len(args) > 1 + (name == "get"):
            return super().call_method(tx, name, args, kwargs)
        cls = self.owner.cls
        if tx.trace.side_effects.pending_class_attr(cls, key) is not None:
            raise Unsupported(f"reading {key!r} of {self.describe()} after the trace set it")
        present = key in cls.__dict__
        tx.guards.class_dict_has(cls, key, present)
        if name == "__contains__":
            return ConstantVariable(present)
        if not present:
            if name == "get":
                return args[1] if len(args) > 1 else ConstantVariable(None)
            raise TracedException(KeyError(key))
        return tx.wrap(cls.__dict__[key], GetItemSource(AttrSource(self.owner.source or ConstSource.of(cls), "__dict__"), key))

    def reconstruct(self, cg: Any) -> None:
        cg.reconstruct(self.owner)
        cg.load_attr("__dict__")


class PythonModuleVariable(VariableTracker):
    """A module that is not torch's: attribute reads wrap what they find, with a source."""

    models = types.ModuleType

    def __init__(self, module: types.ModuleType, source: Source | None = None) -> None:
        super().__init__(source)
        self.module = module

    def python_type(self) -> type:
        return types.ModuleType

    def as_python_constant(self) -> Any:
        return self.module

    def describe(self) -> str:
        return f"module {self.module.__name__}"

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        source = self.source or ConstSource.of(self.module)
        members = self.module.__dict__
        if name not in members and type(self.module) is types.ModuleType and \
                not hasattr(types.ModuleType, name):
            # A name the module does not hold: its own __getattr__ (PEP 562) decides, traced
            # (it runs once per read, as in eager, and what it reads is guarded), or none is
            # there and the name is missing. Both facts guarded.
            tx.guards.not_in_instance_dict(source, name)
            if "__getattr__" not in members:
                tx.guards.not_in_instance_dict(source, "__getattr__")
                module_name = members.get("__name__")
                text = f"module {module_name!r} has no attribute {name!r}" if type(module_name) is str else \
                    f"module has no attribute {name!r}"
                raise AttributeMissing.exactly(AttributeError(text), guarded=True)
            hook = tx.wrap(members["__getattr__"], AttrSource(source, "__getattr__"))
            return call_getattr_hook(tx, hook, name)
        if not hasattr(self.module, name):
            raise AttributeMissing(f"module {self.module.__name__} has no attribute {name!r}")
        value = getattr(self.module, name)
        return tx.wrap(value, AttrSource(source, name))

    def reconstruct(self, cg: Any) -> None:
        if self.source is not None:
            self.source.emit_load(cg)
        else:
            cg.load_const(self.module)

    def __repr__(self) -> str:
        return f"PythonModuleVariable({self.module.__name__})"
