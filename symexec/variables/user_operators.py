"""Binary operators and comparisons where an operand is a user object, dispatched as CPython's
``binary_op1`` and ``do_richcompare`` do (``user_operator``): which operand's method runs first,
``NotImplemented`` passing the turn, object's default ``==``/``!=``, and a tensor's operator
giving way to an object torch cannot parse. ``operators.py`` calls it for the ``operator``
functions it models.
"""

from __future__ import annotations

import types
from typing import Any, Callable

import torch

from ..context import TracerContext
from ..exc import Unsupported
from .base import VariableTracker, class_static
from .constant import ConstantVariable
from .user_objects import ObjectVariableBase


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


_COMPARISONS = frozenset({"lt", "le", "gt", "ge", "eq", "ne"})
# Builtin values whose operators give NotImplemented for an instance of a user class (not a
# subclass of theirs): comparisons of all of these, arithmetic of the numbers.
_COMPARED_BY_KIND = frozenset({int, float, bool, complex, str, bytes, type(None), list, tuple, dict, set, frozenset})
_NUMBERS = frozenset({int, float, bool, complex, type(None)})
_NOT_IMPLEMENTED = object()


def user_operator(tx: TracerContext, op: str, a: VariableTracker, b: VariableTracker,
                  same_object: Callable[[], bool]) -> VariableTracker:
    """``a <op> b`` (an ``operator`` name in ``DUNDERS``) where an operand is a user object, as
    CPython's ``binary_op1`` and ``do_richcompare`` dispatch it: the right operand's reflected
    method first where its class is a subclass of the left's (that overrides it, for
    arithmetic), then the left's method, then the right's reflected one (a comparison tries it
    for two objects of one class too), each skipped where it gives ``NotImplemented``; then
    ``==`` and ``!=`` fall back to identity (``same_object``) and the others raise TypeError.
    Python methods run traced; object's defaults are modelled (``__eq__`` is identity,
    ``__ne__`` the inverse of ``__eq__``); any other method breaks the graph."""
    dunder, reflected = DUNDERS[op]
    left, right = a.python_type(), b.python_type()
    compare = op in _COMPARISONS
    subclass_first = left is not right and issubclass(right, left) and (
        compare or class_static(tx, right, reflected) is not class_static(tx, left, reflected))
    steps = [(b, reflected, a)] if subclass_first else []
    steps.append((a, dunder, b))
    if not subclass_first and (compare or left is not right):
        steps.append((b, reflected, a))
    for var, name, other in steps:
        result = _dunder_call(tx, var, name, other, same_object, compare)
        if result is not _NOT_IMPLEMENTED:
            return result
    if op in ("eq", "ne"):
        return ConstantVariable(same_object() is (op == "eq"))
    raise Unsupported(f"TypeError: {op} of {a.describe()} and {b.describe()}: no method takes them")


def _dunder_call(tx: TracerContext, var: VariableTracker, name: str, other: VariableTracker,
                 same_object: Callable[[], bool], compare: bool) -> Any:
    """``type(var).name(var, other)`` for one step of ``user_operator``: its result, or
    ``_NOT_IMPLEMENTED``."""
    if not isinstance(var, ObjectVariableBase):
        kind = var.python_type()
        if kind in (_COMPARED_BY_KIND if compare else _NUMBERS) and isinstance(other, ObjectVariableBase) and \
                not issubclass(other.python_type(), kind):  # (a subclass of its kind it takes: a dict's ModelOutput)
            return _NOT_IMPLEMENTED
        if kind in (torch.Tensor, torch.nn.Parameter) and isinstance(other, ObjectVariableBase) and \
                _opaque_to_torch(tx, other.cls):
            return _NOT_IMPLEMENTED  # (a tensor's operator turns the TypeError of its parsing into this)
        raise Unsupported(f"{name} of {var.describe()} with {other.describe()}")
    static = class_static(tx, var.cls, name)
    if isinstance(static, types.FunctionType):
        result = var.call_method(tx, name, [other], {})
        return _NOT_IMPLEMENTED if result.is_python_constant() and result.as_python_constant() is NotImplemented \
            else result
    if static is None or (compare and static is getattr(object, name) and name not in ("__eq__", "__ne__")):
        return _NOT_IMPLEMENTED  # (object's <, <=... give NotImplemented; no slot at all for +, -...)
    if static is object.__eq__:
        return ConstantVariable(True) if same_object() else _NOT_IMPLEMENTED
    if static is object.__ne__:
        equal = _dunder_call(tx, var, "__eq__", other, same_object, compare)
        return equal if equal is _NOT_IMPLEMENTED else ConstantVariable(not equal.truth(tx))
    raise Unsupported(f"{var.cls.__qualname__}.{name} is not Python")


# What makes torch's argument parsing take an object as a number, a sequence or a tensor.
_TORCH_CONVERSIONS = ("__torch_function__", "__index__", "__int__", "__float__", "__complex__", "__len__",
                      "__getitem__", "__iter__", "__array__", "__array_interface__", "__dlpack__")


def _opaque_to_torch(tx: TracerContext, cls: type) -> bool:
    """Whether a tensor's operator takes no instance of ``cls`` (none of ``_TORCH_CONVERSIONS``,
    the lookups guarded): it gives NotImplemented, and the object's reflected method runs."""
    return all(class_static(tx, cls, name) is None for name in _TORCH_CONVERSIONS)
