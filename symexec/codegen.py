"""Writing bytecode: the one adapter over the ``bytecode`` package.

``PyCodegen`` collects abstract instructions. It knows the pitfalls: a call needs a NULL
beside its callable (below it before 3.13, above it on 3.13) and is ``PRECALL n; CALL n`` on
3.11, ``LOAD_GLOBAL`` takes ``(push_null, name)``, free variables need ``COPY_FREE_VARS``
before ``RESUME`` and a ``FreeVar`` argument, ``update_flags`` would drop ``NEWLOCALS`` (we copy
flags from the original code), and a negative stack size is a bug in what we wrote. How each
version spells what we emit is in ``versions.py``; this module asks it and nowhere else does.
"""

from __future__ import annotations

import copy
import functools
import dis
import types
from typing import Any, Callable, Iterable

import torch.fx
from bytecode import FreeVar, Instr, TryBegin, TryEnd

from . import assembler, faults, versions
from .exc import InternalError, Unsupported
from .rendering import Renderer
from .splice import splice_guards
from .variables import VariableTracker


# Flags a replacement keeps from the original code: how arguments are received.
_KEPT_FLAGS = 0x01 | 0x02 | 0x04 | 0x08 | 0x10  # OPTIMIZED, NEWLOCALS, VARARGS, VARKEYWORDS, NESTED
_BUILD = {tuple: "BUILD_TUPLE", list: "BUILD_LIST", set: "BUILD_SET", slice: "BUILD_SLICE"}


# The local the graph's outputs are kept in, read by index.
GRAPH_OUT = "___graph_out"


