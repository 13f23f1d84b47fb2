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

import collections
import collections.abc
import enum
import operator
import types
from typing import Any

from ..context import TracerContext
from ..exc import AttributeMissing, TracedException, Unsupported
from ..source import AttrSource, ConstSource, ObjectAttrSource, PrivateObjectSource, Source
from .base import DELETED, BoundMethodVariable, Methods, VariableTracker, class_static, find_on_class
from .constant import ConstantVariable, is_literal
from .builtin_subclasses import construct_list_subclass
from .dicts import construct_dict_subclass
from .enums import enum_member, is_plain_enum
from .native_methods import CONTAINER_CLASSES, CONTAINER_LENS, NATIVE_OWNERS, NativeMethodVariable, native_item
from .functions import UserFunctionVariable, UserMethodVariable
from .lists import IteratorVariable, NamedTupleVariable, TupleVariable
from .tensor import record_call
from .object_protocol import (by_class_statement, class_attribute, descriptor_store, generic_access, generic_getattr,
                              is_slot, no_attribute, type_is_callable, unset_slot)


def _function(fn: types.FunctionType, source: Source | None) -> UserFunctionVariable:
    return UserFunctionVariable(fn, source if source is not None else ConstSource.of(fn))


def _qualname_of(fn: types.FunctionType) -> str:
    return fn.__qualname__ if type(fn.__qualname__) is str else "__getattribute__"


def checked_len(tx: TracerContext, result: VariableTracker) -> VariableTracker:
    """What a Python ``__len__`` returned, as ``len()`` and truth take it: an int (through
    ``__index__``: a bool is one) that is not negative, else the error CPython raises."""
    kind = result.python_type()
    if not issubclass(kind, int):
        raise TracedException(TypeError(f"'{kind.__name__}' object cannot be interpreted as an integer"))
    if result.is_python_constant():
        negative = result.as_python_constant() < 0
    else:  # a symbolic int: the sign is a condition of the graph, guarded as a branch on it is
        negative = record_call(tx, "call_function", operator.lt, [result, ConstantVariable(0)], {}).truth(tx)
    if negative:
        raise TracedException(ValueError("__len__() should return >= 0"))
    if kind is not int and result.is_python_constant():  # an int subclass or a bool: len() gives an int
        return ConstantVariable(int(result.as_python_constant()))
    return result


