"""Graph breaks: how the replacement code carries on where the tracer had to stop.

At a break the translator stands just before the instruction it cannot model, with the
stack and locals as CPython would have them. The replacement code then (SPEC §6):

1. calls the graph of everything before the break (``convert.py``) and replays the side
   effects;
2. rebuilds the Python stack, each tracker by its source, as a graph output, or by its own
   ``reconstruct``;
3. runs the instruction for real; a callee the tracer would have inlined (a user function,
   closure, bound method, ``functools.partial``, ``nn.Module``) runs through its compiled
   stand-in (``callees.py``), so the torch code inside it is still captured, in graphs of its
   own around its own breaks (there is no eval-frame hook to do that);
4. for each way out of the instruction (fall through, a jump, an exception handler that
   covers it) stores the stack in temporaries and calls the continuation of the original
   code at that point (``resume.py``) with the stack values and the live locals, and
   returns what it returns. Continuations are compiled functions, traced on first call.
"""

from __future__ import annotations

import dataclasses
import itertools
import types
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import torch
from bytecode import Instr, Label, TryBegin

from . import assembler, versions
from .callees import Callees, class_lookup
from .comprehensions import Span, cleanup_block, span_starting_at
from .exc import Unsupported
from .resume import CONTINUATION_PREFIX, chain_codes, live_locals, resume_code
from .variables import NullVariable, UserFunctionVariable, UserMethodVariable, VariableTracker
from .variables.autograd import AutogradApplyVariable
from .variables.partials import PartialVariable
from .variables.classes import UserDefinedClassVariable
from .variables.native_methods import NativeMethodVariable
from .variables.user_objects import UserDefinedObjectVariable
from .variables.nn_module import NNModuleVariable

if TYPE_CHECKING:  # pragma: no cover - typing only (the translator drives this module)
    from .translator import InstructionTranslator


@dataclass
class _Caller:
    """A frame around a nested break: it called the frame inside it at ``index`` and goes on
    after that call (at ``index + 1``) with the call's result on its stack."""
    tx: "InstructionTranslator"
    fn: Any  # the function tracker whose code it runs (None: the compiled function's own frame)
    index: int
    stack: list[VariableTracker]
    nulls: list[bool]  # its stack after the call, the result last
    live: list[str] = dataclasses.field(default_factory=list)
    stack_temps: list[str] = dataclasses.field(default_factory=list)
    local_temps: dict[str, str] = dataclasses.field(default_factory=dict)
    cell_temps: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclass
class _Outcome:
    label: Label | None  # None: falls through right after the instruction
    target: int  # instruction index in the original code
    nulls: list[bool]  # the stack there, from the bottom: True where CPython has NULL
    handler: bool = False  # an exception handler: run as plain Python, not compiled
    landing: tuple[str, ...] = ()  # instructions right after the label (a loop's exit)


