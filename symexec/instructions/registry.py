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