class ObjectVariableBase(VariableTracker):
    """What instances of user classes share: method calls and dunders through the class."""

    models = object  # instances of user classes

    cls: type

    def python_type(self) -> type:
        return self.cls

    def _class_source(self) -> Source | None:
        if self.source is None:
            return None
        own = next((k.__dict__["__getattribute__"] for k in self.cls.__mro__ if "__getattribute__" in k.__dict__), None)
        if own is not object.__getattribute__:  # (``obj.__class__`` would run the class's own lookup)
            return ObjectAttrSource(self.source, "__class__")
        return AttrSource(self.source, "__class__")

    def has_python_method(self, tx: TracerContext, name: str) -> bool:
        return isinstance(class_static(tx, self.cls, name), types.FunctionType)

    def class_variable(self, tx: TracerContext) -> VariableTracker:
        return tx.wrap(self.cls, self._class_source())

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name == "__getitem__" and len(args) == 1 and not kwargs and self.source is not None and hasattr(self, "value"):
            found = native_item(tx, self.cls, self.value, self.source, args[0])
            if found is not None:
                return found
        if name == "__len__" and not args and not kwargs and self.source is not None and hasattr(self, "value") \
                and (self.cls in CONTAINER_CLASSES or class_static(tx, self.cls, "__len__") in CONTAINER_LENS):
            # a builtin container held as an object (its items are not modelled: a dict keyed by
            # torch's operators): its length, guarded (nothing in the trace changes it: any
            # method that would breaks the graph)
            length = len(self.value)
            tx.guards.len_match(self.source, length)
            return ConstantVariable(length)
        if name.startswith("__") and name.endswith("__") and not self.has_python_method(tx, name):
            raise Unsupported(f"{self.cls.__qualname__} has no Python {name}")
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.call_method(tx, "__call__", args, kwargs)

    def is_callable(self, tx: TracerContext) -> bool:
        return type_is_callable(tx, self.cls)

    def truth(self, tx: TracerContext) -> bool:
        if self.has_python_method(tx, "__bool__"):
            result = self.call_method(tx, "__bool__", [], {})
            if result.python_type() is not bool:  # as CPython's slot: exactly a bool
                raise TracedException(TypeError(f"__bool__ should return bool, returned "
                                                f"{result.python_type().__name__}"))
            return result.truth(tx)
        if self.has_python_method(tx, "__len__"):
            return checked_len(tx, self.call_method(tx, "__len__", [], {})).truth(tx)
        if class_static(tx, self.cls, "__bool__") is None and class_static(tx, self.cls, "__len__") is None:
            return True
        raise Unsupported(f"the truth of a {self.cls.__qualname__} (a C __bool__ or __len__)")

    def store_attr(self, tx: TracerContext, name: str, value: VariableTracker | None) -> None:
        """``obj.name = value`` (``del obj.name``): the class's Python ``__setattr__`` runs
        inlined (a frozen dataclass's raises, others end in ``object.__setattr__``); without
        one, the generic store."""
        method = "__delattr__" if value is None else "__setattr__"
        setter = class_static(tx, self.cls, method)
        if isinstance(setter, types.FunctionType):
            _function(setter, None).call_function(tx, [self, ConstantVariable(name), *([value] if value is not None else [])], {})
        elif generic_access(tx, self.cls, method):
            self.object_setattr(tx, name, value)
        else:
            raise Unsupported(f"{method} of {self.describe()} is not Python")

    @property
    def receiver(self) -> VariableTracker:
        """What the class's methods and descriptors get as the object."""
        return self

    def object_setattr(self, tx: TracerContext, name: str, value: VariableTracker | None, native: bool = False) -> None:
        """``object.__setattr__(obj, name, value)`` (``object.__delattr__`` when value is None):
        a data descriptor of the class takes it (traced), else the instance store. ``native``:
        called as ``object``'s method itself (``super().__setattr__`` in a class's own), which
        is what a replay must call too."""
        if not descriptor_store(tx, self.receiver, self.cls, name, value):
            self.generic_store(tx, name, value, native)

    def generic_store(self, tx: TracerContext, name: str, value: VariableTracker | None, native: bool = False) -> None:
        """``object.__setattr__(obj, name, value)`` (``object.__delattr__`` when value is None)."""
        raise Unsupported(f"setting attribute {name!r} of {self.describe()}")

    def native_call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        """``object``'s own method, reached through ``super()`` or called as ``object.name(obj, ...)``."""
        if name == "__getattribute__" and len(args) == 1 and not kwargs and type(args[0].as_python_constant()) is str \
                and type(self) in (UserDefinedObjectVariable, NewObjectVariable):
            try:
                return self.generic_getattr(tx, args[0].as_python_constant(), native=True)
            except AttributeMissing as e:
                if e.error is None:
                    raise
                raise TracedException(e.error) from None  # (raised by the call: an ``except`` may handle it)
        arity = {"__setattr__": 2, "__delattr__": 1}.get(name)
        if arity is None or kwargs or len(args) != arity or type(args[0].as_python_constant()) is not str:
            raise Unsupported(f"calling object.{name} on {self.describe()}")
        self.object_setattr(tx, args[0].as_python_constant(), args[1] if arity == 2 else None, native=True)
        return ConstantVariable(None)

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        return self.iterate(tx).unpack(tx)

    def iterate(self, tx: TracerContext) -> IteratorVariable:
        """``iter(obj)``: what ``__iter__`` returns, an iterator of the trace's or a user object
        taken from by ``__next__`` one item at a time; with only ``__getitem__``, the old
        sequence protocol (items 0, 1, 2... until IndexError), one item at a time too."""
        if self.has_python_method(tx, "__iter__"):
            it = self.call_method(tx, "__iter__", [], {})
            if isinstance(it, IteratorVariable):
                return it
            if isinstance(it, ObjectVariableBase) and it.has_python_method(tx, "__next__"):
                return UserIteratorVariable(tx, it, it.cls, by_index=False)
            raise Unsupported(f"iterating over a {self.cls.__qualname__}: __iter__ returned {it.describe()}")
        if self.has_python_method(tx, "__getitem__") and class_static(tx, self.cls, "__iter__") is None:
            return UserIteratorVariable(tx, self, _SEQUENCE_ITERATOR, by_index=True)
        raise Unsupported(f"iterating over a {self.cls.__qualname__}")


