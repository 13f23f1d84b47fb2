"""The dispatch table: one handler per opcode name, each declaring its stack effect.

A handler is registered with ``@instruction("BUILD_TUPLE", pops=lambda arg: arg, pushes=1)``.
The translator pops ``pops`` values (deepest first), passes them to the handler after the
instruction, and pushes what it returns: nothing for None, each item of a Python tuple, or the
one tracker. The declared effect is data that a test checks against ``dis.stack_effect``;
``pushes`` counts the fall-through path (a jump may push less, as FOR_ITER does at the end).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Union

Count = Union[int, Callable[[Any], int]]


@dataclass(frozen=True)
class InstructionSpec:
    name: str
    handler: Callable[..., Any]
    pops: Count
    pushes: Count

    def effect(self, arg: Any) -> tuple[int, int]:
        pops = self.pops(arg) if callable(self.pops) else self.pops
        pushes = self.pushes(arg) if callable(self.pushes) else self.pushes
        return pops, pushes


DISPATCH: dict[str, InstructionSpec] = {}


def instruction(*names: str, pops: Count = 0, pushes: Count = 0) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as the handler of each opcode name."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for name in names:
            if name in DISPATCH:
                raise RuntimeError(f"two handlers for {name}")
            DISPATCH[name] = InstructionSpec(name, fn, pops, pushes)
        return fn

    return register


# Opcodes of a supported version with no handler, and why a function symexec traces never
# contains them (tests/instructions/test_stack_effects.py walks ``dis.opmap`` against this and
# DISPATCH). Specialised and instrumented forms are not listed: ``co_code`` shows the base form.
_COROUTINES = "only in coroutine and async generator bodies, which symexec never traces (they run as CPython runs them)"
_SCOPES = "only in module and class bodies, which are not functions symexec compiles (a class statement breaks the graph)"
NEVER_TRACED: dict[str, str] = {
    "CACHE": "inline cache entries after an instruction, not instructions (bytecode drops them)",
    "EXTENDED_ARG": "a prefix that widens the next argument (bytecode folds it in)",
    "RESERVED": "reserved by CPython, never emitted",
    "INTERPRETER_EXIT": "only in the interpreter's own entry code, never in a code object of Python source",
    "ENTER_EXECUTOR": "3.13: written over a JUMP_BACKWARD by the tier-2 optimiser; co_code shows the original",
    "EXIT_INIT_CHECK": "3.13: part of the specialised call of a class's __init__, never emitted by the compiler",
    "PRINT_EXPR": "3.11: only in code compiled for the interactive prompt",
    "IMPORT_STAR": "3.11: `from m import *` is a SyntaxError inside a function",
    "LOAD_NAME": _SCOPES, "STORE_NAME": _SCOPES, "DELETE_NAME": _SCOPES, "SETUP_ANNOTATIONS": _SCOPES,
    "LOAD_CLASSDEREF": _SCOPES, "LOAD_LOCALS": _SCOPES + "; 3.12 annotation scopes",
    "LOAD_FROM_DICT_OR_GLOBALS": _SCOPES + "; 3.12 annotation scopes",
    "LOAD_FROM_DICT_OR_DEREF": _SCOPES + "; 3.12 annotation scopes",
    "BEFORE_ASYNC_WITH": _COROUTINES, "END_ASYNC_FOR": _COROUTINES, "GET_AITER": _COROUTINES,
    "GET_ANEXT": _COROUTINES, "GET_AWAITABLE": _COROUTINES, "ASYNC_GEN_WRAP": _COROUTINES,
}