class BreakPlan:
    def __init__(self, tx: InstructionTranslator, reason: Unsupported) -> None:
        self.tx = tx
        self.reason = reason
        self.index = tx.ip
        self.inst: Instr = tx.program.instructions[tx.ip]
        self.stack: list[VariableTracker] = list(tx.stack)
        self.kw_names: tuple[str, ...] = tx.kw_names
        self.grad_mode: bool = tx.trace.torch.grad_enabled
        if self.inst.name in ("RETURN_VALUE", "RETURN_CONST", "YIELD_VALUE", "RETURN_GENERATOR"):
            raise Unsupported(f"a graph break at {self.inst.name}")
        if tx.exc_info is not None:
            # The code we write runs outside the handler: the exception being handled, which
            # CPython's own instructions there read (WITH_EXCEPT_START, a bare raise,
            # sys.exc_info()), would not be there.
            raise Unsupported("a graph break inside an exception handler")
        # A break inside an inlined comprehension stops at its start (the translator moved it
        # there): the comprehension runs as it is, as on 3.11 (comprehensions.py).
        self.span: Span | None = span_starting_at(tx.program, self.index) if self.inst.name == "LOAD_FAST_AND_CLEAR" else None
        self.outcomes = self._outcomes()
        # A nested break (the translator stopped inside inlined calls): the frames around this
        # one, innermost first; each goes on after its call with the result of the one inside.
        self.callers: list[_Caller] = []
        frame = tx
        while frame.parent is not None:
            parent = frame.parent
            stack = list(parent.stack)
            self.callers.append(_Caller(parent, parent.function if parent.parent is not None else None,
                                        parent.ip - 1, stack, [isinstance(v, NullVariable) for v in stack] + [False]))
            frame = parent
        assert not (self.callers and any(o.handler for o in self.outcomes)), "a nested break inside a try"

    def _outcomes(self) -> list[_Outcome]:
        inst, program = self.inst, self.tx.program
        nulls = [isinstance(v, NullVariable) for v in self.stack]
        if self.span is not None:  # [..., iterator] -> [..., the list, set or dict] (or stored)
            return [_Outcome(None, self.span.end, nulls[:-1] + ([False] if self.span.result is None else []))]
        pops = self.tx.spec_of(inst).effect(inst.arg)[0]
        below = nulls[: len(nulls) - pops]
        outcomes = []
        if inst.name not in ("RAISE_VARARGS", "RERAISE"):
            pushes = len(self.stack) + inst.stack_effect(jump=False) - len(below)
            if inst.name == "CALL":
                pushes = 1  # (3.11 books part of the call to PRECALL)
            # A method load runs as an attribute load: a NULL beside the attribute, as CPython's
            # non-method form.
            results = list(versions.method_pair(True, False)) if _is_method_load(inst) else [False] * pushes
            outcomes.append(_Outcome(None, self.index + 1, below + results))
        if isinstance(inst.arg, Label):
            target = program.labels[inst.arg]
            pushes = len(self.stack) + inst.stack_effect(jump=True) - len(below)
            if inst.name == "FOR_ITER" and versions.V.loop_exit:
                # CPython's FOR_ITER pops the iterator and skips the loop's exit, which the
                # code we write must still have after the label (its stack effect is booked).
                landing = tuple(i.name for i in program.instructions[target: target + len(versions.V.loop_exit)])
                if landing != versions.V.loop_exit:
                    raise Unsupported(f"a loop whose exit is {landing}, not {versions.V.loop_exit}")
                outcomes.append(_Outcome(Label(), target + len(landing), below, landing=landing))
            else:
                outcomes.append(_Outcome(Label(), target, below + [False] * pushes))
        handler: TryBegin | None = program.handlers[self.index]
        if handler is not None:
            there = nulls[: handler.stack_depth] + [False] * (bool(handler.push_lasti) + 1)
            outcomes.append(_Outcome(Label(), program.labels[handler.target], there, handler=True))
        return outcomes

    def bound_locals(self, frame: Any = None) -> dict[str, VariableTracker | None]:
        """Every bound local of ``frame`` (the breaking one): its tracker, or None for an
        argument the trace never read."""
        frame = self.tx if frame is None else frame
        bound: dict[str, VariableTracker | None] = dict.fromkeys(frame._unwrapped)
        bound.update(frame.locals)
        return bound

    def live_values(self) -> list[VariableTracker]:
        values: list[VariableTracker] = []
        for frame, stack in [(self.tx, self.stack), *((c.tx, c.stack) for c in self.callers)]:
            values += stack
            values += [v for v in self.bound_locals(frame).values() if v is not None]
            values += [frame.cells[n] for n in frame.code.co_cellvars if n in frame.cells]
        return values

    # -- code --------------------------------------------------------------------------------
    def emit(self, cg: Any, fn: types.FunctionType, callees: Callees,
             apply_side_effects: Callable[[], None]) -> None:
        # Everything the code needs is built before the side effects are written (a value
        # re-fetched through a list that the replay refills must be read first).
        stack_temps: list[str | None] = []
        callee = self._callee_slot()
        for i, var in enumerate(self.stack):
            if isinstance(var, NullVariable):
                stack_temps.append(None)
                continue
            if i == callee:
                _reconstruct_callee(cg, var, callees)
            else:
                cg.reconstruct(var)
            stack_temps.append(cg.new_temp())
            cg.store_fast(stack_temps[-1])
        bound = self.bound_locals()
        written = {self.span.result} if self.span is not None and self.span.result else set()
        # (a local the comprehension stores its result in is passed as the code left it: no temporary)
        self.live = {o.target: sorted(live_locals(self.tx.program, o.target) & (bound.keys() | written))
                     for o in self.outcomes}
        self.local_temps: dict[str, str] = {}
        span_reads = self.span.reads & bound.keys() if self.span is not None else set()
        for name in sorted(set().union(span_reads, *self.live.values()) - written):
            var = bound[name]
            if var is not None:  # (an argument the trace never touched is still the caller's)
                cg.reconstruct(var)
                self.local_temps[name] = cg.new_temp()
                cg.store_fast(self.local_temps[name])
        self.cell_temps = self._store_cells(cg, self.tx, bool(self.callers))
        for caller in self.callers:
            self._store_caller(cg, caller)
        apply_side_effects()
        if self.grad_mode != torch.is_grad_enabled():
            cg.call_const(torch._C._set_grad_enabled, lambda: [cg.load_const(self.grad_mode)])
            cg.emit("POP_TOP")
        for temp in stack_temps:
            if temp is None:
                cg.push_null()
            else:
                cg.load_fast(temp)
        handler = next((o for o in self.outcomes if o.handler), None)
        if handler is not None:
            user_handler = self.tx.program.handlers[self.index]
            begin = cg.try_begin(handler.label, user_handler.push_lasti, user_handler.stack_depth)
            # The region must not start at the instruction itself: CPython 3.13 looks up the
            # handler of an exception raised in a Python callee one code unit before the CALL.
            cg.emit("NOP")
        if self.span is not None:
            cleanups = self._emit_span(cg)
        else:
            self._emit_instruction(cg, callees)
        if handler is not None:
            cg.try_end(begin)
        for outcome in self.outcomes:
            if outcome.label is not None:
                cg.label(outcome.label)
            for name in outcome.landing:
                cg.emit(name)
            self._emit_continue(cg, fn, outcome, callees)
        if self.span is not None:
            self._copy(cg, cleanups, self._span_labels)

    @staticmethod
    def _store_cells(cg: Any, frame: Any, inlined: bool) -> dict[str, str]:
        """The cells the frame's continuation takes, in temporaries: its own and, where its
        continuation takes them as arguments (``_continuation``), those of its free variables."""
        temps: dict[str, str] = {}
        free = frame.code.co_freevars if inlined or _free_cells_as_args(frame.code) else ()
        for name in (*frame.code.co_cellvars, *free):
            if name not in frame.cells:
                raise Unsupported(f"a graph break before the cell {name!r} exists")
            cg.reconstruct(frame.cells[name])
            temps[name] = cg.new_temp()
            cg.store_fast(temps[name])
        return temps

    def _store_caller(self, cg: Any, caller: _Caller) -> None:
        """What a frame around a nested break passes to its continuation, in temporaries: its
        stack under the call, its live locals after it, its cells."""
        for var in caller.stack:
            if not isinstance(var, NullVariable):
                cg.reconstruct(var)
                caller.stack_temps.append(cg.new_temp())
                cg.store_fast(caller.stack_temps[-1])
        bound = self.bound_locals(caller.tx)
        caller.live = sorted(live_locals(caller.tx.program, caller.index + 1) & bound.keys())
        for name in caller.live:
            var = bound[name]
            if var is not None:  # (the root's argument the trace never touched: its own local)
                cg.reconstruct(var)
                caller.local_temps[name] = cg.new_temp()
                cg.store_fast(caller.local_temps[name])
        caller.cell_temps = self._store_cells(cg, caller.tx, caller.fn is not None)

    def _callee_slot(self) -> int | None:
        """Where the callable of a breaking call sits on the stack: of the two slots under the
        arguments, the one that is not NULL, or the first (a method and its self)."""
        if self.inst.name in ("CALL", "CALL_KW"):
            slot = len(self.stack) - self.inst.arg - (2 if self.inst.name == "CALL" else 3)
        elif self.inst.name == "CALL_FUNCTION_EX":
            slot = len(self.stack) - 3 - (self.inst.arg & 1)
        else:
            return None
        return slot + 1 if isinstance(self.stack[slot], NullVariable) else slot

    def _emit_instruction(self, cg: Any, callees: Callees) -> None:
        inst = self.inst
        line = inst.lineno if isinstance(inst.lineno, int) else None  # tracebacks show the user's line
        if versions.needs_bool_before(inst.name):
            cg.emit("TO_BOOL", lineno=line)  # 3.13: the value may be a tensor, which the trace left unconverted
        # A break inside the Python getter an attribute load runs (a property, a descriptor's
        # __get__): the load runs through ``Callees.attribute``, which calls that getter compiled.
        via_getter = inst.name in ("LOAD_ATTR", "LOAD_METHOD") and len(self.reason.user_stack) > 1 + len(self.callers)
        if inst.name == "CALL":
            if self.kw_names:
                cg.emit("KW_NAMES", self.kw_names, lineno=line)
            cg.call(inst.arg, lineno=line)
        elif via_getter:
            obj = cg.new_temp()
            cg.store_fast(obj)
            cg.push_callable(lambda: cg.load_const(callees.attribute, name="__compiled_attribute"))
            cg.load_fast(obj)
            cg.load_const(versions.attr_name(inst.arg))
            cg.call(2, lineno=line)
            if _is_method_load(inst):
                cg.push_null()
                if not versions.V.null_above_callable:
                    cg.emit("SWAP", 2)
        elif _is_method_load(inst):
            if inst.name == "LOAD_SUPER_ATTR":
                cg.emit("LOAD_SUPER_ATTR", (False, *inst.arg[1:]), note=self.note(), lineno=line)
            else:
                cg.load_attr(versions.attr_name(inst.arg), lineno=line)
            cg.push_null()
            if not versions.V.null_above_callable:
                cg.emit("SWAP", 2)
        elif isinstance(inst.arg, Label):
            cg.jump(inst.name, next(o.label for o in self.outcomes if o.label is not None and not o.handler),
                    note=self.note(), lineno=line)
        else:
            cg.emit(inst.name, inst.arg if inst.require_arg() else None, note=self.note(), lineno=line)

    def _emit_span(self, cg: Any) -> list[int]:
        """The comprehension's own instructions, run as they are; returns the cleanup blocks'
        instructions, written after the continuation's call (only an exception reaches them)."""
        assert self.span is not None
        for name in sorted(self.span.reads):  # its code reads the locals by name: bind them as traced
            if name in self.local_temps:
                cg.load_fast(self.local_temps[name])
                cg.store_fast(name)
        program = self.tx.program
        self._span_labels: dict[Any, Label] = {}
        cleanups = [i for start in self.span.cleanups for i in cleanup_block(program, start)]
        self._copy(cg, list(range(self.span.start, self.span.end)), self._span_labels)
        return cleanups

    def _copy(self, cg: Any, indices: list[int], labels: dict[Any, Label]) -> None:
        """Copy the original instructions at ``indices`` (consecutive runs), with their labels
        and the handler regions over them, jumps and handlers going to the copies' labels."""
        program = self.tx.program
        at: dict[int, list[Any]] = {}
        for label, index in program.labels.items():
            at.setdefault(index, []).append(label)
        note = self.note()
        region: tuple[Any, Any] | None = None  # (the original TryBegin, ours)
        for position, i in enumerate(indices):
            contiguous = position > 0 and indices[position - 1] == i - 1
            handler = program.handlers[i]
            if region is not None and (not contiguous or handler is not region[0]):
                cg.try_end(region[1])
                region = None
            for label in at.get(i, []):
                cg.label(labels.setdefault(label, Label()))
            if handler is not None and region is None:
                target = labels.setdefault(handler.target, Label())
                region = (handler, cg.try_begin(target, handler.push_lasti, handler.stack_depth))
            inst = program.instructions[i]
            arg = labels.setdefault(inst.arg, Label()) if isinstance(inst.arg, Label) else inst.arg
            cg.append(Instr(inst.name, arg, lineno=inst.lineno) if inst.require_arg() else Instr(inst.name, lineno=inst.lineno),
                      note)
        if region is not None:
            cg.try_end(region[1])

    def note(self) -> str:
        """The user's line, for the readable rendering of the instruction run for real."""
        reason = self.reason
        return f"{reason.filename}:{reason.lineno}: {reason.source_line.strip()}"

    def _emit_continue(self, cg: Any, fn: types.FunctionType, outcome: _Outcome, callees: Callees) -> None:
        temps = [cg.new_temp() for _ in outcome.nulls]
        for temp in reversed(temps):
            cg.store_fast(temp)  # a NULL stored in a local leaves it unbound; it is not passed
        temps = [t for t, null in zip(temps, outcome.nulls) if not null]
        live = self.live[outcome.target]
        continuation = _continuation(self.tx.function if self.callers else fn, outcome.target, outcome.nulls, live)
        code = continuation.__code__
        shown = code.co_name
        args = [*temps, *(self.local_temps.get(name, name) for name in live),
                *(self.cell_temps[name] for name in code.co_cellvars)]
        for caller in self.callers:  # a nested break: the frames around it go on after their calls
            outer = _continuation(caller.fn or fn, caller.index + 1, caller.nulls, caller.live)
            continuation = _chained(continuation, len(args), outer, len(caller.stack_temps))
            shown = continuation.__code__.co_name
            args += [*caller.stack_temps, *(caller.local_temps.get(name, name) for name in caller.live),
                     *(caller.cell_temps[name] for name in outer.__code__.co_cellvars)]
        if not outcome.handler:
            continuation = callees(continuation)
        cg.push_callable(lambda: cg.load_const(continuation, name=shown))
        for name in args:
            cg.load_fast(name)
        # What this code holds while the continuation runs: only what it passes. The graph's
        # outputs and the temporaries go (eager drops a value its frame no longer names: a
        # weakref to it is dead in the continuation, its memory free).
        cg.release_temps()
        cg.call(len(args))
        cg.emit("RETURN_VALUE")


