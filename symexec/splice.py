"""An entry's guards spliced in front of its replacement, at the level of code objects.

A cache entry has two generated functions: its guard ``check``, compiled by CPython from the
guards' source (``try: return <guards>`` / ``except Exception: return False``), and its
replacement, assembled by codegen. ``splice_guards`` makes one code object of the two, so that
a cache hit is one call, which returns MISS when the guards fail:

    [COPY_FREE_VARS n] RESUME 0        the replacement's prologue
    <the guard's body>                 its returns jump to the glue, its globals are constants
    glue: [TO_BOOL] POP_JUMP_IF_TRUE body
    miss: LOAD_CONST MISS; RETURN_VALUE
    body: <the replacement's body>

It works on the two codes' bytes, never on per-instruction objects. A guard over a model is
large (the 1,700 guards of a twelve-layer GPT-2 are 57,000 code units, seven times its
replacement): converting it to the ``bytecode`` package's objects and assembling everything
again took two seconds, half of them in the garbage collector walking the model's objects;
this takes some 30 milliseconds, and a few tenths of one for a small function.

- The guard keeps its numbering: its constants, names and locals come first in the merged
  code, so its bytes are copied as they are. Only its LOAD_GLOBALs (its globals are not the
  replacement's) and its returns change, found by one regular expression over the opcode
  bytes: a global becomes LOAD_CONST of its value, a return a jump into the glue. None gets
  longer, so every jump of the guard is re-pointed by subtracting the units removed between
  its two ends, and none needs a longer EXTENDED_ARG (one it no longer needs becomes a NOP).
- The replacement, renumbered after the guard's tables, is decoded and encoded again (its
  jumps may need longer arguments now), with its exception and location tables.

What it does not know it refuses (None), and the entry keeps its two calls: a guard with cells,
free variables, nested functions or global stores, a global it cannot resolve, parameters
spelled differently in the two codes.
"""

from __future__ import annotations

import bisect
import builtins
import dis
import functools
import gc
import itertools
import re
import sys
import types
import weakref
from typing import Any

from bytecode import ConcreteInstr

from . import assembler, versions

_OP = dis.opmap
_NAME = dis.opname
_EXTENDED_ARG = _OP["EXTENDED_ARG"]
_CACHE = _OP["CACHE"]  # in co_code, every inline cache unit reads as CACHE with argument 0
_LOAD_GLOBAL, _LOAD_CONST, _PUSH_NULL = _OP["LOAD_GLOBAL"], _OP["LOAD_CONST"], _OP["PUSH_NULL"]
_RESUME, _RETURN_VALUE, _JUMP_FORWARD, _NOP = _OP["RESUME"], _OP["RETURN_VALUE"], _OP["JUMP_FORWARD"], _OP["NOP"]
_RETURN_CONST = _OP.get("RETURN_CONST", -1)  # (3.12 on)
_JUMPS = frozenset(op for op in dis.hasjrel if op < 256)  # (3.12's pseudo-ops JUMP... lie above)
_BACKWARD = frozenset(op for op in _JUMPS if "BACKWARD" in _NAME[op])
_CONSTS = frozenset(dis.hasconst)
_NAMES = frozenset(dis.hasname)
_SLOTS = frozenset(dis.haslocal) | frozenset(dis.hasfree)  # an index into the frame's slots
# The bits below a name's index in a name opcode's argument.
_NAME_SHIFT = {_OP[name]: shift for name, shift in (
    ("LOAD_GLOBAL", 1), ("LOAD_ATTR", 1 if versions.V.attr_arg_has_bit else 0), ("LOAD_SUPER_ATTR", 2)) if name in _OP}
# 3.13's fused pairs, two slot indices of four bits each, and what each splits into.
_PAIRS = {_OP[name]: (_OP[first], _OP[second]) for name, first, second in (
    ("LOAD_FAST_LOAD_FAST", "LOAD_FAST", "LOAD_FAST"),
    ("STORE_FAST_LOAD_FAST", "STORE_FAST", "LOAD_FAST"),
    ("STORE_FAST_STORE_FAST", "STORE_FAST", "STORE_FAST")) if name in _OP}
