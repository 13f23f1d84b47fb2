"""CALL_INTRINSIC_1 and CALL_INTRINSIC_2 (3.12+): small operations that were opcodes before
(unary ``+``, ``list`` to ``tuple``) or that only class bodies, ``except*``, ``import *`` and
generic types need. The ones a compiled function can meet are modelled; the others break."""

from __future__ import annotations

import operator
from typing import Any

from ..context import HandlerContext
from ..exc import Unsupported
from ..variables import BuiltinVariable, TupleVariable
from ..variables.generators import stop_iteration_error
from .registry import instruction


def _stop_iteration_error(tx: HandlerContext, exception: Any) -> Any:
    # A generator's body is wrapped in a handler that turns a StopIteration escaping it into
    # RuntimeError (PEP 479) and lets any other exception through.
    if issubclass(exception.python_type(), StopIteration):
        raise stop_iteration_error()
    if issubclass(exception.python_type(), StopAsyncIteration):
        raise Unsupported("an async generator raising StopAsyncIteration")
    return exception


_INTRINSICS_1 = {
    "INTRINSIC_UNARY_POSITIVE": lambda tx, value: BuiltinVariable(operator.pos).call_function(tx, [value], {}),
    "INTRINSIC_LIST_TO_TUPLE": lambda tx, value: TupleVariable(value.unpack(tx)),
    "INTRINSIC_STOPITERATION_ERROR": _stop_iteration_error,
}


@instruction("CALL_INTRINSIC_1", pops=1, pushes=1)
def CALL_INTRINSIC_1(tx: HandlerContext, inst: Any, value: Any) -> Any:
    intrinsic = _INTRINSICS_1.get(inst.arg.name)
    if intrinsic is None:
        raise Unsupported(f"the intrinsic {inst.arg.name} (the graph breaks; CPython runs it)")
    return intrinsic(tx, value)


@instruction("CALL_INTRINSIC_2", pops=2, pushes=1)
def CALL_INTRINSIC_2(tx: HandlerContext, inst: Any, first: Any, second: Any) -> Any:
    raise Unsupported(f"the intrinsic {inst.arg.name} (the graph breaks; CPython runs it)")
