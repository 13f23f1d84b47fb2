"""Fault injection, for tests: make one of symexec's own steps fail on purpose.

``with faults.inject("codegen"): fn(x)`` makes the ``faults.hit("codegen")`` hook raise on its
first hit inside the block (``after=N``: on hit N+1, the first N pass). The hook points:

* ``"handler"``: every instruction the translator dispatches, before its handler runs;
* ``"tracker"``: every tracker a handler pushes on the stack;
* ``"codegen"``: every code object assembled (``PyCodegen.assemble``);
* ``"guards"``: every guard function compiled (``compile_guards``).

Each injection raises once. With no injection active a hook is one call and one module-level
``None`` check.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator

POINTS = ("handler", "tracker", "codegen", "guards")


class _Injection:
    def __init__(self, point: str, after: int, exc: type[BaseException] | BaseException) -> None:
        self.point = point
        self.after = after
        self.exc = exc
        self.hits = 0  # how many times the point was reached while the injection was active
        self.fired = False
        self.thread = threading.get_ident()  # only the thread that injected sees the fault


_active: _Injection | None = None


def hit(point: str) -> None:
    """The hook, called by symexec at each fault point."""
    if _active is None:
        return
    _fire(point)


def _fire(point: str) -> None:
    injection = _active
    if injection is None or injection.point != point or injection.fired or injection.thread != threading.get_ident():
        return
    injection.hits += 1
    if injection.hits <= injection.after:
        return
    injection.fired = True
    exc = injection.exc
    if isinstance(exc, type):
        exc = exc(f"symexec fault injected at {point!r} (hit {injection.hits})")
    raise exc


@contextlib.contextmanager
def inject(point: str, after: int = 0, exc: type[BaseException] | BaseException = RuntimeError) -> Iterator[_Injection]:
    """Make ``hit(point)`` raise ``exc`` once, on its ``after + 1``-th hit in this block.

    Test-only: one injection at a time. The yielded object tells how many hits there were
    (``.hits``) and whether the fault was raised (``.fired``)."""
    global _active
    if point not in POINTS:
        raise ValueError(f"unknown fault point {point!r}; known: {', '.join(POINTS)}")
    if after < 0:
        raise ValueError(f"after must be >= 0, not {after}")
    if _active is not None:
        raise RuntimeError("faults.inject() blocks do not nest")
    injection = _active = _Injection(point, after, exc)
    try:
        yield injection
    finally:
        _active = None