# What a guard's code may not hold: cells and free variables, functions made (their globals
# would be the replacement's), code that reads or writes a namespace or the frame's globals.
_GUARD_REFUSED = (frozenset(dis.hasfree)
                  | {_OP[name] for name in ("MAKE_FUNCTION", "COPY_FREE_VARS", "RETURN_GENERATOR", "LOAD_NAME",
                                            "STORE_NAME", "DELETE_NAME", "STORE_GLOBAL", "DELETE_GLOBAL",
                                            "IMPORT_NAME", "IMPORT_STAR", "LOAD_BUILD_CLASS", "LOAD_LOCALS",
                                            "YIELD_VALUE") if name in _OP})
_PROLOGUE = frozenset(_OP[name] for name in ("MAKE_CELL", "COPY_FREE_VARS"))  # what may come before RESUME
_GENERATOR_FLAGS = 0x20 | 0x80 | 0x100 | 0x200  # GENERATOR, COROUTINE, ITERABLE_COROUTINE, ASYNC_GENERATOR


# What the guard's rewriting looks at, found by one regular expression over its opcode bytes.
_KIND = {op: "jump" for op in _JUMPS} | {op: "refused" for op in _GUARD_REFUSED} | {
    _LOAD_GLOBAL: "global", _RESUME: "resume", _RETURN_VALUE: "return", _RETURN_CONST: "return"}
_KIND.pop(-1, None)
_INTERESTING = re.compile(b"[" + b"".join(re.escape(bytes((op,))) for op in sorted(_KIND)) + b"]")


@functools.cache
def _cache_units(op: int) -> int:
    """The inline cache units the running Python gives an instruction we write."""
    try:
        return ConcreteInstr(_NAME[op], 0).use_cache_opcodes()
    except (TypeError, ValueError):  # (an opcode without an argument)
        return ConcreteInstr(_NAME[op]).use_cache_opcodes()


_CACHES = [_cache_units(op) if _KIND.get(op, "refused") != "refused" else 0 for op in range(256)]  # (the rewritten)


def _ext_units(arg: int) -> int:
    return 0 if arg < 0x100 else 1 if arg < 0x10000 else 2 if arg < 0x1000000 else 3


@functools.cache
def _instr(op: int, arg: int = 0) -> bytes:
    """One instruction's code units: the EXTENDED_ARGs its argument needs, itself, its caches."""
    prefix = b"".join(bytes((_EXTENDED_ARG, (arg >> (8 * k)) & 0xFF)) for k in range(_ext_units(arg), 0, -1))
    return prefix + bytes((op, arg & 0xFF)) + bytes(2 * _cache_units(op))


class _Tables:
    """The merged code's constants, names and locals: the guard's, then the replacement's."""

    def __init__(self, guard: types.CodeType) -> None:
        self.consts = list(guard.co_consts)
        self.names = list(guard.co_names)
        self.varnames = list(guard.co_varnames)
        self.frozen: dict[str, int] = {}  # a global the guard reads -> the constant holding it

    def const(self, value: Any) -> int:
        self.consts.append(value)  # (appended, never merged: an equal object is another object)
        return len(self.consts) - 1


# -- the guard ---------------------------------------------------------------------------------
class _Guard:
    """The guard's body as it goes into the merged code: ``code``, from the unit after its
    RESUME; ``moved(unit)``: where a unit of the original lands in it; ``returns``: the unit of
    each jump a return became, and whether it tests the value on the stack, passes or fails."""

    def __init__(self, code: bytearray, ends: list[int], removed: list[int]) -> None:
        self.code, self._ends, self._removed = code, ends, removed
        self.returns: list[tuple[int, str]] = []

    def moved(self, unit: int) -> int:
        return unit - self._removed[bisect.bisect_right(self._ends, unit)]


