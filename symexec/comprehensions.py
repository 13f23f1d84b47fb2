"""Inlined comprehensions (3.12+, PEP 709) as one unit at a graph break.

On 3.11 a comprehension is a function of its own: a graph break inside it breaks at its call,
which runs as it is, and the trace carries on after it. From 3.12 its code sits inside the
function's own: ``LOAD_FAST_AND_CLEAR`` saves each of its variables, a try region runs the loop,
``SWAP``/``STORE_FAST`` put the saved values back, and a cleanup block restores them and re-raises.
So that a break inside one costs what it costs on 3.11 (and under torch.compile), the break moves
to the comprehension's first instruction and the generated code runs the comprehension's
instructions as they are (``breaks.py``), then calls the continuation after it.

A comprehension qualifies when its code can run in the replacement function unchanged: every
local it writes is one it saves and restores (so the locals after it are those before it), it
uses no cell of the frame, and no handler of the user's covers it (a ``try`` around it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .versions import V

_READS = ("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR")
_WRITES = ("STORE_FAST", "DELETE_FAST")


@dataclass
class Span:
    start: int  # the first LOAD_FAST_AND_CLEAR
    end: int  # the first instruction after the restoring STORE_FASTs
    cleanups: list[int]  # the first instruction of each cleanup block (this one's and nested ones')
    # Where the list, set or dict goes: left on the stack (None), or stored in that local by the
    # compiler's reordering of the restore (``STORE_FAST ys; STORE_FAST i``), or dropped ("").
    result: str | None = None
    reads: set[str] = field(default_factory=set)  # locals the code reads (they must be bound as traced)


def span_at(program: Any, index: int) -> Span | None:
    """The outermost qualifying comprehension that contains instruction ``index``."""
    found = [s for s in _scanned(program).comprehension_spans if s.start <= index < s.end]
    return min(found, key=lambda s: s.start) if found else None


def span_starting_at(program: Any, index: int) -> Span | None:
    span = span_at(program, index)
    return span if span is not None and span.start == index else None


def cleanup_block(program: Any, start: int) -> list[int]:
    """The instruction indices of the cleanup block at ``start``, up to its RERAISE."""
    indices = []
    for i in range(start, min(start + 16, len(program.instructions))):
        indices.append(i)
        if program.instructions[i].name == "RERAISE":
            return indices
    return []


def loop_head(program: Any, index: int) -> int:
    """``index``, or the start of the outermost inlined comprehension around it, qualifying or
    not: a break in a comprehension's loop is in a loop of the frame only where the
    comprehension is (on 3.11 it is a call of a function of its own)."""
    regions = _scanned(program).comprehension_regions
    return min((start for start, end in regions if start <= index < end), default=index)


def _scanned(program: Any) -> Any:
    """``program`` with its comprehensions found (once): every one's region, and the spans of
    those that qualify."""
    if program.comprehension_spans is None:
        candidates = _candidates(program)
        program.comprehension_regions = [(span.start, span.end) for span, _, _ in candidates]
        program.comprehension_spans = _qualifying(program, candidates)
    return program


def _qualifying(program: Any, candidates: list[tuple[Span, Any, list[str]]]) -> list[Span]:
    spans = []
    for span, target, names in candidates:
        inner = [c for c in candidates if span.start < c[0].start < span.end]
        cleared = set(names).union(*(c[2] for c in inner))
        targets = {target, *(c[1] for c in inner)}
        span.cleanups += [c[0].cleanups[0] for c in inner]
        if _qualifies(program, span, cleared, targets):
            spans.append(span)
    return spans


def _candidates(program: Any) -> list[tuple[Span, Any, list[str]]]:
    """Every inlined comprehension's span, its handler's target and the names it clears."""
    ins, handlers = program.instructions, program.handlers
    candidates: list[tuple[Span, Any, list[str]]] = []
    for s, inst in enumerate(ins):
        if inst.name != "LOAD_FAST_AND_CLEAR" or (s and ins[s - 1].name == "LOAD_FAST_AND_CLEAR"):
            continue
        names = []
        j = s
        while j < len(ins) and ins[j].name == "LOAD_FAST_AND_CLEAR":
            names.append(ins[j].arg)
            j += 1
        k = len(names)
        if not (j + 1 < len(ins) and ins[j].name == "SWAP" and ins[j].arg == k + 1 and handlers[j + 1] is not None):
            continue
        target = handlers[j + 1].target
        # BUILD_LIST 0 (or SET, MAP); SWAP 2; FOR_ITER to the loop's exit, after which comes the restore.
        loop = ins[j + 1: j + 4]
        if [i.name for i in loop[1:]] != ["SWAP", "FOR_ITER"] or loop[0].name not in ("BUILD_LIST", "BUILD_SET", "BUILD_MAP"):
            continue
        exit_at = program.labels[loop[2].arg]
        last = exit_at + len(V.loop_exit) - 1
        if tuple(i.name for i in ins[exit_at: last + 1]) != V.loop_exit:
            continue
        restored = _restore(ins, last + 1, names)
        if restored is None:
            continue
        end, result = restored
        span = Span(s, end, [program.labels[target]], result)
        candidates.append((span, target, names))
    return candidates


def _restore(ins: list[Any], at: int, names: list[str]) -> tuple[int, str | None] | None:
    """Where the restore after the loop ends, and where the result goes: ``SWAP k+1`` then the
    saved values stored back (the result stays on the stack), or, reordered by the compiler, the
    result stored or popped first and then the saved values."""
    ops: list[tuple[str, Any]] = []  # (kind, name), fused stores split, with the index after each
    ends: list[int] = []
    i = at
    while i < len(ins) and len(ops) < len(names) + 1:
        inst = ins[i]
        if inst.name == "STORE_FAST_STORE_FAST":
            ops += [("store", inst.arg[0]), ("store", inst.arg[1])]
            ends += [-1, i + 1]  # (a fused pair cannot be split)
        elif inst.name in ("STORE_FAST", "SWAP", "POP_TOP"):
            ops.append(("store", inst.arg) if inst.name == "STORE_FAST" else (inst.name, inst.arg))
            ends.append(i + 1)
        else:
            return None
        i += 1
    if len(ops) != len(names) + 1 or ends[-1] == -1:
        return None
    # The saved values lie under the result as [last saved, ..., first saved, result]: after
    # SWAP k+1 the first saved is on top (stored back first); without it the result goes first,
    # then the saved values from the first.
    first, rest = ops[0], ops[1:]
    if first == ("SWAP", len(names) + 1) and rest == [("store", n) for n in names[::-1]]:
        return ends[-1], None
    if rest != [("store", n) for n in names]:
        return None
    if first[0] == "store" and first[1] not in names:
        return ends[-1], first[1]
    if first[0] == "POP_TOP":
        return ends[-1], ""
    return None


def _qualifies(program: Any, span: Span, cleared: set[str], targets: set[Any]) -> bool:
    ins, handlers = program.instructions, program.handlers
    blocks = [cleanup_block(program, c) for c in span.cleanups]
    if not all(blocks):
        return False
    for i in [*range(span.start, span.end), *(i for block in blocks for i in block)]:
        inst = ins[i]
        if handlers[i] is not None and handlers[i].target not in targets:
            return False  # a handler of the user's covers it
        if type(inst.arg).__name__ == "CellVar" or inst.name in ("LOAD_CLOSURE", "MAKE_CELL", "DELETE_DEREF",
                                                                "STORE_DEREF", "RETURN_VALUE", "RETURN_CONST"):
            return False
        if inst.name in _READS and isinstance(inst.arg, str):
            span.reads.add(inst.arg)
        elif inst.name in ("LOAD_FAST_LOAD_FAST", "STORE_FAST_LOAD_FAST"):
            span.reads.update(inst.arg[1:] if inst.name == "STORE_FAST_LOAD_FAST" else inst.arg)
        # (the only write of the result's local is the restore's: it is no name the code saves)
        allowed = cleared | {span.result} if span.result else cleared
        if inst.name in _WRITES and inst.arg not in allowed:
            return False
        if inst.name in ("STORE_FAST_STORE_FAST", "STORE_FAST_LOAD_FAST") and not set(
                inst.arg if inst.name == "STORE_FAST_STORE_FAST" else inst.arg[:1]) <= allowed:
            return False
    return True
