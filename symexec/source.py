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

import collections
import enum
import functools
import itertools
import keyword
import math
import os
import re
import weakref
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import torch
import torch._guards
from torch._guards import GuardSource


class LoadEmitter(Protocol):
    """The part of the code generator a source needs (see ``codegen.PyCodegen``)."""

    def load_fast(self, name: str) -> None: ...
    def load_global(self, name: str) -> None: ...
    def load_deref(self, name: str) -> None: ...
    def load_closure(self, name: str) -> None: ...
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
class ClosureCellSource(Source):
    """The cell of a free variable of the compiled function itself (what an inner function the
    trace makes closes over): shown as ``L['n'] cell``."""

    var: str
    index: int

    @property
    def name(self) -> str:
        return f"L[{self.var!r}] cell"

    def expr(self) -> str:
        return f"___closure[{self.index}]"

    def emit_load(self, cg: LoadEmitter) -> None:
        cg.load_closure(self.var)


def dereference(ref: Any) -> Any:
    """``ref()``: what a weak reference refers to, or None (guards and generated code)."""
    return ref()


@dataclass(frozen=True)
class WeakRefTargetSource(Source):
    """What a ``weakref.ref`` passed in refers to: ``L['w']()`` (None once it is dead)."""

    base: Source

    @property
    def name(self) -> str:
        return f"{self.base.name}()"

    def expr(self) -> str:
        return self.expr_with(self.base.expr())

    def expr_with(self, base: str) -> str:
        """The expression over ``base``, the base's expression or a name bound to its value."""
        return f"___deref({base})"

    def emit_load(self, cg: LoadEmitter) -> None:
        cg.call_const(dereference, lambda: [self.base.emit_load(cg)])  # type: ignore[attr-defined]

    def root(self) -> Source:
        return self.base.root()


@dataclass(frozen=True)
class AttrSource(Source):
    base: Source
    member: str

    def __post_init__(self) -> None:
        if type(self.member) is not str and isinstance(self.member, str):
            # A str subclass: getattr reads it by value; its methods are the user's code.
            object.__setattr__(self, "member", str.__str__(self.member))

    @property
    def name(self) -> str:
        if is_plain_attribute(self.member):
            return f"{self.base.name}.{self.member}"
        return f"getattr({self.base.name}, {self.member!r})"

    def expr(self) -> str:
        return self.expr_with(self.base.expr())

    def expr_with(self, base: str) -> str:
        """The expression over ``base``, the base's expression or a name bound to its value.
        User data never becomes source text: an attribute name that is not a plain identifier
        goes in as the escaped literal of an exact str."""
        if is_plain_attribute(self.member):
            return f"{base}.{self.member}"
        return f"___getattr({base}, {self.member!r})"

    def emit_load(self, cg: LoadEmitter) -> None:
        self.base.emit_load(cg)
        cg.load_attr(self.member)

    def root(self) -> Source:
        return self.base.root()


@dataclass(frozen=True)
class GetItemSource(Source):
    base: Source
    index: Any  # a hashable constant: int, str, ...

    def __post_init__(self) -> None:
        if literal(self.index) is None:
            keep_named(self, self.index)

    @property
    def name(self) -> str:
        return f"{self.base.name}[{display(self.index)}]"

    def expr(self) -> str:
        return self.expr_with(self.base.expr())

    def expr_with(self, base: str) -> str:
        """The expression over ``base``. An index of an exact builtin type is an escaped
        literal; any other (an Enum, a torch.device, inf, a str subclass whose repr is the
        user's code) a constant."""
        return f"{base}[{const_expr(self.index)}]"

    def emit_load(self, cg: LoadEmitter) -> None:
        self.base.emit_load(cg)
        cg.load_const(self.index)
        cg.subscr()

    def root(self) -> Source:
        return self.base.root()


@dataclass(frozen=True)
class _NativeReadSource(Source):
    """``reader(base, key)``: a read past a class's own Python lookup, by the builtin one it
    overrides (what the class's method itself called with ``super()``), re-read the same way
    by guards and generated code without running the class's method again."""
    base: Source
    key: Any
    # (class attributes of each kind: the builtin, its name in guard expressions, as shown)
    reader: ClassVar[Any] = None
    guard_name: ClassVar[str] = ""
    shown: ClassVar[str] = ""

    def __post_init__(self) -> None:
        if literal(self.key) is None:
            keep_named(self, self.key)

    @property
    def name(self) -> str:
        return f"{self.shown}({self.base.name}, {display(self.key)})"

    def expr(self) -> str:
        return self.expr_with(self.base.expr())

    def expr_with(self, base: str) -> str:
        """The expression over ``base``, the base's expression or a name bound to its value."""
        return f"{self.guard_name}({base}, {const_expr(self.key)})"

    def emit_load(self, cg: LoadEmitter) -> None:
        cg.call_const(self.reader, lambda: [self.base.emit_load(cg), cg.load_const(self.key)])  # type: ignore[attr-defined]

    def root(self) -> Source:
        return self.base.root()


