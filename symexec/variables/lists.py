"""Sequences: lists, tuples, torch.Size, named tuples, ranges, slices, and iterators.

Lists are modelled by value: a ``ListVariable`` holds a Python list of trackers that handlers
mutate in place, so aliases (two names for one list) see the same changes, as in CPython.
A list that came from the inputs (it has a source) is guarded on its length when wrapped;
mutating such a pre-existing list is a side effect, replayed after the graph (side_effects.py).
"""

from __future__ import annotations

import collections
import operator
import types
import weakref
from typing import Any, Callable

import torch

from ..context import TracerContext
from ..exc import AttributeMissing, TracedException, Unsupported, raised_in_the_trace
from ..source import Source
from .base import Methods, Registry, VariableTracker, as_proxy, class_static, find_on_class, is_data_descriptor
from .constant import COMPUTED_WRAPPERS, ConstantVariable, wrap_constant
from .object_protocol import call_operator, class_attribute, type_is_callable


class _Unknown:
    """A value not known while tracing inside a sort key (the module of ``(name, module)``):
    sorting may order the keys without it (tuples compare item by item, and stop at the first
    that differs); comparing it breaks the graph."""

    __slots__ = ("what",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, what: str) -> None:
        self.what = what

    def _refuse(self, other: Any) -> bool:
        raise Unsupported(f"sorting compares {self.what}, not known while tracing")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse  # type: ignore[assignment]


def _sort_key(var: VariableTracker) -> Any:
    """A sort key as a Python value: a constant as it is, a builtin tuple item by item, anything
    else ``_Unknown`` (a distinct one per item: no identity shortcut says two are equal)."""
    if var.is_python_constant():
        return var.as_python_constant()
    if isinstance(var, TupleVariable) and var.python_type() is tuple:
        return tuple(_sort_key(item) for item in var.items)
    return _Unknown(var.describe())


def sort_keys(tx: TracerContext, items: list[VariableTracker], key: VariableTracker | None) -> list[Any]:
    """The sort keys of ``items`` as Python values (``_sort_key``): the items themselves, or what
    ``key`` returns."""
    if key is None or (key.is_python_constant() and key.as_python_constant() is None):
        return [_sort_key(i) for i in items]
    return [_sort_key(key.call_function(tx, [i], {})) for i in items]


def _no_attribute(cls: type, name: str) -> AttributeMissing:
    """CPython's AttributeError for an instance of ``cls`` without ``name``, its lookup guarded."""
    return AttributeMissing.exactly(AttributeError(f"'{cls.__name__}' object has no attribute '{name}'"), guarded=True)


_OBJECT_CLASS = vars(object)["__class__"]


def _with_attributes(obj: Any, attrs: dict[str, Any]) -> Any:
    """``obj`` with ``attrs`` set in its ``__dict__`` (generated code: a named tuple rebuilt)."""
    obj.__dict__.update(attrs)
    return obj


