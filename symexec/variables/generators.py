"""Generators of inlined generator functions (a generator expression's too), lazy as CPython
runs them.

Calling a generator function inlines nothing yet: its frame is a translator made ready and
suspended before its first instruction. Each item asked for (``next``, a loop, ``zip``,
``any``...) resumes that frame up to its next ``yield``, where it suspends again; so what the
generator does between two items (appending to a list, printing, calling a function that
counts) happens when eager does it, and a consumer that stops early leaves the rest unrun.
A ``StopIteration`` raised inside becomes ``RuntimeError`` (PEP 479), as CPython's does.
"""

from __future__ import annotations

import types
from typing import Any

from ..context import Frame
from ..context import TracerContext
from ..exc import TracedException, Unsupported
from .constant import ConstantVariable
from .dicts import ConstDictVariable
from .lists import IteratorVariable, TupleVariable
from .user_objects import ExceptionVariable


def _call(fn: Any, args: tuple, kwargs: dict) -> Any:
    """(generated code) A generator function called anew."""
    return fn(*args, **kwargs)


def stop_iteration_error() -> TracedException:
    """PEP 479: a ``StopIteration`` escaping a generator's frame, as CPython raises it instead
    (3.11 turns it at the frame's edge, ``GeneratorVariable``; 3.12+ in the frame's own handler,
    ``CALL_INTRINSIC_1 INTRINSIC_STOPITERATION_ERROR``)."""
    return TracedException(RuntimeError("generator raised StopIteration"))


class Suspended(BaseException):
    """A ``yield``: the generator's frame stops there (not an Exception: the translator's
    handlers, which turn errors into internal errors, let it through)."""


class GeneratorVariable(IteratorVariable):
    """A generator whose frame is a translator suspended at its last ``yield`` (``frame``)."""

    models = types.GeneratorType

    def __init__(self, frame: Frame, call: tuple[Any, list[Any], dict[str, Any]]) -> None:
        super().__init__([], types.GeneratorType)
        self.frame = frame
        self.call = call  # (the function, its arguments): how generated code makes it anew
        self.started = False
        self.exhausted = False
        self.running = False
        self.yields = 0
        self.item: Any = None
        frame.generator = self
        frame.trace.memos.generators.append(self)

    def pending(self) -> bool:
        return not self.exhausted

    def suspend(self, value: Any) -> None:
        """Called by the frame's ``yield``: hands ``value`` to the consumer and stops the frame."""
        limit = self.frame.config.max_generator_items
        if self.yields >= limit:
            raise Unsupported(f"a generator yielding more than {limit} items")
        self.yields += 1
        self.item = value
        raise Suspended

    def _pull(self, tx: TracerContext) -> bool:
        """Run the frame to its next ``yield``; False once it has returned."""
        if self.exhausted:
            return False
        if self.running:
            raise Unsupported("ValueError: generator already executing")
        frame = self.frame
        if self.started:
            frame.stack.append(ConstantVariable(None))  # what next() sends in: YIELD_VALUE's result
        self.started = True
        location = frame.trace.location
        self.running = True
        try:
            frame.run()
        except Suspended:
            self.items.append(self.item)
            self.item = None
            return True
        except TracedException as e:
            self.exhausted = True
            if isinstance(e.exception, ExceptionVariable) and issubclass(e.exception.python_type(), StopIteration):
                raise stop_iteration_error() from None
            raise
        finally:
            self.running = False
            frame.trace.location = location
        self.exhausted = True  # (it returned)
        return False

    def next_item(self) -> Any:
        if self.index >= len(self.items) and not self._pull(self.frame):
            return None
        return super().next_item()

    def unpack(self, tx: TracerContext) -> list[Any]:
        while self._pull(tx):
            pass
        return super().unpack(tx)

    def cleanup_runs_code(self) -> bool:
        """Whether closing it now would run its code: suspended inside a ``try`` or ``with``
        (CPython throws GeneratorExit in at the yield when the generator is collected)."""
        frame = self.frame
        return self.started and not self.exhausted and frame.program.user_handler(frame.ip - 1) is not None

    def subvalues(self) -> list[Any]:
        frame = self.frame
        return [*self.items[self.index:], *frame.stack, *frame.locals.values(), *frame.cells.values()]

    def call_method(self, tx: TracerContext, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if name in ("send", "throw", "close") or name not in ("__iter__", "__next__"):
            raise Unsupported(f"generator.{name}() of an inlined generator")
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg: Any) -> None:
        if not self.started:  # nothing of it has run: the same call makes the same generator
            fn, args, kwargs = self.call
            cg.call_const(_call, lambda: [cg.reconstruct(fn), cg.reconstruct(TupleVariable(list(args))),
                                          cg.reconstruct(ConstDictVariable(dict(kwargs)))])
            return
        if not self.exhausted:
            # Its frame, suspended part way, cannot be made again as a real generator.
            raise Unsupported("a generator not run to its end at a graph break or a return")
        super().reconstruct(cg)  # an exhausted generator (lists.REBUILDERS)

    def __repr__(self) -> str:
        state = "exhausted" if self.exhausted else f"{self.yields} yielded"
        return f"GeneratorVariable({self.frame.code.co_qualname}, {state})"