@dataclass(frozen=True)
class NativeItemSource(_NativeReadSource):
    """``dict.__getitem__(base, key)``: an item of a dict subclass as the dict holds it, past
    the subclass's own ``__getitem__`` (transformers' ``ACT2FN`` makes a new module per
    ``d[key]``: re-read through it, an identity guard on the stored class never held)."""
    reader: ClassVar[Any] = staticmethod(dict.__getitem__)
    guard_name: ClassVar[str] = "___dgetitem"
    shown: ClassVar[str] = "dict.__getitem__"


@dataclass(frozen=True)
class EnvironItemSource(_NativeReadSource):
    """``os.environ.get(name)``: one environment variable, read (and guarded) by its name
    alone; None when it is not set."""
    reader: ClassVar[Any] = staticmethod(os._Environ.get)
    guard_name: ClassVar[str] = "___envget"
    shown: ClassVar[str] = "os.environ.get"

    @property
    def name(self) -> str:  # ``G['os'].environ.get('HOME')``: as the user's code reads it
        return f"{self.base.name}.get({display(self.key)})"


def partial_field(p: functools.partial, field: str) -> Any:
    """A field of a ``functools.partial`` as partial itself holds it: ``func``, ``args``,
    ``keywords``, or ``dict``, its ``__dict__`` (an empty dict where it has none), read without
    making one: reading ``p.__dict__`` makes it, and CPython flattens a partial of a partial only
    while it has none (partial's own ``__reduce__`` hands out what it holds)."""
    fn, args, keywords, instance_dict = functools.partial.__reduce__(p)[2]
    if field == "dict":
        return {} if instance_dict is None else instance_dict
    return {"func": fn, "args": args, "keywords": keywords or {}}[field]


@dataclass(frozen=True)
class PartialFieldSource(_NativeReadSource):
    """A field of a ``functools.partial`` passed in (``partial_field``): its ``__dict__`` read
    by guards and generated code without making one."""
    reader: ClassVar[Any] = staticmethod(partial_field)
    guard_name: ClassVar[str] = "___pfield"
    shown: ClassVar[str] = "partial field"

    @property
    def name(self) -> str:
        return f"{self.base.name}.{self.key} (partial's own)"


def dict_key_at(d: dict, index: int) -> Any:
    """Key ``index`` of a dict in its iteration order (an OrderedDict's own, which
    ``move_to_end`` changes), read past a subclass's own ``keys``/``__iter__``."""
    keys = collections.OrderedDict.keys(d) if isinstance(d, collections.OrderedDict) else dict.keys(d)
    return next(itertools.islice(keys, index, None))


@dataclass(frozen=True)
class DictKeySource(_NativeReadSource):
    """Key ``index`` of a dict passed in whose keys are objects hashed by identity (a parameter
    keying a ``defaultdict`` beside string keys): the key itself, re-read by its position."""
    reader: ClassVar[Any] = staticmethod(dict_key_at)
    guard_name: ClassVar[str] = "___dkey"
    shown: ClassVar[str] = "dict key"

    @property
    def name(self) -> str:
        return f"list({self.base.name}.keys())[{self.key}]"


@dataclass(frozen=True)
class ObjectAttrSource(_NativeReadSource):
    """``object.__getattribute__(base, name)``: the generic lookup, past the class's own
    ``__getattribute__`` (a config class that maps names in Python): what that method's
    ``super().__getattribute__(name)`` found."""
    reader: ClassVar[Any] = staticmethod(object.__getattribute__)
    guard_name: ClassVar[str] = "___ogetattr"
    shown: ClassVar[str] = "object.__getattribute__"


