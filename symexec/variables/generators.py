"""Generators of inlined generator functions (a generator expression's too), run as CPython
runs them: a real generator object's protocol over a suspended frame of the trace.

Calling a generator function inlines nothing yet: its frame is a translator made ready and
suspended before its first instruction. Each item asked for (``next``, a loop, ``zip``,
``any``...) resumes that frame up to its next ``yield``, where it suspends again; so what the
generator does between two items (appending to a list, printing, calling a function that
counts) happens when eager does it, and a consumer that stops early leaves the rest unrun.

``send`` pushes the value sent as the ``yield``'s result (a generator not started yet takes
only None); ``throw`` raises the exception at the ``yield``, where the frame's own ``try``
blocks handle it; ``close`` throws ``GeneratorExit`` and wants the frame to end. A generator
suspended in a ``yield from`` hands all three to the generator it delegates to, as CPython's
``_gen_throw`` does. What the frame returns is the ``StopIteration``'s value (and ``yield
from``'s result). A ``StopIteration`` raised inside becomes ``RuntimeError`` (PEP 479).

Not modelled (the graph breaks): a generator suspended part way that leaves the trace (returned,
stored, alive at a graph break: its frame cannot be made again as a real generator; one not
started is made anew by calling the function again), ``gi_frame``/``gi_code``/``gi_yieldfrom``,
the three-argument ``throw`` with a traceback (or on 3.12+, where it warns), and throwing into a ``yield from`` over an iterator
with its own ``throw``.
"""

from __future__ import annotations

import types
from typing import Any, Callable

from ..context import Frame
from ..context import TracerContext
from ..exc import TracedException, Unsupported
from ..versions import V, attr_name
from .constant import ConstantVariable
from .dicts import ConstDictVariable
from .lists import IteratorVariable, TupleVariable
from .user_objects import ExceptionVariable

_NONE = ConstantVariable(None)


def _call(fn: Any, args: tuple, kwargs: dict) -> Any:
    """(generated code) A generator function called anew."""
    return fn(*args, **kwargs)


def stop_iteration_error() -> TracedException:
    """PEP 479: a ``StopIteration`` escaping a generator's frame, as CPython raises it instead
    (3.11 turns it at the frame's edge, ``GeneratorVariable``; 3.12+ in the frame's own handler,
    ``CALL_INTRINSIC_1 INTRINSIC_STOPITERATION_ERROR``)."""
    return TracedException(RuntimeError("generator raised StopIteration"))


def stop_iteration(value: Any) -> TracedException:
    """The ``StopIteration`` a generator that returned ``value`` raises (no argument for None)."""
    return TracedException(ExceptionVariable(StopIteration, [] if is_none(value) else [value]))


def is_none(value: Any) -> bool:
    return value is None or (isinstance(value, ConstantVariable) and value.as_python_constant() is None)


def _raises(error: TracedException, cls: type) -> bool:
    exception = error.exception
    kind = exception.python_type() if isinstance(exception, ExceptionVariable) else type(exception)
    return issubclass(kind, cls)


def _thrown(tx: TracerContext, args: list[Any]) -> ExceptionVariable:
    """The exception ``throw(*args)`` raises: ``throw(exception)``, or the old ``throw(type,
    value=None, traceback=None)`` (contextlib's ``__exit__`` on 3.11) with a value of that type."""
    if len(args) == 1:
        return ExceptionVariable.of(tx, args[0])
    if V.throw_signature_deprecated:
        raise Unsupported("generator.throw(type, value, traceback) (it warns: DeprecationWarning)")
    kind, value = args[0], args[1]
    if len(args) == 3 and not is_none(args[2]):
        raise Unsupported("generator.throw() with a traceback")
    exception = ExceptionVariable.of(tx, kind)
    if is_none(value):
        return exception
    if isinstance(value, ExceptionVariable) and not isinstance(kind, ExceptionVariable) \
            and issubclass(value.python_type(), exception.python_type()):
        return value
    raise Unsupported("generator.throw(type, value) with a value that is not an instance of the type")


class Suspended(BaseException):
    """A ``yield``: the generator's frame stops there (not an Exception: the translator's
    handlers, which turn errors into internal errors, let it through)."""


