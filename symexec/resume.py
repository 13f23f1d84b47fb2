"""Continuation functions: the rest of a function after a graph break, as a new code object.

``resume_code(code, target, nulls, live)`` copies ``code`` (through ``bytecode``) and puts a
prologue in front: it pushes the arguments ``___stack0 .. ___stackN`` back on the stack (and
NULL where CPython had one) and jumps to instruction ``target``. Its parameters are those stack values, then the locals
that are live at ``target``; free variables stay as they were (the continuation gets the
original closure). Jumping into the middle of a loop or a try block is fine: the stack depth
there is the original one, and the exception table is kept by offset.

``live_locals`` is the conservative liveness the continuation needs: every local that some
instruction reachable from ``target`` reads.
"""

from __future__ import annotations

import dataclasses
import dis
import types
import weakref
from typing import Any

from bytecode import Bytecode, CellVar, FreeVar, Instr, Label, TryBegin

from . import assembler
from .exc import Unsupported
from .versions import split_superinstruction

_READS = frozenset({"LOAD_FAST", "LOAD_FAST_CHECK", "DELETE_FAST", "LOAD_FAST_AND_CLEAR"})
# 3.13's fused pairs: which of the two names are read.
_PAIR_READS = {"LOAD_FAST_LOAD_FAST": slice(0, 2), "STORE_FAST_LOAD_FAST": slice(1, 2)}
_ENDS = frozenset({"RETURN_VALUE", "RAISE_VARARGS", "RERAISE", "RETURN_CONST"})
_UNCONDITIONAL = frozenset({"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP", "JUMP_NO_INTERRUPT"})


def reachable(program: Any, start: int) -> Any:
    """The indices of the instructions reachable from ``start`` (falling through, jumps, the
    handlers of the instructions reached), each once."""
    instructions, labels, handlers = program.instructions, program.labels, program.handlers
    seen: set[int] = set()
    todo = [start]
    while todo:
        i = todo.pop()
        if i in seen or i >= len(instructions):
            continue
        seen.add(i)
        yield i
        inst = instructions[i]
        if handlers[i] is not None:
            todo.append(labels[handlers[i].target])
        if isinstance(inst.arg, Label):
            todo.append(labels[inst.arg])
        if inst.name not in _ENDS and inst.name not in _UNCONDITIONAL:
            todo.append(i + 1)


def live_locals(program: Any, target: int) -> set[str]:
    """Locals read by any instruction reachable from ``target`` (jumps, handlers included)."""
    live: set[str] = set()
    for i in reachable(program, target):
        inst = program.instructions[i]
        if inst.name in _READS:
            if isinstance(inst.arg, str):  # (3.13: a CellVar, loading the cell for a closure)
                live.add(inst.arg)
        elif inst.name in _PAIR_READS:
            live.update(inst.arg[_PAIR_READS[inst.name]])
    first = super_reads(program.code)
    if first is not None:
        live.add(first)  # (read by a zero-argument super() from the frame, by no instruction)
    return live


def super_reads(code: types.CodeType) -> str | None:
    """The local a zero-argument ``super()`` in ``code`` reads from the frame, or None: the
    first argument of a method whose class gives it the ``__class__`` cell. CPython reads the
    frame's first local slot when ``super()`` runs (on 3.11 no instruction names it), so a
    continuation must hold it there."""
    has_first = code.co_argcount + code.co_kwonlyargcount or code.co_flags & 0x04  # (VARARGS)
    if "__class__" not in code.co_freevars or not has_first or code.co_varnames[0] in code.co_cellvars:
        return None
    return code.co_varnames[0]


# Every continuation's name starts so (``__resume_in_fn_at_12``; a chain of nested breaks'
# ``__resume_nested_...``): ``explain`` and ``Callees`` tell continuations by it.
CONTINUATION_PREFIX = "__resume_"


def _continuation_name(code: types.CodeType, line: Any, target: int, made: dict[Any, types.CodeType]) -> str:
    """``__resume_in_<function>_at_<line>`` (torch.compile says ``torch_dynamo_resume_in_<fn>_at_<line>``),
    the line where it resumes; ``_2``, ``_3``... after a second one resuming on that line."""
    base = f"{CONTINUATION_PREFIX}in_{code.co_name}_at_{line if isinstance(line, int) else 'offset_' + str(offsets(code)[target])}"
    taken = sum(1 for other in made.values() if other.co_name == base or other.co_name.startswith(base + "_"))
    return base if not taken else f"{base}_{taken + 1}"


def offsets(code: types.CodeType) -> list[int]:
    """The byte offset of each abstract instruction, as ``dis`` shows it."""
    return [i.offset for i in dis.get_instructions(code) if i.opname not in ("EXTENDED_ARG", "CACHE")]