@dataclass(frozen=True)
class ModuleMemberSource(Source):
    """A parameter, buffer or submodule of an ``nn.Module``, read from the dict that holds it
    (``m._modules['h']``) rather than through ``nn.Module.__getattr__``, Python code that is
    most of a model's guard time. Shown as ``m.h`` (or ``m[0]`` for a container's child).
    Whoever makes one guards that the two reads agree (the module's lookup is torch's own, no
    class or instance attribute of that name, no earlier dict holding it)."""
    base: Source
    store: str  # "_parameters", "_buffers" or "_modules"
    key: str
    # A container's child: its position, for the name only (``seq[1]`` and the second of
    # ``seq.children()`` are one source).
    index: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if literal(self.key) is None:
            keep_named(self, self.key)

    @property
    def name(self) -> str:
        if self.index is not None:
            return f"{self.base.name}[{self.index}]"
        if is_plain_attribute(self.key):
            return f"{self.base.name}.{self.key}"
        return f"getattr({self.base.name}, {self.key!r})"

    def expr(self) -> str:
        return self.expr_with(self.base.expr())

    def expr_with(self, base: str) -> str:
        """The expression over ``base``, the base's expression or a name bound to its value."""
        return f"{base}.{self.store}[{const_expr(self.key)}]"

    def emit_load(self, cg: LoadEmitter) -> None:
        self.base.emit_load(cg)
        cg.load_attr(self.store)
        cg.load_const(self.key)
        cg.subscr()

    def root(self) -> Source:
        return self.base.root()


@dataclass(frozen=True)
class DictItemSource(Source):
    """``d[k]`` where the key is itself an object reached by a source (a parameter keying an
    optimizer's ``state``): ``L['opt'].state[L['opt'].param_groups[0]['params'][0]]``. The key
    is never held: guards and generated code fetch it through its own source."""

    base: Source
    key: Source

    @property
    def name(self) -> str:
        return f"{self.base.name}[{self.key.name}]"

    def expr(self) -> str:
        return self.expr_with(self.base.expr())

    def expr_with(self, base: str) -> str:
        """The expression over ``base`` (the key fetched through its own source)."""
        return f"{base}[{self.key.expr()}]"

    def emit_load(self, cg: LoadEmitter) -> None:
        self.base.emit_load(cg)
        self.key.emit_load(cg)
        cg.subscr()

    def root(self) -> Source:
        return self.base.root()


def placeholder_name(source: Source) -> str:
    """Graph input name after its source, like Dynamo's: ``L['x']`` -> ``l_x_``."""
    return re.sub(r"[^a-zA-Z0-9]+", "_", source.name).lower()


def peek(iterator: Any, index: int) -> Any:
    """Item ``index`` of what a list, tuple or range iterator has left, without advancing it.
    (A range iterator reduces to the range of what it has left and no position on 3.12+.)"""
    _, (sequence,), position = iterator.__reduce__()
    return sequence[(position or 0) + index]


def remaining(iterator: Any) -> int:
    return iterator.__length_hint__()


def advance(iterator: Any, count: int) -> None:
    """Take ``count`` items from ``iterator`` (generated code, after every value read through
    it, ``peek(L['it'], 0)``, was loaded): what the traced ``next`` calls took."""
    for _ in range(count):
        next(iterator)


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
        return self.expr_with(self.base.expr())

    def expr_with(self, base: str) -> str:
        """The expression over ``base``, the base's expression or a name bound to its value."""
        return f"___peek({base}, {self.index})"

    def emit_load(self, cg: LoadEmitter) -> None:
        cg.call_const(peek, lambda: [self.base.emit_load(cg), cg.load_const(self.index)])  # type: ignore[attr-defined]

    def root(self) -> Source:
        return self.base.root()


def is_plain_attribute(name: str) -> bool:
    """Whether ``.name`` in Python source reads the attribute ``name``: an ASCII identifier
    (source text NFKC-normalises other identifiers) that is not a keyword."""
    return type(name) is str and name.isascii() and name.isidentifier() and not keyword.iskeyword(name)


# Names of the generated functions' namespaces that a parameter must not shadow: every name
# that starts with ``___`` (but the ``___stackN`` arguments of continuations), math and torch.
_RESUME_ARG = re.compile(r"___stack[0-9]+")


def safe_name(name: str) -> str:
    """A local's name as a parameter of generated Python source (CPython allows any string,
    e.g. pytest's ``@py_assert1``; Python source does not).

    One-to-one: a plain name stays as it is; any other, and any name that could shadow a name
    of the generated namespace, becomes ``___local_`` and its escaped characters (ASCII
    letters and digits as they are, any other character, ``_`` included, as ``_<hex>_``).
    """
    if (is_plain_attribute(name) and name not in ("math", "torch")
            and (not name.startswith("___") or _RESUME_ARG.fullmatch(name))):
        return name
    return "___local_" + "".join(c if c.isascii() and c.isalnum() else f"_{ord(c):x}_" for c in name)


