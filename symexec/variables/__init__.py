"""Trackers: one module per family of Python values (see base.py for the shared protocol,
object_protocol.py for the generic lookup every family builds on). ``builder.py`` imports every
family, so importing this package registers everything the families register."""

from .autograd import AutogradApplyVariable, AutogradFunctionVariable
from .base import NULL, BoundMethodVariable, NullVariable, VariableTracker
from .builder import VariableBuilder
from .builtin_functions import BuiltinVariable
from .constant import ConstantVariable, wrap_constant
from .dicts import ConstDictVariable
from .functions import CellVariable, NestedUserFunctionVariable, UserFunctionVariable, UserMethodVariable
from .lists import BaseListVariable, IteratorVariable, ListVariable, SizeVariable, SliceVariable, TupleVariable
from .sets import SetVariable
from .operators import identical
from .tensor import TensorVariable, record_call

__all__ = [
    "NULL", "AutogradApplyVariable", "AutogradFunctionVariable", "BaseListVariable", "BoundMethodVariable", "BuiltinVariable", "CellVariable", "ConstDictVariable",
    "ConstantVariable", "IteratorVariable", "ListVariable", "NestedUserFunctionVariable", "NullVariable",
    "SetVariable", "SizeVariable", "SliceVariable", "TensorVariable", "TupleVariable", "UserFunctionVariable",
    "UserMethodVariable", "VariableBuilder", "VariableTracker", "identical", "record_call", "wrap_constant",
]