def set_handler_depths(code: types.CodeType, items: list[Any]) -> None:
    """Give each ``TryBegin`` of ``Bytecode.from_code(code)`` its stack depth from the code's
    exception table (bytecode leaves 0 there and recomputes it when it assembles, which a
    continuation, entered mid-block, must not let it do)."""
    entries = dis.Bytecode(code).exception_entries
    where = offsets(code)
    index = 0
    pending: list[TryBegin] = []
    for item in items:
        if isinstance(item, TryBegin):
            pending.append(item)
        elif isinstance(item, Instr):
            for begin in pending:
                offset = where[index]
                entry = next(e for e in entries if e.start <= offset < e.end)
                begin.stack_depth = entry.depth
            pending.clear()
            index += 1


_made: "weakref.WeakKeyDictionary[types.CodeType, dict[tuple, types.CodeType]]" = weakref.WeakKeyDictionary()
# A continuation's code -> (the original code, the original index of each of its instructions:
# None for the prologue's).
_origin: "weakref.WeakKeyDictionary[types.CodeType, tuple[types.CodeType, list[int | None]]]" = \
    weakref.WeakKeyDictionary()


# Continuations that take the cells of the original's free variables as parameters.
_cells_as_args: "weakref.WeakSet[types.CodeType]" = weakref.WeakSet()


# The functions that chain a nested break's continuations (``breaks._chained``): symexec's code,
# but continuations all the same (a break inside one goes on inside it).
chain_codes: "weakref.WeakSet[types.CodeType]" = weakref.WeakSet()


def is_continuation(code: types.CodeType) -> bool:
    return code in _origin


def original_position(code: types.CodeType, index: int) -> tuple[types.CodeType, int]:
    """Map an instruction of a continuation back to the original code, so that a
    continuation that breaks again resumes into the original (a loop with a break in its
    body reuses one continuation instead of nesting new ones)."""
    origin = _origin.get(code)
    if origin is None:
        return code, index
    original, positions = origin
    if positions[index] is None:
        raise Unsupported("a graph break inside a continuation's prologue")
    return original, positions[index]


def resume_code(code: types.CodeType, target: int, nulls: list[bool], live: list[str],
                cells_as_args: bool = False) -> types.CodeType:
    """The continuation of ``code`` at abstract instruction ``target`` (cached). ``nulls`` says,
    for each stack slot from the bottom, whether it holds CPython's NULL (pushed by the
    prologue: NULL cannot be passed as an argument); the other slots are parameters.

    ``cells_as_args``: the cells of the original's free variables are parameters too (after its
    own cells), so the continuation needs no closure: one function serves every closure of the
    code (a nested break's callee, which the guards pin by code, not identity). A continuation
    of such a continuation is one too (``co_cellvars`` names every cell it takes)."""
    cells_as_args = cells_as_args or code in _cells_as_args
    code, target = original_position(code, target)
    key = (target, tuple(nulls), tuple(live), cells_as_args)
    made = _made.setdefault(code, {})
    if key in made:
        return made[key]
    if code.co_flags & (0x20 | 0x80 | 0x100 | 0x200):  # generator, coroutine, async generator
        raise Unsupported(f"a graph break in the generator or coroutine {code.co_name}")
    original = Bytecode.from_code(code)
    set_handler_depths(code, list(original))
    label = Label()
    items: list[Any] = []
    positions: list[int] = []  # the original index of each of our instructions after the prologue
    index = 0
    resumes_at_line = None  # (the target instruction's line: the continuation's name says it)
    for item in original:
        if isinstance(item, Instr):
            if index == target:
                items.append(label)
                resumes_at_line = item.lineno
            # 3.13's two-local instructions are written as their two halves: the parameters
            # come first here, and a local's index past 15 cannot be packed into one.
            halves = split_superinstruction(item)
            if cells_as_args:
                halves = [_free_as_cell(half) for half in halves]
            items += halves
            positions += [index] * len(halves)
            index += 1
        else:
            items.append(item)
    lineno = code.co_firstlineno
    free = () if cells_as_args else code.co_freevars
    cells = (*code.co_cellvars, *code.co_freevars) if cells_as_args else code.co_cellvars
    prologue: list[Any] = assembler.prologue(free, lineno)
    prologue += [Instr("PUSH_NULL", lineno=lineno) if null else Instr("LOAD_FAST", f"___stack{i}", lineno=lineno)
                 for i, null in enumerate(nulls)]
    prologue.append(Instr("JUMP_FORWARD", label, lineno=lineno))
    # Cell variables come last, as the cells themselves: the prologue skips the original's
    # MAKE_CELL, so their slots hold the cells the caller made (and shared with inner functions).
    argnames = [*[f"___stack{i}" for i, null in enumerate(nulls) if not null], *live, *cells]
    first = super_reads(code)
    if first is not None and first in live and argnames[0] != first:
        # The first slot must hold what super() reads: a stack value is loaded by now (its
        # slot is free); a live local is moved to a slot of its own first.
        if not argnames[0].startswith("___stack"):
            prologue.insert(-1 - len(nulls), Instr("STORE_FAST", argnames[0], lineno=lineno))
            prologue.insert(-2 - len(nulls), Instr("LOAD_FAST", "___slot0", lineno=lineno))
            argnames[0] = "___slot0"
        prologue[-1:-1] = [Instr("LOAD_FAST", first, lineno=lineno), Instr("STORE_FAST", argnames[0], lineno=lineno)]
    name = _continuation_name(code, resumes_at_line, target, made)
    signature = assembler.Signature(
        name=name, argnames=tuple(argnames), argcount=len(argnames), posonlyargcount=0, kwonlyargcount=0,
        freevars=free, cellvars=cells,
        flags=code.co_flags & (0x01 | 0x02 | 0x10),  # OPTIMIZED, NEWLOCALS, NESTED
        filename=code.co_filename, first_lineno=code.co_firstlineno)
    # The stack never runs deeper than in the original code, and the handlers' depths are the
    # original ones: the flow analysis of bytecode, entering mid-block, could miss both.
    new = assembler.assemble(prologue + items, signature, stacksize=code.co_stacksize)
    made[key] = new
    _origin[new] = (code, [None] * len(prologue) + positions)
    if cells_as_args:
        _cells_as_args.add(new)
    return new