class _Indexed:
    def __getitem__(self, index: int) -> Any:
        raise IndexError(index)


_SEQUENCE_ITERATOR = type(iter(_Indexed()))  # (CPython's iterator over a class with only __getitem__)


class UserIteratorVariable(IteratorVariable):
    """A user object iterated (a ``for`` loop, ``enumerate``, ``list(...)``): each item taken
    calls its ``__next__`` (or ``obj[i]``, the old sequence protocol) when CPython would, so
    what the calls do happens then, and a loop that stops early leaves the rest untaken. Not
    rebuilt at a graph break (the graph breaks before)."""

    models = collections.abc.Iterator

    def __init__(self, tx: TracerContext, obj: "ObjectVariableBase", cls: type, by_index: bool) -> None:
        super().__init__([], cls)
        self.tx, self.obj, self.by_index = tx, obj, by_index
        self.exhausted = False

    def pending(self) -> bool:
        return not self.exhausted

    def next_item(self) -> VariableTracker | None:
        if self.index >= len(self.items) and not self._pull():
            return None
        return super().next_item()

    def _pull(self) -> bool:
        if self.exhausted:
            return False
        if len(self.items) >= self.tx.config.max_generator_items:
            raise Unsupported(f"iterating over a {self.obj.cls.__qualname__} with more than "
                              f"{self.tx.config.max_generator_items} items")
        stops = (IndexError, StopIteration) if self.by_index else (StopIteration,)
        try:
            if self.by_index:
                item = self.obj.call_method(self.tx, "__getitem__", [ConstantVariable(len(self.items))], {})
            else:
                item = self.obj.call_method(self.tx, "__next__", [], {})
        except TracedException as e:
            if isinstance(e.exception, ExceptionVariable) and issubclass(e.exception.cls, stops):
                self.exhausted = True
                return False
            raise
        self.items.append(item)
        return True

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        while self._pull():
            pass
        return super().unpack(tx)

    def subvalues(self) -> list[VariableTracker]:
        return [*self.items[self.index:], self.obj]

    def reconstruct(self, cg: Any) -> None:
        raise Unsupported(f"an iterator over a {self.obj.cls.__qualname__} at a graph break")


