"""Fault injection for symexec's tests: make one of symexec's own steps fail on purpose.

``with faults.inject("codegen"): fn(x)`` makes the ``symexec.faults.hit("codegen")`` hook raise
on its first hit inside the block (``after=N``: on hit N+1, the first N pass). The points are
``symexec.faults.POINTS``. Each injection raises once. (The hooks ship with symexec; this
injector does not.)
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from symexec import faults as _hooks

POINTS = _hooks.POINTS
hit = _hooks.hit


def active() -> _hooks.Injection | None:
    """The injection in force, or None."""
    return _hooks.active


@contextlib.contextmanager
def inject(point: str, after: int = 0,
           exc: type[BaseException] | BaseException = RuntimeError) -> Iterator[_hooks.Injection]:
    """Make ``hit(point)`` raise ``exc`` once, on its ``after + 1``-th hit in this block.

    One injection at a time. The yielded object tells how many hits there were (``.hits``) and
    whether the fault was raised (``.fired``)."""
    if point not in POINTS:
        raise ValueError(f"unknown fault point {point!r}; known: {', '.join(POINTS)}")
    if after < 0:
        raise ValueError(f"after must be >= 0, not {after}")
    if _hooks.active is not None:
        raise RuntimeError("faults.inject() blocks do not nest")
    injection = _hooks.active = _hooks.Injection(point, after, exc)
    try:
        yield injection
    finally:
        _hooks.active = None