def _lives_with_its_module(value: Any, depth: int = 4) -> bool:
    """Whether ``value`` may become a constant of the spliced code. The garbage collector does not
    see into code objects: an object held there counts as held from outside, and a cycle through
    it (a class defined inside a function: its ``__mro__``, its methods' cells) outlives its last
    user until the entry's code is freed, one collection later. So nothing goes in that reaches,
    through tuples, cells and bound methods, a function defined inside a function or a class its
    module does not name by its qualified name (one defined inside a function, or made by
    ``type()``): an entry whose guards hold one keeps its two calls. Only types and namespaces
    are read, so no user code runs (an isinstance() would read a user's ``__class__``, a
    module's ``__getattr__`` would import)."""
    kind = type(value)
    if depth == 0 or not gc.is_tracked(value) or issubclass(kind, (weakref.ref, types.ModuleType)):
        return True
    if kind is types.FunctionType:  # (one a class body made: a method, a property's getter)
        return "<locals>" not in value.__qualname__ and value.__module__ in sys.modules
    if issubclass(kind, type):
        module, qualname = type.__dict__["__module__"].__get__(value), type.__dict__["__qualname__"].__get__(value)
        found: Any = sys.modules.get(module) if type(module) is str else None
        for part in qualname.split("."):
            found = _namespace(found).get(part)
        return found is value
    if kind in (tuple, frozenset, types.CellType, types.MethodType, types.BuiltinFunctionType):
        # (what guards hold by identity: a class's __mro__, closure cells, bound methods)
        return all(_lives_with_its_module(held, depth - 1) for held in gc.get_referents(value))
    return True  # (a namespace, a container of the guards' own: its classes are guarded by __mro__)


def _namespace(owner: Any) -> dict[str, Any]:
    """A module's or a class's own namespace (read as a dict: no ``__getattr__`` runs)."""
    if type(owner) is types.ModuleType or issubclass(type(owner), type):
        return object.__getattribute__(owner, "__dict__")
    return {}