class PyCodegen:
    def __init__(self, lineno: int) -> None:
        self.instructions: list[Instr] = []
        self.lineno = lineno
        # Graph outputs: node -> (local holding the output tuple, index).
        self.graph_outputs: dict[torch.fx.Node, tuple[str, int]] = {}
        # Mutable objects built by this code, kept in temporaries so that every use of one
        # tracker is one object (a list passed to a call and then returned stays the same).
        self._built: dict[int, str] = {}
        self._temps = 0
        # What the readable form is rendered from, when someone asks (``readable``): each
        # instruction with its note, each label, handler and named constant, in order.
        self.events: list[tuple[Any, ...]] = []

    def new_temp(self) -> str:
        self._temps += 1
        return f"___tmp_{self._temps}"

    def release_temps(self) -> None:
        """Set the graph's outputs and every temporary made so far to None: what the stack
        holds by then is all the code still needs (bookkeeping: not in the readable form)."""
        for name in [GRAPH_OUT, *(f"___tmp_{i}" for i in range(1, self._temps + 1))]:
            self.instructions += [Instr("LOAD_CONST", None, lineno=self.lineno), Instr("STORE_FAST", name, lineno=self.lineno)]

    def emit(self, name: str, arg: Any = None, note: str = "", lineno: int | None = None) -> None:
        """Append one instruction (``note``: the user's line, for one copied from user code;
        ``lineno``: its line, so a traceback through it points at the user's code)."""
        line = lineno if lineno is not None else self.lineno
        if arg is None and name not in ("LOAD_CONST",):
            self.append(Instr(name, lineno=line), note)
        else:
            self.append(Instr(name, arg, lineno=line), note)

    def append(self, instr: Instr, note: str = "") -> None:
        self.instructions.append(instr)
        self.events.append(("feed", instr.name, instr.arg if instr.require_arg() or instr.name == "LOAD_CONST" else None,
                            note))

    def label(self, label: Any) -> None:
        self.instructions.append(label)
        self.events.append(("label", label))

    def try_begin(self, handler: Any, push_lasti: bool, depth: int) -> TryBegin:
        begin = TryBegin(handler, push_lasti, depth)
        self.instructions.append(begin)
        self.events.append(("handler", handler))
        return begin

    def try_end(self, begin: TryBegin) -> None:
        self.instructions.append(TryEnd(begin))

    def readable(self, header: str, other: "PyCodegen | None" = None) -> Callable[[], str]:
        """The code as Python-like text, rendered when called: ``header`` (the def line), then
        ``other``'s lines (the code before this one), then this code's. (Only the events are
        kept, not the codegen.)"""
        return functools.partial(render, header, [*(other.events if other is not None else []), *self.events])

    # -- loads (the LoadEmitter protocol of source.py) ---------------------------------------
    def load_fast(self, name: str) -> None:
        self.emit("LOAD_FAST", name)

    def load_global(self, name: str, push_null: bool = False) -> None:
        self.emit("LOAD_GLOBAL", (push_null, name))

    def load_deref(self, name: str) -> None:
        self.emit("LOAD_DEREF", FreeVar(name))

    def load_closure(self, name: str) -> None:
        """Push the cell of free variable ``name`` itself (Unsupported where not written)."""
        instr = versions.closure_cell_instr(FreeVar(name), self.lineno)
        if instr is None:
            raise Unsupported(f"loading the closure cell of {name!r} on this Python")
        self.append(instr)

    def load_attr(self, name: str, lineno: int | None = None) -> None:
        self.emit("LOAD_ATTR", versions.attr_arg(name), lineno=lineno)

    def load_const(self, value: Any, name: str | None = None) -> None:
        """``name``: how the readable rendering shows the constant (a compiled graph...)."""
        if name is not None:
            self.events.append(("name", value, name))
        self.emit("LOAD_CONST", value)

    def load_private(self, obj: Any) -> None:
        """A fresh deep copy of an object the trace made for itself, one per run of this code."""
        temp = self._built.get(id(obj))
        if temp is not None:
            self.load_fast(temp)
            return
        self.call_const(copy.deepcopy, lambda: [self.load_const(obj)])
        temp = self._built[id(obj)] = self.new_temp()
        self.emit("COPY", 1)
        self.store_fast(temp)

    def share_private(self, objects: list[Any]) -> None:
        """The trace's own objects (``PrivateObjectSource``) whose tensors the graph reads: this
        code and every other code given the same list find each one's copy for this run in one
        temporary (made by ``make_private``, which runs first). A graph input read from a copy
        and the copy rebuilt after the graph are then one object, as in eager: torch.autograd.grad
        of a loss over a deep-copied module's parameters found a second copy's, never used."""
        for i, obj in enumerate(objects):
            self._built[id(obj)] = f"___private_{i}"

    def make_private(self, objects: list[Any]) -> None:
        for i, obj in enumerate(objects):
            self.call_const(copy.deepcopy, lambda: [self.load_const(obj)])
            self.store_fast(f"___private_{i}")

    def subscr(self) -> None:
        self.emit("BINARY_SUBSCR")

    def store_fast(self, name: str) -> None:
        self.emit("STORE_FAST", name)

    def push_null(self) -> None:
        self.emit("PUSH_NULL")

    def get_iter(self) -> None:
        self.emit("GET_ITER")

    # -- building values -----------------------------------------------------------------------
    def build(self, cls: type, count: int) -> None:
        if cls is dict:
            self.emit("BUILD_MAP", count)
        else:
            self.emit(_BUILD[cls], count)

    def jump(self, name: str, label: Any, note: str = "", lineno: int | None = None) -> None:
        """A jump of kind ``name`` (any version's spelling) to ``label``, which lies ahead."""
        self.emit(versions.jump_name(name), label, note, lineno)

    def call(self, nargs: int, lineno: int | None = None) -> None:
        """Call the callable below ``nargs`` arguments and its NULL (see ``push_callable``)."""
        for instr in versions.call_instrs(nargs, lineno if lineno is not None else self.lineno):
            self.append(instr)

    def push_callable(self, emit_callable: Any) -> None:
        """What ``emit_callable`` pushes, with the NULL a call wants beside it."""
        if not versions.V.null_above_callable:
            self.push_null()
        emit_callable()
        if versions.V.null_above_callable:
            self.push_null()

    def make_function(self, flags: int) -> None:
        for instr in versions.make_function_instrs(flags, self.lineno):
            self.append(instr)

    def call_method(self, name: str, emit_args: Any) -> None:
        """With an object on the stack, call its method ``name``; ``emit_args`` pushes the
        arguments and returns them (a list, for the count)."""
        self.append(versions.method_load_instr(name, self.lineno))
        args = emit_args()
        self.call(len(args))

    def call_const(self, fn: Any, emit_args: Any) -> None:
        """``fn(*args)`` where ``fn`` travels as a constant of the generated code."""
        self.push_callable(lambda: self.load_const(fn))
        args = emit_args()
        self.call(len(args))

    def reconstruct(self, var: VariableTracker) -> None:
        """Push the object ``var`` stands for: a graph output, a source, or rebuilt by the tracker."""
        node = getattr(var, "node", None) if var.source is None else None  # (a lazy input stays unread)
        if node is not None and node in self.graph_outputs:
            local, index = self.graph_outputs[node]
            self.load_fast(local)
            self.load_const(index)
            self.subscr()
            return
        if var.source is None and var.built_once:
            if self.load_built(var):
                return
            var.reconstruct(self)
            if id(var) not in self._built:  # (its reconstruct may have remembered it already)
                self.remember(var)
            return
        var.reconstruct(self)

    def load_built(self, var: VariableTracker) -> bool:
        """Push the object already built for ``var``, if there is one."""
        temp = self._built.get(id(var))
        if temp is not None:
            self.load_fast(temp)
        return temp is not None

    def remember(self, var: VariableTracker) -> None:
        """The object on the stack is ``var``'s: later reconstructions load it. A tracker calls
        it before its ``reconstruct`` is done where the object may reach itself (a closure cell
        holding the function that closes over it)."""
        temp = self._built[id(var)] = self.new_temp()
        self.emit("COPY", 1)
        self.store_fast(temp)

    # -- the code object ----------------------------------------------------------------------
    def assemble(self, template: types.CodeType, name: str, body: Iterable[Instr] | None = None) -> types.CodeType:
        """A code object with ``template``'s signature, free variables and flags, running our
        instructions (``assembler.py``: checked; its handlers keep the depths we wrote, the
        original handler's depth where a break is inside a try block)."""
        faults.hit("codegen")  # fault injection (tests)
        signature = assembler.Signature(
            name=name, argnames=tuple(parameter_names(template)), argcount=template.co_argcount,
            posonlyargcount=template.co_posonlyargcount, kwonlyargcount=template.co_kwonlyargcount,
            freevars=template.co_freevars, cellvars=(), flags=template.co_flags & _KEPT_FLAGS,
            filename=template.co_filename, first_lineno=template.co_firstlineno)
        items = [*assembler.prologue(template.co_freevars, self.lineno), *(body if body is not None else self.instructions)]
        return assembler.assemble(items, signature)