class BaseListVariable(VariableTracker):
    """Shared behaviour of list-like trackers over ``self.items``."""

    models = (list, tuple)

    python_cls: type = list

    def __init__(self, items: list[VariableTracker], source: Source | None = None) -> None:
        super().__init__(source)
        self.items = list(items)

    def python_type(self) -> type:
        return self.python_cls

    def as_python_constant(self) -> Any:
        if self._converting:  # (a list that holds itself: root[:] = [root])
            raise Unsupported(f"{self.describe()} contains itself: not a constant")
        self._converting = True
        try:
            return self.python_cls([item.as_python_constant() for item in self.items])
        finally:
            self._converting = False

    _converting = False

    def as_proxy(self) -> Any:
        return self.python_cls([as_proxy(item) for item in self.items])

    def describe(self) -> str:
        return f"the {self.python_cls.__name__} {self.source.name}" if self.source else f"a {self.python_cls.__name__}"

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        cls = self.python_type()
        if name == "__class__" and class_static(tx, cls, name) is _OBJECT_CLASS:
            return tx.wrap(cls, None)  # (object's __class__, not a class's own property)
        if cls in (tuple, list, torch.Size) and class_static(tx, cls, name) is None:
            # A builtin tuple or list has only its class's attributes, and none can be added:
            # missing, exactly (``hasattr(outputs, "buckets")`` is False).
            raise _no_attribute(cls, name)
        return super().var_getattr(tx, name)

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        return list(self.items)

    def subvalues(self) -> list[VariableTracker]:
        return [] if isinstance(self, RangeVariable) else list(self.items)

    def is_callable(self, tx: TracerContext) -> bool:
        return type_is_callable(tx, self.python_type())  # (a subclass may have a __call__: LogitsProcessorList)

    def truth(self, tx: TracerContext) -> bool:
        return bool(self.items)

    def getitem(self, tx: TracerContext, index: VariableTracker) -> VariableTracker:
        key = _constant_tensor(index)
        if key is not None:  # its __index__, as CPython calls it
            with raised_in_the_trace(IndexError, TypeError):
                return self.items[operator.index(key)]
        key = index.as_python_constant()
        if isinstance(key, slice):  # (a subclass's slice is a plain list or tuple; Size's is a Size)
            return (ListVariable if isinstance(self, ListVariable) else TupleVariable)(self.items[key])
        with raised_in_the_trace(IndexError):
            return self.items[operator.index(key)]

    # The methods of tuple and list that read (``ListVariable.methods`` adds list's others).
    methods = Methods("tuple and list")

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        result = self.methods.call(self, tx, name, args, kwargs)
        if result is None:
            raise Unsupported(f"method {name!r} of {self.describe()}")
        return result

    @methods("__getitem__")
    def _getitem_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        return self.getitem(tx, args[0]) if len(args) == 1 else None

    @methods("__len__")
    def _len(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        return None if args else ConstantVariable(len(self.items))

    @methods("index", "count")
    def _search(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if kwargs:
            return None
        # Equality of items must be known: constants only.
        with raised_in_the_trace(ValueError, TypeError):  # not in the list, or bad arguments: CPython raises it
            return ConstantVariable(getattr(self.as_python_constant(), name)(*[a.as_python_constant() for a in args]))

    def reconstruct(self, cg: Any) -> None:
        if self.source is not None:
            self.source.emit_load(cg)
            return
        for item in self.items:
            cg.reconstruct(item)
        cg.build(self.python_cls, len(self.items))

    def __repr__(self) -> str:
        inner = ", ".join(repr(i) for i in self.items[:6]) + (", ..." if len(self.items) > 6 else "")
        return f"{type(self).__name__}([{inner}])"


class TupleVariable(BaseListVariable):
    """A ``tuple`` whose items are trackers (a named tuple is ``NamedTupleVariable``)."""

    models = tuple

    python_cls = tuple


class SizeVariable(TupleVariable):
    """A ``torch.Size``: its items are ints or symbolic ints (a symbolic shape); slicing and
    ``+``/``*`` with tuples give a Size, as torch's own methods do."""

    models = torch.Size

    python_cls = torch.Size

    def as_proxy(self) -> Any:
        return tuple(as_proxy(item) for item in self.items)  # (FX writes a Size as a tuple: see Tensor.new)

    def getitem(self, tx: TracerContext, index: VariableTracker) -> VariableTracker:
        key = index.as_python_constant()
        if isinstance(key, slice):
            return SizeVariable(self.items[key])
        return super().getitem(tx, index)

    methods = Methods("torch.Size", extends=BaseListVariable.methods)

    @methods("numel")
    def _numel(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if args:
            return None
        if all(item.is_python_constant() for item in self.items):
            return ConstantVariable(self.as_python_constant().numel())
        product: VariableTracker = ConstantVariable(1)  # symbolic sizes: their product, recorded
        for item in self.items:
            product = call_operator(tx, operator.mul, product, item)
        return product

    def reconstruct(self, cg: Any) -> None:
        if self.source is None and all(item.is_python_constant() for item in self.items):
            cg.load_const(self.as_python_constant())
            return
        # Symbolic sizes stay symbolic: re-read where they came from, or rebuilt from the
        # graph's outputs (torch.Size of a tuple).
        if self.source is not None:
            self.source.emit_load(cg)
            return
        cg.call_const(torch.Size, lambda: [TupleVariable(self.items).reconstruct(cg)])


_TUPLEGETTER = type(collections.namedtuple("_Probe", "a").a)  # a namedtuple's field descriptor
# Classes made by a trace (``collections.namedtuple`` called while tracing): generated code makes
# its own per run, so the one made while tracing must never be loaded as a constant.
MADE_CLASSES: "weakref.WeakSet[type]" = weakref.WeakSet()

class NamedTupleVariable(TupleVariable):
    """A named tuple or a torch structseq (``torch.return_types.max``): items plus field names."""

    models = tuple  # named tuple classes and torch's structseqs

    def __init__(self, items: list[VariableTracker], cls: type, source: Source | None = None,
                 class_var: VariableTracker | None = None) -> None:
        super().__init__(items, source)
        self.cls = cls
        self.class_var = class_var  # the class's tracker, where rebuilding must go through it (made by the trace)
        # A subclass without __slots__ gives its instances a __dict__: one object, however many
        # places hold it (an attribute set on it at a graph break must be there for all).
        self.built_once = cls.__dictoffset__ != 0
        self.attrs: dict[str, VariableTracker] = {}  # set on one made by the trace (in its __dict__)

    def python_type(self) -> type:
        return self.cls

    def store_attr(self, tx: TracerContext, name: str, value: VariableTracker | None) -> None:
        """``t.name = value`` on a named tuple made by the trace whose class gives its instances
        a ``__dict__`` (a subclass without ``__slots__``), where the class has no descriptor
        of that name that would take the write (a field's getter refuses it: not modelled)."""
        if self.source is not None or self.cls.__dictoffset__ == 0 or value is None or type(name) is not str:
            super().store_attr(tx, name, value)
            return
        if find_on_class(tx, self.cls, name)[0] is not None and is_data_descriptor(class_static(tx, self.cls, name)):
            super().store_attr(tx, name, value)
            return
        self.attrs[name] = value

    def subvalues(self) -> list[VariableTracker]:
        return [*self.items, *self.attrs.values()]

    def fields(self) -> tuple[str, ...]:
        # A namedtuple has _fields; a structseq (torch.return_types.max) has __match_args__.
        return tuple(getattr(self.cls, "_fields", None) or getattr(self.cls, "__match_args__", ()))

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        if name in self.attrs and not is_data_descriptor(class_static(tx, self.cls, name)):
            return self.attrs[name]
        fields = self.fields()
        if class_static(tx, self.cls, "_fields") is None:  # a structseq: fields and tuple methods only
            if name in fields:
                return self.items[fields.index(name)]
            return super().var_getattr(tx, name)
        klass, value = find_on_class(tx, self.cls, name)  # guarded: the class attribute may be reassigned
        if type(value) is _TUPLEGETTER:  # a field (or another field's getter, assigned under this name)
            return self.items[value.__reduce__()[1][0]]
        if klass is None and class_static(tx, self.cls, "__dict__") is None \
                and class_static(tx, self.cls, "__getattr__") is None:
            # Not on the class, and its instances have no __dict__ (a namedtuple's __slots__ = ()):
            # missing, exactly (``hasattr(outputs, "buckets")`` on another namedtuple is False).
            raise _no_attribute(self.cls, name)
        if klass is None or klass in (tuple, object):
            return super().var_getattr(tx, name)
        if self.source is not None and class_static(tx, self.cls, "__dict__") is not None:
            tx.guards.not_in_instance_dict(self.source, name)  # (a subclass's instances have a __dict__)
        if isinstance(value, (tuple, dict, str, int)) and not callable(value):  # _fields, _field_defaults
            return wrap_constant(value)
        # What the namedtuple or a subclass defines (_replace, _asdict, methods, properties):
        # looked up as on any object, so it runs as its Python code does.
        return class_attribute(tx, self, self.cls, name)

    def as_python_constant(self) -> Any:
        values = [item.as_python_constant() for item in self.items]
        return self.cls(values) if not hasattr(self.cls, "_fields") else self.cls(*values)

    def as_proxy(self) -> Any:
        return tuple(as_proxy(item) for item in self.items)

    def reconstruct(self, cg: Any) -> None:
        if self.source is not None:
            self.source.emit_load(cg)
            return
        if self.attrs:  # made, then its attributes set: ``_with_attributes(cls._make(items), attrs)``
            cg.call_const(_with_attributes, lambda: [self._reconstruct_made(cg), self._attrs_dict(cg)])
            return
        self._reconstruct_made(cg)

    def _attrs_dict(self, cg: Any) -> None:
        for name, value in self.attrs.items():
            cg.load_const(name)
            cg.reconstruct(value)
        cg.build(dict, len(self.attrs))

    def _reconstruct_made(self, cg: Any) -> None:
        if self.class_var is not None:  # ``cls._make(items)``, of the class as this run has it
            cg.push_callable(lambda: (cg.reconstruct(self.class_var), cg.load_attr("_make")))
            self._reconstruct_tuple(cg)
            cg.call(1)
        elif self.cls in MADE_CLASSES:
            raise Unsupported(f"rebuilding an instance of {self.cls.__qualname__}, a class the trace made, "
                              f"reached other than through the class")
        elif hasattr(self.cls, "_make"):
            cg.call_const(self.cls._make, lambda: [self._reconstruct_tuple(cg)])
        else:
            cg.call_const(self.cls, lambda: [self._reconstruct_tuple(cg)])

    def _reconstruct_tuple(self, cg: Any) -> None:
        for item in self.items:
            cg.reconstruct(item)
        cg.build(tuple, len(self.items))


class ListVariable(BaseListVariable):
    """A ``list`` whose items are trackers. Mutating methods (``append``, ``extend`` one item at
    a time, ``sort`` of known items...) change the items; on a list that existed before the
    call the change is a side effect, replayed after the graph. A subclass that keeps list's
    protocol is ``ListSubclassVariable``."""

    models = list

    python_cls = list
    built_once = True

    def reconstruct(self, cg: Any) -> None:
        if self.source is not None or not _reaches(self.items, self):
            super().reconstruct(cg)
            return
        # A list that holds itself (``a.append(a)``): made empty and remembered first, so its
        # items find it built, then extended with them.
        if not _reaches(self.items, self, through=ListVariable):
            raise Unsupported("a list that holds itself through another container, rebuilt in generated code")
        cg.build(list, 0)
        cg.remember(self)
        for item in self.items:
            cg.reconstruct(item)
        cg.build(tuple, len(self.items))
        cg.emit("LIST_EXTEND", 1)

    # list's own methods. Each that changes the list marks it changed first (on a list passed
    # in, the change is replayed after the graph); a call with arguments not modelled is None.
    methods = Methods("list", extends=BaseListVariable.methods)

    def _changing(self, tx: TracerContext, arity: Callable[[int], bool], args: list[VariableTracker],
                  kwargs: dict[str, VariableTracker]) -> bool:
        """Whether a changing method's call is modelled (no keywords, as many arguments as it
        takes); if so the list is marked changed."""
        if kwargs or not arity(len(args)):
            return False
        tx.trace.side_effects.mutate(self)
        return True

    @methods("append")
    def _append(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not self._changing(tx, lambda n: n == 1, args, kwargs):
            return None
        self.items.append(args[0])
        return ConstantVariable(None)

    @methods("extend", "__iadd__")
    def _extend(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not self._changing(tx, lambda n: n == 1, args, kwargs):
            return None
        if args[0] is self:
            self.items.extend(list(self.items))
        else:  # (appended as they come, as CPython's list_extend does: a lazy map sees each)
            for item in items_one_by_one(tx, args[0]):
                self.items.append(item)
        return self if name == "__iadd__" else ConstantVariable(None)

    @methods("__imul__")
    def _imul(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not self._changing(tx, lambda n: n == 1, args, kwargs):
            return None
        self.items[:] = self.items * operator.index(args[0].as_python_constant())
        return self

    @methods("insert")
    def _insert(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not self._changing(tx, lambda n: n == 2, args, kwargs):
            return None
        with raised_in_the_trace(IndexError, ValueError, TypeError):  # (an index that is no int: TypeError)
            self.items.insert(args[0].as_python_constant(), args[1])
        return ConstantVariable(None)

    @methods("pop")
    def _pop(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not self._changing(tx, lambda n: n <= 1, args, kwargs):
            return None
        with raised_in_the_trace(IndexError, ValueError, TypeError):  # (an empty list, an index out of range: IndexError)
            return self.items.pop(args[0].as_python_constant() if args else -1)

    @methods("clear", "reverse")
    def _clear_or_reverse(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not self._changing(tx, lambda n: n == 0, args, kwargs):
            return None
        getattr(self.items, name)()
        return ConstantVariable(None)

    @methods("remove")
    def _remove(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not self._changing(tx, lambda n: n == 1, args, kwargs):
            return None
        try:  # (equality of items must be known: constants only)
            index = self.as_python_constant().index(args[0].as_python_constant())
        except ValueError as e:
            raise TracedException(ValueError("list.remove(x): x not in list")) from e
        del self.items[index]
        return ConstantVariable(None)

    @methods("sort")
    def _sort(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if args or set(kwargs) - {"key", "reverse"}:
            return None
        tx.trace.side_effects.mutate(self)
        keys = sort_keys(tx, self.items, kwargs.get("key"))
        reverse = bool(kwargs["reverse"].as_python_constant()) if "reverse" in kwargs else False
        self.items[:] = [self.items[i] for i in sorted(range(len(self.items)), key=keys.__getitem__, reverse=reverse)]
        return ConstantVariable(None)

    @methods("__setitem__")
    def _setitem(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not self._changing(tx, lambda n: n == 2, args, kwargs):
            return None
        key = args[0].as_python_constant()
        with raised_in_the_trace(IndexError, ValueError, TypeError):  # (out of range; an extended slice of another size)
            self.items[key] = args[1].unpack(tx) if isinstance(key, slice) else args[1]
        return ConstantVariable(None)

    @methods("__delitem__")
    def _delitem(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not self._changing(tx, lambda n: n == 1, args, kwargs):
            return None
        with raised_in_the_trace(IndexError, ValueError, TypeError):
            del self.items[args[0].as_python_constant()]
        return ConstantVariable(None)

    @methods("copy")
    def _copy(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        return None if args or kwargs else ListVariable(list(self.items))


def range_length(value: range) -> int:
    """How many items ``value`` has; ``len`` raises OverflowError past ``sys.maxsize``."""
    try:
        return len(value)
    except OverflowError:
        return max(0, (value.stop - value.start + value.step - (1 if value.step > 0 else -1)) // value.step)


class RangeVariable(BaseListVariable):
    """``range(...)`` with constant bounds: its items are known."""

    models = range

    python_cls = range

    def __init__(self, value: range, source: Source | None = None) -> None:
        VariableTracker.__init__(self, source)
        self.value = value

    @property
    def items(self) -> list[VariableTracker]:  # type: ignore[override]
        if range_length(self.value) > 100_000:
            raise Unsupported(f"unrolling {self.value!r}: too many iterations to trace")
        return [ConstantVariable(v) for v in self.value]

    def truth(self, tx: TracerContext) -> bool:
        return bool(self.value)

    def as_python_constant(self) -> Any:
        return self.value

    def as_proxy(self) -> Any:
        return self.value

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        if name in ("start", "stop", "step"):  # (a range from a source is guarded by its fields)
            return ConstantVariable(getattr(self.value, name))
        if class_static(tx, range, name) is None:
            raise _no_attribute(range, name)
        return super().var_getattr(tx, name)

    def getitem(self, tx: TracerContext, index: VariableTracker) -> VariableTracker:
        with raised_in_the_trace(IndexError, TypeError):
            return wrap_constant(self.value[index.as_python_constant()])

    def reconstruct(self, cg: Any) -> None:
        cg.load_const(self.value)


class SliceVariable(VariableTracker):
    """A ``slice`` built by the trace (``BUILD_SLICE``, ``x[a:b]``): its three parts are trackers,
    symbolic ints allowed (a symbolic slice of a tensor)."""

    models = slice

    def __init__(self, start: VariableTracker, stop: VariableTracker, step: VariableTracker) -> None:
        super().__init__()
        self.parts = (start, stop, step)

    def python_type(self) -> type:
        return slice

    def as_python_constant(self) -> Any:
        return slice(*(p.as_python_constant() for p in self.parts))

    def as_proxy(self) -> Any:
        return slice(*(as_proxy(p) for p in self.parts))

    def subvalues(self) -> list[VariableTracker]:
        return list(self.parts)

    def reconstruct(self, cg: Any) -> None:
        for part in self.parts:
            cg.reconstruct(part)
        cg.build(slice, 3)

    def __repr__(self) -> str:
        return f"SliceVariable({self.parts!r})"


def _reaches(items: list[VariableTracker], target: VariableTracker, through: type = VariableTracker) -> bool:
    """Whether ``target`` is among ``items`` or what they hold, through trackers of ``through``."""
    seen: set[int] = set()
    todo = list(items)
    while todo:
        var = todo.pop()
        if var is target:
            return True
        if id(var) not in seen and isinstance(var, through):
            seen.add(id(var))
            todo.extend(var.subvalues())
    return False


def _constant_tensor(var: VariableTracker) -> torch.Tensor | None:
    """The value of a tensor the trace made from constants alone (``torch.as_tensor(2)``), which
    the fake tensor carries while no operation has written to it, or None."""
    fake = getattr(var, "example", None)
    if var.source is None and isinstance(fake, torch.Tensor):
        return getattr(fake, "constant", None)
    return None


def items_one_by_one(tx: TracerContext, iterable: VariableTracker) -> Any:
    """The items of ``iterable`` as a consumer that may stop early takes them (``any``,
    ``in``, ``list.extend``): an iterator's one at a time, so what is left stays unrun; a
    container's from the items it holds."""
    if isinstance(iterable, IteratorVariable):
        while (item := iterable.next_item()) is not None:
            yield item
    else:
        yield from iterable.unpack(tx)


class IteratorVariable(VariableTracker):
    """An iterator over items known while tracing; ``next`` advances it in place.

    ``cls`` is the type of the real iterator (``list_iterator``, ``range_iterator``, ``map``,
    ``zip``...), or None where the tracer made it for its own use (GET_ITER of a ``for`` loop):
    then its type is unknown and asking for it is unsupported, never a guess.
    """

    models = collections.abc.Iterator

    built_once = True  # (one iterator, however many places hold it: a loop and a local)

    def __init__(self, items: list[VariableTracker], cls: type | None = None) -> None:
        super().__init__()
        self.items = items
        self.index = 0
        self.cls = cls
        # The list iterated (``iter(lst)``), while it holds the very items taken from it: the
        # real iterator over that list is then rebuilt at its position.
        self.origin: ListVariable | None = None

    def over_origin(self) -> bool:
        """Whether the list iterated still holds the items this iterator took them from."""
        origin = self.origin
        return origin is not None and type(origin) is ListVariable and len(origin.items) == len(self.items) and all(
            a is b for a, b in zip(origin.items, self.items))

    def exact_rebuild(self) -> bool:
        """Whether rebuilt at a graph break it gives the items CPython's would: one over a
        container that cannot change (a tuple, a range, a str), or the real iterator over the
        list it iterates. One over a list whose items were copied (or of unknown origin) may
        not: the list may change before its items are taken."""
        return (type(self) is IteratorVariable and self.cls in _IMMUTABLE_ITERATORS) or self.over_origin()

    def python_type(self) -> type:
        if self.cls is None:
            raise Unsupported("the type of an iterator made by the tracer")
        return self.cls

    def subvalues(self) -> list[VariableTracker]:
        return self.items[self.index:]

    def pending(self) -> bool:
        """Whether taking an item may run code (a lazy ``map``, a generator): then a consumer
        takes them one at a time, when CPython would."""
        return False

    def next_item(self) -> VariableTracker | None:
        if self.index >= len(self.items):
            return None
        self.index += 1
        return self.items[self.index - 1]

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        rest = self.items[self.index:]
        self.index = len(self.items)
        return rest

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        result = None if args or kwargs else self.methods.call(self, tx, name, args, kwargs)
        if result is None:
            raise Unsupported(f"method {name!r} of an iterator")
        return result

    methods = Methods("iterator")

    def stop_error(self) -> TracedException:
        """What ``next`` raises once ``next_item`` found no item (a generator's carries its
        return value)."""
        return TracedException(StopIteration())

    @methods("__iter__")
    def _iter(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        return self

    @methods("__next__")
    def _next(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        item = self.next_item()
        if item is None:
            raise self.stop_error()
        return item

    def reconstruct(self, cg: Any) -> None:
        if self.over_origin():  # the list's own iterator, at the traced position
            cg.call_const(list_iterator_at, lambda: [cg.reconstruct(self.origin), cg.load_const(self.index)])
            return

        def remaining() -> list[None]:
            for item in self.items[self.index:]:
                cg.reconstruct(item)
            cg.build(tuple, len(self.items) - self.index)
            return [None]

        if self.cls in REBUILDERS:
            cg.call_const(REBUILDERS[self.cls], remaining)
        else:
            remaining()
            cg.get_iter()

    def __repr__(self) -> str:
        return f"IteratorVariable({self.index}/{len(self.items)})"


def _rebuild_range_iterator(items: tuple) -> Any:
    if len(items) < 2:
        return iter(range(items[0], items[0] + 1) if items else range(0))
    step = items[1] - items[0]
    return iter(range(items[0], items[-1] + step, step))


_TUPLE_ITERATOR = type(iter(()))
# Iterators re-created with their own type from the items still to come (generated code):
# the types a continuation can take back (builder.py wraps list, tuple and range iterators).
# Others (enumerate, zip, reversed, dict iterators) are re-created as a tuple iterator over
# their remaining items, which a loop continuation iterates the same way.
def _as_generator(items: tuple) -> Any:
    yield from items


REBUILDERS: dict[type, Any] = Registry("lists.REBUILDERS")  # (itertools_objects.py adds its own)
REBUILDERS.update({
    type(iter([])): lambda items: iter(list(items)),
    type(iter(range(0))): _rebuild_range_iterator,
    types.GeneratorType: _as_generator,  # (module.parameters()'s, over the members still to come)
})


_IMMUTABLE_ITERATORS = frozenset({_TUPLE_ITERATOR, type(iter(range(0))), type(iter("")), type(iter(b""))})


def rebuilt_exactly(it: VariableTracker) -> bool:
    """Whether ``it`` rebuilt at a graph break gives the items CPython's would
    (``IteratorVariable.exact_rebuild``)."""
    return isinstance(it, IteratorVariable) and it.exact_rebuild()


def list_iterator_at(lst: list, index: int) -> Any:
    """``iter(lst)`` having given ``index`` items (generated code: a list's iterator rebuilt)."""
    it = iter(lst)
    it.__setstate__(index)
    return it


def iterator_type(value_type: type | None, example: Any = None) -> type | None:
    """The type of ``iter(obj)`` for an ``obj`` of ``value_type`` (None when unknown)."""
    if example is not None:
        try:
            return type(iter(example))
        except TypeError:
            return None
    for base in (list, tuple, range, dict, set, frozenset, collections.deque):
        if value_type is base:
            return type(iter(base()))
    return None


class InputIteratorVariable(IteratorVariable):
    """A list, tuple or range iterator passed in (a loop's iterator handed to a continuation,
    or the user's).

    Items are read one at a time as the trace consumes them, without advancing the real
    iterator while tracing, and the guards ask only for as many remaining items as were
    consumed: the continuation of a loop body, which takes one item per call, is reused for
    every item. The generated code advances the real iterator by as many (a side effect,
    ``advanced``), and everything that holds it (a loop, a local) holds that one object.
    """

    models = collections.abc.Iterator

    def __init__(self, value: Any, source: Source, wrap_item: Any, guards: Any, advanced: Any) -> None:
        super().__init__([], type(value))
        self.source = source
        self.remaining = value.__length_hint__()
        self._wrap_item = wrap_item  # index -> tracker of that item, with its source
        self._guards = guards
        self._advanced = advanced  # told when the trace consumes an item

    def next_item(self) -> VariableTracker | None:
        if self.index >= self.remaining:
            self._guards.remaining_match(self.source, self.index, "==")
            return None
        item = self._wrap_item(self.index)
        self.items.append(item)
        self.index += 1
        self._guards.remaining_match(self.source, self.index, ">=")
        self._advanced(self)
        return item

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        rest = []
        while (item := self.next_item()) is not None:
            rest.append(item)
        return rest

    def exact_rebuild(self) -> bool:
        return True  # (its real object)

    def reconstruct(self, cg: Any) -> None:
        self.source.emit_load(cg)  # the real iterator (the replay advances it)

    def __repr__(self) -> str:
        return f"InputIteratorVariable({self.source.name}, {self.index} read)"


def _wrap_slice(value: slice) -> VariableTracker:
    return SliceVariable(*(wrap_constant(v) for v in (value.start, value.stop, value.step)))


COMPUTED_WRAPPERS.update({
    tuple: lambda v: TupleVariable([wrap_constant(i) for i in v]),
    list: lambda v: ListVariable([wrap_constant(i) for i in v]),
    torch.Size: lambda v: SizeVariable([ConstantVariable(int(i)) for i in v]),
    range: RangeVariable,
    slice: _wrap_slice,
})
