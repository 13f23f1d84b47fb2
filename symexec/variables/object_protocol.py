"""The object protocol: how an attribute of an object is found and bound, as CPython's
``Objects/object.c`` and ``Objects/typeobject.c`` do it (``PyObject_GenericGetAttr``,
``_PyType_Lookup``, ``tp_descr_get``), over trackers.

This module sits low: it imports only ``base`` and ``constant`` of the trackers. What a found
class attribute becomes depends on its kind, and the families that model the kinds register
how (``DESCRIPTORS``, a ``Registry``: a kind registered twice is refused):

- ``functions.py``: a Python function (bound to the instance: a method), ``staticmethod``,
  ``classmethod``, ``property`` (its getter traced);
- ``user_objects.py``: a C slot or method descriptor read from the class (``object.__setattr__``).

A descriptor written in Python (its class's ``__get__`` a Python function) has that
``__get__`` traced; any other object found on the class is wrapped as it is, with its source.
"""

from __future__ import annotations

import types
from typing import Any, Callable

from .. import versions
from ..exc import AttributeMissing, Unsupported
from ..source import AttrSource, ConstSource, GetItemSource, Source
from .base import Registry, VariableTracker, class_static, find_on_class
from .constant import ConstantVariable

# A kind of class attribute -> how it binds: ``bind(tx, static, obj, cls, name, class_source)`` gives
# the tracker of ``obj.name`` (``cls.name`` when ``obj`` is None), or None: not this way.
Binder = Callable[[Any, Any, "VariableTracker | None", type, str, "Source | None"], "VariableTracker | None"]
DESCRIPTORS: dict[type, Binder] = Registry("object_protocol.DESCRIPTORS")


def python_function(fn: types.FunctionType) -> VariableTracker:
    """The tracker of a Python function found on a class (a constant: its lookup is guarded)."""
    bound = DESCRIPTORS[types.FunctionType](None, fn, None, type(None), fn.__name__, None)
    assert bound is not None
    return bound


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
    for kind, bind in DESCRIPTORS.items():  # (the kinds are disjoint; a subclass of property is one)
        if isinstance(static, kind):
            bound = bind(tx, static, obj, cls, name, class_source)
            if bound is not None:
                return bound
            break
    if hasattr(static, "__get__") and not isinstance(static, type):
        getter = class_static(tx, type(static), "__get__")
        if not isinstance(getter, types.FunctionType):
            raise Unsupported(f"reading {cls.__qualname__}.{name}, a {type(static).__name__} descriptor")
        # A descriptor written in Python (a lazy property): its __get__ runs, inlined. It is
        # read from the class's __dict__ (reading it as an attribute would run __get__ again).
        descriptor = tx.wrap(static, GetItemSource(AttrSource(ConstSource.of(klass), "__dict__"), name))
        owner = tx.wrap(cls, class_source)
        return python_function(getter).call_function(tx, [descriptor, obj if obj is not None else ConstantVariable(None), owner], {})
    return tx.wrap(static, source)


# C classes whose __getattribute__/__setattr__ slots are CPython's generic ones, set explicitly.
_GENERIC_ACCESS = frozenset({types.SimpleNamespace})


def tp_name(cls: type) -> str:
    """How CPython's messages name a class: its C-level name, with the module of a static type."""
    heap_type = cls.__flags__ & (1 << 9)  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement
    return cls.__name__ if heap_type or cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"


def no_attribute(cls: type, name: str) -> AttributeError:
    """The AttributeError CPython raises for a missing attribute of a ``cls`` instance."""
    return AttributeError(f"'{tp_name(cls)}' object has no attribute '{name}'")


def unset_slot(cls: type, name: str) -> AttributeError:
    """The AttributeError CPython raises for a ``__slots__`` member of a ``cls`` instance never
    set: 3.13 names a class made by a class statement by its module and qualified name."""
    if not versions.V.slot_error_qualified or not cls.__flags__ & (1 << 9):
        return no_attribute(cls, name)
    module = cls.__module__
    qualified = cls.__qualname__ if module in ("builtins", "__main__") or not isinstance(module, str) \
        else f"{module}.{cls.__qualname__}"
    return AttributeError(f"'{qualified}' object has no attribute '{name}'")


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
