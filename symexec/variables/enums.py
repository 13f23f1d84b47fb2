"""Enum classes as the ``enum`` module's metaclass runs them: ``Color(value)``, ``Color[name]``,
iterating ``Color``, ``len(Color)``, ``member in Color``, for an enum class whose metaclass
methods and ``__new__`` are the module's own (the lookups guarded). A member is read through the
class's tables (``_value2member_map_``, ``_member_map_``, ``_member_names_``), so what the trace
found there is guarded; what it does not find (``_missing_``, an unhashable value) breaks the
graph. The members themselves are constants (``user_objects.ObjectConstantVariable``).
"""

from __future__ import annotations

import enum

from ..context import TracerContext
from ..exc import Unsupported
from ..source import AttrSource, ConstSource, GetItemSource
from .base import VariableTracker, class_static
from .constant import ConstantVariable


def is_plain_enum(tx: TracerContext, cls: type) -> bool:
    """Whether ``cls`` is an enum class whose lookups are the enum module's own: ``cls(value)``
    and ``cls[name]`` find a member, nothing of the user's runs (the lookups guarded)."""
    return isinstance(cls, enum.EnumMeta) and class_static(tx, type(cls), "__call__") is enum.EnumMeta.__call__ and \
        class_static(tx, type(cls), "__getitem__") is enum.EnumMeta.__getitem__ and \
        class_static(tx, cls, "__new__") is enum.Enum.__new__


def enum_member(tx: TracerContext, cls: type, table: str, key: VariableTracker) -> VariableTracker:
    """``cls(value)`` (``table`` the class's ``_value2member_map_``) or ``cls[name]``
    (``_member_map_``) for a constant key: the member, read through the table (guarded there).
    A key not in the table (``_missing_``, an unhashable value, an AttributeError or
    KeyError to raise) breaks the graph."""
    if not key.is_python_constant():
        raise Unsupported(f"looking up a member of {cls.__qualname__} by {key.describe()}")
    value = key.as_python_constant()
    if type(value) is cls:  # ``Color(Color.RED)``
        return key
    members = class_static(tx, cls, table)
    try:
        found = isinstance(members, dict) and value in members
    except TypeError:
        found = False
    if not found:
        raise Unsupported(f"looking up {value!r} in {cls.__qualname__}, which has no such member")
    return tx.wrap(members[value], GetItemSource(AttrSource(ConstSource.of(cls), table), value))


def enum_members(tx: TracerContext, cls: type) -> list[VariableTracker] | None:
    """The members iterating the enum class ``cls`` gives (``EnumMeta.__iter__``: its
    ``_member_names_`` in order, each read from ``_member_map_``; the names guarded), or None
    where iterating it runs something else (a metaclass of the user's)."""
    if not is_plain_enum(tx, cls) or class_static(tx, type(cls), "__iter__") is not enum.EnumMeta.__iter__:
        return None
    names = tx.wrap(class_static(tx, cls, "_member_names_"), AttrSource(ConstSource.of(cls), "_member_names_"))
    return [enum_member(tx, cls, "_member_map_", name) for name in names.unpack(tx)]


def enum_class_method(tx: TracerContext, cls: type, name: str, args: list[VariableTracker]) -> VariableTracker | None:
    """``len(cls)`` and ``member in cls`` for an enum class whose metaclass methods are the enum
    module's, or None. (``in`` only for a member of ``cls``, True in every version: what other
    values give changed between versions.)"""
    if not is_plain_enum(tx, cls) or class_static(tx, type(cls), name) is not getattr(enum.EnumMeta, name, None):
        return None
    if name == "__len__" and not args:
        members = enum_members(tx, cls)
        return None if members is None else ConstantVariable(len(members))
    if name == "__contains__" and len(args) == 1 and args[0].python_type() is cls:
        return ConstantVariable(True)
    return None