_chain_numbers = itertools.count(1)


def _continuation(fn: Any, target: int, nulls: list[bool], live: list[str]) -> types.FunctionType:
    """The function that goes on with ``fn``'s code at ``target`` (the compiled function, or an
    inlined frame's tracker: a real function, or one made by the trace). It has no closure: the
    cells of its free variables are arguments, as its own cells are, so one continuation (one
    compiled wrapper, found by its code) serves every closure of the code, as Dynamo's cache is
    one per code object: a closure made anew by each call of its maker is not traced anew. The
    compiled function's keeps its closure where it cannot hand over its cells
    (``_free_cells_as_args``)."""
    if isinstance(fn, types.FunctionType):
        code = fn.__code__
        if code.co_freevars and not _free_cells_as_args(code):
            made = resume_code(code, target, nulls, live)
            return types.FunctionType(made, fn.__globals__, made.co_name, None, fn.__closure__)
        made = resume_code(code, target, nulls, live, cells_as_args=True)
        return types.FunctionType(made, fn.__globals__, made.co_name)
    made = resume_code(fn.code, target, nulls, live, cells_as_args=True)
    return types.FunctionType(made, fn.f_globals, made.co_name)


def _free_cells_as_args(code: types.CodeType) -> bool:
    """Whether the compiled function's continuation takes the cells of its free variables as
    arguments: not where its generated code cannot push a cell of its own closure (3.13:
    ``versions``), nor where it has a ``__class__`` cell (zero-argument ``super()`` finds that
    among the frame's free variables only)."""
    return versions.V.closure_cell_load is not None and "__class__" not in code.co_freevars


