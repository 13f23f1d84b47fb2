"""The one code writer: every code object symexec makes is made here, and checked.

There are four kinds:

=================================  ==================  =========================================
code object                        made by             from
=================================  ==================  =========================================
a replacement (an entry's code)    ``codegen.py``      abstract instructions (``assemble``)
a continuation                     ``resume.py``       the original's instructions and a prologue
                                                       (``assemble``, the original's stack size)
a copy whose call sites map        ``call_sites.py``   the original's instructions, edited
  their callables                                      (``reassemble``)
a replacement with its guards      ``splice.py``       two code objects, joined as bytes
  spliced in front                                     (``checked``)
=================================  ==================  =========================================

Each is checked before anyone runs it (``checked``): its stack size is not negative, and
``dis`` reads it back whole, every jump and every exception handler landing on an instruction;
an abstractly assembled one must read back as the instructions it was assembled from. A
failure is an ``InternalError`` (symexec warns and runs the function as it is), never a
crash of the interpreter on malformed bytecode.

``bytecode`` tells two constants of a code object apart by their marshal dump, which merges
equal objects; the key symexec needs (``_constant_key``) is put in place only while a code
object is being assembled, and taken out after.
"""

from __future__ import annotations

import contextlib
import dis
import threading
import types
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from bytecode import Bytecode, Instr
from bytecode import concrete as bytecode_concrete
from bytecode import instr as bytecode_instr

from . import versions
from .exc import InternalError

_LITERAL_TYPES = frozenset({type(None), bool, int, float, complex, str, bytes, type(Ellipsis)})


def _constant_key(obj: Any) -> Any:
    """How two constants of one code object are told apart. ``bytecode``'s own key is the
    marshal dump, which merges EQUAL objects: two empty dicts, or a guard's constant list with
    another equal list, would become one constant and an ``is`` guard on the other one would
    fail on every call (the spliced guards of an entry then always missed). Only immutable
    literals, compared by value, may share a constant; any other object is itself."""
    if type(obj) in _LITERAL_TYPES or isinstance(obj, types.CodeType):
        return bytecode_instr.const_key(obj)
    if type(obj) in (tuple, frozenset) and all(type(x) in _LITERAL_TYPES for x in obj):
        return bytecode_instr.const_key(obj)
    return (type(obj), id(obj))


_assembling = threading.Lock()  # (the key is a module global of bytecode's: one assembly at a time)


@contextlib.contextmanager
def _distinct_constants() -> Iterator[None]:
    with _assembling:
        saved = bytecode_concrete.const_key
        bytecode_concrete.const_key = _constant_key  # (the converter to concrete bytecode looks it up there)
        try:
            yield
        finally:
            bytecode_concrete.const_key = saved


@dataclass(frozen=True)
class Signature:
    """What a code object is besides its instructions: name, parameters, variables, flags."""

    name: str
    argnames: tuple[str, ...]
    argcount: int
    posonlyargcount: int
    kwonlyargcount: int
    freevars: tuple[str, ...]
    cellvars: tuple[str, ...]
    flags: int
    filename: str
    first_lineno: int


def prologue(freevars: Iterable[str], lineno: int) -> list[Instr]:
    """What every code we write starts with: its free variables' cells copied in, ``RESUME``."""
    instructions = [Instr("COPY_FREE_VARS", len(tuple(freevars)), lineno=lineno)] if tuple(freevars) else []
    return [*instructions, Instr("RESUME", 0, lineno=lineno)]


