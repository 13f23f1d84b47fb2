"""Attributes and subscripts: thin handlers that hand the meaning to the value's tracker."""

from __future__ import annotations

import operator
from typing import Any

from ..variables import NULL, BuiltinVariable
from .registry import instruction


@instruction("LOAD_ATTR", pops=1, pushes=1)
def LOAD_ATTR(tx: Any, inst: Any, obj: Any) -> Any:
    return obj.var_getattr(tx, inst.arg)


@instruction("LOAD_METHOD", pops=1, pushes=2)
def LOAD_METHOD(tx: Any, inst: Any, obj: Any) -> tuple:
    # CPython pushes (method, self) or (NULL, attribute); the NULL form is always valid.
    return NULL, obj.var_getattr(tx, inst.arg)


@instruction("STORE_ATTR", pops=2)
def STORE_ATTR(tx: Any, inst: Any, value: Any, obj: Any) -> None:
    obj.store_attr(tx, inst.arg, value)


@instruction("DELETE_ATTR", pops=1)
def DELETE_ATTR(tx: Any, inst: Any, obj: Any) -> None:
    obj.store_attr(tx, inst.arg, None)


@instruction("BINARY_SUBSCR", pops=2, pushes=1)
def BINARY_SUBSCR(tx: Any, inst: Any, obj: Any, index: Any) -> Any:
    return BuiltinVariable(operator.getitem).call_function(tx, [obj, index], {})


@instruction("STORE_SUBSCR", pops=3)
def STORE_SUBSCR(tx: Any, inst: Any, value: Any, obj: Any, index: Any) -> None:
    BuiltinVariable(operator.setitem).call_function(tx, [obj, index, value], {})


@instruction("DELETE_SUBSCR", pops=2)
def DELETE_SUBSCR(tx: Any, inst: Any, obj: Any, index: Any) -> None:
    BuiltinVariable(operator.delitem).call_function(tx, [obj, index], {})