def _free_as_cell(inst: Instr) -> Instr:
    """``inst`` where the code's free variables are its own cells (``cells_as_args``); its
    COPY_FREE_VARS (before any continuation's entry: never run) is a NOP."""
    if inst.name == "COPY_FREE_VARS":
        return Instr("NOP", lineno=inst.lineno)
    if isinstance(inst.arg, FreeVar):
        return Instr(inst.name, CellVar(inst.arg.name), lineno=inst.lineno)
    return inst


def handler_of(program: Any, index: int) -> TryBegin | None:
    return program.handlers[index]


@dataclasses.dataclass(frozen=True)
class Opened:
    """A function's code run with no closure (``opened``): ``code`` takes the parameters named in
    ``live`` (in that order), then the cells of the original's cell variables and of its free
    variables, as a continuation of it at its first instruction does; ``binder`` has the
    original's parameters and returns them as a tuple, in ``co_varnames`` order (a call binds
    to it as to the original, with the original's defaults given to it); ``live`` and
    ``cell_params`` index that tuple (-1: a cell variable that is no parameter, empty at entry)."""

    code: types.CodeType
    binder: types.CodeType
    live: tuple[int, ...]
    cell_params: tuple[int, ...]


_opened: "weakref.WeakKeyDictionary[types.CodeType, Opened]" = weakref.WeakKeyDictionary()


def opened(code: types.CodeType) -> Opened:
    """``code`` as a function that takes its closure's cells as arguments (cached): one function,
    and so one compiled wrapper, for every closure of the code (a closure made anew by each call
    of its maker runs the entries traced for the one before, as Dynamo's cache is one per code
    object and guards the cells' contents)."""
    known = _opened.get(code)
    if known is not None:
        return known
    if "__class__" in code.co_freevars:  # (zero-argument super() reads it as a free variable only)
        raise Unsupported(f"{code.co_qualname} has a __class__ cell")
    flags = code.co_flags
    count = code.co_argcount + code.co_kwonlyargcount + bool(flags & 0x04) + bool(flags & 0x08)  # VARARGS, VARKEYWORDS
    params = code.co_varnames[:count]
    instructions = [i for i in Bytecode.from_code(code) if isinstance(i, Instr)]
    start = next((n for n, inst in enumerate(instructions) if inst.name == "RESUME"), None)
    if start is None:
        raise Unsupported(f"the code of {code.co_qualname} has no RESUME")
    live = [name for name in params if name not in code.co_cellvars]
    continuation = resume_code(code, start + 1, [], live, cells_as_args=True)
    # Named as the original (explain shows it as the function it is), and known as a
    # continuation of it (its cells come in as arguments; a break in it resumes in the original).
    made = continuation.replace(co_name=code.co_name, co_qualname=code.co_qualname)
    _origin[made] = _origin[continuation]
    _cells_as_args.add(made)
    lineno = code.co_firstlineno
    body = [*assembler.prologue((), lineno), *(Instr("LOAD_FAST", name, lineno=lineno) for name in params),
            Instr("BUILD_TUPLE", len(params), lineno=lineno), Instr("RETURN_VALUE", lineno=lineno)]
    binder = assembler.assemble(body, assembler.Signature(
        name=code.co_name, argnames=params, argcount=code.co_argcount, posonlyargcount=code.co_posonlyargcount,
        kwonlyargcount=code.co_kwonlyargcount, freevars=(), cellvars=(), flags=flags & (0x01 | 0x02 | 0x04 | 0x08),
        filename=code.co_filename, first_lineno=lineno))
    result = _opened[code] = Opened(made, binder, tuple(params.index(name) for name in live),
                                    tuple(params.index(name) if name in params else -1 for name in code.co_cellvars))
    return result