def _chained(inner: types.FunctionType, count: int, outer: types.FunctionType, below: int) -> types.FunctionType:
    """The continuation of a nested break: the callee's continuation ``inner`` (its ``count``
    first arguments), whose result the caller's continuation ``outer`` takes after its ``below``
    stack values, before its locals. Compiled as one function, it traces both: the graph after
    the break spans the frames as the one before it does. Each has its own code object (a
    continuation's compiled wrapper is found by its code)."""

    key = (_identity(inner), _identity(outer), count, below)
    made = _chains.get(key)
    if made is not None:  # (one per break: a recompile of the caller finds the one compiled before)
        return made

    def chained(*args: Any) -> Any:
        result = inner(*args[:count])
        return outer(*args[count:count + below], result, *args[count + below:])

    name = f"{CONTINUATION_PREFIX}nested_{next(_chain_numbers)}_{outer.__code__.co_name.removeprefix(CONTINUATION_PREFIX)}"
    code = assembler.checked(chained.__code__.replace(co_name=name, co_qualname=name))
    made = _chains[key] = types.FunctionType(code, chained.__globals__, name, None, chained.__closure__)
    chain_codes.add(code)
    return made


def _identity(fn: types.FunctionType) -> tuple:
    """What makes two continuations the same function: code, globals and closure cells (ids: a
    chain alive holds them)."""
    return (fn.__code__, id(fn.__globals__), *map(id, fn.__closure__ or ()))