class GeneratorVariable(IteratorVariable):
    """A generator whose frame is a translator suspended at its last ``yield`` (``frame``).

    ``send``, ``throw`` and ``close`` resume the frame (``_resume``); ``send`` and ``throw`` end
    in one of two ways: ``(True, item)`` at a ``yield``, or ``(False, value)`` once the frame
    has returned ``value``. An exception the frame lets out leaves it exhausted and goes on to
    the consumer (a ``TracedException``). Not modelled: ``gi_frame``, ``gi_code``,
    ``gi_yieldfrom`` (reading them breaks the graph)."""

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
        self.returned: Any = _NONE  # what the frame returned, when the last item asked for was its end
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

    # -- resuming the frame ------------------------------------------------------------------------
    def _resume(self, enter: Callable[[], None]) -> tuple[bool, Any]:
        """Run the frame from where it stands, after ``enter`` (which sets up what the ``yield``
        gives back, or raises there), to its next ``yield`` or its end."""
        if self.running:
            raise Unsupported("ValueError: generator already executing")
        frame = self.frame
        location = frame.trace.location
        self.running = True
        try:
            enter()
            self.started = True
            frame.run()
        except Suspended:
            item, self.item = self.item, None
            return True, item
        except TracedException as e:
            self.exhausted = True
            if _raises(e, StopIteration):
                raise stop_iteration_error() from None
            raise
        finally:
            self.running = False
            frame.trace.location = location
        self.exhausted = True
        value = frame.return_value
        frame.return_value = None  # (the first StopIteration only carries it)
        return False, value if value is not None else _NONE

    def send(self, value: Any) -> tuple[bool, Any]:
        """``send(value)`` (``next`` sends None)."""
        if self.exhausted:
            return False, _NONE
        if not self.started:
            if not is_none(value):
                raise TracedException(TypeError("can't send non-None value to a just-started generator"))
            return self._resume(lambda: None)
        return self._resume(lambda: self.frame.stack.append(value))

    def throw(self, error: TracedException) -> tuple[bool, Any]:
        """``throw(exception)``: raised at the ``yield`` the frame stands at."""
        if self.exhausted:
            raise error
        if not self.started:
            self.exhausted = True
            if V.unstarted_throw_is_pep479 and _raises(error, StopIteration):
                raise stop_iteration_error()
            raise error
        if self.running:
            raise Unsupported("ValueError: generator already executing")
        delegate = self.delegate()
        if delegate is not None:
            outcome = self._throw_into(delegate, error)
            if outcome is not None:
                return outcome
        return self._resume(lambda: self._raise_at_yield(error))

    def _raise_at_yield(self, error: TracedException) -> None:
        self.frame.stack.append(_NONE)  # (CPython pushes the value sent, None, before it raises)
        self.frame.raise_exception(error)

    def _throw_into(self, delegate: Any, error: TracedException) -> tuple[bool, Any] | None:
        """``throw`` while suspended in a ``yield from``: the generator it delegates to gets the
        exception first (or is closed, for GeneratorExit). None: raise ``error`` here; otherwise
        what the ``yield from`` gave (its next item, or this frame's next once it ended)."""
        if isinstance(delegate, GeneratorVariable):
            try:
                if _raises(error, GeneratorExit):
                    delegate.close()
                    return None
                yielded, value = delegate.throw(error)
            except TracedException as e:  # raised at the yield instead (3.12+ through CLEANUP_THROW)
                return self._resume(lambda: self._raise_at_yield(e))
            if yielded:
                return True, value
            return self._resume(lambda: self._finish_yield_from(value))
        kind = getattr(delegate, "cls", None)
        if kind is None or hasattr(kind, "throw") or (_raises(error, GeneratorExit) and hasattr(kind, "close")):
            raise Unsupported("throwing into a `yield from` over an iterator that is not an inlined generator")
        return None  # (a builtin iterator has no throw: CPython raises it at the yield)

    def _finish_yield_from(self, value: Any) -> None:
        """The ``yield from`` this frame is suspended in ends with ``value``: SEND's exit."""
        frame = self.frame
        send = frame.program.instructions[frame.ip - 2]
        receiver = frame.stack.pop()
        frame.ip = frame.program.labels[send.arg]
        frame.stack.extend((receiver, value) if V.send_keeps_receiver else (value,))

    def close(self) -> Any:
        """``close()``: GeneratorExit thrown in at the ``yield``; the frame must end."""
        if not self.started or self.exhausted:
            self.exhausted = True
            return _NONE
        try:
            yielded, value = self.throw(TracedException(ExceptionVariable(GeneratorExit, [])))
        except TracedException as e:
            if _raises(e, GeneratorExit):
                return _NONE
            raise
        if yielded:
            raise TracedException(RuntimeError("generator ignored GeneratorExit"))
        return value if V.close_returns_value else _NONE

    def delegate(self) -> Any:
        """The iterator of the ``yield from`` the frame is suspended in, or None."""
        frame = self.frame
        if not self.started or self.exhausted or frame.ip < 2:
            return None
        instructions = frame.program.instructions
        if instructions[frame.ip - 1].name == "YIELD_VALUE" and instructions[frame.ip - 2].name == "SEND":
            return frame.stack[-1]
        return None

    # -- the iterator protocol ---------------------------------------------------------------------
    def next_item(self) -> Any:
        self.returned = _NONE
        if self.index < len(self.items):
            return super().next_item()
        yielded, item = self.send(_NONE)
        if not yielded:
            self.returned = item  # (for the StopIteration of a ``next`` that asked)
            return None
        self.items.append(item)
        return super().next_item()

    def stop_error(self) -> TracedException:
        return stop_iteration(self.returned)

    def unpack(self, tx: TracerContext) -> list[Any]:
        rest = []
        while (item := self.next_item()) is not None:
            rest.append(item)
        return rest

    def cleanup_runs_code(self) -> bool:
        """Whether closing it now would run its code: suspended inside a ``try`` or ``with``
        whose handler would catch GeneratorExit or run a ``finally`` or ``__exit__`` (CPython
        throws GeneratorExit in at the yield when the generator is collected). An ``except X:``
        whose X (read and guarded as the frame reads it) is no base of GeneratorExit lets it
        through (``collections.abc.Sequence.__iter__``'s ``except IndexError``)."""
        frame = self.frame
        if not self.started or self.exhausted:
            return False
        index = frame.ip - 1
        if self.delegate() is not None:
            index -= 1  # (the yield of a ``yield from`` is covered by its own cleanup on 3.12+: its SEND is not)
        program, instructions = frame.program, frame.program.instructions
        handler = program.user_handler(index)
        while handler is not None:
            at = program.labels[handler.target]
            if instructions[at].name != "PUSH_EXC_INFO":
                return True
            at += 1
            while instructions[at].name != "RERAISE":  # each ``except X:`` in turn, until none matched
                load, match, jump = instructions[at:at + 3]
                if load.name != "LOAD_GLOBAL" or match.name != "CHECK_EXC_MATCH" or "IF_FALSE" not in jump.name:
                    return True
                caught = frame.load_global(attr_name(load.arg))
                if not caught.is_python_constant():
                    return True
                cls = caught.as_python_constant()
                if not isinstance(cls, type) or issubclass(GeneratorExit, cls):
                    return True
                at = program.labels[jump.arg]
            cleanup = program.handlers[at]  # COPY 3; POP_EXCEPT; RERAISE 1: on to the handler around the try
            if cleanup is None:
                return False
            start = program.labels[cleanup.target]
            if [i.name for i in instructions[start:start + 3]] != ["COPY", "POP_EXCEPT", "RERAISE"]:
                return True
            handler = program.user_handler(start + 2)
        return False

    def subvalues(self) -> list[Any]:
        frame = self.frame
        return [*self.items[self.index:], *frame.stack, *frame.locals.values(), *frame.cells.values()]

    def var_getattr(self, tx: TracerContext, name: str) -> Any:
        if name == "gi_running":
            return ConstantVariable(self.running)
        if name == "gi_suspended":
            return ConstantVariable(self.started and not self.exhausted and not self.running)
        if name in ("send", "throw", "close", "__next__", "__iter__"):
            return super().var_getattr(tx, name)  # (a bound method: the call comes to call_method)
        raise Unsupported(f"the attribute {name!r} of an inlined generator")

    def call_method(self, tx: TracerContext, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if kwargs:
            raise Unsupported(f"generator.{name}() with keyword arguments")
        if name == "__iter__" and not args:
            return self
        if name == "close" and not args:
            return self.close()
        if name in ("__next__", "send") and len(args) == (name == "send"):
            outcome = self.send(args[0] if args else _NONE)
        elif name == "throw" and 1 <= len(args) <= 3:
            outcome = self.throw(TracedException(_thrown(tx, args)))
        else:
            raise Unsupported(f"generator.{name}() with {len(args)} arguments")
        yielded, value = outcome
        if not yielded:
            raise stop_iteration(value)
        return value

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
