"""Instances of user subclasses of the builtin containers, list and dict (HF's
``LogitsProcessorList``, a config dict): their items as the builtin's, plus the attributes,
methods and ``__call__`` of the user's class.

A subclass is modelled so only while it leaves the builtin's protocol alone
(``overrides_protocol``): its own ``__getitem__``, ``__iter__``, ``append``... would have to
run where the trace reads the items directly (``len``, iteration, ``in``, the guards), so
such a class is a plain object instead. What it adds (methods, properties, ``__call__``,
attributes) is looked up as CPython's generic lookup does (``SubclassInstance``). The class
lookups are guarded, so a method assigned to the class later retraces.

``ListSubclassVariable`` is here; ``DictSubclassVariable`` (dicts.py) shares the attribute half.
"""

from __future__ import annotations

import types
from typing import Any, Callable

from ..context import TracerContext
from ..exc import AttributeMissing, Unsupported
from ..source import AttrSource, ConstSource, Source
from .base import BoundMethodVariable, Methods, VariableTracker, class_static, find_on_class
from .constant import ConstantVariable
from .lists import ListVariable
from .object_protocol import class_attribute

# What a container tracker models of its type; a subclass that overrides one in Python (or
# with any callable that is not a builtin's method) is an object.
CONTAINER_PROTOCOL = frozenset({
    "__getitem__", "__setitem__", "__delitem__", "__iter__", "__len__", "__contains__", "__missing__",
    "__eq__", "__ne__", "__hash__", "__bool__", "__add__", "__iadd__", "__or__", "__ior__", "__reversed__",
    "__mul__", "__rmul__", "__imul__", "__radd__",
    "keys", "values", "items", "get", "pop", "popitem", "setdefault", "update", "clear", "copy",
    "append", "extend", "insert", "remove", "index", "count", "sort", "reverse", "add", "discard",
})
# A dict subclass's Python methods called by name, and __getitem__, run through its tracker
# (``ConstDictVariable.call_method``); these it does not dispatch.
DICT_PROTOCOL = frozenset({"__missing__", "__iter__", "__eq__", "__ne__", "__hash__", "__bool__", "__reversed__"})

_METHOD_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
                 types.WrapperDescriptorType)
_BUILTIN_METHOD_TYPES = (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType)


# What a list subclass made by the trace may define in Python and still be a list here: the
# ways in are each the class's (``ListSubclassVariable.getitem``, ``call_method``), as CPython
# reaches them. Iteration, ``len``, ``in``, ``bool``, operators are read from the items by other
# families (as CPython's list does for a subclass that leaves them alone), so a class
# overriding one is an object.
LIST_DISPATCHED = frozenset({"__getitem__", "__setitem__", "__delitem__", "append", "extend", "insert", "remove",
                             "index", "count", "sort", "reverse", "pop", "clear", "copy"})


# What a list subclass passed in may define in Python and still be a list here: its named
# methods, run when called by name. Not its subscripts: the guards read its items by ``x[i]`` and
# a change of it is replayed as ``x[:] = items`` (both would run them).
INPUT_LIST_DISPATCHED = LIST_DISPATCHED - {"__getitem__", "__setitem__", "__delitem__"}


def overrides_protocol(tx: TracerContext, cls: type, base: type, dispatched: frozenset[str] = frozenset()) -> bool:
    """Whether a subclass of the builtin container ``base`` defines a protocol method of its own,
    other than the ``dispatched`` ones (the class lookups guarded)."""
    protocol = DICT_PROTOCOL if issubclass(base, dict) else CONTAINER_PROTOCOL
    for name in sorted(protocol - dispatched):
        klass, static = find_on_class(tx, cls, name)
        if klass is not None and klass not in base.__mro__ and klass.__module__ != "collections" and not isinstance(
                static, _BUILTIN_METHOD_TYPES):
            return True
    return False


