"""What differs between the CPython versions symexec runs on, in one place.

symexec reads and writes the bytecode of CPython 3.11, 3.12 and 3.13. Handlers are registered
by opcode name, so an opcode of one version only (``PRECALL``, ``END_FOR``, ``CALL_KW``...)
simply never comes up on the others. What this module holds is what differs for the code that
exists on several: where the NULL of a call sits, how a call, a jump or an attribute load is
spelled in code we write, what a loop's exit looks like. Nothing else in symexec looks at
``sys.version_info``.

======================================  ==================  ==================  =======================
fact                                    3.11                3.12                3.13
======================================  ==================  ==================  =======================
a call                                  PRECALL n; CALL n   CALL n              CALL n
the NULL of a call (``PUSH_NULL``,      below the callable  below the callable  above the callable
  ``LOAD_GLOBAL``/``LOAD_ATTR`` bit)
keyword names of a call                 KW_NAMES            KW_NAMES            CALL_KW, tuple on stack
a method load                           LOAD_METHOD         LOAD_ATTR (bit)     LOAD_ATTR (bit)
conditional jumps                       POP_JUMP_FORWARD_   POP_JUMP_IF_*       POP_JUMP_IF_*, on bools
                                        IF_* / _BACKWARD_                       only (TO_BOOL first)
a loop's exit, after FOR_ITER's jump    (FOR_ITER pops)     END_FOR             END_FOR; POP_TOP
``yield from`` at its end               SEND pops           END_SEND            END_SEND
a closure cell for MAKE_FUNCTION        LOAD_CLOSURE        LOAD_CLOSURE        LOAD_FAST
defaults, closure... of MAKE_FUNCTION   MAKE_FUNCTION flags MAKE_FUNCTION flags SET_FUNCTION_ATTRIBUTE
comprehensions                          own code object     inlined (PEP 709)   inlined (PEP 709)
inspect.signature's partialmethod mark  _partialmethod      _partialmethod      __partialmethod__
a generator's stack where its code      one value           one value           empty (RETURN_GENERATOR
  starts (as ``bytecode`` counts it)                                            pushes it)
``dis._unpack_opargs`` (the fast read  (offset, op, arg)   (offset, op, arg)   (offset, start, op,
  of raw bytecode ``assembler`` uses)                                           arg)
a generator's whole body                no handler          in a PEP 479        in a PEP 479
                                                            handler (intrinsic  handler (intrinsic
                                                            STOPITERATION_      STOPITERATION_
                                                            ERROR; see          ERROR; see
                                                            ``Program.user_     ``Program.user_
                                                            handler``)          handler``)
an exception thrown into a generator    RuntimeError        raised as it is     raised as it is
  not started yet, StopIteration        (PEP 479)
``generator.close()`` when the frame    None                None                the value returned
  returns on GeneratorExit
``throw(type, value, traceback)``       as ``throw(value)`` DeprecationWarning  DeprecationWarning
``partial(p, ...)`` flattens a partial  its class's         its class's         its type: a partial
  ``p`` whose ``__dict__`` was never    ``__call__`` is     ``__call__`` is     (subclass), whatever
  made, when                            partial's           partial's           its ``__call__``
======================================  ==================  ==================  =======================
"""

from __future__ import annotations

import dis
import sys
from dataclasses import dataclass
from typing import Any

from bytecode import Instr

SUPPORTED = ((3, 11), (3, 13))  # the first and the last minor version symexec runs on


@dataclass(frozen=True)
class PythonVersion:
    version: tuple[int, int]
    precall: bool  # a call is PRECALL n; CALL n
    null_above_callable: bool  # CALL's stack is [callable, NULL or self, args...]
    method_load: str  # how code we write loads a method: "LOAD_METHOD" or "LOAD_ATTR" with the bit
    attr_arg_has_bit: bool  # LOAD_ATTR's argument is (method?, name)
    directed_jumps: bool  # POP_JUMP_FORWARD_IF_TRUE rather than POP_JUMP_IF_TRUE
    jumps_need_bool: bool  # POP_JUMP_IF_TRUE/FALSE and UNARY_NOT take exact bools
    loop_exit: tuple[str, ...]  # what FOR_ITER's jump lands on, which CPython skips when it pops
    end_for_pops: int  # END_FOR pops the iterator and the slot of its last item (3.12) or the slot only
    send_keeps_receiver: bool  # SEND's jump leaves the receiver (END_SEND pops it)
    function_attributes_apart: bool  # MAKE_FUNCTION takes no flags; SET_FUNCTION_ATTRIBUTE sets each
    slot_error_qualified: bool  # an unset __slots__ member's AttributeError names the class module.qualname
    partialmethod_attr: str  # what inspect.signature reads of a function for a functools.partialmethod
    generator_starts_with_value: bool  # a generator's or coroutine's code starts with one value on its stack
    unpack_gives_start: bool  # dis._unpack_opargs yields (offset, start offset, opcode, arg), not (offset, opcode, arg)
    unstarted_throw_is_pep479: bool  # a StopIteration thrown into a generator not started becomes RuntimeError
    close_returns_value: bool  # generator.close() returns what the frame returned on GeneratorExit
    throw_signature_deprecated: bool  # generator.throw(type, value, traceback) warns (DeprecationWarning)
    closure_cell_load: str | None  # the instruction that pushes a free variable's cell itself (None: not written)
    classmethod_chains_get: bool  # a classmethod over a descriptor (a property) binds through its __get__
    partial_flattens_by_type: bool  # partial(p) flattens any partial p (else only one called by partial's __call__)


