"""Sources: how to re-fetch a value from the frame at entry.

Each source is a frozen, hashable dataclass that does three jobs:

* ``name()`` renders it in guard notation (``L['x']``, ``G['w']``, ``L['l'][0]``,
  ``L['self'].weight``): what users read in guards and recompile reasons;
* ``expr()`` renders it as a Python expression valid inside the generated guard function,
  whose parameters are the compiled function's own (``x``, ``___G['w']``, ``l[0]``);
* ``emit_load(cg)`` writes the bytecode that pushes the value inside generated code.

Sources are also the keys of guards and of aliasing: two trackers with the same source stand
for the same object.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from typing import Any, Protocol

import torch._guards
from torch._guards import GuardSource


class LoadEmitter(Protocol):
    """The part of the code generator a source needs (see ``codegen.PyCodegen``)."""

    def load_fast(self, name: str) -> None: ...
    def load_global(self, name: str) -> None: ...
    def load_deref(self, name: str) -> None: ...
    def load_attr(self, name: str) -> None: ...
    def load_const(self, value: Any) -> None: ...
    def subscr(self) -> None: ...


class Source(torch._guards.Source):
    """Base of our sources. It is a ``torch._guards.Source`` so that the ShapeEnv can name its
    size symbols after it (``L['a'].size()[0]``); ``name`` is the guard text, as there."""

    @property
    def name(self) -> str:  # type: ignore[override]
        raise NotImplementedError

    @property
    def guard_source(self) -> GuardSource:  # type: ignore[override]
        return GuardSource.GLOBAL if isinstance(self.root(), (GlobalSource, BuiltinSource)) else GuardSource.LOCAL

    def expr(self) -> str:
        raise NotImplementedError

    def emit_load(self, cg: LoadEmitter) -> None:
        raise NotImplementedError

    def root(self) -> "Source":
        return self

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class LocalSource(Source):
    """An argument or local of the compiled frame: ``L['x']``."""

    local: str

    @property
    def name(self) -> str:
        return f"L[{self.local!r}]"

    def expr(self) -> str:
        return safe_name(self.local)

    def emit_load(self, cg: LoadEmitter) -> None:
        cg.load_fast(self.local)


@dataclass(frozen=True)
class GlobalSource(Source):
    """A global of the compiled function's module: ``G['w']``."""

    global_name: str

    @property
    def name(self) -> str:
        return f"G[{self.global_name!r}]"

    def expr(self) -> str:
        return f"___G[{self.global_name!r}]"

    def emit_load(self, cg: LoadEmitter) -> None:
        cg.load_global(self.global_name)


@dataclass(frozen=True)
class BuiltinSource(Source):
    """A builtin reached through LOAD_GLOBAL: ``G['__builtins__']['len']``."""

    builtin: str

    @property
    def name(self) -> str:
        return f"G['__builtins__'][{self.builtin!r}]"

    def expr(self) -> str:
        return f"___B[{self.builtin!r}]"

    def emit_load(self, cg: LoadEmitter) -> None:
        cg.load_global(self.builtin)


@dataclass(frozen=True)
class ClosureSource(Source):
    """A free variable of the compiled function, read through its cell: shown as ``L['n']``."""

    var: str
    index: int

    @property
    def name(self) -> str:
        return f"L[{self.var!r}]"

    def expr(self) -> str:
        return f"___closure[{self.index}].cell_contents"

    def emit_load(self, cg: LoadEmitter) -> None:
        cg.load_deref(self.var)


@dataclass(frozen=True)
class AttrSource(Source):
    base: Source
    member: str

    @property
    def name(self) -> str:
        return f"{self.base.name}.{self.member}"

    def expr(self) -> str:
        return f"{self.base.expr()}.{self.member}"

    def emit_load(self, cg: LoadEmitter) -> None:
        self.base.emit_load(cg)
        cg.load_attr(self.member)

    def root(self) -> Source:
        return self.base.root()


