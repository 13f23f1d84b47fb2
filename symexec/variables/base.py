"""The shared protocol of every tracker.

A ``VariableTracker`` stands for one Python value while the tracer runs. It knows which Python
type it models (``python_type``), whether it is a compile-time constant
(``as_python_constant``), how to read attributes (``var_getattr``), how to be called
(``call_function``, ``call_method``), how to be iterated (``unpack``), and how to re-create
the object in generated code (``reconstruct``). Every family lives in its own module here and
says what it does not support by raising ``Unsupported``.

Trackers reach the trace (its graph, guards, side effects, memos), the builder (``tx.wrap``) and
the inliner (``tx.inline_call``) through ``tx``, the running translator, never through imports
of higher layers; ``context.TracerContext`` is all they may use of it.
"""

from __future__ import annotations

import collections
import itertools
import threading
import types
from typing import Any, Callable, ClassVar, Iterator, Sequence

import torch

from ..context import TracerContext
from ..exc import AttributeMissing, Unsupported, raised_in_the_trace
from ..source import Source


_asking = threading.local()  # (is_python_constant, per tracing thread)


class Registry(dict):
    """A table of what handles what (a callable's handler, a type's wrapper), filled as the
    families are imported: a key registered twice is a bug (the second silently replacing the
    first made behaviour depend on import order), refused."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def __setitem__(self, key: Any, value: Any) -> None:
        if key in self:
            raise ValueError(f"{self.name}: {key!r} is registered twice")
        super().__setitem__(key, value)

    def update(self, *args: Any, **kwargs: Any) -> None:  # (through __setitem__, checked)
        for key, value in dict(*args, **kwargs).items():
            self[key] = value


Method = Callable[["VariableTracker", Any, str, list["VariableTracker"], dict[str, "VariableTracker"]],
                  "VariableTracker | None"]


class Methods(Registry):
    """The methods of its Python type that a tracker family models, by name: ``name ->
    method(obj, tx, name, args, kwargs)``, which returns the call's result, or None where it
    does not model the call as made (its arguments). Then the table this one ``extends`` is
    asked (a subclass's table extends its base's); past the last one, the family decides
    (usually the graph breaks). A name registered twice in one table is refused. Filled in
    the class body, as a decorator::

        class ListVariable(BaseListVariable):
            methods = Methods("list", extends=BaseListVariable.methods)

            @methods("append")
            def _append(self, tx, name, args, kwargs): ...
    """

    def __init__(self, name: str, extends: "Methods | None" = None) -> None:
        super().__init__(name)
        self.extends = extends

    def __call__(self, *names: str) -> Callable[[Method], Method]:
        def register(method: Method) -> Method:
            for name in names:
                self[name] = method
            return method
        return register

    def call(self, obj: "VariableTracker", tx: TracerContext, name: str, args: list["VariableTracker"],
             kwargs: dict[str, "VariableTracker"]) -> "VariableTracker | None":
        """The call's result from the first table along ``extends`` that models it, or None."""
        table: Methods | None = self
        while table is not None:
            method = dict.get(table, name)
            if method is not None:
                result = method(obj, tx, name, args, kwargs)
                if result is not None:
                    return result
            table = table.extends
        return None

    def names(self) -> set[str]:
        """Every name modelled here or in the tables this one extends."""
        return set(self) | (self.extends.names() if self.extends is not None else set())


def only_asking() -> bool:
    """Whether ``as_python_constant`` is running for ``is_python_constant``, which must not
    specialise a symbolic value."""
    return getattr(_asking, "active", False)


# Numbers trackers in the order they are made (``VariableTracker.serial``).
_SERIALS = itertools.count()