_VERSIONS = {
    (3, 11): PythonVersion((3, 11), precall=True, null_above_callable=False, method_load="LOAD_METHOD",
                           attr_arg_has_bit=False, directed_jumps=True, jumps_need_bool=False, loop_exit=(),
                           end_for_pops=0, send_keeps_receiver=False,
                           function_attributes_apart=False, slot_error_qualified=False, partialmethod_attr="_partialmethod", generator_starts_with_value=True,
                           unpack_gives_start=False, unstarted_throw_is_pep479=True, close_returns_value=False,
                           throw_signature_deprecated=False, closure_cell_load="LOAD_CLOSURE", classmethod_chains_get=True,
                           partial_flattens_by_type=False),
    (3, 12): PythonVersion((3, 12), precall=False, null_above_callable=False, method_load="LOAD_ATTR",
                           attr_arg_has_bit=True, directed_jumps=False, jumps_need_bool=False, loop_exit=("END_FOR",),
                           end_for_pops=2, send_keeps_receiver=True,
                           function_attributes_apart=False, slot_error_qualified=False, partialmethod_attr="_partialmethod", generator_starts_with_value=True,
                           unpack_gives_start=False, unstarted_throw_is_pep479=False, close_returns_value=False,
                           throw_signature_deprecated=True, closure_cell_load="LOAD_CLOSURE", classmethod_chains_get=True,
                           partial_flattens_by_type=False),
    (3, 13): PythonVersion((3, 13), precall=False, null_above_callable=True, method_load="LOAD_ATTR",
                           attr_arg_has_bit=True, directed_jumps=False, jumps_need_bool=True,
                           loop_exit=("END_FOR", "POP_TOP"), end_for_pops=1, send_keeps_receiver=True,
                           function_attributes_apart=True, slot_error_qualified=True,
                           partialmethod_attr="__partialmethod__", generator_starts_with_value=False,
                           unpack_gives_start=True, unstarted_throw_is_pep479=False, close_returns_value=True,
                           throw_signature_deprecated=True, closure_cell_load=None, classmethod_chains_get=False,
                           partial_flattens_by_type=True),
}


def unsupported_message(version: tuple[int, ...]) -> str | None:
    """Why symexec cannot run on ``version``, or None when it can."""
    if tuple(version[:2]) in _VERSIONS:
        return None
    (lo_major, lo_minor), (hi_major, hi_minor) = SUPPORTED
    return (f"symexec does not support Python {version[0]}.{version[1]}: it reads and writes CPython bytecode, "
            f"which it knows for Python {lo_major}.{lo_minor} to {hi_major}.{hi_minor}")


def check_supported() -> None:
    """Raise a RuntimeError naming the running version and the supported range, as
    ``torch.compile`` does on a Python it does not support."""
    message = unsupported_message(tuple(sys.version_info))
    if message is not None:
        raise RuntimeError(message)


# The running version: the newest known one stands in on an unsupported Python, so that
# importing symexec works there and ``symexec.compile`` can say what is wrong.
V: PythonVersion = _VERSIONS.get(tuple(sys.version_info[:2]), _VERSIONS[max(_VERSIONS)])  # type: ignore[arg-type]


# -- spelling instructions ---------------------------------------------------------------------
def call_instrs(nargs: int, lineno: int | None) -> list[Instr]:
    """Call the callable below ``nargs`` arguments and its NULL (or self) slot."""
    call = Instr("CALL", nargs, lineno=lineno)
    return [Instr("PRECALL", nargs, lineno=lineno), call] if V.precall else [call]