def _compact_guard(guard: types.CodeType, tables: _Tables, namespace: dict[str, Any], held: tuple[Any, ...]) -> _Guard | None:
    raw = guard.co_code
    ops, args = raw[0::2], raw[1::2]  # per code unit: an opcode (EXTENDED_ARG, 0 for a cache) and its byte
    builtin = namespace.get("__builtins__", builtins)
    builtin = builtin.__dict__ if isinstance(builtin, types.ModuleType) else builtin
    null_above = versions.V.null_above_callable
    loads: dict[int, bytes] = {}  # a LOAD_GLOBAL's argument -> what replaces it
    pieces: list[bytes] = []
    ends, removed = [], [0]  # each rewritten instruction's end (old units), the units removed up to it
    returns = []  # (old unit of a rewritten return, its kind)
    jumps = []  # (first unit, opcode's unit, unit after its caches, argument)
    copied = 0  # the old unit up to which the code is in pieces
    for unit in [match.start() for match in _INTERESTING.finditer(ops)]:
        op = ops[unit]
        start, end = unit, unit + 1 + _CACHES[op]
        while start and ops[start - 1] == _EXTENDED_ARG:
            start -= 1
        if ops.count(_CACHE, unit + 1, end) != end - unit - 1 or ops[end:end + 1] == b"\0":
            return None  # (not the caches this Python gives it: not code we know how to read)
        arg = args[unit] if start == unit else int.from_bytes(args[start:unit + 1], "big")
        kind = _KIND[op]
        if kind == "jump":
            jumps.append((start, unit, end, arg))
            continue
        if kind == "global":
            new = loads.get(arg)
            if new is None:
                name = guard.co_names[arg >> 1]
                if name not in tables.frozen:
                    if name not in namespace and name not in builtin:
                        return None
                    value = namespace[name] if name in namespace else builtin[name]
                    if not (any(value is h for h in held) or _lives_with_its_module(value)):
                        return None
                    tables.frozen[name] = tables.const(value)
                new = _instr(_LOAD_CONST, tables.frozen[name])
                if arg & 1:
                    new = new + _instr(_PUSH_NULL) if null_above else _instr(_PUSH_NULL) + new
                loads[arg] = new
        elif kind == "return":  # a jump of one unit, pointed into the glue once the guard's length is known
            returns.append((start, "test" if op == _RETURN_VALUE else "pass" if guard.co_consts[arg] else "fail"))
            new = _instr(_JUMP_FORWARD, 0)
        elif kind == "resume" and start == 0:
            new = b""
        else:
            return None
        pieces += [raw[2 * copied:2 * start], new]
        copied = end
        ends.append(end)
        removed.append(removed[-1] + (end - start) - len(new) // 2)
    if not ends or ends[0] != 1:  # (the guard starts with its RESUME)
        return None
    pieces.append(raw[2 * copied:])
    compacted = _Guard(bytearray(b"".join(pieces)), ends, removed)
    moved, code = compacted.moved, compacted.code
    compacted.returns = [(moved(start), kind) for start, kind in returns]
    for start, unit, after, arg in jumps:  # each spans what it did, less what was removed in it
        if ops[unit] in _BACKWARD:
            new_arg = moved(after) - moved(after - arg)
        else:
            new_arg = moved(after + arg) - moved(after)
        at = moved(start)
        spare = unit - start - _ext_units(new_arg)  # (the argument only shrank: as many units, or more)
        for k in range(unit - start, -1, -1):
            if k < spare:  # an EXTENDED_ARG no longer needed: a NOP (CPython asserts EXTENDED_ARG 0 away)
                code[2 * (at + k):2 * (at + k) + 2] = bytes((_NOP, 0))
            else:
                code[2 * (at + k) + 1] = new_arg & 0xFF
                new_arg >>= 8
    return compacted


# -- the replacement ---------------------------------------------------------------------------
class _Stream:
    """Instructions as parallel lists; ``targets[i]``: the index of the instruction a jump
    lands on, -1 for none."""

    def __init__(self) -> None:
        self.ops: list[int] = []
        self.args: list[int] = []
        self.caches: list[int] = []
        self.targets: list[int] = []
        self.pos: list[Any] = []

    def add(self, op: int, arg: int, caches: int, pos: Any, target: int = -1) -> None:
        self.ops.append(op)
        self.args.append(arg)
        self.caches.append(caches)
        self.targets.append(target)
        self.pos.append(pos)


def _decode(code: types.CodeType) -> tuple[_Stream, list[tuple[int, int, int, int, int]]]:
    """``code``'s instructions (EXTENDED_ARG folded in, caches counted, jumps resolved) and its
    exception table as (first, after, handler, depth, lasti) instruction indices."""
    raw = code.co_code
    positions = list(code.co_positions())
    size = len(raw) // 2
    out = _Stream()
    owner = [0] * (size + 1)  # the instruction each code unit belongs to
    ends = []
    start = unit = ext = 0
    while unit < size:
        op = raw[2 * unit]
        if op == _EXTENDED_ARG:
            ext = (ext | raw[2 * unit + 1]) << 8
            unit += 1
            continue
        end = unit + 1
        while end < size and raw[2 * end] == _CACHE:
            end += 1
        owner[start:end] = [len(out.ops)] * (end - start)
        out.add(op, ext | raw[2 * unit + 1], end - unit - 1, positions[unit])
        ends.append(end)
        start = unit = end
        ext = 0
    owner[size] = len(out.ops)
    out.targets = [-1 if op not in _JUMPS else owner[end - arg if op in _BACKWARD else end + arg]
                   for op, arg, end in zip(out.ops, out.args, ends)]
    entries = [(owner[first], owner[after], owner[handler], depth, lasti)
               for first, after, handler, depth, lasti in _exception_table(code.co_exceptiontable)]
    return out, entries


def _renumber(code: types.CodeType, tables: _Tables) -> tuple[_Stream, list[tuple[int, int, int, int, int]]]:
    """``code`` with its constants, names and slots moved after the guard's in ``tables``."""
    decoded, entries = _decode(code)
    const_base, name_base = len(tables.consts), len(tables.names)
    tables.consts += code.co_consts
    tables.names += code.co_names
    index = {name: i for i, name in enumerate(tables.varnames)}
    for name in code.co_varnames:
        if name not in index:
            index[name] = len(tables.varnames)
            tables.varnames.append(name)
    nlocals = code.co_nlocals
    slots = [index[name] for name in code.co_varnames]

    def slot(arg: int) -> int:  # a local, or a free variable after all the locals
        return slots[arg] if arg < nlocals else arg - nlocals + len(tables.varnames)

    out = _Stream()
    moved = []  # each decoded instruction -> its first one in out
    for op, arg, caches, target, pos in zip(decoded.ops, decoded.args, decoded.caches, decoded.targets, decoded.pos):
        moved.append(len(out.ops))
        if op in _CONSTS:
            out.add(op, const_base + arg, caches, pos)
        elif op in _NAMES:
            shift = _NAME_SHIFT.get(op, 0)
            out.add(op, ((arg >> shift) + name_base) << shift | (arg & ((1 << shift) - 1)), caches, pos)
        elif op in _PAIRS:
            first, second = slot(arg >> 4), slot(arg & 15)
            if first < 16 and second < 16:
                out.add(op, first << 4 | second, caches, pos)
            else:  # (a slot no longer fits in four bits: the two instructions it fused)
                out.add(_PAIRS[op][0], first, 0, pos)
                out.add(_PAIRS[op][1], second, 0, pos)
        elif op in _SLOTS:
            out.add(op, slot(arg), caches, pos)
        else:
            out.add(op, arg, caches, pos, target)
    moved.append(len(out.ops))
    out.targets = [moved[t] if t >= 0 else -1 for t in out.targets]
    return out, [(moved[first], moved[after], moved[handler], depth, lasti)
                 for first, after, handler, depth, lasti in entries]


def _layout(out: _Stream) -> tuple[list[int], list[int]]:
    """Each instruction's first code unit (and the count at the end), and its EXTENDED_ARG
    units, once every jump's argument fits (an argument that grows an EXTENDED_ARG moves what
    follows: repeat until none does)."""
    jumps = [i for i, target in enumerate(out.targets) if target >= 0]
    ext = [_ext_units(arg) for arg in out.args]
    for i in jumps:
        ext[i] = 0
    args, targets, ops = out.args, out.targets, out.ops
    while True:
        offsets = list(itertools.accumulate((1 + e + c for e, c in zip(ext, out.caches)), initial=0))
        grown = False
        for i in jumps:
            after, target = offsets[i + 1], offsets[targets[i]]
            arg = args[i] = after - target if ops[i] in _BACKWARD else target - after
            if arg < 0:
                raise ValueError(f"{_NAME[ops[i]]} at {i} jumps the wrong way")
            if _ext_units(arg) > ext[i]:
                ext[i] = _ext_units(arg)
                grown = True
        if not grown:
            return offsets, ext


def _stream_bytes(out: _Stream, ext: list[int]) -> bytes:
    chunks = []
    for op, arg, caches, e in zip(out.ops, out.args, out.caches, ext):
        for k in range(e, 0, -1):
            chunks.append(bytes((_EXTENDED_ARG, (arg >> (8 * k)) & 0xFF)))
        chunks.append(bytes((op, arg & 0xFF)) + bytes(2 * caches) if caches else bytes((op, arg & 0xFF)))
    return b"".join(chunks)


# -- tables ------------------------------------------------------------------------------------
def _exception_table(table: bytes) -> list[tuple[int, int, int, int, int]]:
    """(first unit, unit after, handler unit, depth, lasti) for each entry of ``co_exceptiontable``."""
    entries = []
    i = 0

    def varint() -> int:  # six bits a byte, most significant first; 0x40: more follow
        nonlocal i
        byte = table[i]
        value = byte & 63
        i += 1
        while byte & 64:
            byte = table[i]
            value = (value << 6) | (byte & 63)
            i += 1
        return value

    while i < len(table):
        first, length, target, depth_lasti = varint(), varint(), varint(), varint()
        entries.append((first, first + length, target, depth_lasti >> 1, depth_lasti & 1))
    return entries


def _exception_bytes(entries: list[tuple[int, int, int, int, int]]) -> bytes:
    """``co_exceptiontable`` of (first unit, unit after, handler unit, depth, lasti) entries."""
    out = bytearray()

    def item(value: int, first: bool = False) -> None:  # most significant six bits first
        chunks = [value & 63]
        while value >= 64:
            value >>= 6
            chunks.append(value & 63)
        for k, chunk in enumerate(reversed(chunks)):
            out.append(chunk | (64 if k < len(chunks) - 1 else 0) | (128 if first and k == 0 else 0))

    for start, stop, handler, depth, lasti in entries:
        if stop > start:
            item(start, first=True)
            item(stop - start)
            item(handler)
            item(depth << 1 | lasti)
    return bytes(out)


def _varint(out: bytearray, value: int) -> None:  # six bits a byte, least significant first
    while value >= 64:
        out.append(64 | (value & 63))
        value >>= 6
    out.append(value)


def _location_table(runs: list[tuple[Any, int]], first_line: int) -> bytes:
    """``co_linetable`` (the format of CPython's Objects/locations.md, 3.11 to 3.13) for runs of
    (position, code units), eight units at most an entry."""
    out = bytearray()
    line = first_line
    for pos, units in runs:
        first = min(units, 8)
        out += _location_entry(pos, first, line)
        line = pos[0] if pos[0] is not None else line
        full, last = divmod(units - first, 8)
        if full:
            out += _location_entry(pos, 8, line) * full  # (the line is the same: the same bytes)
        if last:
            out += _location_entry(pos, last, line)
    return bytes(out)


def _location_entry(pos: Any, length: int, line: int) -> bytes:
    """One entry: ``length`` code units at ``pos``, the previous entry's line being ``line``."""
    lineno, end_lineno, col, end_col = pos
    if lineno is None:
        return bytes((0x80 | 15 << 3 | (length - 1),))  # no location
    delta = lineno - line
    out = bytearray()
    if col is None or end_col is None:
        out.append(0x80 | 13 << 3 | (length - 1))  # the line only
        _varint(out, delta << 1 if delta >= 0 else (-delta) << 1 | 1)
        return bytes(out)
    out.append(0x80 | 14 << 3 | (length - 1))  # the long form
    _varint(out, delta << 1 if delta >= 0 else (-delta) << 1 | 1)
    _varint(out, (end_lineno if end_lineno is not None else lineno) - lineno)
    _varint(out, col + 1)
    _varint(out, end_col + 1)
    return bytes(out)


def _runs(positions: list[Any], offsets: list[int], start: int, stop: int) -> list[tuple[Any, int]]:
    """(position, units) runs of instructions [start, stop)."""
    runs: list[list[Any]] = []
    for i in range(start, stop):
        units = offsets[i + 1] - offsets[i]
        if runs and runs[-1][0] == positions[i]:
            runs[-1][1] += units
        else:
            runs.append([positions[i], units])
    return [(pos, units) for pos, units in runs]


class _Glue:
    """``[TO_BOOL] POP_JUMP_IF_TRUE body; miss: LOAD_CONST MISS; RETURN_VALUE; body:``."""

    def __init__(self, miss_const: int) -> None:
        test = _instr(_OP["TO_BOOL"]) if versions.needs_bool_before("POP_JUMP_IF_TRUE") else b""
        fail = _instr(_LOAD_CONST, miss_const) + _instr(_RETURN_VALUE)
        jump = _instr(_OP[versions.jump_name("POP_JUMP_IF_TRUE")], len(fail) // 2)
        self.code = test + jump + fail
        self.miss = (len(test) + len(jump)) // 2  # units from the glue's start
        self.size = len(self.code) // 2


# -- the splice --------------------------------------------------------------------------------
def splice_guards(guard: types.CodeType, replacement: types.CodeType, namespace: dict[str, Any],
                  miss: Any, held: tuple[Any, ...] = ()) -> types.CodeType | None:
    """One code object: ``guard``'s body (a function of ``replacement``'s parameters over the
    globals ``namespace``, returning whether the guards pass), then ``miss`` returned where it
    returned a false value, else ``replacement``'s body. None where it cannot be spliced."""
    signature = (replacement.co_argcount, replacement.co_posonlyargcount, replacement.co_kwonlyargcount,
                 replacement.co_flags & 0x0C)
    if signature != (guard.co_argcount, guard.co_posonlyargcount, guard.co_kwonlyargcount, guard.co_flags & 0x0C):
        return None
    nargs = replacement.co_argcount + replacement.co_kwonlyargcount + bin(signature[3]).count("1")
    if guard.co_varnames[:nargs] != replacement.co_varnames[:nargs]:
        return None  # (a parameter whose name Python source cannot write)
    if guard.co_flags & _GENERATOR_FLAGS or guard.co_cellvars or guard.co_freevars:
        return None
    tables = _Tables(guard)
    compacted = _compact_guard(guard, tables, namespace, held)
    if compacted is None:
        return None
    glue = _Glue(tables.const(miss))
    body, body_entries = _renumber(replacement, tables)
    resume = body.ops.index(_RESUME) if _RESUME in body.ops else -1
    if resume < 0 or resume + 1 == len(body.ops) or any(op not in _PROLOGUE for op in body.ops[:resume]):
        return None
    offsets, ext = _layout(body)
    body_code = _stream_bytes(body, ext)

    # [prologue][guard][glue][body]: the guard's returns jump into the glue.
    prologue = offsets[resume + 1]
    guard_units = len(compacted.code) // 2
    for unit, kind in compacted.returns:
        target = {"test": 0, "fail": glue.miss, "pass": glue.size}[kind]
        arg = guard_units + target - (unit + 1)
        if arg >= 0x100:
            return None  # (a return far from the end: CPython puts them last)
        compacted.code[2 * unit + 1] = arg
    inserted = guard_units + glue.size
    entries = [(prologue + compacted.moved(first), prologue + compacted.moved(after),
                prologue + compacted.moved(handler), depth, lasti)
               for first, after, handler, depth, lasti in _exception_table(guard.co_exceptiontable)]
    entries += [tuple(offsets[i] + (inserted if i > resume else 0) for i in (first, after, handler)) + (depth, lasti)
                for first, after, handler, depth, lasti in body_entries]
    pos = body.pos[resume]  # (the guards report the line of the replacement's RESUME)
    runs = [*_runs(body.pos, offsets, 0, resume + 1), (pos, inserted),
            *_runs(body.pos, offsets, resume + 1, len(body.ops))]
    return assembler.checked(replacement.replace(
        co_code=body_code[:2 * prologue] + bytes(compacted.code) + glue.code + body_code[2 * prologue:],
        co_consts=tuple(tables.consts),
        co_names=tuple(tables.names),
        co_varnames=tuple(tables.varnames),
        co_nlocals=len(tables.varnames),
        co_stacksize=max(replacement.co_stacksize, guard.co_stacksize, 1),
        co_linetable=_location_table(runs, replacement.co_firstlineno),
        co_exceptiontable=_exception_bytes(entries),
    ))