class VariableTracker:
    """Base of all trackers. ``source`` says how to re-fetch the value at entry (or None).

    Every tracker class names the Python type it models (``models``) and says in its
    docstring what of it is not modelled (where the graph breaks)."""

    # The Python type, or types, of the values a tracker class models (``python_type()`` of one
    # of its trackers is a subclass of it): ``object`` for instances of any user class, None for
    # no Python value. Each tracker class declares its own.
    models: ClassVar[type | tuple[type, ...] | None] = None

    # A mutable object the trace made: generated code builds it once and reloads it from a
    # temporary, so that every use of one tracker is one object (codegen.reconstruct).
    built_once = False

    def __init__(self, source: Source | None = None) -> None:
        self.source = source
        # Made after another tracker: a larger serial (a higher-order operator's callable may
        # change only what it made: variables/higher_order.py).
        self.serial = next(_SERIALS)

    # -- what it is ------------------------------------------------------------------------
    def python_type(self) -> type:
        raise Unsupported(f"{type(self).__name__} has no known Python type")

    def as_python_constant(self) -> Any:
        raise Unsupported(f"{self.describe()} is not a constant known while tracing")

    def is_python_constant(self) -> bool:
        # Asking must not specialise: a symbolic int inside (a list's item, a dict's value)
        # answers "not a constant" instead of becoming one, with a guard (only_asking).
        outer, _asking.active = getattr(_asking, "active", False), True
        try:
            self.as_python_constant()
        except Unsupported:
            return False
        finally:
            _asking.active = outer
        return True

    def describe(self) -> str:
        """A short name for messages: 'a tensor', 'the list', ..."""
        return type(self).__name__.removesuffix("Variable")

    # -- what it does ----------------------------------------------------------------------
    def var_getattr(self, tx: TracerContext, name: str) -> "VariableTracker":
        # A method of the modelled type: the call goes to ``call_method`` of this tracker.
        kind = self.python_type()
        if callable(getattr(kind, name, None)):
            return BoundMethodVariable(self, name)
        if kind in _NO_INSTANCE_ATTRIBUTES and not hasattr(kind, name):
            # (an exact builtin container or number: its instances have no attribute of their
            # own, and its type none it could be given: ``hasattr(d, "to")`` of a dict is False)
            raise AttributeMissing.exactly(AttributeError(f"'{kind.__name__}' object has no attribute '{name}'"), guarded=True)
        raise Unsupported(f"reading attribute {name!r} of {self.describe()}")

    def store_attr(self, tx: TracerContext, name: str, value: "VariableTracker | None") -> None:
        """``obj.name = value`` (``del obj.name`` when value is None)."""
        action = "deleting" if value is None else "setting"
        raise Unsupported(f"{action} attribute {name!r} of {self.describe()}")

    def call_function(self, tx: TracerContext, args: list["VariableTracker"], kwargs: dict[str, "VariableTracker"]) -> "VariableTracker":
        raise Unsupported(f"calling {self.describe()}")

    def call_method(self, tx: TracerContext, name: str, args: list["VariableTracker"], kwargs: dict[str, "VariableTracker"]) -> "VariableTracker":
        # A method call is an attribute read followed by a call, unless a family knows better.
        method = self.var_getattr(tx, name)
        if isinstance(method, BoundMethodVariable) and method.obj is self and method.name == name:
            # (the read handed the call back here: no family models it)
            raise Unsupported(f"calling the method {name!r} of {self.describe()}")
        return method.call_function(tx, args, kwargs)

    def unpack(self, tx: TracerContext) -> list["VariableTracker"]:
        """The items this value yields when iterated, for finite, known iterables."""
        raise Unsupported(f"iterating over {self.describe()}")

    def subvalues(self) -> list["VariableTracker"]:
        """The trackers this one holds (items, attributes...): where graph outputs are found."""
        return []

    def own_call(self, tx: TracerContext, fn: Any, args: list["VariableTracker"],
                 kwargs: dict[str, "VariableTracker"]) -> "VariableTracker | None":
        """A Python function called with this value as its first argument (``args[0]``), where
        the family models that call itself instead of inlining the function (torch's
        ``nn.Module.__init__`` on a module the trace made): the call's result, or None."""
        return None

    def is_callable(self, tx: TracerContext) -> bool | None:
        """``callable(value)``. CPython asks the value's type for ``__call__`` (an instance's own
        does not count): families that know their Python type answer so, through
        ``object_protocol.type_is_callable``. None: a constant, answered from its value. Any
        other tracker answers by whether it models being called."""
        if self.is_python_constant():
            return None
        return type(self).call_function is not VariableTracker.call_function

    def truth(self, tx: TracerContext) -> bool:
        """``bool(value)`` when it is known while tracing."""
        return bool(self.as_python_constant())

    def reconstruct(self, cg: Any) -> None:
        """Emit bytecode that pushes the Python object this tracker stands for."""
        if self.source is not None:
            self.source.emit_load(cg)
            return
        raise Unsupported(f"cannot re-create {self.describe()} in generated code")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class RealObjectVariable(VariableTracker):
    """One immutable real object the trace knows (a ``torch.finfo``, a compiled pattern): the
    object itself is its constant and its type its Python type."""

    models = None  # (a base: each family names the types it models)

    def __init__(self, value: Any, source: Source | None = None) -> None:
        super().__init__(source)
        self.value = value

    def as_python_constant(self) -> Any:
        return self.value

    def python_type(self) -> type:
        return type(self.value)


