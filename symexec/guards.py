"""Guards: the conditions under which a cache entry may be reused.

Guards are written on sources. Each has a human text in the design document's notation
(``L['b'] == 'Hello'``, ``len(L['l']) == 2``) and a predicate as data (``guard_code.Code``: code
around the Sources it reads), rendered once into a Python expression over the compiled
function's own parameters. All guards of an entry compile into ONE generated Python function
with the same signature as the user's function: a flat ``and`` of the expressions, so a cache
hit is one call with no dict building and no ``inspect``. A second generated function, run only
on a miss, returns the index of the first guard that fails: the recompile reason.
"""

from __future__ import annotations

import enum
import itertools
import math
import numbers
import sys
import types
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from .guard_code import Code, ShapeCall, code, join
from .source import (AttrSource, ObjectAttrSource, PrivateObjectSource, Source, display, literal)


class GuardKind(enum.Enum):
    TYPE_MATCH = "type"
    ID_MATCH = "id"
    EQUALS_MATCH = "equals"
    LEN_MATCH = "len"
    TENSOR_MATCH = "tensor"
    TENSOR_ALIAS = "alias"
    GLOBAL_STATE = "global_state"
    SHAPE = "shape"


@dataclass(frozen=True)
class Guard:
    kind: GuardKind
    text: str  # what users read: L['b'] == 'Hello'
    code: Code  # what the guard function evaluates, as data: (source L['b'], " == 'Hello'")
    source: Source | None = None
    other: Source | None = None  # the second source of an alias guard (`a is b`)
    more: tuple[Source, ...] = ()  # every source of a guard over many (`distinct(a, b, c)`)
    # The user line whose tracing created the guard (for explain and the guards log).
    filename: str | None = field(default=None, compare=False)
    lineno: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.code, Code):  # (plain text: code that reads no source)
            object.__setattr__(self, "code", code(self.code))

    @property
    def expr(self) -> str:
        """The expression with every read written out: ``b == 'Hello'``."""
        text = self.__dict__.get("_expr")
        if text is None:
            text = self.__dict__["_expr"] = self.code.text()
        return text

    def __str__(self) -> str:
        return self.text


@dataclass(eq=False)
class _Grown:
    """A guard over a list of items that grows while tracing (names absent from a dict, sources
    that must be distinct objects...), rendered once when the guards are read."""
    kind: GuardKind
    render_items: Callable[[list[Any]], tuple[str, Code] | None]
    source: Source | None
    items_are_sources: bool
    items: list[Any] = field(default_factory=list)
    location: tuple[str | None, int | None] = (None, None)
    _keys: set = field(default_factory=set)

    def take(self, item: Any) -> bool:
        """Add ``item``; False if it is already there (an unhashable one by identity)."""
        try:
            key: Any = ("hashed", item)
            hash(item)
        except TypeError:
            key = ("id", id(item))
        if key in self._keys:
            return False
        self._keys.add(key)
        self.items.append(item)
        return True

    def render(self) -> "Guard | None":
        rendered = self.render_items(self.items)
        if rendered is None:
            return None
        text, expr = rendered
        more = tuple(self.items) if self.items_are_sources else ()
        return Guard(self.kind, text, expr, self.source, None, more, *self.location)


def _literal(value: Any) -> str | None:
    """A repr that evaluates back to an equal value of the same type, or None (exact
    builtin types only: the repr of a subclass is the user's code)."""
    return literal(value)


_MISSING = object()


def _inexact(value: Any) -> bool:
    """A float or complex, of Python's or NumPy's (``numpy.float32``): nan and -0.0 are values."""
    return isinstance(value, numbers.Complex) and not isinstance(value, (numbers.Integral, bool))


# The builtin types whose values a subclass's instance holds, and how to read that value
# without the subclass's own methods (an exact int, float, ... of it).
_BASE_VALUE = ((bool, None), (int, int.__int__), (float, float.__float__), (complex, complex.__complex__),
               (str, str.__str__), (bytes, bytes.__bytes__))
# Exact types for which ``==`` with the same type is sameness of behaviour.
_PLAIN = frozenset({int, str, bytes, bool, type(None)})