def literal(value: Any) -> str | None:
    """A repr that evaluates back to an equal value of the same type, or None. Only exact
    builtin types: the repr of a subclass is the user's code."""
    if value is None or type(value) in (bool, int, str, bytes):
        return repr(value)
    if type(value) is float:
        return repr(value) if math.isfinite(value) else None
    if type(value) is tuple:
        parts = [literal(v) for v in value]
        if all(p is not None for p in parts):
            return "(" + "".join(p + ", " for p in parts) + ")"  # type: ignore[operator]
    return None


def display(value: Any) -> str:
    """``value`` as guard text (what users read), without running any of the user's code."""
    text = literal(value)
    if text is not None:
        return text
    cls = type(value)
    if cls is float and value != value:
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"  # (the guard tells the two apart)
    if cls in (float, complex, range, torch.device, torch.dtype):
        return repr(value)
    if cls is tuple:
        return "(" + "".join(display(v) + ", " for v in value) + ")"
    if cls is slice:
        return f"slice({display(value.start)}, {display(value.stop)}, {display(value.step)})"
    if cls in (set, frozenset):
        items = ", ".join(display(v) for v in value)
        return ("{" + items + "}" if value else "set()") if cls is set else f"frozenset({{{items}}})"
    if isinstance(value, enum.Enum):
        return f"{cls.__qualname__}.{object.__getattribute__(value, '_name_')}"
    for base in (str, bytes, int, float):
        if isinstance(value, base):
            return f"{cls.__qualname__}({getattr(base, '__repr__')(value)})"
    return f"<{cls.__qualname__} object at {id(value):#x}>"


class _Box:
    """Holds one interned constant; the registry refers to it weakly."""

    __slots__ = ("value", "__weakref__")

    def __init__(self, value: Any) -> None:
        self.value = value


class _Constants:
    """``___const``: the objects that rendered sources name as ``___const[<id>]``.

    An object stays here while a source that names it is alive (the source holds its box),
    and no longer: a compiled guard function copies what its text names into a dict of its
    own, freed with its cache entry (``guard_compile.compile_guards``).
    """

    def __init__(self) -> None:
        self._boxes: "weakref.WeakValueDictionary[int, _Box]" = weakref.WeakValueDictionary()

    def box(self, value: Any) -> _Box:
        box = self._boxes.get(id(value))
        if box is None or box.value is not value:
            box = self._boxes[id(value)] = _Box(value)
        return box

    def __getitem__(self, key: int) -> Any:
        return self._boxes[key].value

    def get(self, key: int, default: Any = None) -> Any:
        box = self._boxes.get(key)
        return default if box is None else box.value

    def __contains__(self, key: int) -> bool:
        return key in self._boxes

    def __len__(self) -> int:
        return len(self._boxes)


_CONSTANTS = _Constants()


def keep_named(owner: Any, value: Any) -> None:
    """Make ``owner`` (a source) keep ``value`` named in ``___const``."""
    boxes = owner.__dict__.get("_const_boxes")
    if boxes is None:
        boxes = []
        object.__setattr__(owner, "_const_boxes", boxes)
    boxes.append(_CONSTANTS.box(value))


def const_expr(value: Any) -> str:
    """``value`` as Python source: an escaped literal of an exact builtin type, or
    ``___const[<id>]`` (the caller's source keeps it named: ``keep_named``)."""
    text = literal(value)
    return text if text is not None else f"___const[{id(value)}]"


def value_of(source: "Source") -> Any:
    """The object a source rooted at a constant reaches (no frame needed)."""
    if isinstance(source, ConstSource):
        return source.value
    if isinstance(source, AttrSource):
        return getattr(value_of(source.base), source.member)
    if isinstance(source, GetItemSource):
        return value_of(source.base)[source.index]
    if isinstance(source, ModuleMemberSource):
        return getattr(value_of(source.base), source.store)[source.key]
    if isinstance(source, _NativeReadSource):
        return source.reader(value_of(source.base), source.key)
    if isinstance(source, IteratorItemSource):
        return peek(value_of(source.base), source.index)
    raise ValueError(f"{source.name} is not reachable without a frame")



@dataclass(frozen=True)
class ConstSource(Source):
    """An object the trace itself holds (a base class's method reached through ``super()``):
    it needs no guard, and generated code gets it as a constant. Its attributes give sources
    (``__globals__`` of a function) where nothing else would."""

    object_id: int
    # The object itself, held by the source (and so by the guards and entries that use it):
    # freed with them, not kept for ever.
    value: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        keep_named(self, self.value)

    @classmethod
    def of(cls, value: Any) -> "ConstSource":
        return cls(id(value), value)

    @property
    def name(self) -> str:
        qualname = getattr(self.value, "__qualname__", None)
        return f"<{qualname if type(qualname) is str else type(self.value).__name__}>"

    def expr(self) -> str:
        return f"___const[{self.object_id}]"

    def emit_load(self, cg: LoadEmitter) -> None:
        cg.load_const(self.value)