class NullVariable(VariableTracker):
    """CPython's NULL stack slot (PUSH_NULL, the method/NULL pair of LOAD_METHOD)."""

    models = None  # no Python value: the NULL CPython pushes beside a callable

    def describe(self) -> str:
        return "NULL"

    def reconstruct(self, cg: Any) -> None:
        cg.push_null()

    def __repr__(self) -> str:
        return "NULL"


NULL = NullVariable()

DELETED = object()  # the value a traced ``del obj.name`` leaves (see side_effects.py)


class Identity:
    """A set member or dict key standing for a real object hashed by identity (a module in a
    ``memo`` set, a parameter keying a dict): equal only to itself's object. ``var`` is a
    tracker of that object, which generated code rebuilds the key from."""

    __slots__ = ("obj", "var")

    def __init__(self, obj: Any, var: "VariableTracker | None" = None) -> None:
        self.obj = obj
        self.var = var

    def __hash__(self) -> int:
        return hash(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Identity) and other.obj is self.obj


def hash_key(var: VariableTracker, tx: "TracerContext | None" = None) -> Any:
    """What ``var`` is as a set member or dict key: its constant value, or the identity of the
    object it stands for when that object hashes by identity. A tensor's identity is its fake
    tensor's: one per input object (the builder shares the tracker of an object reached twice,
    with an alias guard) and one per tensor an operation made. That two tensor inputs are two
    objects is guarded when one is used as a key (``tx``)."""
    fake = getattr(var, "example", None)
    if fake is not None and isinstance(fake, torch.Tensor):
        if var.source is not None:
            if tx is None:
                raise Unsupported(f"{var.describe()} as a key where its identity cannot be guarded")
            tx.guards.distinct(var.source)
        return Identity(fake, var)
    value = getattr(var, "value", None)
    if value is not None and not var.is_python_constant() and type(value).__hash__ is object.__hash__:
        return Identity(value, var)
    key = var.as_python_constant()
    with raised_in_the_trace(TypeError):  # (unhashable type: 'set'): the user's code hashes it
        hash(key)
    return key


class BoundMethodVariable(VariableTracker):
    """``obj.name`` read as an attribute where ``obj`` handles the call itself (``call_method``)."""

    models = (types.BuiltinMethodType, types.MethodType)  # a method bound to a value a tracker holds

    def __init__(self, obj: VariableTracker, name: str, source: Source | None = None) -> None:
        super().__init__(source)
        self.obj, self.name = obj, name

    def describe(self) -> str:
        return f"method {self.name!r} of {self.obj.describe()}"

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.obj.call_method(tx, self.name, args, kwargs)

    def reconstruct(self, cg: Any) -> None:
        cg.reconstruct(self.obj)
        cg.load_attr(self.name)

    def subvalues(self) -> list[VariableTracker]:
        return [self.obj]

    def __repr__(self) -> str:
        return f"BoundMethodVariable({self.obj!r}.{self.name})"


