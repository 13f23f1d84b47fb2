"""The object protocol over trackers, as CPython's ``Objects/object.c``, ``Objects/typeobject.c``
and ``Objects/abstract.c`` define it: the floor every tracker family builds on.

- Attribute lookup: ``class_attribute`` (``_PyType_Lookup`` then ``tp_descr_get``: a class
  attribute found along the MRO, guarded, and bound by its kind) and ``generic_getattr``
  (``PyObject_GenericGetAttr`` for an object that existed before the call: data descriptor,
  instance ``__dict__``, class attribute, ``__getattr__``).
- Attribute stores: ``descriptor_store`` (``PyObject_GenericSetAttr``'s first step: a data
  descriptor on the class takes the store or the deletion: a property's setter or deleter, a
  Python ``__set__`` or ``__delete__``, traced).
- ``callable``: ``type_is_callable`` (the type's ``__call__``; each family answers
  ``VariableTracker.is_callable`` from its Python type).
- Operators and builtins: ``HANDLERS`` (what a builtin callable or an operator does, per
  callable) and ``call_operator``.

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

import _thread
import types
from typing import Any, Callable, Protocol

from .. import versions
from ..context import TracerContext
from ..exc import AttributeMissing, Unsupported
from ..source import AttrSource, ConstSource, GetItemSource, ObjectAttrSource, Source
from .base import Registry, VariableTracker, class_static, find_on_class, is_data_descriptor
from .constant import ConstantVariable

# What a builtin callable or an operator does over trackers (``len``, ``operator.mul``...), one
# handler per callable, registered by the families that model it (``builtin_functions``,
# ``operators``, ``number_builtins``, ``stdlib``, ``pytree``). A handler returns the result, or
# None: not this way (``BuiltinVariable`` then folds constants, or the graph breaks).
Handler = Callable[..., "VariableTracker | None"]
HANDLERS: dict[Any, Handler] = Registry("object_protocol.HANDLERS")

# A kind of class attribute -> how it binds: ``bind(tx, static, obj, cls, name, class_source)`` gives
# the tracker of ``obj.name`` (``cls.name`` when ``obj`` is None), or None: not this way.
Binder = Callable[[Any, Any, "VariableTracker | None", type, str, "Source | None"], "VariableTracker | None"]
DESCRIPTORS: dict[type, Binder] = Registry("object_protocol.DESCRIPTORS")


def call_operator(tx: TracerContext, fn: Any, *operands: VariableTracker) -> VariableTracker:
    """``fn(*operands)`` for an operator ``HANDLERS`` models (``operator.mul`` of symbolic
    sizes): its handler's answer, or the value folded where every operand is a constant."""
    handled = HANDLERS[fn](tx, *operands)
    if handled is not None:
        return handled
    if not all(operand.is_python_constant() for operand in operands):
        raise Unsupported(f"{fn.__name__} of {', '.join(operand.describe() for operand in operands)}")
    return ConstantVariable(fn(*[operand.as_python_constant() for operand in operands]))


def type_is_callable(tx: TracerContext, cls: type) -> bool:
    """Whether instances of ``cls`` are callable: whether the class has ``__call__`` (a builtin
    class's answer is fixed; a user class's lookup is guarded, as a ``__call__`` may be added
    or removed)."""
    if cls.__module__ == "builtins":  # (along the MRO: ``hasattr(list, "__call__")`` finds type's)
        return any("__call__" in klass.__dict__ for klass in cls.__mro__)
    return class_static(tx, cls, "__call__") is not None


def python_function(fn: types.FunctionType) -> VariableTracker:
    """The tracker of a Python function found on a class (a constant: its lookup is guarded)."""
    bound = DESCRIPTORS[types.FunctionType](None, fn, None, type(None), fn.__name__, None)
    assert bound is not None
    return bound


def lookup_on_class(tx: TracerContext, cls: type, name: str, start_after: type | None = None) -> tuple[type, Any]:
    """``find_on_class``, where a missing name is an AttributeError."""
    klass, static = find_on_class(tx, cls, name, start_after)
    if klass is None:
        raise AttributeMissing(f"AttributeError: {cls.__qualname__} has no attribute {name!r}")
    return klass, static


