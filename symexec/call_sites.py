"""A copy of a function's code whose calls first pass their callable through a mapping.

Where symexec hands a whole frame to CPython (past the cache limit, or a break that cannot be
resumed), Dynamo's eval-frame hook would still compile each Python frame that frame calls.
CPython offers no such hook, so symexec runs a copy of the frame's code in which every plain
call site replaces its callable, just before the call, with ``mapping(callable)``
(``callees.Callees.at_call_site``: the compiled stand-in of a user's function, method or
module; anything else unchanged). The call itself is the original instruction, made by the
user's frame: a builtin that reads its caller's frame (``super()``, ``locals()``,
``warnings.warn``) sees the same frame as in eager Python, and no value other than the called
one changes (``f is g`` on a function still holds).

Which calls: a call's stack holds the callable beside a NULL, or beside ``self`` after a method
load, or (a decorator, a 3.11 comprehension, ``with``'s exit) two values the compiler laid out
itself. Method loads are first turned into attribute loads with a NULL beside them (the same
lookup: a method load only skips making the bound method). Then an abstract run over the code,
tracking which stack slots hold a NULL the code pushed, finds the calls whose callable sits
beside one; only those are rewritten. A code object the run cannot follow is left as it is.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Callable

from bytecode import Bytecode, Instr, Label, TryBegin, TryEnd

from . import assembler
from .versions import V, attr_arg, attr_name, call_instrs, global_null_order

_NULL, _VALUE = "null", "value"
_STARTS_WITH_VALUE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def with_mapped_callables(code: types.CodeType, mapping: Callable[[Any], Any]) -> types.CodeType:
    """``code`` with the callable of each plain call site passed through ``mapping`` first
    (``code`` itself where there is none, or the code cannot be followed)."""
    bytecode = Bytecode.from_code(code)
    items = [part for item in bytecode for part in _plain_attribute_load(item)]
    sites = _sites(items, bool(code.co_flags & _STARTS_WITH_VALUE) and V.generator_starts_with_value)
    if not sites:
        return code
    out: list[Any] = []
    for index, item in enumerate(items):
        depth = sites.get(index)
        if depth is not None:
            out += _map_callable(mapping, depth, item.location)
        out.append(item)
    bytecode.clear()
    bytecode.extend(out)
    return assembler.reassemble(bytecode)


def _plain_attribute_load(item: Any) -> list[Any]:
    """A method load as an attribute load and a NULL where a call wants it; else ``item``."""
    if not isinstance(item, Instr):
        return [item]
    if item.name == "LOAD_METHOD" or (item.name == "LOAD_ATTR" and isinstance(item.arg, tuple) and item.arg[0]):
        load = Instr("LOAD_ATTR", attr_arg(attr_name(item.arg)), location=item.location)
    elif item.name == "LOAD_SUPER_ATTR" and item.arg[0]:  # (3.12: method?, two arguments?, name)
        load = Instr("LOAD_SUPER_ATTR", (False, *item.arg[1:]), location=item.location)
    else:
        return [item]
    null = Instr("PUSH_NULL", location=item.location)
    return [load, null] if V.null_above_callable else [load, null, Instr("SWAP", 2, location=item.location)]


def _map_callable(mapping: Callable[[Any], Any], depth: int, location: Any) -> list[Instr]:
    """Replace the value ``depth`` slots down (1: the top) by ``mapping(value)``."""
    def at(name: str, arg: Any = None) -> Instr:
        return Instr(name, arg, location=location) if arg is not None else Instr(name, location=location)
    bring = [at("SWAP", depth)] if depth > 1 else []
    if V.null_above_callable:  # [..., value] -> [..., mapping, NULL, value]
        call = [at("LOAD_CONST", mapping), at("SWAP", 2), at("PUSH_NULL"), at("SWAP", 2)]
    else:  # [..., value] -> [..., NULL, mapping, value]
        call = [at("PUSH_NULL"), at("SWAP", 2), at("LOAD_CONST", mapping), at("SWAP", 2)]
    return [*bring, *call, *call_instrs(1, location.lineno if location else None), *bring]


# -- the abstract run -----------------------------------------------------------------------
def _sites(items: list[Any], starts_with_value: bool) -> dict[int, int]:
    """Where to insert the mapping (index of the instruction before which it goes) and how deep
    the callable lies there, for each call whose callable the code laid beside a NULL."""
    entries: dict[Label, list[str]] = {}
    try:
        for _ in range(len(items) + 2):  # entries only ever lose NULLs: this ends
            sites: dict[int, int] = {}
            if not _run(items, entries, sites, [_VALUE] if starts_with_value else []):
                return sites
    except _Unfollowed:
        pass
    return {}


def _run(items: list[Any], entries: dict[Label, list[str]], sites: dict[int, int], start: list[str]) -> bool:
    """One pass over the code in order; whether a label's entry slots changed."""
    changed = False
    stack: list[str] | None = list(start)
    # The exception region open (code between a TryBegin and its TryEnd): its start slots and
    # the fewest slots it has after any of its instructions, which is where its handler starts
    # (as ``bytecode`` computes the exception table's depths).
    region: list[Any] | None = None  # [TryBegin, slots at its first reached point, fewest]
    for index, item in enumerate(items):
        if isinstance(item, Label):
            known = entries.get(item)
            if stack is None:
                stack = None if known is None else list(known)
            elif known is not None:
                stack = _joined(stack, known)
            if stack is not None and known != stack:
                entries[item], changed = list(stack), True
            continue
        if isinstance(item, TryBegin):
            region = [item, None if stack is None else list(stack), 1 << 30 if stack is None else len(stack)]
            continue
        if isinstance(item, TryEnd):
            if region is not None and item.entry.target is region[0].target and region[1] is not None:
                begin = region[0]
                changed |= _merge_handler(entries, begin.target, region[1][:region[2]], begin.push_lasti)
            region = None
            continue
        if stack is None or not isinstance(item, Instr):
            continue
        site = _call_site(items, index, stack)
        if site is not None:
            sites[site[0]] = site[1]
        if item.has_jump():
            jumped = _after(item, stack, jump=True)
            changed |= _merge_into(entries, item.arg, jumped)
        after = _after(item, stack, jump=False)
        if region is not None:
            if region[1] is None:
                region[1] = list(stack)
            region[2] = min(region[2], len(after))
        stack = None if item.is_final() else after
    return changed


