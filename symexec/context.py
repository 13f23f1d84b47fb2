"""What a tracker and what an instruction handler may use of the running translator.

Every tracker method and every handler takes ``tx``, the translator of the frame being traced.
These Protocols are its whole surface, the way torch.fx's ``Interpreter`` docstring lists what
a subclass may override; ``tests/variables/test_trace_context.py`` checks that no code reads
anything of ``tx`` they do not declare.

``TracerContext`` (trackers, ``variables/``):
    ``trace``: the trace's state by part (``trace.Trace``): ``graph`` (the ``OutputGraph``),
    ``guards``, ``side_effects``, ``memos``, ``torch`` (grad mode, autocast entered),
    ``translators``, ``location``.
    ``guards``: the ``GuardSet`` (``trace.guards``, kept at hand: most trackers guard).
    ``config``: the ``Config`` of the compiled function.
    ``code``, ``cells``, ``get_local``: the frame's code, its cell and free variables, a local
        (zero-argument ``super()`` reads ``__class__`` and the first argument).
    ``f_globals``, ``globals_source``: the frame's globals and how generated code reaches them
        (None: the compiled function's own), for what reads the calling frame's globals
        (``collections.namedtuple``'s ``__module__``).
    ``wrap(value, source)``: a real value as a tracker, with its guards (the builder).
    ``inline_call(fn, args, kwargs)``: run a user function's code in a child frame.
    ``calling``: the callable of the CALL being run (how the translator tells the call's own
        inlining from a tracker's, for nested breaks).

``Frame`` (a frame of the trace, as a generator resumes it or a tracker walks the live values of
every frame): a ``TracerContext`` with its ``stack``, ``locals``, instruction pointer ``ip``,
``program``, ``done``, the ``generator`` it is the frame of, ``run`` and ``release``.

``HandlerContext`` (instruction handlers, ``instructions/``): a ``Frame`` with the operations
on it that the bytecode names: ``peek``, ``jump``, locals by name (``has_local``, ``set_local``,
``delete_local``), globals (``load_global``, ``store_global``), ``call``, ``finish``, ``yield_value``, the pending ``kw_names`` (3.11/3.12)
and ``exc_info``, the exception being handled.

This module imports nothing of symexec at run time: every layer may name these types.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # pragma: no cover - typing only
    from bytecode import Label

    from .config import Config
    from .exc import TracedException
    from .guards import GuardSet
    from .source import Source
    from .trace import Trace
    from .translator import Program
    from .variables.base import VariableTracker


class TracerContext(Protocol):
    """What trackers use of the running translator (see the module's docstring)."""

    trace: "Trace"
    guards: "GuardSet"
    config: "Config"
    code: types.CodeType
    cells: dict[str, Any]  # name -> CellVariable
    f_globals: dict[str, Any]
    globals_source: "Source | None"
    # The callable of the CALL being run: a tracker that makes that call by inlining a function
    # whose result is the call's (a module's forward) hands it on (a nested break's direct call).
    calling: "VariableTracker | None"

    def wrap(self, value: Any, source: "Source | None") -> "VariableTracker": ...
    def inline_call(self, fn: Any, args: list["VariableTracker"], kwargs: dict[str, "VariableTracker"]) -> "VariableTracker": ...
    def get_local(self, name: str) -> "VariableTracker": ...


class Frame(TracerContext, Protocol):
    """One frame of the trace: what a generator needs to resume it, and what a tracker reads
    of every frame's live values (``trace.translators``)."""

    stack: list["VariableTracker"]
    locals: dict[str, "VariableTracker"]
    ip: int
    done: bool
    program: "Program"  # the instructions, their labels and exception handlers
    generator: Any  # the GeneratorVariable whose frame this is, or None
    return_value: "VariableTracker | None"  # what it returned, once done
    parent: "Frame | None"  # the frame that inlined this one (None: the compiled function's own)

    def run(self) -> None: ...
    def location(self) -> tuple[str, int | None, str]: ...  # (file, line being run, function)
    def raise_exception(self, error: "TracedException") -> None: ...
    def load_global(self, name: str) -> "VariableTracker": ...
    def release(self) -> None: ...


class HandlerContext(Frame, Protocol):
    """What instruction handlers use of the translator (see the module's docstring)."""

    kw_names: tuple[str, ...]
    exc_info: "VariableTracker | None"

    def peek(self, depth: int) -> "VariableTracker": ...
    def jump(self, label: "Label") -> None: ...
    def has_local(self, name: str) -> bool: ...
    def set_local(self, name: str, value: "VariableTracker") -> None: ...
    def delete_local(self, name: str) -> None: ...
    def store_global(self, name: str, value: "VariableTracker") -> None: ...
    def call(self, fn: "VariableTracker", args: list["VariableTracker"], kwargs: dict[str, "VariableTracker"]) -> "VariableTracker": ...
    def finish(self, value: "VariableTracker") -> None: ...
    def yield_value(self, value: "VariableTracker") -> None: ...
    def handled_here_or_above(self, index: int) -> bool: ...