def class_attribute(tx: TracerContext, obj: VariableTracker | None, cls: type, name: str, start_after: type | None = None,
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
            if type(static) is not kind and class_static(tx, type(static), "__get__") is not kind.__get__:
                break  # (a subclass with its own __get__: that runs, below)
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


class RealInstance(Protocol):
    """What ``generic_getattr`` uses of the tracker of an object that existed before the call."""

    value: Any  # the object
    cls: type
    source: Source

    @property
    def receiver(self) -> VariableTracker: ...  # what its methods get as ``self``
    def written_attribute(self, tx: TracerContext, name: str) -> VariableTracker | None: ...  # the trace's own write
    def dict_variable(self, tx: TracerContext, native: bool) -> VariableTracker: ...  # ``obj.__dict__``
    def missing_attribute(self, tx: TracerContext, name: str) -> VariableTracker: ...  # ``__getattr__``, or AttributeError
    def _class_source(self) -> Source | None: ...


def generic_getattr(tx: TracerContext, obj: RealInstance, name: str, native: bool = False) -> VariableTracker:
    """``object.__getattribute__(obj, name)`` (CPython's ``PyObject_GenericGetAttr``) for an
    object that existed before the call: a data descriptor of its class, else its own
    ``__dict__``, else its class's attribute (bound), else ``__getattr__``. What is read from
    the object is wrapped with its source (guarded, re-fetched); what was found absent is
    guarded absent. ``native``: called as such by the class's own ``__getattribute__``
    (``super().__getattribute__``), so values are re-read through ``object.__getattribute__``
    too, not the class's."""
    written = obj.written_attribute(tx, name)
    if written is not None:
        return written
    cls = obj.cls
    attr_source = ObjectAttrSource(obj.source, name) if native else AttrSource(obj.source, name)
    if name == "__dict__":
        return obj.dict_variable(tx, native)
    static = class_static(tx, cls, name)
    if static is not None and type(static).__name__ == "member_descriptor":  # __slots__
        return tx.wrap(object.__getattribute__(obj.value, name), attr_source)
    if type(static) is property and _native_getter(static.fget):  # (a pybind11 property)
        return tx.wrap(static.__get__(obj.value, cls), attr_source)
    data_descriptor = is_data_descriptor(static)
    if data_descriptor and class_static(tx, type(static), "__get__") is None:  # (the instance dict, then the descriptor)
        raise Unsupported(f"reading the data descriptor {cls.__qualname__}.{name}, which has no __get__")
    instance_dict = _instance_dict(obj.value)
    if instance_dict is not None and name in instance_dict and not data_descriptor:
        return tx.wrap(instance_dict[name], attr_source)
    if static is None:
        if native or class_static(tx, cls, "__getattr__") is None:  # (the class lookup guarded it absent)
            if instance_dict is not None:
                tx.guards.not_in_instance_dict(obj.source, name, native)
            raise AttributeMissing.exactly(no_attribute(cls, name), guarded=True)
        return obj.missing_attribute(tx, name)
    if instance_dict is not None and not data_descriptor:  # an instance attribute set later shadows it
        tx.guards.not_in_instance_dict(obj.source, name, native)
    return class_attribute(tx, obj.receiver, cls, name, class_source=obj._class_source())


def _native_getter(fget: Any) -> bool:
    """Whether a property's getter is an extension's compiled accessor (pybind11's
    ``instancemethod``, which runs no Python code of the user's): read for real, the value
    wrapped with its source. (A builtin such as ``len`` may call the object's Python methods.)"""
    return type(fget).__name__ == "instancemethod" and type(fget).__module__ == "builtins"


def descriptor_store(tx: TracerContext, obj: VariableTracker, cls: type, name: str, value: VariableTracker | None) -> bool:
    """The first step of ``object.__setattr__(obj, name, value)`` (``object.__delattr__`` when
    ``value`` is None): a data descriptor found on ``cls`` takes it. A property's setter (deleter)
    or a descriptor's Python ``__set__`` (``__delete__``) runs, traced, and True is returned;
    False where no data descriptor is found (a ``__slots__`` member is not one here: it stores
    the value as an instance attribute would). What cannot be traced, or would raise (a property
    without a setter), breaks the graph."""
    klass, static = find_on_class(tx, cls, name)
    if klass is None or is_slot(static, name) or not is_data_descriptor(static):
        return False
    what, hook_name = ("deleting", "__delete__") if value is None else ("setting", "__set__")
    extra = [] if value is None else [value]
    if isinstance(static, property) and class_static(tx, type(static), hook_name) is getattr(property, hook_name):
        accessor = static.fdel if value is None else static.fset
        if not isinstance(accessor, types.FunctionType):
            raise Unsupported(f"{what} the property {cls.__qualname__}.{name}, which has no Python "
                              f"{'deleter' if value is None else 'setter'}")
        python_function(accessor).call_function(tx, [obj, *extra], {})
        return True
    hook = class_static(tx, type(static), hook_name)
    if not isinstance(hook, types.FunctionType):
        raise Unsupported(f"{what} {cls.__qualname__}.{name}, a {type(static).__qualname__} descriptor "
                          f"without a Python {hook_name}")
    descriptor = tx.wrap(static, GetItemSource(AttrSource(ConstSource.of(klass), "__dict__"), name))
    python_function(hook).call_function(tx, [descriptor, obj, *extra], {})
    return True


def _instance_dict(value: Any) -> dict | None:
    """The object's own ``__dict__`` as the generic lookup reads it, or None (slots only): a
    ``threading.local``'s is the calling thread's."""
    try:
        if isinstance(value, _thread._local):
            return _thread._local.__getattribute__(value, "__dict__")
        return object.__getattribute__(value, "__dict__")
    except AttributeError:
        return None


# C classes whose __getattribute__/__setattr__ slots are CPython's generic ones, set explicitly
# (``threading.local``'s over the calling thread's own dict: the one the trace, the guards and
# the replay all see, since each runs in the thread making the call).
_GENERIC_ACCESS = frozenset({types.SimpleNamespace, _thread._local})


def by_class_statement(cls: type) -> bool:
    """Whether ``cls`` was made by a class statement (or ``type(...)``): CPython's heap types,
    ``Py_TPFLAGS_HEAPTYPE``; builtin and extension classes are not."""
    return bool(cls.__flags__ & (1 << 9))


def tp_name(cls: type) -> str:
    """How CPython's messages name a class: its C-level name, with the module of a static type."""
    heap_type = by_class_statement(cls)
    return cls.__name__ if heap_type or cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"


def no_attribute(cls: type, name: str) -> AttributeError:
    """The AttributeError CPython raises for a missing attribute of a ``cls`` instance."""
    return AttributeError(f"'{tp_name(cls)}' object has no attribute '{name}'")


def unset_slot(cls: type, name: str) -> AttributeError:
    """The AttributeError CPython raises for a ``__slots__`` member of a ``cls`` instance never
    set: 3.13 names a class made by a class statement by its module and qualified name."""
    if not versions.V.slot_error_qualified or not by_class_statement(cls):
        return no_attribute(cls, name)
    module = cls.__module__
    qualified = cls.__qualname__ if module in ("builtins", "__main__") or not isinstance(module, str) \
        else f"{module}.{cls.__qualname__}"
    return AttributeError(f"'{qualified}' object has no attribute '{name}'")


def is_slot(static: Any, name: str) -> bool:
    """Whether a class attribute is the descriptor of one of the class's ``__slots__``, which
    stores the value in the object as an attribute would."""
    return type(static) is types.MemberDescriptorType and name not in ("__dict__", "__weakref__")


def generic_access(tx: TracerContext, cls: type, name: str) -> bool:
    """Whether ``cls``'s ``name`` (``__getattribute__`` or ``__setattr__``) is object's own
    behaviour (the class lookup guarded)."""
    static = class_static(tx, cls, name)
    return static is getattr(object, name) or (
        type(static) is types.WrapperDescriptorType and static.__objclass__ in _GENERIC_ACCESS)