@dataclass(frozen=True)
class GetItemSource(Source):
    base: Source
    index: Any  # a hashable constant: int, str, ...

    @property
    def name(self) -> str:
        return f"{self.base.name}[{self.index!r}]"

    def expr(self) -> str:
        return f"{self.base.expr()}[{self.index!r}]"

    def emit_load(self, cg: LoadEmitter) -> None:
        self.base.emit_load(cg)
        cg.load_const(self.index)
        cg.subscr()

    def root(self) -> Source:
        return self.base.root()


def placeholder_name(source: Source) -> str:
    """Graph input name after its source, like Dynamo's: ``L['x']`` -> ``l_x_``."""
    return re.sub(r"[^a-zA-Z0-9]+", "_", source.name).lower()


def peek(iterator: Any, index: int) -> Any:
    """Item ``index`` of what a list, tuple or range iterator has left, without advancing it."""
    _, (sequence,), position = iterator.__reduce__()
    return sequence[position + index]


def remaining(iterator: Any) -> int:
    return iterator.__length_hint__()


def skip(iterator: Any, count: int) -> Any:
    """A new iterator over what ``iterator`` has left after ``count`` more items (generated
    code, at a graph break). The original is not advanced: other values are still re-fetched
    through it (``peek(L['___stack0'], 0)``)."""
    state = iterator.__reduce__()
    if len(state) < 3:  # exhausted
        return iter(())
    _, (sequence,), position = state
    rest = iter(sequence)
    rest.__setstate__(position + count)
    return rest


@dataclass(frozen=True)
class IteratorItemSource(Source):
    """Item ``index`` of the rest of an iterator passed in (a continuation gets a loop's
    iterator as an argument): ``peek(L['___stack0'], 0)``."""

    base: Source
    index: int

    @property
    def name(self) -> str:
        return f"peek({self.base.name}, {self.index})"

    def expr(self) -> str:
        return f"___peek({self.base.expr()}, {self.index})"

    def emit_load(self, cg: LoadEmitter) -> None:
        cg.call_const(peek, lambda: [self.base.emit_load(cg), cg.load_const(self.index)])  # type: ignore[attr-defined]

    def root(self) -> Source:
        return self.base.root()


def safe_name(name: str) -> str:
    """A local's name as a parameter of generated Python source (CPython allows any string,
    e.g. pytest's ``@py_assert1``; Python source does not)."""
    if name.isidentifier() and not keyword.iskeyword(name):
        return name
    return "___local_" + "".join(c if c.isalnum() else f"_{ord(c):x}_" for c in name)


_CONSTANTS: dict[int, Any] = {}  # objects ConstSource names, kept alive: functions and classes



@dataclass(frozen=True)
class ConstSource(Source):
    """An object the trace itself holds (a base class's method reached through ``super()``):
    it needs no guard, and generated code gets it as a constant. Its attributes give sources
    (``__globals__`` of a function) where nothing else would."""

    object_id: int

    @classmethod
    def of(cls, value: Any) -> "ConstSource":
        _CONSTANTS[id(value)] = value
        return cls(id(value))

    @property
    def name(self) -> str:
        value = _CONSTANTS[self.object_id]
        return f"<{getattr(value, '__qualname__', type(value).__name__)}>"

    def expr(self) -> str:
        return f"___const[{self.object_id}]"

    def emit_load(self, cg: LoadEmitter) -> None:
        cg.load_const(_CONSTANTS[self.object_id])


@dataclass(frozen=True)
class PrivateObjectSource(ConstSource):
    """An object the trace made for itself by running a pure function for real (a deep copy
    of a config). The trace reads and changes it directly; where it reaches the user's world
    (stored in a returned object), generated code hands out a fresh deep copy of it, one per
    call, as eager would have made."""

    @property
    def name(self) -> str:
        return f"<private {type(_CONSTANTS[self.object_id]).__name__}>"

    def emit_load(self, cg: LoadEmitter) -> None:
        cg.load_private(_CONSTANTS[self.object_id])  # type: ignore[attr-defined]