def constants(values: Sequence[VariableTracker]) -> list[Any]:
    return [v.as_python_constant() for v in values]


def reachable(roots: Any, seen: set[int]) -> Iterator[VariableTracker]:
    """Every tracker ``roots`` reach through their ``subvalues`` that ``seen`` (ids, updated)
    does not hold yet, each once."""
    todo = list(roots)
    while todo:
        var = todo.pop()
        if isinstance(var, VariableTracker) and id(var) not in seen:
            seen.add(id(var))
            yield var
            todo.extend(var.subvalues())


def as_proxy(value: VariableTracker) -> Any:
    """A tracker as an FX argument: a node for tensors, the value for constants, recursively.
    A class cannot be one: FX's generated code would spell it as its repr."""
    proxy = getattr(value, "as_proxy", None)
    result = proxy() if proxy is not None else value.as_python_constant()
    if isinstance(result, type):
        raise Unsupported(f"the class {result.__qualname__} as an argument of a graph operation")
    return result


# -- reading classes ---------------------------------------------------------------------------
def find_on_class(tx: TracerContext, cls: type, name: str, start_after: type | None = None) -> tuple[type | None, Any]:
    """Where ``name`` is found along ``cls``'s MRO (after ``start_after``, for super()), and
    what: ``(klass, klass.__dict__[name])``, or ``(None, None)`` when no class has it. The one
    way tracker code reads a class: guarded, so that a method or property replaced on the
    class, added to a class before ``klass``, or new bases, retrace."""
    mro = cls.__mro__
    if start_after is not None:
        if start_after not in mro:
            raise Unsupported(f"super(): {start_after.__qualname__} is not a base of {cls.__qualname__}")
        mro = mro[mro.index(start_after) + 1:]
    if tx.trace.side_effects.class_attrs and any((id(klass), name) in tx.trace.side_effects.class_attrs for klass in mro):
        # (the real class does not hold the trace's write yet: only a class's own attribute read
        # takes it, UserDefinedClassVariable.var_getattr)
        raise Unsupported(f"looking up {name!r} on {cls.__qualname__} after the trace set it on a class in its MRO")
    found, static = None, None
    for klass in mro:
        if name in klass.__dict__:
            found, static = klass, klass.__dict__[name]
            break
    tx.guards.class_lookup(cls, mro, name, found, static)
    return found, static


# Builtin types whose instances carry no attributes of their own (no ``__dict__``) and whose
# own attributes cannot be set (immutable types).
_NO_INSTANCE_ATTRIBUTES = frozenset({dict, list, tuple, set, frozenset, int, float, complex, bool, str, bytes,
                                     type(None), range, slice,
                                     # dicts' views (``hasattr(d.items(), "keys")``: dict() asks it)
                                     *(type(view) for d in ({}, collections.OrderedDict())
                                       for view in (d.keys(), d.values(), d.items()))})


def class_static(tx: TracerContext, cls: type, name: str) -> Any:
    """What ``cls`` holds for ``name`` along its MRO (no descriptor run), or None: guarded."""
    return find_on_class(tx, cls, name)[1]


def is_data_descriptor(static: Any) -> bool:
    """Whether a class attribute (as ``class_static`` finds it) wins over the instance dict in
    ``object.__getattribute__``: a data descriptor (a property, a slot)."""
    return hasattr(static, "__set__") or hasattr(static, "__delete__")


def subclass_check(tx: TracerContext, cls: type, of: Any) -> bool:
    """``issubclass(cls, of)``, guarded on its answer (bases may be assigned, a class
    registered with an ABC)."""
    answer = issubclass(cls, of)
    tx.guards.subclass_answer(cls, of, answer)
    return answer


def made_after(var: Any, first: int) -> bool:
    """A tracker of an object the trace made after tracker ``first`` (a pre-existing object
    has a source, wherever its tracker was made)."""
    return isinstance(var, VariableTracker) and var.source is None and var.serial >= first
