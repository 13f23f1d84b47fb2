"""Attributes and subscripts: thin handlers that hand the meaning to the value's tracker.

From 3.12 a method load is LOAD_ATTR with a bit in its argument (``(True, name)``), the
zero-argument ``super().name`` is LOAD_SUPER_ATTR, and ``x[a:b]`` has its own opcodes.
"""

from __future__ import annotations

import operator
from typing import Any

from ..context import HandlerContext
from ..variables import NULL, BuiltinVariable, ConstantVariable, SliceVariable
from ..variables.builtin_functions import read_attribute
from ..versions import method_pair
from .registry import instruction


def _is_method_load(arg: Any) -> bool:
    return isinstance(arg, tuple) and arg[0]


@instruction("LOAD_ATTR", pops=1, pushes=lambda arg: 1 + _is_method_load(arg))
def LOAD_ATTR(tx: HandlerContext, inst: Any, obj: Any) -> Any:
    if isinstance(inst.arg, str):  # 3.11
        return read_attribute(tx, obj, inst.arg)
    method, name = inst.arg
    value = read_attribute(tx, obj, name)
    # CPython pushes (method, self) or the attribute and a NULL; the NULL form is always valid.
    return method_pair(NULL, value) if method else value


@instruction("LOAD_METHOD", pops=1, pushes=2)
def LOAD_METHOD(tx: HandlerContext, inst: Any, obj: Any) -> tuple:
    return method_pair(NULL, read_attribute(tx, obj, inst.arg))


@instruction("LOAD_SUPER_ATTR", pops=3, pushes=lambda arg: 1 + arg[0])
def LOAD_SUPER_ATTR(tx: HandlerContext, inst: Any, global_super: Any, cls: Any, obj: Any) -> Any:
    # ``super().name`` (or ``super(C, self).name``): CPython calls the global ``super`` with
    # the class and self, or with none for the zero-argument form, which finds the same two.
    method, two_args, name = inst.arg
    args = [cls, obj] if two_args or (isinstance(global_super, BuiltinVariable) and global_super.fn is super) else []
    value = tx.call(global_super, args, {}).var_getattr(tx, name)
    return method_pair(NULL, value) if method else value


@instruction("STORE_ATTR", pops=2)
def STORE_ATTR(tx: HandlerContext, inst: Any, value: Any, obj: Any) -> None:
    obj.store_attr(tx, inst.arg, value)


@instruction("DELETE_ATTR", pops=1)
def DELETE_ATTR(tx: HandlerContext, inst: Any, obj: Any) -> None:
    obj.store_attr(tx, inst.arg, None)


@instruction("BINARY_SUBSCR", pops=2, pushes=1)
def BINARY_SUBSCR(tx: HandlerContext, inst: Any, obj: Any, index: Any) -> Any:
    return BuiltinVariable(operator.getitem).call_function(tx, [obj, index], {})


@instruction("BINARY_SLICE", pops=3, pushes=1)
def BINARY_SLICE(tx: HandlerContext, inst: Any, obj: Any, start: Any, stop: Any) -> Any:
    return BuiltinVariable(operator.getitem).call_function(tx, [obj, SliceVariable(start, stop, ConstantVariable(None))], {})


@instruction("STORE_SLICE", pops=4)
def STORE_SLICE(tx: HandlerContext, inst: Any, value: Any, obj: Any, start: Any, stop: Any) -> None:
    BuiltinVariable(operator.setitem).call_function(tx, [obj, SliceVariable(start, stop, ConstantVariable(None)), value], {})


@instruction("STORE_SUBSCR", pops=3)
def STORE_SUBSCR(tx: HandlerContext, inst: Any, value: Any, obj: Any, index: Any) -> None:
    BuiltinVariable(operator.setitem).call_function(tx, [obj, index, value], {})


@instruction("DELETE_SUBSCR", pops=2)
def DELETE_SUBSCR(tx: HandlerContext, inst: Any, obj: Any, index: Any) -> None:
    BuiltinVariable(operator.delitem).call_function(tx, [obj, index], {})
