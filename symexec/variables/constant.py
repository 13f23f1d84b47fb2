"""Constants: immutable Python values that are fixed for the trace (SPEC §2).

A constant read from an input carries its source, and is guarded lazily: the first time the
trace *uses* its value, ``L['b'] == 'Hello'`` (with its type) is added to the guards. A value
that is passed but never looked at adds no guard, so it never causes a recompile.
"""

from __future__ import annotations

import enum
import types
from typing import Any, Callable

try:  # (numpy is optional for torch; its scalars are constants when it is there)
    import numpy
    NUMPY_SCALAR_TYPES: tuple[type, ...] = (numpy.number, numpy.bool_)
    NUMPY_DTYPE_TYPES: tuple[type, ...] = (numpy.dtype,)  # (immutable, compared by value)
except ImportError:  # pragma: no cover - numpy missing
    NUMPY_SCALAR_TYPES = NUMPY_DTYPE_TYPES = ()

import torch

from ..context import TracerContext
from ..exc import AttributeMissing, Unsupported
from ..source import Source
from .base import BoundMethodVariable, Registry, VariableTracker, class_static

# Types whose instances are immutable values that may live in the graph and in generated code.
LITERAL_TYPES: tuple[type, ...] = (
    int, float, bool, str, bytes, complex, type(None), type(Ellipsis), type(NotImplemented),
    torch.dtype, torch.device, torch.layout, torch.memory_format, enum.Enum, *NUMPY_SCALAR_TYPES,
    *NUMPY_DTYPE_TYPES,
)


_SINGLETONS = (type(None), bool, type(Ellipsis), type(NotImplemented), enum.Enum)  # one object per value


def is_object_constant(value: Any) -> bool:
    """Whether a constant is an object too: an instance of a user subclass of a builtin value
    type (an int, a str...), or an enum member. Its attributes are its class's and its own
    ``__dict__``'s, read through the class and guarded; those of an exact int or str are not."""
    cls = type(value)
    return cls not in _EXACT_VALUE_TYPES and isinstance(value, (int, float, complex, str, bytes, enum.Enum)) and \
        not isinstance(value, NUMPY_SCALAR_TYPES)


_EXACT_VALUE_TYPES = frozenset({int, float, bool, str, bytes, complex})
# Types whose methods are pure and may run while tracing when every argument is constant.
PURE_METHOD_TYPES: tuple[type, ...] = (int, float, bool, str, bytes, complex, tuple, frozenset, *NUMPY_SCALAR_TYPES)


_BUILTIN_METHODS = (types.MethodDescriptorType, types.WrapperDescriptorType, types.BuiltinFunctionType,
                    types.ClassMethodDescriptorType)


def is_literal(value: Any) -> bool:
    """By the value's type (``isinstance`` would also read ``value.__class__``, which an object
    may answer with another class, through a Python ``__getattribute__``)."""
    kind = type(value)
    return issubclass(kind, LITERAL_TYPES) or (kind in (tuple, frozenset) and all(is_literal(v) for v in value))


