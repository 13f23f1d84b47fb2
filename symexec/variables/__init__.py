"""Trackers: one module per family of Python values (see base.py for the shared protocol)."""

from .autograd import AutogradApplyVariable, AutogradFunctionVariable
from .base import NULL, BoundMethodVariable, NullVariable, VariableTracker
from .builder import VariableBuilder
from .builtins import BuiltinVariable
from .constant import ConstantVariable, wrap_constant
from .dicts import ConstDictVariable
from .functions import CellVariable, NestedUserFunctionVariable, UserFunctionVariable, UserMethodVariable
from .lists import BaseListVariable, IteratorVariable, ListVariable, SizeVariable, SliceVariable, TupleVariable
from .misc import SetVariable
from .operators import identical  # (registers the operator handlers)
from . import stdlib  # noqa: F401 - registers the itertools and operator handlers
from . import numbers  # noqa: F401 - registers min, max, sum, pow, int, float... handlers
from . import pytree  # noqa: F401 - registers the torch.utils._pytree handlers
from .tensor import TensorVariable, record_call

__all__ = [
    "NULL", "AutogradApplyVariable", "AutogradFunctionVariable", "BaseListVariable", "BoundMethodVariable", "BuiltinVariable", "CellVariable", "ConstDictVariable",
    "ConstantVariable", "IteratorVariable", "ListVariable", "NestedUserFunctionVariable", "NullVariable",
    "SetVariable", "SizeVariable", "SliceVariable", "TensorVariable", "TupleVariable", "UserFunctionVariable",
    "UserMethodVariable", "VariableBuilder", "VariableTracker", "identical", "record_call", "wrap_constant",
]
