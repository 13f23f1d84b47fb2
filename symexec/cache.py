"""Cache entries and the per-function cache: newest first, a size limit, recompile reasons."""

from __future__ import annotations

import itertools
import types
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

import torch.fx

from .dynamic import FrameState
from .codegen import MISS
from .guards import Guard, GuardKind


_serials = itertools.count()


@dataclass
class CacheEntry:
    """One trace of a function: when it applies (guards) and what runs (replacement)."""

    guard: Callable[..., bool]  # one generated function, same signature as the user's
    replacement: Callable[..., Any]  # the generated function (or the original, for a fallback)
    guards: list[Guard]
    first_failure: Callable[..., int]
    graph: torch.fx.GraphModule | None = None
    compiled_graph: Callable[..., Any] | None = None
    fallback_reason: str | None = None
    break_reason: Any = None  # the Unsupported that ended this graph in a break, if one did
    replacement_code: types.CodeType | None = None
    # The replacement as Python-like text (rendering.py), rendered on first read: ``readable_code``
    render_readable: Callable[[], str] | None = None
    _readable: str = field(default="", init=False, repr=False)
    trace_seconds: float = 0.0
    compile_seconds: float = 0.0
    serial: int = field(default_factory=lambda: next(_serials))  # creation order, across functions
    # The one-call form: the guards spliced in front of the replacement, returning MISS when
    # they fail (codegen.guarded_function); None where they could not be, or for a fallback.
    merged: Callable[..., Any] | None = None

    @property
    def readable_code(self) -> str:
        if self.render_readable is not None:
            self._readable = self.render_readable()
            self.render_readable = None
        return self._readable

    def failed_guard(self, args: tuple, kwargs: dict) -> Guard | None:
        try:
            index = self.first_failure(*args, **kwargs)
        except TypeError:  # (its guards are a function of the parameters as traced)
            return _NOT_FITTING
        return self.guards[index] if 0 <= index < len(self.guards) else None


# What a call that cannot be bound to the parameters an entry was traced with fails (the
# function's __code__, __defaults__ or __kwdefaults__ were changed since).
_NOT_FITTING = Guard(GuardKind.ID_MATCH, "the call fits the parameters as traced", "True")


@dataclass(eq=False)  # hashed by identity: caches live in a WeakSet
class FunctionCache:
    """The entries of one compiled function. ``hot`` is the hit path's view."""

    entries: list[CacheEntry] = field(default_factory=list)
    hot: list[Callable[..., Any]] = field(default_factory=list)  # entry functions, newest first
    recompile_reasons: list[str] = field(default_factory=list)
    limit_warned: bool = False
    frame_state: FrameState = field(default_factory=FrameState)  # what automatic dynamic has seen

    def add(self, entry: CacheEntry) -> None:
        self.entries.insert(0, entry)
        self.hot.insert(0, self._entry_function(entry))

    def _entry_function(self, entry: CacheEntry) -> Callable[..., Any]:
        """What the hot path calls for ``entry``: its one-call form, built with it, or where
        the guards could not be spliced, the guard, then the replacement (MISS if it fails)."""
        if entry.merged is not None:
            return entry.merged
        guard, replacement = entry.guard, entry.replacement

        def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                ok = guard(*args, **kwargs)
            except TypeError:  # the call does not fit the parameters as traced (they may have
                return MISS  # changed since): the miss binds it to the function's own
            return replacement(*args, **kwargs) if ok else MISS

        return guarded

    def failure_reasons(self, args: tuple, kwargs: dict) -> list[str]:
        """For each entry, newest first, the guard that rejected this call."""
        reasons = []
        for i, entry in enumerate(self.entries):
            guard = entry.failed_guard(args, kwargs)
            reasons.append(f"{i}: {guard.text if guard is not None else '(the guards pass now)'}")
        return reasons

    def empty(self) -> bool:
        return not (self.entries or self.hot or self.recompile_reasons or self.limit_warned) and self.frame_state.empty()

    def clear(self) -> None:
        # In place: the wrapper's fast path holds a reference to ``hot``.
        self.entries.clear()
        self.hot.clear()
        self.recompile_reasons.clear()
        self.limit_warned = False
        self.frame_state.clear()


ALL_CACHES: "weakref.WeakSet[FunctionCache]" = weakref.WeakSet()


def reset() -> None:
    """Empty every cache of every compiled function (as ``torch._dynamo.reset``) and free what
    their entries held: the next call of each traces again. Compiled functions stay usable.
    """
    for cache in list(ALL_CACHES):
        if not cache.empty():  # (most are: a test suite resets hundreds per test)
            cache.clear()