class UserDefinedObjectVariable(ObjectVariableBase):
    """An instance of a user class that existed before the call."""

    models = object  # instances of user classes

    def __init__(self, value: Any, source: Source | None = None, receiver: VariableTracker | None = None) -> None:
        super().__init__(source)
        self.value = value
        self.cls = type(value)
        # What its methods and properties get as ``self`` where that is not this tracker: the
        # constant that an instance of an int or str subclass is (constant.py reads its
        # attributes through here). (Not a reference to itself: a cycle would keep the object.)
        self._receiver = receiver

    @property
    def receiver(self) -> VariableTracker:
        return self if self._receiver is None else self._receiver

    def describe(self) -> str:
        return f"{self.cls.__qualname__} object" + (f" {self.source.name}" if self.source else "")

    def written_attribute(self, tx: TracerContext, name: str) -> VariableTracker | None:
        """What the trace itself wrote into ``obj.name``, if it did (the real object does not
        have it yet: the write is replayed after the graph)."""
        if self.source is None:
            raise Unsupported(f"reading {name!r} of {self.describe()} without a source")
        pending = tx.trace.side_effects.pending_attr(self, name)
        if pending is DELETED:
            raise AttributeMissing(f"AttributeError: {name!r} was deleted")
        if name == "__class__":
            return self.class_variable(tx)
        return pending

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        written = self.written_attribute(tx, name)
        if written is not None:
            return written
        if not generic_access(tx, self.cls, "__getattribute__"):
            found = self._through_getattribute(tx, name)
            return found if found is not None else self.real_attribute(tx, name)
        return self.generic_getattr(tx, name)

    def real_attribute(self, tx: TracerContext, name: str) -> VariableTracker:
        """Where the class customises attribute access (a C ``__getattribute__``, a Python
        ``__getattr__``), read the attribute for real: its value is wrapped with the source
        ``obj.name``, so it is guarded and re-fetched like any input. A Python
        ``__getattribute__`` that could not be traced is not run again by every guard (it may
        count, log or change state): the graph breaks."""
        static = class_static(tx, self.cls, "__getattribute__")
        if type(static) is types.FunctionType and name != "__dict__":
            raise Unsupported(f"reading {name!r} of {self.describe()} runs {_qualname_of(static)}, which could not be traced")
        return self._read_for_real(tx, name)

    def generic_getattr(self, tx: TracerContext, name: str, native: bool = False) -> VariableTracker:
        """``object.__getattribute__(obj, name)`` (``object_protocol.generic_getattr``)."""
        return generic_getattr(tx, self, name, native)

    def dict_variable(self, tx: TracerContext, native: bool) -> VariableTracker:
        return InstanceDictVariable.of(tx, self, native)

    def _through_getattribute(self, tx: TracerContext, name: str) -> VariableTracker | None:
        """``obj.name`` where the class's ``__getattribute__`` is a Python function (a config
        mapping names, then ``super().__getattribute__``): traced like any call, so that what
        it reads is guarded where it is (an instance dict, a class) instead of running the method
        in every guard; what it cannot model breaks the graph there. None (``real_attribute``
        decides) for ``__dict__``, a C ``__getattribute__``, or one with a ``__getattr__`` too."""
        static = class_static(tx, self.cls, "__getattribute__")
        if self.source is None or name == "__dict__" or type(static) is not types.FunctionType or \
                class_static(tx, self.cls, "__getattr__") is not None:
            return None  # (``obj.__dict__`` read for real is the dict itself, which deepcopy can copy)
        # The same read again, nothing changed since by the trace: the same answer (the first
        # one's guards hold it; a config is read dozens of times per trace).
        memo = tx.trace.memos.getattribute
        key = (id(self.value), name, tx.trace.side_effects.version)
        if key in memo:
            known = memo[key]
            if isinstance(known, AttributeMissing):
                raise known
            return known
        location = tx.trace.location
        try:
            found = tx.inline_call(_function(static, None), [self, ConstantVariable(name)], {})
            if found.source is not None or isinstance(found, ConstantVariable):  # (not an object made per read)
                memo[key] = found
            return found
        except TracedException as e:
            missing = missing_from(e)  # (hasattr is False; its facts are guarded)
            if missing is None:
                raise
            memo[key] = missing
            raise missing from None
        finally:
            tx.trace.location = location

    def missing_attribute(self, tx: TracerContext, name: str) -> VariableTracker:
        hook = class_static(tx, self.cls, "__getattr__")
        if isinstance(hook, types.FunctionType):  # traced, so it runs once per read, as in eager
            return call_getattr_hook(tx, UserMethodVariable(_function(hook, None), self.receiver), name)
        if hook is not None:
            return self.real_attribute(tx, name)
        raise AttributeMissing.exactly(no_attribute(self.cls, name))

    def _read_for_real(self, tx: TracerContext, name: str) -> VariableTracker:
        try:
            value = getattr(self.value, name)
        except AttributeError as e:
            raise AttributeMissing.exactly(e) from e
        if isinstance(value, types.MethodType) and value.__self__ is self.value and \
                isinstance(value.__func__, types.FunctionType):
            # (bound to this object: the function is what the guards pin, re-read through the
            # object as the code reads it; no class lookup of ours found it)
            return UserMethodVariable(tx.wrap(value.__func__, AttrSource(AttrSource(self.source, name), "__func__")),
                                      self.receiver)
        return tx.wrap(value, AttrSource(self.source, name))

    def store_attr(self, tx: TracerContext, name: str, value: VariableTracker | None) -> None:
        if isinstance(self.source, PrivateObjectSource):  # the trace's own object: change it now
            read = tx.trace.memos.input_trackers.get(AttrSource(self.source, name))
            if read is not None:  # (a constant read is held as its value; anything else by where it was)
                raise Unsupported(f"rebinding {name!r} of {self.describe()} after the trace read it")
            tx.trace.side_effects.version += 1
            if value is None:
                delattr(self.value, name)
            else:
                setattr(self.value, name, value.as_python_constant())
            tx.trace.memos.input_trackers.pop(AttrSource(self.source, name), None)  # read it afresh
            return
        super().store_attr(tx, name, value)

    def generic_store(self, tx: TracerContext, name: str, value: VariableTracker | None, native: bool = False) -> None:
        """Replayed after the graph as ``obj.name = value``, which is the generic store only
        where the class's ``__setattr__`` (``__delattr__``) is object's; ``native`` (object's
        own method was called, inside the class's own): as ``object.__setattr__(obj, name, value)``."""
        static = class_static(tx, self.cls, name)
        method = "__delattr__" if value is None else "__setattr__"
        generic = generic_access(tx, self.cls, method)
        if (hasattr(static, "__set__") and not is_slot(static, name)) or not (generic or native) \
                or isinstance(self.source, PrivateObjectSource):
            raise Unsupported(f"setting {self.cls.__qualname__}.{name} runs Python code (a descriptor or {method})")
        tx.trace.side_effects.store_attr(self, name, DELETED if value is None else value, None if generic else object)

    def __repr__(self) -> str:
        return f"UserDefinedObjectVariable({self.cls.__qualname__})"