def exact_key(value: Any) -> Any:
    """A key equal for two constants only where they behave alike, by one rule for every kind:
    the exact type and the value (``True``, ``1`` and ``1.0`` differ; ``0.0`` and ``-0.0``
    differ, and nans by their sign), a subclass's instance by its class and its builtin value,
    tuples and frozensets by their items, ranges and slices by their fields. (Guard functions
    call it as ``___exact`` where a plain ``==`` would let such values through.)"""
    cls = type(value)
    if cls in _PLAIN:
        return cls, value
    if cls is float or cls is complex or (_inexact(value) and cls.__module__ == "numpy"):
        if isinstance(value, numbers.Real):
            return cls, repr(float(value)), math.copysign(1.0, value)
        return cls, exact_key(float(value.real)), exact_key(float(value.imag))
    if cls is tuple:
        return cls, tuple(map(exact_key, value))
    if cls is frozenset or cls is set:
        return cls, frozenset(map(exact_key, value))
    if cls is range:
        return cls, value.start, value.stop, value.step
    if cls is slice:
        return cls, exact_key(value.start), exact_key(value.stop), exact_key(value.step)
    for base, read in _BASE_VALUE:
        if read is not None and isinstance(value, base):  # (a subclass: its own __eq__ may say anything)
            return cls, exact_key(read(value))
    return cls, value


def replay_set(ops: tuple[tuple[str, int], ...], members: tuple[Any, ...]) -> tuple[set, tuple[Any, ...]]:
    """The set CPython makes by ``ops`` from an empty one (``("add", i)``, ``("discard", i)``
    with ``members[i]``, ``("update", i)`` with the members of ``members[i]``, ``("pop", -1)``,
    ``("clear", -1)``): its table, so its order, follows
    the members' hashes and this history. With it, what was seen of its order: the index of
    each member popped, then of each member still in it, in iteration order."""
    result: set = set()
    index = {id(m): i for i, m in reversed(list(enumerate(members)))}
    popped = []
    for op, i in ops:
        if op == "add":
            result.add(members[i])
        elif op == "discard":
            result.discard(members[i])
        elif op == "update":
            result.update(members[i])
        elif op == "pop":
            popped.append(index[id(result.pop())])
        else:
            result.clear()
    return result, (*popped, None, *(index[id(m)] for m in result))


def exact_keys(values: Any) -> list[Any]:
    """``exact_key`` of each item, in iteration order (a dict's keys, a set's elements)."""
    return list(map(exact_key, values))


def key_shapes(values: Any) -> list[Any]:
    """``exact_key`` of each item, in iteration order, but only the class of each tensor (a
    tensor keying a dict: which object it is, the guards of its own source say; ``==`` on it
    would compare tensors by value)."""
    return [(type(v), _TENSOR) if _tensor_key(v) else exact_key(v) for v in values]


_TENSOR = "<a tensor>"


