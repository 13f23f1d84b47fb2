"""The three error worlds of symexec, kept apart.

* A user's own exception propagates unchanged (symexec never wraps it).
* ``Unsupported`` means the tracer met something it cannot model; the caller turns it into a
  graph break or runs the original function. It is public so that ``fullgraph=True`` users can
  catch it.
* ``InternalError`` is a broken invariant of symexec itself. It names the instruction and the
  user's ``file:line``; by default it falls back to eager with a warning.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .translator import InstructionTranslator


class SymexecError(RuntimeError):
    """Base class of every error symexec raises on its own behalf. A ``RuntimeError``, as
    torch.compile's own errors are: code that catches a compiler's failure (a backend that
    raised, ``fullgraph=True`` that could not be kept) as ``RuntimeError`` catches ours."""


class Unsupported(SymexecError):
    """The tracer cannot model this code: the frame breaks the graph there (or runs as the
    original function). Raised to the caller only under ``fullgraph=True``, with the reason,
    the user's ``file:line`` and, where there is one, a ``hint``; ``explain`` lists each as a
    ``BreakReason``."""

    def __init__(self, reason: str, *, hint: str = "", break_guards: Any = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.hint = hint
        # What the break itself relies on (``GuardSet -> None``), installed in the breaking
        # entry's guards: the trace that makes the entry stops before the instruction.
        self.break_guards = break_guards
        # Filled by the translator when the error passes through it: the user's location.
        self.filename: str | None = None
        self.lineno: int | None = None
        self.source_line: str = ""
        self.user_stack: list[tuple[str, int | None, str, str]] = []  # (file, line, function, code)
        # (instruction index, occurrence) in the compiled frame where it surfaced: where the
        # graph breaks when the frame is traced again.
        self.break_point: tuple[int, int] | None = None
        # Where the break is inside the functions that call at ``break_point`` inlined: the
        # (instruction, occurrence) of each frame in, down to the one whose instruction breaks
        # (a nested break: the graph goes on across the frames; empty where it breaks at the call).
        self.nested: list[tuple[int, int]] = []
        # While the error goes out through the frames: the points from the frame it surfaced in
        # (or the innermost that can go on after a break) outwards, and the inlined frame it
        # just left through a direct call (``InstructionTranslator._locate``).
        self.path: list[tuple[int, int]] | None = None
        self.via: Any = None
        # Set where the break is in a loop of the compiled frame (a break inside an inlined call
        # breaks at the call): the frame then runs as its code, as torch.compile's "graph break
        # in loop" skips it.
        self.in_loop = False

    def add_location(self, filename: str, lineno: int | None, source_line: str, function: str = "") -> None:
        """Called by each translator the error passes through, innermost first: the first
        call gives the location; all of them make the user stack (outermost first)."""
        if self.filename is None:
            self.filename, self.lineno, self.source_line = filename, lineno, source_line
        self.user_stack.insert(0, (filename, lineno, function, source_line.strip()))

    def __str__(self) -> str:
        text = self.reason
        if self.filename is not None:
            text += f"\n  at {self.filename}:{self.lineno}: {self.source_line.strip()}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class AttributeMissing(Unsupported):
    """The trace found that an attribute does not exist: ``getattr(obj, name, default)``
    takes the default, ``hasattr`` is False; anything else breaks, and CPython raises."""

    # The AttributeError CPython raises here, where its message is known exactly: then the
    # trace raises it too (an ``except AttributeError`` in the traced code handles it).
    error: BaseException | None = None
    # Whether the lookup guarded every fact its absence rests on (not in the instance dict,
    # nor on the class...): then no ``hasattr`` guard, which raises an AttributeError per call.
    guarded: bool = False

    @classmethod
    def exactly(cls, error: BaseException, guarded: bool = False) -> "AttributeMissing":
        missing = cls(f"AttributeError: {error}")
        missing.error = error
        missing.guarded = guarded
        return missing


class TracedException(SymexecError):
    """A user exception raised inside the traced code (``raise``, a failed lookup, an
    exhausted iterator): it unwinds to the handler that covers the raising instruction, in
    this frame or an inlining caller's. Reaching the compiled frame unhandled, it becomes a
    graph break there, and CPython raises it for real."""

    def __init__(self, exception: object) -> None:
        super().__init__(repr(exception))
        self.exception = exception  # an ExceptionVariable


class BackendCompilerFailed(SymexecError):
    """The backend raised while compiling a graph (torch.compile's exception of the same
    name). The backend is the user's choice, so this is raised to the caller, not hidden by a
    fallback: ``backend`` is the backend, ``__cause__`` what it raised."""

    def __init__(self, backend: object, error: BaseException) -> None:
        name = getattr(backend, "__name__", type(backend).__name__)
        super().__init__(f"backend {name!r} raised {type(error).__name__}: {error}")
        self.backend = backend
        self.inner_exception = error


class InternalError(SymexecError):
    """A bug in symexec: an invariant that should always hold did not."""


class SymexecWarning(RuntimeWarning):
    """The base of every warning symexec gives; given as itself where symexec ran a function
    eagerly because of its own bug (an internal error) or because it cannot run it compiled
    there: once per function, with the reason and the user's location (``SYMEXEC_LOGS=fallbacks``
    logs every fallback, this one included)."""


class CacheLimitWarning(SymexecWarning):
    """A compiled function reached ``config.cache_size_limit`` entries: from then on the calls
    that no entry accepts run the original function, uncompiled (once per function, with the last
    recompile's reason; torch.compile warns so too)."""


class ConfigWarning(SymexecWarning):
    """A setting symexec read from the environment is not one it knows (a misspelt
    ``SYMEXEC_LOGS`` artifact): it is ignored, and the rest applies."""


class StoppedAtBreak(BaseException):
    """Raised by an inlined frame that reached the nested break point it was handed: the trace
    stops there, its frames as they are (not an ``Exception``: no handler of the tracer on the way
    out catches it, none of them runs)."""

    def __init__(self, tx: "InstructionTranslator") -> None:
        super().__init__()
        self.tx = tx


@contextlib.contextmanager
def raised_in_the_trace(*kinds: type[BaseException]) -> Iterator[None]:
    """An operation run on real values (a list's items, constants) that raises one of ``kinds``
    raises it in the traced code, as CPython would there (same type, same message), where a
    ``try`` may catch it, instead of failing the trace."""
    try:
        yield
    except kinds as e:
        raise TracedException(e) from e