class ObjectConstantVariable(ConstantVariable):
    """An instance of a user subclass of a builtin value type (an int, a str...), or an enum
    member, read from a source: a constant (``constant.is_object_constant``) that is an object
    too. Its attributes other than its base's methods are read as CPython's generic lookup
    finds them on the real object (its class's data descriptor, its own ``__dict__``, its
    class), each read guarded, with this constant as the ``self`` of its methods."""

    models = (int, float, complex, str, bytes, enum.Enum)  # (user subclasses of; enum members)

    def instance_attribute(self, tx: TracerContext, name: str) -> VariableTracker:
        return UserDefinedObjectVariable(self.peek(), self.source, receiver=self).var_getattr(tx, name)


def call_getattr_hook(tx: TracerContext, hook: VariableTracker, name: str) -> VariableTracker:
    """A Python ``__getattr__`` (a class's, bound, or a module's) called for ``name``, inlined:
    what it reads is guarded where it reads it, and an AttributeError it raises is the missing
    attribute (``hasattr`` is False, ``getattr``'s default is taken)."""
    try:
        return hook.call_function(tx, [ConstantVariable(name)], {})
    except TracedException as e:
        missing = missing_from(e)
        if missing is None:
            raise
        raise missing from None


def missing_from(e: TracedException) -> AttributeMissing | None:
    """The AttributeError that traced lookup code raised, as the missing attribute it means
    (its facts guarded where the code read them); None for any other exception."""
    error = e.exception
    if isinstance(error, ExceptionVariable) and issubclass(error.cls, AttributeError) and \
            all(a.is_python_constant() for a in error.args):
        return AttributeMissing.exactly(error.cls(*[a.as_python_constant() for a in error.args]), guarded=True)
    return None


def make_object(cls: type, attributes: dict[str, Any]) -> Any:
    """An instance of ``cls`` with these attributes, without running ``__init__`` again
    (generated code: an object the trace created survives it)."""
    # (a class's own Python __new__ may want arguments: ``object_new`` made the traced one)
    obj = object.__new__(cls) if isinstance(cls.__new__, types.FunctionType) else cls.__new__(cls)
    for name, value in attributes.items():
        object.__setattr__(obj, name, value)
    return obj