def _tensor_key(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and type(value).__hash__ is torch.Tensor.__hash__


class GuardSet:
    """The guards of one trace, deduplicated, in the order they were installed."""

    def __init__(self) -> None:
        # Every guard in order, by (kind, expr); a guard over a growing list of items is a
        # _Grown entry, rendered when the guards are read (each growth moves it last, as if
        # installed again: it covers what the trace had read by then).
        self._entries: dict[Any, Guard | _Grown] = {}
        self._rendered: list[Guard] | None = []
        # Objects the generated function refers to: ___obj_0, ___obj_1, ...
        self.namespace: dict[str, Any] = {}
        self._object_names: dict[Any, str] = {}
        self.location: tuple[str | None, int | None] = (None, None)
        # The state of each object the trace copied, as copied (builtins' copy handler).
        self.snapshots: dict[Source, Any] = {}
        # Each class's dict (its mappingproxy) by the name guards read it under, and the
        # (source, keys) whose keys are already guarded.
        self._class_dicts: dict[type, str] = {}
        self._keys_guarded: set[tuple] = set()
        # The compiled function's __code__, __defaults__ and __kwdefaults__ as the entry takes
        # them (function_match); None: the function's own.
        self.parameters: tuple | None = None

    # Guard code from pieces (``code("___len(", source, ") == 2")``), for trackers' own guards.
    code = staticmethod(code)

    @property
    def guards(self) -> list[Guard]:
        """The guards, in order (the growing ones rendered now)."""
        if self._rendered is None:
            rendered = []
            for entry in self._entries.values():
                guard = entry.render() if isinstance(entry, _Grown) else entry
                if guard is not None:
                    rendered.append(guard)
            self._rendered = rendered
        return self._rendered

    def constant(self, value: Any) -> str:
        """The name by which guard expressions refer to ``value``."""
        return self._const(value)

    def _const(self, value: Any) -> str:
        name = self._object_names.get(id(value))
        if name is None:
            name = f"___obj_{len(self._object_names)}"
            self._object_names[id(value)] = name
            self.namespace[name] = value
        return name

    def add(self, kind: GuardKind, text: str, expr: Code | str, source: Source | None = None, other: Source | None = None,
            more: tuple[Source, ...] = ()) -> None:
        """Record a guard: ``text`` for users, ``expr`` its predicate (a ``Code`` over the
        sources it reads; plain text only where it reads none)."""
        expr = expr if isinstance(expr, Code) else code(expr)
        key = (kind, expr)
        if key in self._entries or (source is not None and isinstance(source.root(), PrivateObjectSource)):
            return  # (the trace's own objects cannot change behind its back: nothing to guard)
        filename, lineno = self.location
        self._entries[key] = Guard(kind, text, expr, source, other, more, filename, lineno)
        self._rendered = None

    def _grow(self, key: Any, item: Any, kind: GuardKind, render: Callable[[list[Any]], tuple[str, Code] | None],
              source: Source | None = None, items_are_sources: bool = False) -> None:
        """Add ``item`` to the list ``key`` that one guard covers, made by ``render(items)`` ->
        (text, expr), or None while there is nothing to check: one check however many items
        the trace adds."""
        if source is not None and isinstance(source.root(), PrivateObjectSource):
            return
        slot = ("grown", key)
        entry = self._entries.get(slot)
        if entry is None:
            entry = _Grown(kind, render, source, items_are_sources)
        if not entry.take(item):
            return  # (already covered: it keeps its place)
        self._entries.pop(slot, None)
        entry.location = self.location
        self._entries[slot] = entry
        self._rendered = None

    # -- the guard kinds ------------------------------------------------------------------
    def type_match(self, source: Source, value: Any) -> None:
        cls = type(value)
        self.add(
            GuardKind.TYPE_MATCH,
            f"type({source.name}) is {_qualname(cls)}",
            code("___type(", source, f") is {self._const(cls)}"),
            source,
        )

    def id_match(self, source: Source, value: Any) -> None:
        label = _label(value)
        self.add(
            GuardKind.ID_MATCH,
            f"{source.name} is {label}",
            code(source, f" is {self._weak(value) + '()' if _held_weakly(value) else self._const(value)}"),
            source,
        )

    def _weak(self, value: Any) -> str:
        """The name by which guard expressions reach ``value`` through a weak reference: an
        entry does not keep alive a function or an object it was traced for (once it dies, the
        guard fails: None is no argument's identity)."""
        key = ("weak", id(value))
        name = self._object_names.get(key)
        if name is None:
            name = f"___wref_{len(self._object_names)}"
            self._object_names[key] = name
            self.namespace[name] = weakref.ref(value)
        return name

    def equals_match(self, source: Source, value: Any) -> None:
        """Type and value of a constant that the trace used."""
        if value is None or isinstance(value, bool) or value is Ellipsis or value is NotImplemented:
            # (Ellipsis and NotImplemented are names a parameter could shadow: constants)
            shown = _literal(value) if type(value) in (bool, type(None)) else self._const(value)
            self.add(GuardKind.ID_MATCH, f"{source.name} is {value!r}", code(source, f" is {shown}"), source)
            return
        if isinstance(value, enum.Enum):  # a singleton: identity
            self.id_match(source, value)
            return
        self.type_match(source, value)
        shown = "nan" if _inexact(value) and value != value and type(value) is not float else display(value)
        self.add(GuardKind.EQUALS_MATCH, f"{source.name} == {shown}", self.exactly(source, value), source)

    def exactly(self, expr: Source | Code, value: Any) -> Code:
        """An expression true where ``expr`` (a source, or code over sources; its type already
        guarded) has exactly ``value``: ``exact_key``'s rule, written as plain comparisons
        where they are enough."""
        cls = type(value)
        if cls in _PLAIN:
            return code(expr, f" == {_literal(value)}")
        if _inexact(value) and isinstance(value, numbers.Real):
            if value != value or value == 0:  # nan != nan; -0.0 == 0.0: the sign tells them apart
                test = code(expr, " != ", expr) if value != value else code(expr, " == 0")
                return code(test, " and ___copysign(1.0, ", expr, f") == {math.copysign(1.0, value)!r}")
            return code(expr, f" == {_literal(value) or self._const(value)}")
        if _inexact(value) and cls.__module__ in ("builtins", "numpy"):  # a complex: each part
            return code(self.exactly(code(expr, ".real"), value.real), " and ",
                        self.exactly(code(expr, ".imag"), value.imag))
        for base, read in _BASE_VALUE:
            if read is not None and isinstance(value, base):  # a subclass: its own __eq__ may say anything
                return self.exactly(code(f"{self._const(read)}(", expr, ")"), read(value))
        if cls.__module__ == "numpy" or cls in (torch.dtype, torch.device, torch.layout, torch.memory_format):
            return code(expr, f" == {self._const(value)}")
        return code("___exact(", expr, f") == {self._const(exact_key(value))}")

    def items_match(self, expr: Source | Code, items: list[Any]) -> Code:
        """An expression true where iterating ``expr`` gives exactly ``items``, in order (a
        dict's keys, a set's elements: ``==`` alone lets ``1`` for ``True`` through)."""
        if any(map(_tensor_key, items)):
            return code("___key_shapes(", expr, f") == {self._const(key_shapes(items))}")
        if all(type(item) in _PLAIN for item in items):
            return code("___list(", expr, f") == {self._const(list(items))} and ___list(___map(___type, ", expr,
                        f")) == {self._const([type(item) for item in items])}")
        return code("___exact_keys(", expr, f") == {self._const(exact_keys(items))}")

    def readable(self, source: Source) -> None:
        """``source`` can still be read: the generated code re-fetches what it reaches (a value
        the trace passed on unused), and a missing attribute or key must retrace, not raise."""
        self.add(GuardKind.ID_MATCH, f"{source.name} can be read", code("(", source, ", True)[1]"), source)

    def remaining_match(self, source: Source, length: int, op: str) -> None:
        """How many items an iterator passed in has left (``==`` or ``>=``)."""
        self.add(GuardKind.LEN_MATCH, f"remaining({source.name}) {op} {length}",
                 code("___remaining(", source, f") {op} {length}"), source)

    def hasattr_match(self, source: Source, name: str, present: bool) -> None:
        neg = "" if present else "not "
        if type(name) is not str:  # a str subclass: its repr is the user's code
            name = str.__str__(name)
        self.add(GuardKind.ID_MATCH, f"{neg}hasattr({source.name}, {name!r})", code(f"{neg}___hasattr(", source, f", {name!r})"), source)

    def len_match(self, source: Source, length: int) -> None:
        self.add(GuardKind.LEN_MATCH, f"len({source.name}) == {length}", code("___len(", source, f") == {length}"), source)

    def tensor_match(self, source: Source, value: torch.Tensor, static_dims: tuple[bool, ...] | None = None,
                     marks: Callable[[Any], bool] | None = None) -> None:
        """Type, dtype, device, requires_grad, and (static) size and stride of a tensor input;
        with ``marks``, that the tensor's dimension marks (``mark_dynamic``...) still ask for
        the static and symbolic dimensions traced (``marks(tensor)``, asked only of a tensor
        that carries Python attributes)."""
        e = source
        size, stride = tuple(value.size()), tuple(value.stride())
        # The cheapest checks that pin the same facts: is_cpu for the CPU device, and
        # is_contiguous() for the strides of a contiguous tensor whose every dimension is > 1
        # (equal sizes and contiguity then fix every stride).
        device = "is_cpu" if value.device.type == "cpu" else f"device == {self._const(value.device)}"
        parts = [
            code("___type(", e, f") is {self._const(type(value))}"),
            code(e, f".dtype is {self._const(value.dtype)}"),
            code(e, f".{device}"),
            code(e, f".requires_grad is {value.requires_grad}"),
        ]
        if static_dims is None:
            parts.append(code(e, f".shape == {size!r}"))
            if value.is_contiguous() and all(s > 1 for s in size):
                parts.append(code(e, ".is_contiguous()"))
            else:
                parts.append(code(ShapeCall(e, "stride"), f" == {stride!r}"))
            shape_text = f", size={list(size)}, stride={list(stride)}"
        else:  # sizes and strides, dynamic and static, are the ShapeEnv's guards (install_shape_guards)
            parts.append(code(e, f".dim() == {value.dim()}"))
            shape_text = ", size=[" + ", ".join(str(n) if st else "None" for n, st in zip(size, static_dims)) + "]"
        if marks is not None:
            parts.append(code("(not ", e, f".__dict__ or {self._const(marks)}(", e, "))"))
        text = (
            f"check_tensor({source.name}, {type(value).__name__}, {value.dtype}, device={value.device}, "
            f"requires_grad={value.requires_grad}{shape_text})"
        )
        self.add(GuardKind.TENSOR_MATCH, text, join(" and ", parts), source)
        # The type guard of a lazy input (TensorVariable.lazy) until it was read: this one checks
        # the type first, and no guard in between relied on it (every fact read makes the input).
        if self._entries.pop((GuardKind.TYPE_MATCH, parts[0]), None) is not None:
            self._rendered = None

    def set_order(self, ops: tuple[tuple[str, int], ...], members: list[Any], seen: tuple[Any, ...]) -> None:
        """A set made by ``ops`` (``replay_set``) over ``members`` (Sources for objects passed in,
        hashed by their addresses; real objects for the rest) pops and iterates as traced: its
        order follows the members' hashes, an object's its address."""
        parts: list[Any] = [f"{self._const(replay_set)}({self._const(ops)}, ("]
        for member in members:
            parts += [member if isinstance(member, Source) else self._const(member), ", "]
        names = ", ".join(m.name for m in members if isinstance(m, Source))
        self.add(GuardKind.ID_MATCH, f"the set of {names} orders them as traced",
                 code(*parts, f"))[1] == {self._const(seen)}"), next(m for m in members if isinstance(m, Source)))

    def alias(self, source: Source, other: Source) -> None:
        """Two sources reach the same object (a tensor, a list...)."""
        self.add(GuardKind.TENSOR_ALIAS, f"{source.name} is {other.name}", code(source, " is ", other),
                 source, other)

    def global_state(self, items: list[tuple[str, Any, Any]]) -> None:
        """torch's global state as ``global_state.read()`` gave it: one guard per entry."""
        for text, reader, value in items:
            literal = _literal(value)
            compare = "is" if type(value) is bool else "=="
            self.add(GuardKind.GLOBAL_STATE, f"{text} == {value!r}",
                     f"{self._const(reader)}() {compare} {literal if literal is not None else self._const(value)}")

    def shape(self, text: str, expr: Code) -> None:
        """A guard of the ShapeEnv's: ``expr`` over the sources and sizes it mentions."""
        self.add(GuardKind.SHAPE, text, expr)

    def tensor_fact(self, source: Source, suffix: str, value: Any) -> None:
        """A fact of an input tensor beyond the tensor guard: ``L['x'].is_leaf == False``."""
        self.add(GuardKind.TENSOR_MATCH, f"{source.name}{suffix} == {value!r}",
                 code(source, f"{suffix} == {_literal(value) or self._const(value)}"), source)

    def class_mro(self, cls: type) -> None:
        """A class's MRO is the one traced (assigning ``__bases__`` makes a new one): what
        lookups and ``isinstance``/``issubclass`` answers depend on."""
        if _mutable_class(cls):
            self.add(GuardKind.ID_MATCH, f"{_qualname(cls)}.__mro__ is <as traced>",
                     f"{self._const(cls)}.__mro__ is {self._const(cls.__mro__)}")

    def subclass_answer(self, cls: type, of: Any, answer: bool) -> None:
        """``issubclass(cls, of)`` is still ``answer``: new bases, or a class registered with an
        ABC (``Sequence.register(C)``), change it. Nothing is guarded between builtin classes."""
        classes = of if isinstance(of, tuple) else (of,)
        if not _mutable_class(cls) and all(isinstance(c, type) and not _mutable_class(c) and not _mutable_class(type(c))
                                           for c in classes):
            return
        self.add(GuardKind.ID_MATCH, f"issubclass({_qualname(cls)}, {getattr(of, '__qualname__', None) or display(of)}) == {answer}",
                 f"___issubclass({self._const(cls)}, {self._const(of)}) is {answer}")

    def class_flag(self, cls: type, flag: int, answer: bool) -> None:
        """A flag of ``cls.__flags__`` is still set (or not): an ABC's ``register`` sets the
        sequence and mapping flags that ``match`` reads. Nothing is guarded on builtin classes."""
        if not _mutable_class(cls):
            return
        self.add(GuardKind.ID_MATCH, f"{_qualname(cls)}.__flags__ & {flag} == {answer}",
                 f"({self._const(cls)}.__flags__ & {flag}) {'!=' if answer else '=='} 0")

    def class_lookup(self, cls: type, mro: tuple[type, ...], name: str, found: type | None, static: Any) -> None:
        """``name`` looked up along ``mro`` (a class's MRO, or its rest after a ``super()``)
        found ``static`` in ``found``'s dict, or (``found`` None) nowhere: the MRO is the same
        object (``__bases__`` assigned makes a new one), every class before ``found`` still lacks
        the name (one guard per class, however many names), and ``found`` still holds that very
        object (a method or property replaced on the class, or added to a base, retraces).
        Builtin classes cannot change: nothing is guarded on them."""
        self.class_mro(cls)
        for klass in mro:
            if klass is found:
                break
            if _mutable_class(klass):
                def render(names: list[str], klass: type = klass) -> tuple[str, Code | str]:
                    return (f"{', '.join(map(display, names))} not in {_qualname(klass)}.__dict__",
                            self._absent(names, self._class_dict(klass)))
                self._grow(("absent from class", klass), name, GuardKind.ID_MATCH, render)
        if found is not None and _mutable_class(found):
            key = _literal(name) if type(name) is str else None
            self.add(GuardKind.ID_MATCH,
                     f"{_qualname(found)}.__dict__[{display(name)}] is <as traced> (via {_qualname(cls)})",
                     f"{self._class_dict(found)}[{key or self._const(name)}] is {self._const(static)}")

    def class_dict_has(self, cls: type, name: Any, present: bool) -> None:
        """``name in cls.__dict__`` (the class's own dict, not its MRO) is still ``present``."""
        if not _mutable_class(cls):
            return
        key = (_literal(name) if type(name) is str else None) or self._const(name)
        neg = "" if present else "not "
        self.add(GuardKind.ID_MATCH, f"{display(name)} {neg}in {_qualname(cls)}.__dict__",
                 f"{key} {neg}in {self._class_dict(cls)}")

    def _class_dict(self, cls: type) -> str:
        """The name of ``cls.__dict__`` in guard expressions: the class's mappingproxy, made once
        (a live view of the class's own dict, which a class never swaps for another), so a
        lookup is one subscript with no proxy built per call."""
        if cls not in self._class_dicts:
            self._class_dicts[cls] = self._const(type.__dict__["__dict__"].__get__(cls))
        return self._class_dicts[cls]

    def _absent(self, names: list[Any], mapping: Source | str) -> Code:
        """``names`` are not keys of ``mapping`` (a source, or a constant's name): a ``not in``
        per name up to a few (cheapest), else one ``isdisjoint``."""
        if len(names) <= 8:  # (a proxy or a shared dict: each `in` is one lookup, no view built)
            return join(" and ", [code(f"{(_literal(n) if type(n) is str else None) or self._const(n)} not in ", mapping)
                                  for n in names])
        return code(mapping, f".keys().isdisjoint({self._const(tuple(names))})")

    def not_in_instance_dict(self, source: Source, name: str, native: bool = False, where: Source | None = None) -> None:
        """An object's own ``__dict__`` lacks ``name``: a class attribute read through it is not
        shadowed (an instance attribute set later would be). One guard per object. ``native``:
        the dict as ``object.__getattribute__`` reads it, past the class's own lookup; ``where``:
        the dict read another way (a partial's, not made by the read)."""
        # (the dict as a source of its own: several names read it once, as a shared subexpression)
        if where is None:
            where = ObjectAttrSource(source, "__dict__") if native else AttrSource(source, "__dict__")

        def render(names: list[str]) -> tuple[str, Code | str]:
            return (f"{', '.join(map(display, names))} not in {source.name}.__dict__", self._absent(names, where))
        self._grow(("not in instance dict", source, native), name, GuardKind.ID_MATCH, render, where)

    def not_in_member_store(self, source: Source, store: str, name: str) -> None:
        """An ``nn.Module``'s ``store`` (``_parameters``, ``_buffers``) lacks ``name``: its
        ``__getattr__``, which looks there first, finds the member in a later dict. One guard
        per module and dict."""
        where = AttrSource(source, store)  # (a source of its own: a shared subexpression)

        def render(names: list[str]) -> tuple[str, Code | str]:
            return (f"{', '.join(map(display, names))} not in {source.name}.{store}", self._absent(names, where))
        self._grow(("not in member store", source, store), name, GuardKind.ID_MATCH, render, where)

    def module_attribute(self, module: types.ModuleType, name: str, value: Any) -> None:
        """``module.name`` is still ``value`` (a torch function read from torch's namespace: a
        user may replace it). One guard per module."""
        if module.__dict__.get(name, _MISSING) is not value:  # provided by a module __getattr__
            self.add(GuardKind.ID_MATCH, f"{module.__name__}.{display(name)} is <as traced>",
                     f"___getattr({self._const(module)}, {self._const(name)}) is {self._const(value)}")
            return

        def render(pairs: list[tuple[str, Any]]) -> tuple[str, Code | str]:
            names = tuple(n for n, _ in pairs)
            shown = ", ".join(map(display, names[:6])) + (", ..." if len(names) > 6 else "")
            return (f"{module.__name__}.{{{shown}}} are <as traced>",
                    f"___list(___map({self._const(module.__dict__)}.get, {self._const(names)})) == "
                    f"{self._const([v for _, v in pairs])}")
        self._grow(("module attributes", id(module)), (name, value), GuardKind.ID_MATCH, render)

    def module_imported(self, name: str, module: types.ModuleType) -> None:
        """An import inside the function found ``module`` in ``sys.modules`` under ``name`` (it
        ran no code): next time it must find that one there too, else CPython imports anew (or
        binds another module)."""
        self.add(GuardKind.ID_MATCH, f"sys.modules[{display(name)}] is {display(module.__name__)}",
                 f"{self._const(sys.modules)}.get({self._const(name)}) is {self._const(module)}")

    def module_not_imported(self, name: str) -> None:
        """A module the function imports is not imported yet (the entry that leaves the import
        to CPython is for that first time only: once imported, the call is traced anew)."""
        self.add(GuardKind.ID_MATCH, f"{display(name)} not in sys.modules",
                 f"{self._const(name)} not in {self._const(sys.modules)}")

    def not_a_global(self, globals_source: Source | None, name: str) -> None:
        """A builtin the trace used is not shadowed by a global of the module (None: the
        compiled function's own globals)."""
        where = "G" if globals_source is None else globals_source.name
        self.add(GuardKind.ID_MATCH, f"{display(name)} not in {where}",
                 code(f"{_literal(name) or self._const(name)} not in ", '___G' if globals_source is None else globals_source),
                 globals_source)

    def keys_match(self, source: Source, keys: list[Any], kind: GuardKind = GuardKind.LEN_MATCH,
                   text: str = "list({})", exact_dict: bool = False, native: bool = False,
                   ordered: bool = False) -> None:
        """A dict's keys, in order (held as a constant: any hashable key type). ``exact_dict``:
        its type is guarded to be ``dict`` itself, so no keys is ``not d`` (no list built).
        ``native``: a dict subclass's keys as the dict holds them (``dict.keys``, not its own
        ``__iter__``)."""
        seen = (source, tuple(map(id, keys)))
        if seen in self._keys_guarded:
            return  # (the same keys, read again: one constant, one check)
        self._keys_guarded.add(seen)
        shown = "[" + ", ".join(map(display, keys[:8])) + (", ...]" if len(keys) > 8 else "]")
        # (an OrderedDict subclass's keys in OrderedDict's order, which its own __iter__ may hide)
        held = code(f"{'___odkeys' if ordered else '___dkeys'}(", source, ")") if native else source
        expr = code("not ", source) if exact_dict and not keys else self.items_match(held, keys)
        self.add(kind, f"{text.format(source.name)} == {shown}", expr, source)

    def function_match(self, fn: types.FunctionType, args: tuple, kwargs: dict, weak: bool = False) -> None:
        """The compiled function's own code and defaults: what its entries were traced from
        (``%autoreload`` assigns ``__code__``; a user may assign ``__defaults__``). Defaults are
        part of the entry only where the call took one: an entry traced from a call that passed
        every argument takes none (its guard and replacement have no defaults: a call that
        omits an argument does not fit it, and misses), so nothing about them is guarded.
        (Each of these reads is an audit event: every audit hook of the process runs.) With
        ``weak``, the function is reached through a weak reference: an entry of a callee does not
        keep it alive (it is alive whenever its entries are consulted: when it is called); the
        function a user compiled is held by its wrapper anyway, and its hits skip the dereference."""
        takes = _takes_defaults(fn, args, kwargs)
        self.parameters = (fn.__code__, fn.__defaults__ if takes else None, fn.__kwdefaults__ if takes else None)
        name = fn.__qualname__
        for attr in ("__code__", "__defaults__", "__kwdefaults__") if takes else ("__code__",):
            self.add(GuardKind.ID_MATCH, f"{name}.{attr} is <as traced>",
                     f"{self._weak(fn) + '()' if weak else self._const(fn)}.{attr} is {self._const(getattr(fn, attr))}")

    def not_identical(self, source: Source, other: Source) -> None:
        """Two sources reach different objects (the trace decided ``a is b`` is False)."""
        self.add(GuardKind.TENSOR_ALIAS, f"{source.name} is not {other.name}", code(source, " is not ", other),
                 source, other)

    def distinct(self, source: Source) -> None:
        """``source`` is one more mutable input (tensor, list, dict, object) that is not any
        other: one guard holds them all, so passing one object twice where the trace saw two
        (or the reverse, with the alias guard) retraces."""
        if isinstance(source.root(), PrivateObjectSource):
            return

        def render(sources: list[Source]) -> tuple[str, Code] | None:
            if len(sources) < 2:
                return None
            text = f"distinct({', '.join(s.name for s in sources)})"
            if len(sources) <= _PAIRWISE_DISTINCT and all(s.expr().isidentifier() for s in sources):  # plain locals
                return text, join(" and ", [code(a, " is not ", b) for a, b in itertools.combinations(sources, 2)])
            # (object.__hash__ is the address, rotated: one per live object, and no audit event,
            # where every id() runs the process's audit hooks: transformers installs one on 3.12+)
            hashes = join(", ", [code("___addr(", s, ")") for s in sources])
            return text, code("___len({", hashes, f"}}) == {len(sources)}")
        self._grow("distinct", source, GuardKind.TENSOR_ALIAS, render, items_are_sources=True)


def _takes_defaults(fn: types.FunctionType, args: tuple, kwargs: dict) -> bool:
    """Whether binding this call to ``fn`` takes a default (of a positional or a keyword-only
    parameter)."""
    code = fn.__code__
    names = code.co_varnames[:code.co_argcount]
    for i in range(code.co_argcount - len(fn.__defaults__ or ()), code.co_argcount):
        if i >= len(args) and (i < code.co_posonlyargcount or names[i] not in kwargs):
            return True
    return any(name not in kwargs for name in fn.__kwdefaults__ or {})


# Up to this many inputs (plain locals), distinctness is checked pair by pair with ``is not``:
# cheaper than a set of addresses (for 10 inputs, 45 comparisons: 0.27 µs against 0.32).
_PAIRWISE_DISTINCT = 10


def _mutable_class(cls: type) -> bool:
    """Whether a class's dict or bases can change (not a builtin or extension type)."""
    return not type.__dict__["__flags__"].__get__(cls) & (1 << 8)  # Py_TPFLAGS_IMMUTABLETYPE


def _held_weakly(value: Any) -> bool:
    """Whether an entry holds an object it guards by identity weakly: a Python function, or an
    instance of a user's class (a module, a config), which the program may drop; classes,
    modules and builtins live as long as the program."""
    cls = type(value)
    if cls is types.FunctionType:
        return True
    return cls.__weakrefoffset__ != 0 and not isinstance(value, (type, types.ModuleType)) and \
        cls.__module__ != "builtins"


def _label(value: Any) -> str:
    """How a guard's text names an object held by identity, read without running any of the
    user's code (a module's or a class's ``__getattr__``, a property)."""
    if isinstance(value, type):
        label = type.__dict__["__qualname__"].__get__(value)
    elif isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
        label = value.__qualname__
    elif isinstance(value, types.ModuleType):
        label = object.__getattribute__(value, "__dict__").get("__name__")
    else:
        label = None
    return label if type(label) is str else _qualname(type(value))


def _qualname(cls: type) -> str:
    """A class's qualified name, read past any metaclass property (no user code runs)."""
    return type.__dict__["__qualname__"].__get__(cls)
