"""The instruction families. Importing this package fills the dispatch table."""

from . import arithmetic, attributes, calls, containers, intrinsics, jumps, loads_stores, matching, stack  # noqa: F401 - each registers its handlers
from .registry import DISPATCH, NEVER_TRACED, InstructionSpec, instruction

__all__ = ["DISPATCH", "NEVER_TRACED", "InstructionSpec", "instruction"]