def python_override(tx: TracerContext, cls: type, base: type, name: str) -> types.FunctionType | None:
    """The Python function ``cls`` defines for ``name`` above the builtin ``base``, if any (guarded)."""
    klass, method = find_on_class(tx, cls, name)
    if klass is None or klass in base.__mro__ or not isinstance(method, types.FunctionType):
        return None
    return method


def run_python(tx: TracerContext, fn: types.FunctionType, args: list[VariableTracker],
               kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """``fn(*args, **kwargs)`` for a Python function found on a class (the lookup guarded), inlined."""
    return tx.wrap(fn, ConstSource.of(fn)).call_function(tx, args, kwargs)


def own_method_call(tx: TracerContext, obj: VariableTracker, cls: type, base: type, name: str, args: list[VariableTracker],
                    kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    """``obj.name(*args)`` where a subclass ``cls`` of the builtin ``base`` defines ``name`` in
    Python: its method, inlined; None where the builtin's runs."""
    override = python_override(tx, cls, base, name)
    return None if override is None else run_python(tx, override, [obj, *args], kwargs)


class SubclassInstance(VariableTracker):
    """The half of a builtin container subclass's instance that is an object: attributes read
    as CPython's generic lookup does (a data descriptor of the class, then the instance's own
    ``__dict__``: the real one of an object passed in, read with a source, and the trace's
    writes; then the class; then the class's ``__getattr__``), writes through a Python
    ``__setattr__`` where the class has one, and ``__call__``. Written attributes of an object
    passed in are replayed after the graph; those of one created by the trace go into the
    rebuilt object. A subclass sets ``user_cls``, ``instance`` and ``attributes``, and names its
    builtin ``base`` and the builtin classes whose methods it models (``native_classes``)."""

    models = (list, dict)  # (user subclasses of)

    user_cls: type
    base: type
    instance: Any
    attributes: dict[str, VariableTracker]
    native_classes: tuple[type, ...] = ()
    native_call_method: Callable[..., VariableTracker]  # (each container's: its builtin methods)
    maker: Callable[..., Any]  # rebuilds one the trace made: maker(*contents, attributes)
    push_contents: Callable[[Any], int]  # pushes maker's first arguments; how many

    def describe(self) -> str:
        return f"the {self.user_cls.__qualname__} {self.source.name}" if self.source else f"a {self.user_cls.__qualname__}"

    def as_python_constant(self) -> Any:
        raise Unsupported(f"{self.describe()} is an object, not a constant")

    def is_native_method(self, static: Any) -> bool:
        """Whether a class attribute is a builtin base's method (``__getattr__ = dict.__getitem__``)."""
        return isinstance(static, (types.MethodDescriptorType, types.WrapperDescriptorType)) and \
            static.__objclass__ in self.native_classes

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        cls = self.user_cls
        if class_static(tx, cls, "__getattribute__") is not self.base.__getattribute__:  # (the generic lookup)
            raise Unsupported(f"reading {name!r} of {self.describe()}: its class has __getattribute__")
        if name == "__class__":
            return tx.wrap(cls, AttrSource(self.source, "__class__") if self.source is not None else None)
        static = class_static(tx, cls, name)
        if hasattr(static, "__set__") or hasattr(static, "__delete__"):  # a data descriptor comes first
            if isinstance(static, property):
                return class_attribute(tx, self, cls, name)
            raise Unsupported(f"reading {name!r} of {self.describe()}, a {type(static).__name__}")
        own = self._own_attribute(tx, name)
        if own is not None:
            return own
        if isinstance(static, _METHOD_TYPES):  # call_method runs it (a Python override, or the builtin's)
            return BoundMethodVariable(self, name)
        if static is not None:
            return class_attribute(tx, self, cls, name)
        return self._missing(tx, name)

    def _own_attribute(self, tx: TracerContext, name: str) -> VariableTracker | None:
        """The instance attribute ``name``, or None where the object has none."""
        if name in self.attributes:
            return self.attributes[name]
        if self.source is None:
            return None
        instance_dict = getattr(self.instance, "__dict__", None)
        if instance_dict is None:  # (__slots__ = (): no instance attributes)
            return None
        if name in instance_dict:
            return tx.wrap(instance_dict[name], AttrSource(self.source, name))
        tx.guards.not_in_instance_dict(self.source, name)  # (one set later would shadow the class's)
        return None

    def _missing(self, tx: TracerContext, name: str) -> VariableTracker:
        """No attribute ``name``: the class's ``__getattr__``, or an AttributeError."""
        getattr_ = class_static(tx, self.user_cls, "__getattr__")
        if isinstance(getattr_, types.FunctionType):
            return run_python(tx, getattr_, [self, ConstantVariable(name)], {})
        if self.is_native_method(getattr_):  # ``__getattr__ = dict.__getitem__``: items are attributes
            return self.native_call_method(tx, getattr_.__name__, [ConstantVariable(name)], {})
        if getattr_ is not None:
            raise Unsupported(f"reading {name!r} of {self.describe()} through its {type(getattr_).__name__} __getattr__")
        error = AttributeError(f"'{self.user_cls.__name__}' object has no attribute '{name}'")
        raise AttributeMissing.exactly(error)

    def store_attr(self, tx: TracerContext, name: str, value: VariableTracker | None) -> None:
        setter = class_static(tx, self.user_cls, "__delattr__" if value is None else "__setattr__")
        if isinstance(setter, types.FunctionType):
            run_python(tx, setter, [self, ConstantVariable(name)] + ([] if value is None else [value]), {})
            return
        if self.is_native_method(setter):  # ``__setattr__ = dict.__setitem__``: attributes are items
            self.native_call_method(tx, setter.__name__, [ConstantVariable(name)] + ([] if value is None else [value]), {})
            return
        if setter is not (object.__delattr__ if value is None else object.__setattr__):
            raise Unsupported(f"setting {name!r} of {self.describe()} runs a builtin __setattr__")
        self.generic_store(tx, name, value)

    def generic_store(self, tx: TracerContext, name: str, value: VariableTracker | None) -> None:
        """``object.__setattr__(self, name, value)``: the instance's own ``__dict__``."""
        static = class_static(tx, self.user_cls, name)
        if value is None or hasattr(static, "__set__") or hasattr(static, "__delete__"):
            raise Unsupported(f"{'deleting' if value is None else 'setting'} {name!r} of {self.describe()} "
                              f"(a descriptor, or a deletion)")
        if self.source is not None:  # replayed as ``obj.name = value``: its __setattr__ must be object's
            if class_static(tx, self.user_cls, "__setattr__") is not object.__setattr__:
                raise Unsupported(f"setting {name!r} of {self.describe()}: the replay would run its __setattr__")
            tx.trace.side_effects.store_attr(self, name, value)
        self.attributes[name] = value

    def native_setattr(self, tx: TracerContext, name: str, args: list[VariableTracker],
                       kwargs: dict[str, VariableTracker]) -> bool:
        """``object.__setattr__(self, name, value)`` reached as a native method: done, or False."""
        if name == "__setattr__" and len(args) == 2 and not kwargs and args[0].is_python_constant():
            self.generic_store(tx, args[0].as_python_constant(), args[1])
            return True
        return False

    def reconstruct(self, cg: Any) -> None:
        """One passed in is re-read; one the trace made is rebuilt by ``maker`` from the
        arguments ``push_contents`` pushes and the attributes, without running its class's code."""
        if self.source is not None:
            self.source.emit_load(cg)
            return

        def arguments() -> list[None]:
            count = self.push_contents(cg)
            for name, value in self.attributes.items():
                cg.load_const(name)
                cg.reconstruct(value)
            cg.build(dict, len(self.attributes))
            return [None] * (count + 1)

        cg.call_const(self.maker, arguments)

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        call = class_static(tx, self.user_cls, "__call__")
        if not isinstance(call, types.FunctionType):
            raise Unsupported(f"calling {self.describe()}" + ("" if call is None else ": its __call__ is not Python"))
        return run_python(tx, call, [self, *args], kwargs)


def make_list(cls: type, items: list, attributes: dict) -> Any:
    """An instance of the list subclass ``cls`` with these items and attributes, made without
    running its ``__init__`` or ``__setattr__`` (generated code: an object the trace created
    survives it)."""
    obj = list.__new__(cls)
    list.extend(obj, items)
    for name, value in attributes.items():
        object.__setattr__(obj, name, value)
    return obj


class ListSubclassVariable(SubclassInstance, ListVariable):
    """An instance of a user subclass of list: a list's items, modelled by value as
    ``ListVariable``'s, and an object's attributes (``SubclassInstance``). Its Python methods
    run inlined; list's own run natively. Slicing, ``+`` and ``*`` give plain lists, as in
    CPython. One passed in is guarded on its type and length, its items through ``x[i]``."""

    models = list  # (user subclasses of)

    base = list
    native_classes = (list,)
    maker = staticmethod(make_list)

    def __init__(self, items: list[VariableTracker], user_cls: type, source: Source | None = None,
                 instance: Any = None) -> None:
        super().__init__(items, source)
        self.user_cls, self.instance = user_cls, instance
        self.attributes: dict[str, VariableTracker] = {}  # written by the trace (all of a new one's)

    def python_type(self) -> type:
        return self.user_cls

    def subvalues(self) -> list[VariableTracker]:
        return [*self.items, *self.attributes.values()]

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        own = own_method_call(tx, self, self.user_cls, list, name, args, kwargs)
        return own if own is not None else self.native_call_method(tx, name, args, kwargs)

    def getitem(self, tx: TracerContext, index: VariableTracker) -> VariableTracker:
        """``obj[index]``: the class's own ``__getitem__`` where it has one (one the trace made:
        ``LIST_DISPATCHED``), else list's."""
        own = own_method_call(tx, self, self.user_cls, list, "__getitem__", [index], {})
        return own if own is not None else ListVariable.getitem(self, tx, index)

    def native_call_method(self, tx: TracerContext, name: str, args: list[VariableTracker],
                           kwargs: dict[str, VariableTracker]) -> VariableTracker:
        """The method of list itself (also what ``super().append(...)`` reaches)."""
        if self.native_setattr(tx, name, args, kwargs):
            return ConstantVariable(None)
        if name == "__getitem__" and len(args) == 1 and not kwargs:  # (not through getitem: the class's)
            return ListVariable.getitem(self, tx, args[0])
        return ListVariable.call_method(self, tx, name, args, kwargs)

    methods = Methods("list, for a subclass", extends=ListVariable.methods)

    @methods("__init__")
    def _init(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        """``list.__init__``: clear, then extend."""
        if len(args) > 1 or kwargs:
            return None
        tx.trace.side_effects.mutate(self)
        self.items[:] = args[0].unpack(tx) if args else []
        return ConstantVariable(None)

    def push_contents(self, cg: Any) -> int:
        cg.load_const(self.user_cls)
        for item in self.items:
            cg.reconstruct(item)
        cg.build(list, len(self.items))
        return 2

    def __repr__(self) -> str:
        return f"ListSubclassVariable({self.user_cls.__qualname__}, {self.items[:6]!r})"


def construct_list_subclass(tx: TracerContext, cls: type, args: list[VariableTracker],
                            kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """``cls(*args, **kwargs)`` for a user subclass of list: the builtin ``__new__`` makes it
    empty, then its ``__init__`` runs (inlined, or list's own)."""
    if class_static(tx, cls, "__new__") is not list.__new__ or overrides_protocol(tx, cls, list, LIST_DISPATCHED):
        raise Unsupported(f"constructing {cls.__qualname__}, a list subclass with its own __new__ or protocol")
    obj = ListSubclassVariable([], cls)
    init = class_static(tx, cls, "__init__")
    if isinstance(init, types.FunctionType):
        run_python(tx, init, [obj, *args], kwargs)
    elif init is list.__init__ and len(args) <= 1 and not kwargs:
        obj.native_call_method(tx, "__init__", args, kwargs)
    else:
        raise Unsupported(f"constructing {cls.__qualname__}: its __init__ is not Python")
    return obj