class NewObjectVariable(ObjectVariableBase):
    """An instance of a plain user class created by the trace (``Box(x)``, a dataclass)."""

    models = object  # instances of user classes

    built_once = True

    def __init__(self, cls: type) -> None:
        super().__init__()
        self.cls = cls
        self.attributes: dict[str, VariableTracker] = {}

    def describe(self) -> str:
        return f"a new {self.cls.__qualname__}"

    def subvalues(self) -> list[VariableTracker]:
        return list(self.attributes.values())

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        """``obj.name``: the class's Python ``__getattribute__`` (traced) where it has one, else
        the generic lookup; where that raises AttributeError, the class's ``__getattr__``."""
        try:
            if generic_access(tx, self.cls, "__getattribute__"):
                return self.generic_getattr(tx, name)
            hook = class_static(tx, self.cls, "__getattribute__")
            if not isinstance(hook, types.FunctionType):
                raise Unsupported(f"reading {name!r} of {self.describe()}: its __getattribute__ is not Python")
            return call_getattr_hook(tx, UserMethodVariable(_function(hook, None), self), name)
        except (AttributeMissing, TracedException) as e:
            if isinstance(e, TracedException) and missing_from(e) is None:
                raise  # (not an AttributeError)
            fallback = class_static(tx, self.cls, "__getattr__")
            if fallback is None:
                raise
            if not isinstance(fallback, types.FunctionType):
                raise Unsupported(f"reading {name!r} of {self.describe()}: its __getattr__ is not Python") from None
            return call_getattr_hook(tx, UserMethodVariable(_function(fallback, None), self), name)

    def generic_getattr(self, tx: TracerContext, name: str, native: bool = False) -> VariableTracker:
        """``object.__getattribute__(obj, name)``: its own attributes, then the class's."""
        if name in self.attributes:
            return self.attributes[name]
        if name == "__class__":
            return self.class_variable(tx)
        if name == "__dict__":
            return InstanceDictVariable.of(tx, self, native)
        if is_slot(class_static(tx, self.cls, name), name):
            raise AttributeMissing.exactly(unset_slot(self.cls, name))
        return class_attribute(tx, self, self.cls, name, class_source=None)

    def generic_store(self, tx: TracerContext, name: str, value: VariableTracker | None, native: bool = False) -> None:
        static = class_static(tx, self.cls, name)
        if hasattr(static, "__set__") and not is_slot(static, name):
            raise Unsupported(f"setting {self.cls.__qualname__}.{name} runs Python code (a descriptor)")
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

    models = dict  # an object's ``__dict__``

    def __init__(self, obj: "UserDefinedObjectVariable | NewObjectVariable") -> None:
        super().__init__()
        self.obj = obj

    @classmethod
    def of(cls, tx: TracerContext, obj: Any, native: bool = False) -> "InstanceDictVariable":
        """``native``: read by ``object.__getattribute__(obj, '__dict__')``, whatever the
        class's own ``__getattribute__`` does."""
        static = class_static(tx, obj.cls, "__dict__")
        if type(static) is not types.GetSetDescriptorType or not (native or generic_access(tx, obj.cls, "__getattribute__")):
            raise Unsupported(f"reading __dict__ of {obj.describe()}")
        var = cls(obj)
        var.native = native
        return var

    native = False

    def python_type(self) -> type:
        return dict

    def describe(self) -> str:
        return f"the __dict__ of {self.obj.describe()}"

    def _lookup(self, tx: TracerContext, key: VariableTracker) -> VariableTracker | None:
        name = key.as_python_constant()
        if type(name) is not str:
            raise Unsupported(f"a {type(name).__name__} key of {self.describe()}")
        obj = self.obj
        if isinstance(obj, NewObjectVariable):
            return obj.attributes.get(name)
        written = obj.written_attribute(tx, name)
        if written is not None:
            return written
        instance_dict = object.__getattribute__(obj.value, "__dict__")
        if name in instance_dict:
            return tx.wrap(instance_dict[name], ObjectAttrSource(obj.source, name) if self.native else AttrSource(obj.source, name))
        tx.guards.not_in_instance_dict(obj.source, name, self.native)
        return None

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if kwargs:
            raise Unsupported(f"{self.describe()}.{name}() with keyword arguments")
        result = self.methods.call(self, tx, name, args, kwargs)
        if result is None:
            raise Unsupported(f"calling {name!r} of {self.describe()}")
        return result

    methods = Methods("an object's __dict__")

    @methods("__setitem__")
    def _setitem(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if len(args) != 2:
            return None
        if type(args[0].as_python_constant()) is not str:
            raise Unsupported(f"a non-str key written into {self.describe()}")
        self.obj.generic_store(tx, args[0].as_python_constant(), args[1])
        return ConstantVariable(None)

    @methods("__getitem__", "__contains__", "get")
    def _read(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if len(args) not in ((1, 2) if name == "get" else (1,)):
            return None
        found = self._lookup(tx, args[0])
        if name == "__contains__":
            return ConstantVariable(found is not None)
        if found is None and name == "get":
            return args[1] if len(args) > 1 else ConstantVariable(None)
        if found is None:
            raise TracedException(KeyError(args[0].as_python_constant()))
        return found

    def reconstruct(self, cg: Any) -> None:
        if self.native:
            cg.call_const(object.__getattribute__, lambda: [cg.reconstruct(self.obj), cg.load_const("__dict__")])
            return
        cg.reconstruct(self.obj)
        cg.load_attr("__dict__")

    def subvalues(self) -> list[VariableTracker]:
        return [self.obj]


class ExceptionVariable(VariableTracker):
    """An exception made while tracing (``ValueError("bad")``, a KeyError of a lookup)."""

    models = BaseException

    def __init__(self, cls: type, args: list[VariableTracker]) -> None:
        super().__init__()
        self.cls = cls
        self.args = args

    @classmethod
    def of(cls, tx: TracerContext, value: VariableTracker) -> "ExceptionVariable":
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

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        if name == "args":
            return TupleVariable(list(self.args))
        if name == "with_traceback" and class_static(tx, self.cls, name) is BaseException.with_traceback:
            return BoundMethodVariable(self, name)
        if name == "value" and issubclass(self.cls, StopIteration):  # (a generator's return value)
            return self.args[0] if self.args else ConstantVariable(None)
        raise Unsupported(f"reading {name!r} of an exception made while tracing")

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name == "__str__" and not args:
            return ConstantVariable(str(self.cls(*[a.as_python_constant() for a in self.args])))
        if name == "with_traceback" and len(args) == 1 and not kwargs and args[0].is_python_constant() \
                and args[0].as_python_constant() is None:
            return self  # (its traceback, which the trace does not keep, dropped: the exception itself)
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg: Any) -> None:
        def arguments() -> list[None]:
            for arg in self.args:
                cg.reconstruct(arg)
            return [None] * len(self.args)

        cg.call_const(self.cls, arguments)

    def subvalues(self) -> list[VariableTracker]:
        return list(self.args)


def construct(tx: TracerContext, cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker],
              metaclass_call: bool = True) -> VariableTracker:
    """``cls(*args, **kwargs)`` for a user class, while tracing (``classes.construct`` first gives
    the classes that a higher family models, ModelOutput's, to that family). A Python
    ``__call__`` of the metaclass runs inlined with the class bound (its ``super().__call__``
    comes back here with ``metaclass_call`` False: ``type.__call__``, the construction itself)."""
    if metaclass_call:
        call = class_static(tx, type(cls), "__call__")
        if isinstance(call, types.FunctionType):
            return _function(call, None).call_function(tx, [tx.wrap(cls, ConstSource.of(cls)), *args], kwargs)
        if isinstance(call, type) and class_static(tx, type(call), "__get__") is None:
            # Not a descriptor, so not bound to the class: called as it is (a TypedDict's
            # metaclass has ``__call__ = dict``, its classes make plain dicts).
            return tx.wrap(call, None).call_function(tx, args, kwargs)
        if call is not type.__call__:  # ABCMeta is fine; a metaclass's C __call__ is not
            raise Unsupported(f"constructing {cls.__qualname__}, whose metaclass is {type(cls).__qualname__}")
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
    if is_plain_enum(tx, cls) and len(args) == 1 and not kwargs:
        return enum_member(tx, cls, "_value2member_map_", args[0])
    if cls is types.SimpleNamespace and not args:  # its attributes are the keyword arguments
        obj = NewObjectVariable(cls)
        obj.attributes.update(kwargs)
        return obj
    if issubclass(cls, dict):
        return construct_dict_subclass(tx, cls, args, kwargs)
    if issubclass(cls, list):
        return construct_list_subclass(tx, cls, args, kwargs)
    new = class_static(tx, cls, "__new__")
    if new is object.__new__:
        obj: VariableTracker = new_instance(tx, cls)
    elif isinstance(new, staticmethod) and isinstance(new.__func__, types.FunctionType):
        # ``type.__call__``: the class's own ``__new__`` (traced) makes the object; ``__init__``
        # runs only on an instance of ``cls`` (a singleton's may be one made before the call).
        obj = _function(new.__func__, None).call_function(tx, [tx.wrap(cls, ConstSource.of(cls)), *args], kwargs)
        if not issubclass(obj.python_type(), cls):
            return obj
    else:
        raise Unsupported(f"constructing {cls.__qualname__}, whose __new__ is not Python")
    init = class_static(tx, obj.python_type(), "__init__")
    if isinstance(init, types.FunctionType):
        _function(init, None).call_function(tx, [obj, *args], kwargs)
    elif init is not object.__init__ or (new is object.__new__ and (args or kwargs)):
        raise Unsupported(f"constructing {cls.__qualname__}: its __init__ is not Python")
    return obj


