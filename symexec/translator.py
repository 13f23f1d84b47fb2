"""The symbolic interpreter: CPython bytecode (3.11 to 3.13, see ``versions.py``) over trackers.

``InstructionTranslator`` runs one frame: it owns the stack, the locals, the cells and the
instruction pointer, and dispatches every instruction by opcode name to a handler of the
``instructions`` package. ``inline_call`` runs a callee's code in a child translator that
shares the trace (its graph, guards and side effects), so the callee's torch operations land in the same
graph.
"""

from __future__ import annotations

import builtins
import inspect
import linecache
import types
import weakref
from typing import Any

from bytecode import Bytecode, FreeVar, Instr, Label, TryBegin, TryEnd
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

from . import faults, logs
from .codegen import parameter_names
from .callees import users_code_object
from .comprehensions import loop_head, span_at
from .config import Config
from .exc import InternalError, StoppedAtBreak, TracedException, Unsupported
from .guards import GuardSet
from .instructions import DISPATCH
from .trace import Trace
from .resume import chain_codes, is_continuation, reachable, set_handler_depths
from .source import AttrSource, BuiltinSource, ClosureCellSource, ClosureSource, ConstSource, GetItemSource, GlobalSource, LocalSource, Source
from .variables import ConstantVariable, VariableBuilder, VariableTracker
from .variables.user_objects import ExceptionVariable
from .variables.functions import BaseUserFunctionVariable, CellVariable, UserFunctionVariable, UserMethodVariable, real_cell
from .variables.generators import GeneratorVariable

_UNBOUND = object()


class Program:
    """A code object's instructions as a flat list, with jump labels resolved to indices and,
    for each instruction, the exception handler (``TryBegin``) that covers it, if any."""

    _cache: "weakref.WeakKeyDictionary[types.CodeType, Program]" = weakref.WeakKeyDictionary()

    def __init__(self, code: types.CodeType) -> None:
        self.code = code
        self.instructions: list[Instr] = []
        self.labels: dict[Label, int] = {}
        self.handlers: list[TryBegin | None] = []
        self.comprehension_spans: list[Any] | None = None  # found on first need (comprehensions.py)
        self.comprehension_regions: list[tuple[int, int]] = []  # every one's, qualifying or not (found with them)
        lineno = code.co_firstlineno
        handler: TryBegin | None = None
        items = list(Bytecode.from_code(code))
        set_handler_depths(code, items)
        for item in items:
            if isinstance(item, Label):
                self.labels[item] = len(self.instructions)
            elif isinstance(item, TryBegin):
                handler = item
            elif isinstance(item, TryEnd):
                handler = None
            elif isinstance(item, Instr):
                if isinstance(item.lineno, int):
                    lineno = item.lineno
                else:
                    item = Instr(item.name, item.arg, lineno=lineno)
                self.instructions.append(item)
                self.handlers.append(handler)

    def user_handler(self, index: int) -> TryBegin | None:
        """The handler of a ``try`` or ``with`` covering instruction ``index``: not the one
        CPython 3.12+ wraps a generator's whole body in (PEP 479: it turns an escaping
        ``StopIteration`` into ``RuntimeError`` and re-raises anything else)."""
        handler = self.handlers[index]
        if handler is None:
            return None
        first = self.instructions[self.labels[handler.target]]
        if first.name == "CALL_INTRINSIC_1" and getattr(first.arg, "name", None) == "INTRINSIC_STOPITERATION_ERROR":
            return None
        return handler

    def in_loop(self, index: int) -> bool:
        """Whether instruction ``index`` is inside a loop: a jump that the code from it reaches
        (by falling through, jumping, or an exception's handler) goes back to it or before it
        (a ``for``'s or a ``while``'s back edge). A comprehension's own loop does not count
        (3.12 inlines it; 3.11 calls it); nor does the jump back from an ``except`` block that
        3.12 places after the function's end, which only an exception before ``index`` reaches."""
        index = loop_head(self, index)
        labels = self.labels
        return any(isinstance(self.instructions[i].arg, Label) and labels[self.instructions[i].arg] <= index
                   for i in reachable(self, index))

    @classmethod
    def of(cls, code: types.CodeType) -> "Program":
        program = cls._cache.get(code)
        if program is None:
            program = cls._cache[code] = cls(code)
        return program