def assemble(items: Iterable[Any], signature: Signature, stacksize: int | None = None) -> types.CodeType:
    """A code object running ``items`` (instructions, labels, try blocks), checked.
    ``stacksize``: the depth to give it where the flow analysis cannot find it (a continuation
    enters the original's code mid-block); by default it is computed, and must not be negative.
    The handlers' depths are the ones the items carry (``TryBegin.stack_depth``)."""
    bc = Bytecode(list(items))
    bc.argnames = list(signature.argnames)
    bc.argcount = signature.argcount
    bc.posonlyargcount = signature.posonlyargcount
    bc.kwonlyargcount = signature.kwonlyargcount
    bc.name = bc.qualname = signature.name
    bc.filename = signature.filename
    bc.first_lineno = signature.first_lineno
    bc.freevars = list(signature.freevars)
    bc.cellvars = list(signature.cellvars)
    bc.flags = signature.flags
    if stacksize is None:
        try:
            stacksize = bc.compute_stacksize(check_pre_and_post=False)
        except Exception as e:
            raise InternalError(f"generated code for {signature.name} is malformed: {e}") from e
    if stacksize < 0:
        raise InternalError(f"generated code for {signature.name} has a negative stack size")
    try:
        with _distinct_constants():
            code = bc.to_code(stacksize=stacksize, compute_exception_stack_depths=False)
    except InternalError:
        raise
    except Exception as e:
        raise InternalError(f"generated code for {signature.name} cannot be assembled: {e}") from e
    return checked(code, [item.name for item in bc if isinstance(item, Instr)])


def reassemble(bc: Bytecode) -> types.CodeType:
    """``bc`` (read from a code object with ``Bytecode.from_code`` and edited) as a code object,
    its stack size and handler depths computed, checked."""
    try:
        with _distinct_constants():
            code = bc.to_code()
    except Exception as e:
        raise InternalError(f"the edited code of {bc.name} cannot be assembled: {e}") from e
    return checked(code, [item.name for item in bc if isinstance(item, Instr)])


def checked(code: types.CodeType, names: list[str] | None = None) -> types.CodeType:
    """``code`` itself, once ``dis`` reads it back whole (and, given ``names``, as those
    instructions, in order); else an ``InternalError``."""
    problem = _problem(code, names)
    if problem is not None:
        raise InternalError(f"generated code for {code.co_name} is malformed: {problem}")
    return code


def _problem(code: types.CodeType, names: list[str] | None) -> str | None:
    if code.co_stacksize < 0:
        return "a negative stack size"
    raw = code.co_code
    try:
        instructions = versions.instruction_offsets(raw)
        labels = dis.findlabels(raw)
        entries = dis.Bytecode(code).exception_entries
    except Exception as e:  # noqa: BLE001 - whatever dis cannot read is malformed
        return f"dis cannot read it: {type(e).__name__}: {e}"
    starts = {offset for offset, _ in instructions}
    for label in labels:
        if label not in starts:
            return f"a jump lands at {label}, not an instruction"
    for entry in entries:
        if entry.target not in starts or entry.start not in starts:
            return f"the handler of {entry.start}-{entry.end} is at {entry.target}, not an instruction"
    if instructions and instructions[-1][1] not in _ENDS:
        return f"it ends with {dis.opname[instructions[-1][1]]}, which falls off its end"
    if names is not None:
        got = [dis.opname[op] for _, op in instructions if op != dis.EXTENDED_ARG]
        wanted = [name for name in names if name != "EXTENDED_ARG"]
        if len(got) != len(wanted) or any(a != b and not (_is_jump(a) and _is_jump(b)) for a, b in zip(got, wanted)):
            return f"dis reads {len(got)} instructions back where {len(wanted)} were assembled"
    return None


# What the last instruction of a code object must be: one that does not go on to the next.
_ENDS = frozenset(dis.opmap[name] for name in ("RETURN_VALUE", "RETURN_CONST", "RERAISE", "RAISE_VARARGS",
                                                "JUMP_BACKWARD", "JUMP_FORWARD", "JUMP_BACKWARD_NO_INTERRUPT")
                  if name in dis.opmap)


def _is_jump(name: str) -> bool:
    # (bytecode writes a jump in the direction and form its target needs: JUMP_FORWARD may be
    # written JUMP_BACKWARD, a conditional one on 3.11 gets its direction)
    return "JUMP" in name
