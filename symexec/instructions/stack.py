"""Stack shuffling and instructions that do nothing while tracing."""

from __future__ import annotations

from typing import Any

from ..context import HandlerContext
from ..variables import NULL
from .registry import instruction


@instruction("NOP", "RESUME", "PRECALL", "COPY_FREE_VARS")
def nop(tx: HandlerContext, inst: Any) -> None:
    # PRECALL n is booked by dis as -n and CALL n as -1: here CALL pops everything.
    # COPY_FREE_VARS: the translator sets up free-variable cells before the first instruction.
    return None


@instruction("POP_TOP", pops=1)
def POP_TOP(tx: HandlerContext, inst: Any, value: Any) -> None:
    return None


@instruction("PUSH_NULL", pushes=1)
def PUSH_NULL(tx: HandlerContext, inst: Any) -> Any:
    return NULL


@instruction("COPY", pops=lambda n: n, pushes=lambda n: n + 1)
def COPY(tx: HandlerContext, inst: Any, *values: Any) -> tuple:
    return (*values, values[0])


@instruction("SWAP", pops=lambda n: n, pushes=lambda n: n)
def SWAP(tx: HandlerContext, inst: Any, *values: Any) -> tuple:
    return (values[-1], *values[1:-1], values[0])