def object_new(tx: TracerContext, cls: VariableTracker, *rest: VariableTracker) -> VariableTracker | None:
    """``object.__new__(cls)`` (in a class's own ``__new__``, directly or through ``super()``): a new
    instance of a plain user class, its attributes not set yet. None (the graph breaks) for
    any other class, or with more arguments (CPython's TypeError). (``classes.py`` registers
    it, leaving out the classes another family models.)"""
    klass = cls.as_python_constant() if cls.is_python_constant() else None
    if rest or not isinstance(klass, type) or not _plain_layout(klass):
        return None
    return new_instance(tx, klass)


def new_instance(tx: TracerContext, cls: type) -> "NewObjectVariable":
    """What ``object.__new__(cls)`` makes: a new instance, its attributes not set yet. A class
    with abstract methods left (an ``abc.ABC`` not fully implemented) cannot be instantiated:
    the graph breaks, so that eager raises CPython's TypeError (its lookup guarded)."""
    if class_static(tx, cls, "__abstractmethods__"):
        raise Unsupported(f"TypeError: can't instantiate the abstract class {cls.__qualname__}")
    return NewObjectVariable(cls)


def _plain_layout(cls: type) -> bool:
    """Whether instances of ``cls`` are laid out as ``object``'s, what ``NewObjectVariable``
    models (and what CPython's ``object.__new__(cls)`` checks is safe): its bases made by class
    statements (no C ``__new__`` of their own) down to ``object``."""
    base: type | None = cls
    while base is not None and by_class_statement(base):
        if not isinstance(base.__dict__.get("__new__", _NO_NEW), staticmethod):
            return False
        base = base.__base__
    return base is object