def with_null(callable_instrs: list[Any], lineno: int | None) -> list[Any]:
    """The instructions that push a callable, with a NULL on the side a call wants it."""
    null = Instr("PUSH_NULL", lineno=lineno)
    return [*callable_instrs, null] if V.null_above_callable else [null, *callable_instrs]


def make_function_instrs(flags: int, lineno: int | None) -> list[Instr]:
    """Make a function of the code object on the stack, over the values below it that ``flags``
    names (defaults 0x01, keyword defaults 0x02, annotations 0x04, closure 0x08, in that order)."""
    if not V.function_attributes_apart:
        return [Instr("MAKE_FUNCTION", flags, lineno=lineno)]
    return [Instr("MAKE_FUNCTION", lineno=lineno)] + [Instr("SET_FUNCTION_ATTRIBUTE", bit, lineno=lineno)
                                                      for bit in (0x08, 0x04, 0x02, 0x01) if flags & bit]


def closure_cell_instr(name: Any, lineno: int | None) -> Instr | None:
    """The instruction that pushes the cell of free variable ``name`` (a ``FreeVar``), or None
    where symexec does not write one (3.13: a pseudo-instruction, ``LOAD_FAST`` of the cell)."""
    return Instr(V.closure_cell_load, name, lineno=lineno) if V.closure_cell_load else None


def attr_arg(name: str, method: bool = False) -> Any:
    return (method, name) if V.attr_arg_has_bit else name


def attr_name(arg: Any) -> str:
    """The name of a LOAD_ATTR's argument on any version."""
    return arg[1] if isinstance(arg, tuple) else arg


def jump_name(name: str) -> str:
    """The opcode for a jump of kind ``name`` (of any version) to a label that lies ahead."""
    if "IF" not in name:
        return name
    bare = name.replace("_FORWARD", "").replace("_BACKWARD", "")
    return bare.replace("POP_JUMP_IF", "POP_JUMP_FORWARD_IF") if V.directed_jumps else bare


def needs_bool_before(name: str) -> bool:
    """Whether code we write must put TO_BOOL before running ``name`` on a value of any type."""
    return V.jumps_need_bool and name in ("POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE", "UNARY_NOT")


def method_load_instr(name: str, lineno: int | None) -> Instr:
    """Load method ``name`` of the object on the stack, pushing a callable and its NULL/self slot."""
    if V.method_load == "LOAD_METHOD":
        return Instr("LOAD_METHOD", name, lineno=lineno)
    return Instr("LOAD_ATTR", (True, name), lineno=lineno)


def global_null_order(null: Any, value: Any) -> tuple:
    """What LOAD_GLOBAL with the NULL bit pushes (deepest first)."""
    return (value, null) if V.null_above_callable else (null, value)


def method_pair(null: Any, attribute: Any) -> tuple:
    """What a method load pushes when it found a plain attribute: the attribute and a NULL."""
    return (attribute, null) if V.null_above_callable else (null, attribute)


# 3.13's instructions on two locals, and the two instructions each stands for.
_SUPERINSTRUCTIONS = {"LOAD_FAST_LOAD_FAST": ("LOAD_FAST", "LOAD_FAST"),
                      "STORE_FAST_STORE_FAST": ("STORE_FAST", "STORE_FAST"),
                      "STORE_FAST_LOAD_FAST": ("STORE_FAST", "LOAD_FAST")}


def split_superinstruction(instr: Instr) -> list[Instr]:
    """``instr``, or the two instructions a 3.13 two-local instruction stands for. Code whose
    locals are renumbered (a continuation's) must not pack two locals into one argument: an
    index past 15 does not fit, and the ``bytecode`` package then writes a wrong one."""
    halves = _SUPERINSTRUCTIONS.get(instr.name)
    if halves is None:
        return [instr]
    first, second = instr.arg
    return [Instr(halves[0], first, location=instr.location), Instr(halves[1], second, location=instr.location)]


def instruction_offsets(raw: bytes) -> list[tuple[int, int]]:
    """(offset, opcode) of each instruction of raw bytecode, ``EXTENDED_ARG`` included and
    inline caches skipped: ``dis``'s own fast reader (private, its tuples differ on 3.13), where
    ``dis.get_instructions`` takes a tenth of a second over a large model's spliced guards."""
    if V.unpack_gives_start:
        return [(offset, op) for offset, _, op, _ in dis._unpack_opargs(raw)]  # type: ignore[attr-defined]
    return [(offset, op) for offset, op, _ in dis._unpack_opargs(raw)]  # type: ignore[attr-defined]