class _Unfollowed(Exception):
    """The abstract run met something it does not model."""


def _joined(a: list[str], b: list[str]) -> list[str]:
    """The slots where two paths meet: a NULL only where both have one."""
    if len(a) != len(b):
        raise _Unfollowed
    return [x if x == y else _VALUE for x, y in zip(a, b)]


def _merge_into(entries: dict[Label, list[str]], label: Any, stack: list[str]) -> bool:
    """Join ``stack`` into the slots ``label`` is entered with; whether they changed."""
    if not isinstance(label, Label):
        raise _Unfollowed
    known = entries.get(label)
    merged = list(stack) if known is None else _joined(known, stack)
    entries[label] = merged
    return merged != known


def _merge_handler(entries: dict[Label, list[str]], label: Any, below: list[str], push_lasti: bool) -> bool:
    """A handler starts on the fewest slots of all the regions it handles (a region may be split
    in several, each going down to its own least), then the offset and the exception."""
    extra = [_VALUE] * (2 if push_lasti else 1)
    known = entries.get(label)
    if known is None:
        return _merge_into(entries, label, below + extra)
    depth = min(len(below), len(known) - len(extra))
    lowered = depth < len(known) - len(extra)
    entries[label] = known[:depth] + extra  # (an entry met already, cut to the fewer slots)
    return _merge_into(entries, label, below[:depth] + extra) or lowered


def _after(instr: Instr, stack: list[str], jump: bool) -> list[str]:
    """The slots after ``instr``. NULLs the code pushes are tracked, every other slot is a value
    (only calls consume a NULL, so a slot the run does not model exactly can never be one)."""
    name, arg = instr.name, instr.arg
    stack = list(stack)
    if name == "PUSH_NULL":
        return stack + [_NULL]
    if name == "LOAD_GLOBAL" and isinstance(arg, tuple) and arg[0]:
        return stack + list(global_null_order(_NULL, _VALUE))
    if name in ("SWAP", "COPY"):
        if not 0 < arg <= len(stack):
            raise _Unfollowed
        if name == "COPY":
            return stack + [stack[-arg]]
        stack[-1], stack[-arg] = stack[-arg], stack[-1]
        return stack
    pushes = 1
    if name == "PRECALL":
        pops = pushes = 0  # (3.11: the CALL that follows consumes the call's slots)
    elif name in ("CALL", "CALL_KW"):
        pops = arg + 2 + (name == "CALL_KW")
    elif name == "CALL_FUNCTION_EX":
        pops = 3 + (arg & 1)
    else:
        effect = instr.stack_effect(jump=jump)
        pre, post = instr.pre_and_post_stack_effect(jump=jump)
        pops, pushes = (-pre, post) if pre <= 0 and pre + post == effect else (max(0, -effect), max(0, effect))
    if pops > len(stack):
        raise _Unfollowed
    return stack[:len(stack) - pops] + [_VALUE] * pushes


def _call_site(items: list[Any], index: int, stack: list[str]) -> tuple[int, int] | None:
    """(where the mapping goes, the callable's depth there) if ``items[index]`` is a call whose
    callable lies beside a NULL the code pushed; else None."""
    instr = items[index]
    name, arg = instr.name, instr.arg
    if name == ("PRECALL" if V.precall else "CALL"):
        above = arg  # the arguments above the callable's slots
    elif name == "CALL_KW":
        above = arg + 1  # and the keyword names' tuple
    elif name == "CALL_FUNCTION_EX":
        above = 1 + (arg & 1)
    else:
        return None
    # The callable's slot, and its NULL's (below it on 3.11 and 3.12, above it on 3.13).
    callable_depth = above + (2 if V.null_above_callable else 1)
    null_depth = above + (1 if V.null_above_callable else 2)
    if null_depth > len(stack) or callable_depth > len(stack) or stack[-null_depth] != _NULL \
            or stack[-callable_depth] != _VALUE:
        return None
    where = index
    previous = items[index - 1] if index else None
    if name in ("PRECALL", "CALL") and isinstance(previous, Instr) and previous.name == "KW_NAMES":
        where = index - 1  # (a call between KW_NAMES and its call would take its names)
    if name == "PRECALL" and not (index + 1 < len(items) and isinstance(items[index + 1], Instr)
                          and items[index + 1].name == "CALL" and items[index + 1].arg == arg):
        return None
    return where, callable_depth