class ConstantVariable(VariableTracker):
    """A Python value the trace treats as known: None, bools, numbers, strings, bytes, tuples and
    frozensets of those, enum members, and instances of user subclasses of int/float/str
    (``is_object_constant``: their attributes read through the real object). One from a
    source is guarded lazily: by exact type and value (``GuardSet.exactly``) when the trace
    first uses it, by readability when it is only returned. Not modelled: anything mutable."""

    models = (*LITERAL_TYPES, tuple, frozenset, slice)  # immutable values; tuples and frozensets of them

    def __init__(self, value: Any, source: Source | None = None, guards: Any = None) -> None:
        super().__init__(source)
        self._value = value
        self._guards = guards  # the GuardSet to guard in when the value is first used

    def as_python_constant(self) -> Any:
        if self._guards is not None:
            self._guards.equals_match(self.source, self._value)
            self._guards = None
        return self._value

    def as_proxy(self) -> Any:
        """The value as an argument of a graph node: a NumPy scalar as the Python number torch
        takes it for (FX code cannot name NumPy, and torch reads it as that number)."""
        value = self.as_python_constant()
        if NUMPY_SCALAR_TYPES and isinstance(value, NUMPY_SCALAR_TYPES):
            return graph_scalar(value)
        return value

    def peek(self) -> Any:
        """The value, unguarded: for a question about its kind whose answer is guarded where
        it is given (``python_type`` and ``as_python_constant`` guard what they answer)."""
        return self._value

    def python_type(self) -> type:
        if self._guards is not None:  # the trace branches on the type (isinstance, type(v) is T)
            self._guards.type_match(self.source, self._value)
        return type(self._value)

    def describe(self) -> str:
        return f"the constant {self._value!r}"[:80]

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        if is_object_constant(self._value):
            return self._object_attribute(tx, name)
        value = self.as_python_constant()
        try:
            attr = getattr(value, name)
        except AttributeError as e:
            raise AttributeMissing(f"{type(value).__name__} has no attribute {name!r}") from e
        if callable(attr):
            return BoundMethodVariable(self, name)
        return wrap_constant(attr)

    def _object_attribute(self, tx: TracerContext, name: str) -> VariableTracker:
        """``value.name`` of an instance of a subclass of a builtin type, or of an enum member:
        a builtin method of its base runs on the value (a constant). An enum member's ``name``
        and ``value`` are fixed (Enum forbids assigning them). Anything else is read from the
        real object (``instance_attribute``)."""
        value = self._value
        cls = self.python_type()
        static = class_static(tx, cls, name)
        if isinstance(value, enum.Enum) and name in ("name", "value") and \
                static is enum.Enum.__dict__[name]:
            # (which member it is: guarded, as any use of a constant's value)
            return wrap_constant(getattr(self.as_python_constant(), name))
        if isinstance(static, _BUILTIN_METHODS):
            return BoundMethodVariable(self, name)  # (call_method runs it on the value)
        return self.instance_attribute(tx, name)

    def instance_attribute(self, tx: TracerContext, name: str) -> VariableTracker:
        """``value.name`` read from the object itself, as CPython's generic lookup finds it.
        Only a constant read from a source has the real object to read: the builder wraps
        those as ``user_objects.ObjectConstantVariable``; one the trace made is unsupported."""
        raise Unsupported(f"reading {name!r} of a {type(self._value).__qualname__} made by the trace")

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if is_object_constant(self._value):
            attribute = self._object_attribute(tx, name)
            if not isinstance(attribute, BoundMethodVariable) or attribute.obj is not self:
                return attribute.call_function(tx, args, kwargs)  # (its own method, inlined)
        value = self.as_python_constant()
        if not isinstance(value, PURE_METHOD_TYPES + (torch.dtype, torch.device)) or (
            name.startswith("_") and not (name.startswith("__") and name.endswith("__"))
        ):
            raise Unsupported(f"calling method {name!r} of {type(value).__name__}")
        try:
            const_args = [_constant_argument(tx, a) for a in args]
            const_kwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
        except Unsupported as e:
            raise Unsupported(f"method {type(value).__name__}.{name} called with non-constant arguments") from e
        return wrap_constant(getattr(value, name)(*const_args, **const_kwargs))

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        value = self.as_python_constant()
        if isinstance(value, (str, bytes, tuple, frozenset)):
            return [wrap_constant(v) for v in value]
        raise Unsupported(f"iterating over {type(value).__name__}")

    def reconstruct(self, cg: Any) -> None:
        if self._guards is not None:  # never used, so never guarded: re-fetch the value of now
            self._guards.readable(self.source)  # (if it is still there: else the trace's answer differs)
            self.source.emit_load(cg)  # type: ignore[union-attr]
        elif self.source is not None and not isinstance(self._value, _SINGLETONS):
            # Re-fetched, not the traced value: an equal str or int need not be the same object
            # (``a is b`` after a graph break, or in what the caller gets back).
            self.source.emit_load(cg)
        else:
            cg.load_const(self._value)

    def __repr__(self) -> str:
        text = repr(self._value)
        return f"ConstantVariable({text if len(text) < 40 else text[:37] + '...'})"


def graph_scalar(value: Any) -> Any:
    """A NumPy scalar as the Python number torch reads it as. torch takes ``numpy.bool_`` for a
    float (``int_tensor * np.bool_(True)`` is a float tensor, unlike ``* True``): not modelled."""
    if isinstance(value, numpy.integer):
        return int(value)
    if isinstance(value, numpy.floating):
        return float(value)
    if isinstance(value, numpy.complexfloating):
        return complex(value)
    raise Unsupported(f"a numpy.{type(value).__name__} scalar as an argument of a torch operation")


def _constant_argument(tx: TracerContext, arg: VariableTracker) -> Any:
    """An argument of a pure method: a constant, or an iterable of constants (``sep.join(map(...))``)."""
    if arg.is_python_constant():
        return arg.as_python_constant()
    return [item.as_python_constant() for item in arg.unpack(tx)]


# Container families register how to wrap a computed value of their type (lists.py, dicts.py,
# sets.py, classes.py); a registry keeps this module below them.
COMPUTED_WRAPPERS: dict[type, Callable[[Any], VariableTracker]] = Registry("constant.COMPUTED_WRAPPERS")


def wrap_constant(value: Any) -> VariableTracker:
    """Wrap a value computed while tracing (no source): containers become container trackers."""
    if is_literal(value) and type(value) is not tuple:
        return ConstantVariable(value)
    for cls in type(value).__mro__:
        wrapper = COMPUTED_WRAPPERS.get(cls)
        if wrapper is not None:
            return wrapper(value)
    raise Unsupported(f"a {type(value).__name__} value computed while tracing")