def render(header: str, events: list[tuple[Any, ...]]) -> str:
    """What ``PyCodegen.readable`` renders: the events replayed through a ``Renderer``."""
    renderer = Renderer()
    for kind, *rest in events:
        if kind == "feed":
            renderer.feed(*rest)
        elif kind == "label":
            renderer.label(rest[0])
        elif kind == "handler":
            renderer.lines.append(f"# an exception from here on goes to {renderer.label_name(rest[0])}")
        else:  # "name"
            renderer.name_const(*rest)
    return header + "\n" + "\n".join(("" if line.endswith(":") and line.startswith("label_") else "    ") + line
                                      for line in renderer.lines)


def parameter_names(code: types.CodeType) -> list[str]:
    """The names of ``code``'s parameters, ``*args`` and ``**kwargs`` included."""
    nargs = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
    return list(code.co_varnames[:nargs])


MISS = object()  # what a guarded entry returns when its guards reject the call


def guarded_function(replacement: types.FunctionType, check: types.FunctionType,
                     held: tuple[Any, ...] = ()) -> types.FunctionType | None:
    """``replacement`` with the guards of ``check`` in front of its own code: one function, with
    its signature, defaults and closure, that returns MISS where ``check`` returns a false value
    or raises an Exception, so that a cache hit is one call. The two code objects are spliced
    as they are (``splice.py``), in a few percent of the time assembling them again would take.
    None where they cannot be spliced: the entry then calls both. ``held``: objects that outlive
    the entry anyway (the compiled function), which its code may hold as constants."""
    try:
        code = splice_guards(check.__code__, replacement.__code__, check.__globals__, MISS, held)
    except ValueError as e:  # (a jump that ends up pointing backwards: a bug of the splice)
        raise InternalError(f"splicing the guards of {replacement.__qualname__}: {e}") from e
    if code is None:
        return None
    both = types.FunctionType(code, replacement.__globals__, replacement.__name__, replacement.__defaults__,
                              replacement.__closure__)
    both.__kwdefaults__ = replacement.__kwdefaults__
    both.__qualname__ = replacement.__qualname__  # a call that does not fit reads like eager's TypeError
    return both


def disassemble(code: types.CodeType) -> str:
    return dis.Bytecode(code).dis()