_NO_NEW = staticmethod(object.__new__)


class SuperVariable(VariableTracker):
    """``super()`` inside a method: attribute lookups start after ``cls`` in the MRO of ``obj``."""

    models = super

    def __init__(self, cls: type, obj: VariableTracker) -> None:
        super().__init__()
        self.cls = cls
        self.obj = obj

    def python_type(self) -> type:
        return super

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        if name == "__class__":  # (the super object's own, as super's lookup gives it)
            return tx.wrap(super, ConstSource.of(super))
        obj_cls = self.obj.python_type()
        klass = self.obj.as_python_constant() if self.obj.is_python_constant() else None
        if isinstance(klass, type):
            tx.guards.class_mro(klass)  # (CPython's test: the MRO, not a __subclasscheck__)
            if self.cls in klass.__mro__:
                obj_cls = klass  # super() in a classmethod: cls's own MRO (in a metaclass's method: its type's)
        klass, static = find_on_class(tx, obj_cls, name, start_after=self.cls)
        if name == "__new__" and klass is not None and klass.__module__ == "builtins":
            return tx.wrap(static, AttrSource(ConstSource.of(klass), name))  # (``object.__new__``: a function)
        if klass is not None and (klass.__module__ == "builtins" or klass in NATIVE_OWNERS):
            return NativeMethodVariable(self.obj, name)
        return class_attribute(tx, self.obj, obj_cls, name, start_after=self.cls)
