"""Methods of the builtin classes the trackers model natively (``native_call_method``), reached
from Python code: through ``super()`` (``super().get(key)`` in a dict subclass) or read from the
class (``object.__setattr__``, which a frozen dataclass's ``__init__`` calls)."""

from __future__ import annotations

import collections
import types
from typing import Any

from ..context import TracerContext
from ..exc import Unsupported
from ..source import ConstSource, GetItemSource, Source
from .base import VariableTracker, class_static
from .constant import ConstantVariable
from .lists import ListVariable
from .object_protocol import DESCRIPTORS


# The builtin containers' own C lookups, kept by a subclass that overrides other methods.
CONTAINER_LENS = frozenset(c.__dict__["__len__"] for c in (list, tuple, dict))
_CONTAINER_GETITEMS = frozenset(c.__dict__["__getitem__"] for c in (list, tuple, dict))


def native_item(tx: TracerContext, cls: type, value: Any, source: Source, index: VariableTracker) -> VariableTracker | None:
    """``obj[key]`` of a dict, list or tuple (or a subclass keeping its ``__getitem__`` and no
    ``__missing__``) passed in, a str or int key it holds: the item, read through its source (a
    guard that finds it gone fails). None where another path decides."""
    key = index.as_python_constant() if index.is_python_constant() else None
    if type(key) not in (str, int) or class_static(tx, cls, "__getitem__") not in _CONTAINER_GETITEMS \
            or class_static(tx, cls, "__missing__") is not None:
        return None
    if not (key in value if isinstance(value, dict) else type(key) is int and -len(value) <= key < len(value)):
        return None
    return tx.wrap(value[key], GetItemSource(source, key))


class NativeMethodVariable(VariableTracker):
    """A builtin base class's method reached through ``super()`` (``super().get(key)`` in a
    dict subclass, ``super().__init__()`` reaching ``object``)."""

    models = types.BuiltinMethodType

    def __init__(self, obj: VariableTracker, name: str) -> None:
        super().__init__()
        self.obj, self.name = obj, name

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if self.name == "__init__" and not args and not kwargs and not isinstance(self.obj, ListVariable):
            return ConstantVariable(None)  # object.__init__, dict.__init__ (list's clears the list)
        native = getattr(self.obj, "native_call_method", None)
        if native is None:
            raise Unsupported(f"calling the builtin base method {self.name!r} through super()")
        return native(tx, self.name, args, kwargs)


# The builtin classes whose methods the trackers model natively (``native_call_method``).
NATIVE_OWNERS = (object, dict, collections.OrderedDict, list)
# Builtin containers whose methods, read from the class (``set.difference(a, b)``), are the
# method of an instance of exactly that class: its tracker's own (``call_method``).
CONTAINER_CLASSES = (set, frozenset, list, tuple, dict)


class NativeDescriptorVariable(VariableTracker):
    """A builtin class's method read from the class (``object.__setattr__``, which a frozen
    dataclass's ``__init__`` calls; ``set.difference(a, b)``): called with an instance, it is
    that instance's native method. An instance of a subclass of a container class that has no
    native method table, or of another class (CPython's TypeError), is not modelled."""

    models = (types.WrapperDescriptorType, types.MethodDescriptorType)

    def __init__(self, descriptor: Any) -> None:
        super().__init__(ConstSource.of(descriptor))
        self.descriptor = descriptor

    def python_type(self) -> type:
        return type(self.descriptor)

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        owner, name = self.descriptor.__objclass__, self.descriptor.__name__
        if owner in CONTAINER_CLASSES and args and args[0].python_type() is owner:
            return args[0].call_method(tx, name, args[1:], kwargs)  # (exactly the class: its own method)
        if owner not in NATIVE_OWNERS or not args or not issubclass(args[0].python_type(), owner):
            raise Unsupported(f"calling {owner.__name__}.{name} without a {owner.__name__}")
        return NativeMethodVariable(args[0], name).call_function(tx, args[1:], kwargs)


def _bind_native_descriptor(tx: TracerContext, static: Any, obj: VariableTracker | None, cls: type, name: str,
                            class_source: Source | None) -> VariableTracker | None:
    # ``object.__setattr__`` read from the class, called with the object; on an instance: as it is
    return NativeDescriptorVariable(static) if obj is None else None


DESCRIPTORS[types.WrapperDescriptorType] = DESCRIPTORS[types.MethodDescriptorType] = _bind_native_descriptor