def own_signature(fn: types.FunctionType) -> inspect.Signature:
    """The parameters of ``fn``'s code and defaults, as CPython binds a call: not a
    ``__signature__`` or ``__wrapped__`` it may carry (torch's ``_refs`` functions announce an
    ``out`` their code takes through ``**kwargs``)."""
    bare = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    bare.__kwdefaults__ = fn.__kwdefaults__
    return inspect.signature(bare)


def bind_arguments(fn: types.FunctionType, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The locals a call of ``fn`` starts with, as CPython binds them."""
    code = fn.__code__
    if not kwargs and code.co_flags & 0x0C == 0 and code.co_argcount == len(args) and not code.co_kwonlyargcount:
        # Positional only and complete (every continuation): no inspect, which also rejects
        # names CPython accepts (pytest's @py_assert temporaries).
        return dict(zip(code.co_varnames, args))
    try:
        bound = own_signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise Unsupported(f"TypeError: {e}", hint="the call does not match the function's signature") from e
    bound.apply_defaults()
    return dict(bound.arguments)


_CALLS = frozenset({"CALL", "CALL_KW", "CALL_FUNCTION_EX"})

# The instructions an inlined frame may break at and go on after (a nested break): each reads
# only the stack (no local, global, cell or name: the code that runs it is the compiled
# function's, where those would be its own).
NESTED_BREAKS = frozenset({
    *_CALLS, "LOAD_ATTR", "LOAD_METHOD", "STORE_ATTR", "DELETE_ATTR",
    "POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE",
    "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_FORWARD_IF_NOT_NONE",
    "JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP",
    "BINARY_OP", "BINARY_SUBSCR", "STORE_SUBSCR", "DELETE_SUBSCR", "BINARY_SLICE", "STORE_SLICE",
    "COMPARE_OP", "CONTAINS_OP", "IS_OP", "UNARY_NEGATIVE", "UNARY_NOT", "UNARY_INVERT", "TO_BOOL",
    "GET_ITER", "UNPACK_SEQUENCE", "UNPACK_EX", "FORMAT_VALUE", "FORMAT_SIMPLE", "FORMAT_WITH_SPEC",
    "CONVERT_VALUE", "BUILD_STRING", "BUILD_TUPLE", "BUILD_LIST", "BUILD_MAP", "BUILD_CONST_KEY_MAP",
    "BUILD_SET", "BUILD_SLICE", "LIST_EXTEND", "LIST_APPEND", "SET_ADD", "SET_UPDATE", "MAP_ADD",
    "DICT_UPDATE", "DICT_MERGE",
})


class InstructionTranslator:
    """Symbolically runs one frame of user code."""

    def __init__(self, code: types.CodeType, f_globals: dict[str, Any], trace: Trace, config: Config, *,
                 globals_source: Source | None = None, parent: "InstructionTranslator | None" = None) -> None:
        self.code = code
        self.f_globals = f_globals
        self.trace = trace
        self.guards: GuardSet = trace.guards
        self.config = config
        self.parent = parent
        self.depth = parent.depth + 1 if parent else 0
        # Where this frame's globals come from, for the sources of what it reads there:
        # None means the compiled function's own globals (G['name']).
        self.globals_source = globals_source
        self.program = Program.of(code)
        self.builder = VariableBuilder(self)
        self.stack: list[VariableTracker] = []
        self.locals: dict[str, VariableTracker] = {}
        self._unwrapped: dict[str, Any] = {}  # root arguments, wrapped on first read
        self.cells: dict[str, CellVariable] = {}
        self.kw_names: tuple[str, ...] = ()
        self.ip = 0
        self.done = False
        self.return_value: VariableTracker | None = None
        # Each frame counts how often each instruction ran, to name a break point as
        # (instruction index, occurrence) and stop there when the trace is run again; a nested
        # break names one per frame, down to the frame that breaks (``break_below``: the points
        # in the frames the call at ``break_at`` inlines, handed to the one it calls directly).
        self.break_at: tuple[int, int] | None = None
        self.break_below: list[tuple[int, int]] = []
        self.stopped_at_break = False
        self._runs: dict[int, int] = {}
        self._hand_down: list[tuple[int, int]] | None = None
        self.calling: Any = None  # the callable of the CALL being run (set by the call handlers)
        self.function: Any = None  # the function tracker whose code this inlined frame runs
        self.generator: Any = None  # the GeneratorVariable whose frame this is (generators.py)
        self.exc_info: VariableTracker | None = None  # the exception being handled (PUSH_EXC_INFO)
        self.instruction: Instr | None = None
        trace.translators.append(self)  # released with the trace (see release)

    def release(self) -> None:
        """Drop the trackers this frame holds once the trace has ended: trackers that keep their
        translator (a lazy ``map``) form cycles, which would keep this call's arguments alive
        until the cycle collector ran."""
        self.stack.clear()
        self.locals.clear()
        self._unwrapped.clear()
        self.cells.clear()
        self.return_value = self.exc_info = self.generator = None

    # -- set-up ------------------------------------------------------------------------------
    @classmethod
    def for_function(cls, fn: types.FunctionType, args: tuple, kwargs: dict, trace: Trace, config: Config) -> "InstructionTranslator":
        """The root translator of a compiled function called with real arguments."""
        tx = cls(fn.__code__, fn.__globals__, trace, config)
        tx._unwrapped = bind_arguments(fn, args, kwargs)
        if is_continuation(fn.__code__):
            for name in fn.__code__.co_cellvars:  # handed over as the cells themselves
                cell = tx._unwrapped.pop(name)
                tx.cells[name] = real_cell(tx, cell, AttrSource(LocalSource(name), "cell_contents"),
                                           lambda cg, name=name: (cg.load_fast(name), cg.emit("STORE_ATTR", "cell_contents")),
                                           cell_source=LocalSource(name))
        for i, name in enumerate(fn.__code__.co_freevars):
            tx.cells[name] = real_cell(tx, fn.__closure__[i], ClosureSource(name, i),  # type: ignore[index]
                                       lambda cg, name=name: cg.emit("STORE_DEREF", FreeVar(name)),
                                       cell_source=ClosureCellSource(name, i))
        return tx

    # -- what handlers use ----------------------------------------------------------------------
    def wrap(self, value: Any, source: Source | None) -> VariableTracker:
        return self.builder(value, source)

    def has_local(self, name: str) -> bool:
        return name in self.locals or name in self._unwrapped

    def get_local(self, name: str) -> VariableTracker:
        var = self.locals.get(name)
        if var is None:
            value = self._unwrapped.pop(name, _UNBOUND)
            if value is _UNBOUND:
                raise Unsupported(f"UnboundLocalError: local variable {name!r} referenced before assignment")
            var = self.locals[name] = self.wrap(value, LocalSource(name))
        return var

    def set_local(self, name: str, value: VariableTracker) -> None:
        self._unwrapped.pop(name, None)
        self.locals[name] = value

    def delete_local(self, name: str) -> None:
        self._unwrapped.pop(name, None)
        self.locals.pop(name, None)

    def peek(self, depth: int) -> VariableTracker:
        return self.stack[-depth]

    def jump(self, label: Label) -> None:
        self.ip = self.program.labels[label]

    def handled_here_or_above(self, index: int) -> bool:
        """Whether an exception raised by instruction ``index`` of this frame would meet an
        exception handler (a ``try``, a ``with``) in this frame or a caller's in the trace; a
        generator's frame counts as handled (its consumer's frame is not its caller)."""
        if self.program.handlers[index] is not None or self.generator is not None:
            return True
        parent = self.parent
        return parent is not None and parent.handled_here_or_above(parent.ip - 1)

    def raise_exception(self, error: TracedException) -> None:
        """Unwind to the handler covering the instruction being run, as CPython's exception
        table says; with none, the exception leaves this frame."""
        index = self.ip - 1
        if isinstance(error.exception, BaseException):  # raised by a builtin the trace ran
            error.exception = ExceptionVariable.from_python(error.exception)
        handler = self.program.handlers[index]
        if handler is None:
            if self.parent is not None:
                raise error
            unhandled = Unsupported(f"{error.exception.describe()} is raised",
                                    hint="the graph breaks; CPython raises it")
            filename, lineno, function = self.location()
            unhandled.add_location(filename, lineno, linecache.getline(filename, lineno or 0), function)
            unhandled.break_point = (index, self._runs[index])
            raise unhandled
        del self.stack[handler.stack_depth:]
        if handler.push_lasti:
            self.stack.append(ConstantVariable(index))
        self.stack.append(error.exception)
        self.ip = self.program.labels[handler.target]

    def yield_value(self, value: VariableTracker) -> None:
        """``yield``: the frame suspends until its generator is asked for the next item."""
        if self.generator is None:
            raise Unsupported("yield outside an inlined generator")
        self.generator.suspend(value)

    def finish(self, value: VariableTracker) -> None:
        self.return_value = value
        self.done = True

    def load_global(self, name: str) -> VariableTracker:
        if self.globals_source is None and name in self.trace.side_effects.globals:
            return self.trace.side_effects.globals[name]  # written earlier in this trace
        if name in self.f_globals:
            if self.globals_source is None:
                source: Source | None = GlobalSource(name)
            else:
                source = GetItemSource(self.globals_source, name)
            return self.wrap(self.f_globals[name], source)
        f_builtins = self.f_globals.get("__builtins__", builtins)
        if isinstance(f_builtins, types.ModuleType):
            f_builtins = f_builtins.__dict__
        if name in f_builtins:
            self.guards.not_a_global(self.globals_source, name)  # a module global `abs = ...` set later shadows it
            return self.wrap(f_builtins[name], BuiltinSource(name) if self.globals_source is None else None)
        raise Unsupported(f"NameError: name {name!r} is not defined")

    def store_global(self, name: str, value: VariableTracker) -> None:
        if self.globals_source is not None:
            raise Unsupported(f"rebinding the global {name!r} of another module")
        self.trace.side_effects.store_global(name, value)

    def call(self, fn: VariableTracker, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return fn.call_function(self, args, kwargs)

    def inline_call(self, fn: BaseUserFunctionVariable, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if self.depth + 1 > self.config.max_inline_depth:
            raise Unsupported(f"inlining deeper than {self.config.max_inline_depth} calls ({fn.describe()})")
        globals_source = self.globals_source
        if fn.f_globals is not self.f_globals:
            if isinstance(fn, UserFunctionVariable):
                if fn.source is None or isinstance(fn.source, ConstSource):  # (__globals__ is read-only)
                    globals_source = ConstSource.of(fn.fn.__globals__)
                else:
                    globals_source = AttrSource(fn.source, "__globals__")
            else:
                globals_source = fn.globals_source  # made by MAKE_FUNCTION in that frame
        child = InstructionTranslator(fn.code, fn.f_globals, self.trace, self.config, globals_source=globals_source, parent=self)
        child.function = fn
        child.locals = fn.bind(self, args, kwargs)
        for name, cell in zip(fn.code.co_freevars, fn.closure_cells(self)):
            child.cells[name] = cell
        if is_continuation(fn.code):  # (a nested break's: it takes its cells as arguments)
            for name in fn.code.co_cellvars:
                cell = child.locals.pop(name, None)
                if not isinstance(cell, CellVariable):
                    raise Unsupported(f"a continuation called with {name!r} not a cell")
                child.cells[name] = cell
        if fn.code.co_flags & inspect.CO_GENERATOR:
            return GeneratorVariable(child, (fn, args, kwargs))  # (runs item by item, when asked: generators.py)
        direct = self._calls_directly(fn)
        if direct and self._hand_down:
            child.break_at, *child.break_below = self._hand_down
            self._hand_down = None
        try:
            child.run()  # a TracedException it does not handle goes on to this frame's step
        except Unsupported as e:
            e.via = child if direct else None
            raise
        self.trace.location = self.location()  # back to the caller's line
        assert child.return_value is not None
        return child.return_value

    def _calls_directly(self, fn: BaseUserFunctionVariable) -> bool:
        """Whether inlining ``fn`` is the call this frame's CALL makes, its result the call's:
        the callable on the stack is ``fn`` or a method of it (not a call a tracker makes on its
        own account: ``map``'s, a decorator's, a module's)."""
        calling = self.calling
        if calling is None or self.instruction is None or self.instruction.name not in _CALLS:
            return False
        self.calling = None
        return calling is fn or (isinstance(calling, UserMethodVariable) and calling.fn is fn)

    def root(self) -> "InstructionTranslator":
        tx = self
        while tx.parent is not None:
            tx = tx.parent
        return tx

    # -- the loop -------------------------------------------------------------------------------
    def location(self) -> tuple[str, int | None, str]:
        lineno = self.instruction.lineno if self.instruction is not None else self.code.co_firstlineno
        return self.code.co_filename, lineno, self.code.co_name

    def run(self) -> None:
        instructions = self.program.instructions
        trace = logs.enabled("trace")
        runs_of = self._runs
        # (an inlined frame names break points only for nested breaks: else no counting)
        counting = self.parent is None or self.config.nested_graph_breaks
        while not self.done:
            inst = self.instruction = instructions[self.ip]
            if counting:
                runs = runs_of[self.ip] = runs_of.get(self.ip, 0) + 1
            if counting and self.break_at == (self.ip, runs):
                if self.break_below:  # the break is inside the function this instruction calls
                    self._hand_down = self.break_below
                else:
                    self.stopped_at_break = True  # the state is as CPython's before ``inst``
                    if self.parent is None:
                        return
                    raise StoppedAtBreak(self)
            self.ip += 1
            self.trace.location = location = (self.code.co_filename, inst.lineno, self.code.co_name)
            self.trace.frame = self
            self.guards.location = location[:2]
            if trace:
                self._log_trace(inst)
            self.step(inst)

    def spec_of(self, inst: Instr) -> Any:
        spec = DISPATCH.get(inst.name)
        if spec is None:
            raise Unsupported(f"the {inst.name} instruction is not supported yet")
        return spec

    def step(self, inst: Instr) -> None:
        spec = DISPATCH.get(inst.name)
        try:
            if spec is None:
                raise Unsupported(f"the {inst.name} instruction is not supported yet")
            faults.hit("handler")
            pops, _ = spec.effect(inst.arg)
            if pops:
                if len(self.stack) < pops:
                    raise InternalError(f"{inst.name} pops {pops} from a stack of {len(self.stack)}")
                args = self.stack[-pops:]
                del self.stack[-pops:]
                result = spec.handler(self, inst, *args)
            else:
                result = spec.handler(self, inst)
        except TracedException as e:
            self.raise_exception(e)
            return
        except Unsupported as e:
            self._locate(e)
            raise
        except InternalError:
            raise
        except GuardOnDataDependentSymNode as e:
            # A size known only at run time (unique's length, an item() captured with
            # capture_scalar_outputs) decides a branch: Python must decide it.
            unsupported = Unsupported(f"a decision on a value known only at run time: {str(e).splitlines()[0]}")
            self._locate(unsupported)
            raise unsupported from e
        except Exception as e:
            filename, lineno, _ = self.location()
            raise InternalError(f"{type(e).__name__} in {inst.name} at {filename}:{lineno}: {e}") from e
        if result is None:
            return
        faults.hit("tracker")
        if type(result) is tuple:
            self.stack.extend(result)
        else:
            self.stack.append(result)

    def _locate(self, e: Unsupported) -> None:
        filename, lineno, function = self.location()
        e.add_location(filename, lineno, linecache.getline(filename, lineno or 0), function)
        child, e.via = e.via, None
        if not self.config.nested_graph_breaks:
            e.path = [self._break_point(self.ip - 1)] if self.parent is None else None
        elif e.path is not None and child is not None and child.parent is self and self._holds_nested(child, e.path[0]):
            e.path.insert(0, (self.ip - 1, self._runs[self.ip - 1]))  # the graph goes on in the callee
        else:
            e.path = [self._break_point(self.ip - 1)]
        if self.parent is None and e.break_point is None:
            e.break_point, *e.nested = e.path

    def _holds_nested(self, child: "InstructionTranslator", point: tuple[int, int]) -> bool:
        """Whether a break at ``point`` in ``child``, which this frame's CALL inlined, can be
        made there (a nested break: the graph before it spans both frames, and the continuation
        of the callee hands its result to this frame's, traced as one): both points outside any
        ``try``/``with`` (an exception of the callee's continuation would not reach this frame's
        handler) and outside loops (continued anew each time round), no exception being handled,
        an instruction that reads nothing of its frame but the stack (the code that runs it is
        the compiled function's), and a callee that is a real function (its continuation takes
        its code and globals, which the guards pin, and its cells as arguments) of the user's
        code (torch's and the standard library's frames are not compiled: Callees)."""
        index, inner = self.ip - 1, point[0]
        fn = child.function
        if not isinstance(fn, BaseUserFunctionVariable) or \
                not (users_code_object(fn.code, fn.f_globals.get("__name__")) or fn.code in chain_codes):
            return False  # (torch's and the standard library's frames: at the call, as their calls are compiled)
        if child.program.instructions[inner].name not in NESTED_BREAKS:
            return False
        if self.exc_info is not None or child.exc_info is not None:
            return False
        if self.program.handlers[index] is not None or child.program.handlers[inner] is not None:
            return False
        if child.program.in_loop(inner) or (self.parent is not None and self.program.in_loop(index)):
            return False
        return True

    def _break_point(self, index: int) -> tuple[int, int]:
        """Where the graph breaks for an instruction that cannot be traced: the instruction, or
        the start of the inlined comprehension around it (3.12+) when that can run as it is."""
        span = span_at(self.program, index)
        if span is not None:
            parameters = parameter_names(self.code)
            # (a parameter it reads must be bound: the replacement function's own is)
            if all(self.has_local(name) for name in span.reads if name in parameters):
                index = span.start
        return index, self._runs[index]

    def _log_trace(self, inst: Instr) -> None:
        limit = self.config.trace_repr_limit
        stack = ", ".join(_capped(repr(v), limit) for v in self.stack)
        arg = "" if not inst.require_arg() else " " + _capped(_arg_text(inst.arg), limit)
        logs.log("trace", "TRACE %s%s [%s]", inst.name, arg, stack)


def _arg_text(arg: Any) -> str:
    if isinstance(arg, tuple) and len(arg) == 2 and isinstance(arg[0], bool):
        return str(arg[1])  # LOAD_GLOBAL (push_null, name)
    if isinstance(arg, Label):
        return "<label>"
    return str(getattr(arg, "name", arg)) if not isinstance(arg, (str, int)) else str(arg)


def _capped(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
