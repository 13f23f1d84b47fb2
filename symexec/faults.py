"""Fault points: where one of symexec's own steps can be made to fail on purpose, by its tests.

The hook points, each a ``hit(point)`` call in the compiler:

* ``"handler"``: every instruction the translator dispatches, before its handler runs;
* ``"tracker"``: every tracker a handler pushes on the stack;
* ``"codegen"``: every code object assembled (``PyCodegen.assemble``);
* ``"guards"``: every guard function compiled (``compile_guards``).

With nothing injected a hook is one call and one module-level ``None`` check. The injector,
``inject(point, after, exc)``, is test code and lives with the tests (``tests/faults.py``): it
sets ``active`` to an ``Injection`` for the length of a ``with`` block.
"""

from __future__ import annotations

import threading

POINTS = ("handler", "tracker", "codegen", "guards")


class Injection:
    """One fault: raise ``exc`` at ``point`` on its ``after + 1``-th hit, once, in the thread
    that injected it. ``hits`` and ``fired`` say what happened."""

    def __init__(self, point: str, after: int, exc: type[BaseException] | BaseException) -> None:
        self.point = point
        self.after = after
        self.exc = exc
        self.hits = 0  # how many times the point was reached while the injection was active
        self.fired = False
        self.thread = threading.get_ident()  # only the thread that injected sees the fault


active: Injection | None = None


def hit(point: str) -> None:
    """The hook, called by symexec at each fault point."""
    if active is None:
        return
    _fire(point)


def _fire(point: str) -> None:
    injection = active
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