_chains: "weakref.WeakValueDictionary[tuple, types.FunctionType]" = weakref.WeakValueDictionary()


def _is_method_load(inst: Instr) -> bool:
    if inst.name == "LOAD_METHOD":
        return True
    return inst.name in ("LOAD_ATTR", "LOAD_SUPER_ATTR") and isinstance(inst.arg, tuple) and bool(inst.arg[0])


def _reconstruct_callee(cg: Any, var: VariableTracker, callees: Callees) -> None:
    """The callee of the breaking call runs compiled where the tracer would have inlined it, so
    its own torch code is still captured, each frame in graphs of its own (``callees.py``).

    A function with no closure whose identity the guards pinned is the one called: its compiled
    wrapper travels as a constant. One made anew by every call (3.11's comprehension handed to a
    continuation: its code is guarded, not its identity) is mapped when the call runs, as a
    closure is (a constant wrapper would call the first call's, and hold it weakly). A closure (guarded by its code only: another closure of that code may come), a
    bound method, a ``functools.partial`` or a module is re-fetched and mapped when the call
    runs. A tracker that says it ``runs_uncompiled`` (torch's own optimizer step) is called as
    it is."""
    if getattr(var, "runs_uncompiled", False):
        cg.reconstruct(var)
        return
    if isinstance(var, UserMethodVariable) and isinstance(var.fn, UserFunctionVariable) and not var.fn.fn.__closure__ \
            and var.fn.source is not None and var.fn.identity_pinned:
        compiled = callees.value(var.fn.fn)
        if compiled is not var.fn.fn:
            cg.call_const(types.MethodType, lambda: [cg.load_const(compiled), cg.reconstruct(var.obj)])
            return
    elif isinstance(var, UserFunctionVariable) and not var.fn.__closure__ and var.source is not None \
            and var.identity_pinned:
        compiled = callees.value(var.fn)
        if compiled is not var.fn:
            cg.load_const(compiled)
            return
    elif isinstance(var, NativeMethodVariable) and var.name == "__call__" and isinstance(var.obj, UserDefinedClassVariable):
        # ``super().__call__`` in a metaclass's __call__: type's, the class made with its __init__ compiled
        cg.push_callable(lambda: cg.load_const(callees.type_call, name="__compiled_type_call"))
        cg.reconstruct(var.obj)
        cg.call(1)
        return
    elif _real_callee(var):
        cg.push_callable(lambda: cg.load_const(callees.value, name="__compiled_callee"))
        cg.reconstruct(var)
        cg.call(1)
        return
    # (anything else, a function made while tracing among them, runs as it is: its closure
    # cells differ per call, and a new function object per call would trace anew each time)
    cg.reconstruct(var)


def _real_callee(var: VariableTracker) -> bool:
    """Whether ``var`` calls a function that exists outside the trace (not one made by it: a
    new function object per call would be compiled anew on each)."""
    if isinstance(var, UserMethodVariable):
        return isinstance(var.fn, UserFunctionVariable)
    if isinstance(var, PartialVariable):
        return _real_callee(var.fn)
    if isinstance(var, UserDefinedClassVariable):  # (a metaclass's Python __call__, or the class's __init__, runs compiled)
        return True
    if isinstance(var, UserDefinedObjectVariable) and var.source is not None:  # (its class's Python __call__)
        return type(class_lookup(type(var.value), "__call__")) is types.FunctionType
    return isinstance(var, (UserFunctionVariable, NNModuleVariable, AutogradApplyVariable))