@dataclass(frozen=True)
class CallSource(Source):
    """What a function of torch's returns for constant arguments, read again by calling it:
    a query of torch's state outside the guarded global state (``torch.get_num_threads()``,
    ``torch.get_float32_matmul_precision()``, ``torch.is_anomaly_enabled()``)."""

    fn: ConstSource
    args: tuple
    kwargs: tuple = ()  # (name, value) pairs

    def __post_init__(self) -> None:
        for arg in (*self.args, *(v for _, v in self.kwargs)):
            if literal(arg) is None:
                keep_named(self, arg)

    @property
    def name(self) -> str:
        qualname = getattr(self.fn.value, "__qualname__", "?")
        module = getattr(self.fn.value, "__module__", None)
        shown = f"{module}.{qualname}" if type(module) is str and type(qualname) is str else self.fn.name
        shown_args = [display(a) for a in self.args] + [
            f"{k if k.isidentifier() else display(k)}={display(v)}" for k, v in self.kwargs]
        return f"{shown}({', '.join(shown_args)})"

    def expr(self) -> str:
        # (keywords as an escaped dict: a name passed through ** need not be an identifier)
        keywords = f"**{{{', '.join(f'{const_expr(k)}: {const_expr(v)}' for k, v in self.kwargs)}}}"
        return f"{self.fn.expr()}({', '.join([*(const_expr(a) for a in self.args), keywords])})"

    def emit_load(self, cg: LoadEmitter) -> None:
        fn = functools.partial(self.fn.value, **dict(self.kwargs)) if self.kwargs else self.fn.value
        cg.call_const(fn, lambda: [cg.load_const(a) for a in self.args])  # type: ignore[attr-defined]


@dataclass(frozen=True)
class FloatTensorSource(Source):
    """A float input as the 0-d float64 tensor a graph takes it as (torch.compile's form of a
    float that changes between calls): ``torch._as_tensor_fullprec(L['lr'])``. The graph reads
    it back with ``.item()``; backends that re-trace (AOTAutograd) find the float's data there,
    where a float argument of the graph would be baked in by their trace."""

    base: Source

    @property
    def name(self) -> str:
        return f"torch._as_tensor_fullprec({self.base.name})"

    def expr(self) -> str:
        raise NotImplementedError("guards are on the float itself")

    def emit_load(self, cg: LoadEmitter) -> None:
        cg.call_const(torch._as_tensor_fullprec, lambda: [self.base.emit_load(cg)])  # type: ignore[attr-defined]

    def root(self) -> Source:
        return self.base.root()


@dataclass(frozen=True)
class PrivateObjectSource(ConstSource):
    """An object the trace made for itself by running a pure function for real (a deep copy
    of a config). The trace reads and changes it directly; where it reaches the user's world
    (stored in a returned object), generated code hands out a fresh deep copy of it, one per
    call, as eager would have made."""

    @property
    def name(self) -> str:
        return f"<private {type(self.value).__name__}>"

    def emit_load(self, cg: LoadEmitter) -> None:
        cg.load_private(self.value)  # type: ignore[attr-defined]


# -- a source's hash, expression and name, computed once ---------------------------------------
# Sources are frozen: these are functions of their fields. A model's trace hashes and renders
# the same few thousand sources tens of thousands of times (guard keys, trackers' memo, shared
# subexpressions), each a walk down its chain of bases.
_UNSET = object()


def _once(slot: str, compute: Any) -> Any:
    def cached(self: Any) -> Any:
        value = self.__dict__.get(slot, _UNSET)
        if value is _UNSET:
            value = self.__dict__[slot] = compute(self)  # (the frozen dataclass's own __dict__)
        return value
    cached.__name__, cached.__doc__ = compute.__name__, compute.__doc__
    return cached


def _subclasses(cls: type) -> list[type]:
    return [cls] + [s for sub in cls.__subclasses__() for s in _subclasses(sub)]


for _cls in _subclasses(Source):
    if _cls.__dict__.get("__hash__") is not None:
        _cls.__hash__ = _once("_hash", _cls.__dict__["__hash__"])  # type: ignore[method-assign]
    if "expr" in _cls.__dict__:
        _cls.expr = _once("_expr", _cls.__dict__["expr"])  # type: ignore[method-assign]
    if isinstance(_cls.__dict__.get("name"), property):
        _cls.name = property(_once("_name", _cls.__dict__["name"].fget))  # type: ignore[method-assign]
