"""Arithmetic and comparison: each opcode is one call of the matching operator builtin."""

from __future__ import annotations

import operator
from typing import Any

from bytecode import BinaryOp, Compare

from ..context import HandlerContext
from ..variables import BuiltinVariable, ConstantVariable
from .jumps import as_bool
from .registry import instruction

BINARY_OPS = {
    BinaryOp.ADD: operator.add, BinaryOp.SUBTRACT: operator.sub, BinaryOp.MULTIPLY: operator.mul,
    BinaryOp.TRUE_DIVIDE: operator.truediv, BinaryOp.FLOOR_DIVIDE: operator.floordiv,
    BinaryOp.REMAINDER: operator.mod, BinaryOp.POWER: operator.pow, BinaryOp.MATRIX_MULTIPLY: operator.matmul,
    BinaryOp.LSHIFT: operator.lshift, BinaryOp.RSHIFT: operator.rshift, BinaryOp.AND: operator.and_,
    BinaryOp.OR: operator.or_, BinaryOp.XOR: operator.xor,
    BinaryOp.INPLACE_ADD: operator.iadd, BinaryOp.INPLACE_SUBTRACT: operator.isub,
    BinaryOp.INPLACE_MULTIPLY: operator.imul, BinaryOp.INPLACE_TRUE_DIVIDE: operator.itruediv,
    BinaryOp.INPLACE_FLOOR_DIVIDE: operator.ifloordiv, BinaryOp.INPLACE_REMAINDER: operator.imod,
    BinaryOp.INPLACE_POWER: operator.ipow, BinaryOp.INPLACE_MATRIX_MULTIPLY: operator.imatmul,
    BinaryOp.INPLACE_LSHIFT: operator.ilshift, BinaryOp.INPLACE_RSHIFT: operator.irshift,
    BinaryOp.INPLACE_AND: operator.iand, BinaryOp.INPLACE_OR: operator.ior, BinaryOp.INPLACE_XOR: operator.ixor,
}
_COMPARISONS = {"LT": operator.lt, "LE": operator.le, "EQ": operator.eq, "NE": operator.ne, "GT": operator.gt, "GE": operator.ge}
# 3.13's LT_CAST...: the comparison, then bool() of the result.
COMPARE_OPS = {c: _COMPARISONS[c.name.removesuffix("_CAST")] for c in Compare}
UNARY_OPS = {
    "UNARY_NEGATIVE": operator.neg, "UNARY_POSITIVE": operator.pos,
    "UNARY_INVERT": operator.invert, "UNARY_NOT": operator.not_,
}


def _call(fn: Any, tx: HandlerContext, *args: Any) -> Any:
    return BuiltinVariable(fn).call_function(tx, list(args), {})


@instruction("BINARY_OP", pops=2, pushes=1)
def BINARY_OP(tx: HandlerContext, inst: Any, a: Any, b: Any) -> Any:
    return _call(BINARY_OPS[inst.arg], tx, a, b)


@instruction("COMPARE_OP", pops=2, pushes=1)
def COMPARE_OP(tx: HandlerContext, inst: Any, a: Any, b: Any) -> Any:
    result = _call(COMPARE_OPS[inst.arg], tx, a, b)
    return as_bool(tx, result) if inst.arg.name.endswith("_CAST") else result


@instruction(*UNARY_OPS, pops=1, pushes=1)
def UNARY(tx: HandlerContext, inst: Any, a: Any) -> Any:
    return _call(UNARY_OPS[inst.name], tx, a)


@instruction("IS_OP", pops=2, pushes=1)
def IS_OP(tx: HandlerContext, inst: Any, a: Any, b: Any) -> Any:
    return _call(operator.is_not if inst.arg else operator.is_, tx, a, b)


@instruction("CONTAINS_OP", pops=2, pushes=1)
def CONTAINS_OP(tx: HandlerContext, inst: Any, item: Any, container: Any) -> Any:
    found = _call(operator.contains, tx, container, item)
    return ConstantVariable(not found.as_python_constant()) if inst.arg else found
