"""``functools.partial`` and its subclasses: a partial the trace makes (``partial(f, a)``,
flattened as CPython flattens a partial of a partial), one passed in, and instances of a user
subclass (pyro's ``_bound_partial``, whose slot named ``func`` shadows partial's own): what a
call runs, and the object's attributes."""

from __future__ import annotations

import functools
import types
from typing import Any

from .. import versions
from ..context import TracerContext
from ..exc import AttributeMissing, Unsupported
from ..source import AttrSource, PartialFieldSource, Source, partial_field
from .base import VariableTracker, class_static
from .builtin_functions import handler
from .builtin_subclasses import SubclassInstance, own_method_call, run_python
from .constant import ConstantVariable
from .dicts import ConstDictVariable
from .lists import TupleVariable
from .object_protocol import by_class_statement, is_slot, unset_slot
from .user_objects import ObjectVariableBase

_MISSING = object()

@handler(functools.partial)
def _partial(tx: TracerContext, fn: VariableTracker, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker:
    fn, flat_args, flat_kwargs, known = partial_fields(tx, fn, list(args), kwargs)
    made = PartialVariable(fn, flat_args, flat_kwargs, cls=functools.partial)
    made.fields_known = known
    return made


def partial_fields(tx: TracerContext, fn: VariableTracker, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
                   ) -> tuple[VariableTracker, list[VariableTracker], dict[str, VariableTracker], bool]:
    """The function, arguments and keywords ``functools.partial.__new__(cls, fn, *args, **kwargs)``
    stores, and whether they are known. CPython flattens a partial of a partial,
    ``partial(partial(f, a), b)`` into ``partial(f, a, b)``, where the inner one's ``__dict__``
    was never made and it is called as a partial (``versions``: by its class's ``__call__`` on
    3.11 and 3.12, by its type on 3.13). Of one the trace made that is known; of one passed in,
    whether its ``__dict__`` exists cannot be read: calls are the same either way, but its
    ``func``, ``args`` and ``keywords`` break the graph (``fields_known``)."""
    known = fn.is_callable(tx)
    if not (callable(fn.as_python_constant()) if known is None else known):
        raise Unsupported("TypeError: the first argument of functools.partial must be callable")
    inner = fn.python_type() if isinstance(fn, (PartialVariable, ObjectVariableBase)) else None
    if inner is None or not issubclass(inner, functools.partial) or not (
            versions.V.partial_flattens_by_type or class_static(tx, inner, "__call__") is _PARTIAL_CALL):
        return fn, args, kwargs, True
    if isinstance(fn, PartialVariable) and fn.source is None:  # (made by the trace: known)
        if fn.dict_never_made():
            return fn.fn, [*fn.args, *args], {**fn.kwargs, **kwargs}, fn.fields_known
        return fn, args, kwargs, True
    return fn, args, kwargs, False


# functools.partial's own (a builtin class: fixed), as a subclass's class lookup finds them.
_PARTIAL_CALL = functools.partial.__dict__["__call__"]
_PARTIAL_NEW = functools.partial.__dict__["__new__"]
_PARTIAL_FIELDS = {name: functools.partial.__dict__[name] for name in ("func", "args", "keywords")}


class PartialVariable(VariableTracker):
    """``functools.partial(fn, *args, **kwargs)``: made while tracing (``cls`` is then
    functools.partial), or passed in (then it has a source, and generated code re-fetches the
    object itself, whatever subclass of partial it is)."""

    models = functools.partial
    built_once = True  # (one object, however many places hold it: ``is`` and attributes set at a break)

    def __init__(self, fn: VariableTracker, args: list[VariableTracker], kwargs: dict[str, VariableTracker],
                 source: Source | None = None, cls: type | None = None) -> None:
        super().__init__(source)
        self.fn, self.args, self.kwargs = fn, args, kwargs
        if source is None and cls is None:
            # Built from a real partial (builder.py): its items were read through `<p>.func`,
            # `<p>.args[i]` and `<p>.keywords[k]`: that object is what generated code loads.
            fn_source = fn.source
            if isinstance(fn_source, AttrSource) and fn_source.member == "func":
                self.source = fn_source.base
        self.cls = cls  # None: some subclass of partial, not known here
        self.own_attrs: frozenset[str] = frozenset()  # the names in the __dict__ of one passed in
        self.instance_dict: ConstDictVariable | None = None  # the __dict__ of one the trace made, once read
        # Whether func, args and keywords are known: not where CPython may have flattened a
        # partial passed in (``new_partial``).
        self.fields_known = True

    def dict_never_made(self) -> bool:
        """Whether the object (one the trace made) has had no ``__dict__`` made yet."""
        return self.instance_dict is None

    def python_type(self) -> type:
        if self.cls is None:
            raise Unsupported("the type of a functools.partial passed in")
        return self.cls

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if tx.calling is self:  # the call's result is the function's: a nested break goes on inside it
            tx.calling = self.fn
        return self.fn.call_function(tx, [*self.args, *args], {**self.kwargs, **kwargs})

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        if name in ("func", "args", "keywords") and not self.fields_known:
            raise Unsupported(f"reading {name!r} of a functools.partial of a partial passed in (CPython may have flattened it)")
        if name == "func":
            return self.fn
        if name == "args":
            return TupleVariable(list(self.args))
        if name == "keywords":
            return ConstDictVariable(dict(self.kwargs))
        if self.instance_dict is not None and self.instance_dict.call_method(
                tx, "__contains__", [ConstantVariable(name)], {}).as_python_constant():
            return self.instance_dict.call_method(tx, "__getitem__", [ConstantVariable(name)], {})
        if name == "__dict__" and self.source is None and self.cls is functools.partial:
            if self.instance_dict is None:  # (a new partial's own dict: empty, one object)
                self.instance_dict = ConstDictVariable({})
            return self.instance_dict
        if self.cls is functools.partial and name not in self.own_attrs:
            # Not in its own __dict__ (one made by the trace has nothing there: setting an
            # attribute on it breaks; one passed in, guarded): what it has is functools.partial's
            # (a builtin class, which cannot change), as CPython finds it.
            if self.source is not None:
                tx.guards.not_in_instance_dict(self.source, name, where=PartialFieldSource(self.source, "dict"))
            static = next((vars(k)[name] for k in functools.partial.__mro__ if name in vars(k)), _MISSING)
            if static is _MISSING:
                raise AttributeMissing.exactly(AttributeError(f"'functools.partial' object has no attribute '{name}'"))
            if type(static) is str or static is None:  # __doc__, __module__
                return ConstantVariable(static)
        return super().var_getattr(tx, name)

    def subvalues(self) -> list[VariableTracker]:
        return [self.fn, *self.args, *self.kwargs.values(), *([self.instance_dict] if self.instance_dict is not None else [])]

    def reconstruct(self, cg: Any) -> None:
        if self.source is not None:
            self.source.emit_load(cg)
            return
        if self.cls is not functools.partial:
            raise Unsupported("re-creating a functools.partial passed in without a source")
        if self.instance_dict is not None:
            raise Unsupported("re-creating a functools.partial whose __dict__ the trace read")

        def arguments() -> list[None]:
            cg.reconstruct(self.fn)
            for arg in self.args:
                cg.reconstruct(arg)
            return [None] * (1 + len(self.args))

        if self.kwargs:
            cg.call_const(_make_partial, lambda: [cg.reconstruct(self.fn), cg.reconstruct(TupleVariable(list(self.args))),
                                                  cg.reconstruct(ConstDictVariable(dict(self.kwargs)))])
            return
        cg.call_const(functools.partial, arguments)


def _make_partial(fn: Any, args: tuple, keywords: dict) -> functools.partial:
    return functools.partial(fn, *args, **keywords)


def make_partial_subclass(cls: type, fn: Any, args: tuple, keywords: dict, attributes: dict) -> Any:
    """An instance of the functools.partial subclass ``cls`` over ``fn``, ``args`` and ``keywords``
    (not a partial of a partial: ``partial_fields`` flattened it), with these ``__slots__`` and
    ``__dict__`` attributes, made without running its ``__init__`` (generated code: an object the
    trace created survives it)."""
    obj = functools.partial.__new__(cls, fn, *args, **keywords)
    for name, value in attributes.items():
        object.__setattr__(obj, name, value)
    return obj


class PartialSubclassVariable(SubclassInstance, PartialVariable):
    """An instance of a user subclass of functools.partial that the trace made (pyro's
    ``_bound_partial``, made by every handler it applies): the partial it is (what a call runs,
    unless its class has a Python ``__call__``), and an object's attributes
    (``SubclassInstance``): its ``__slots__`` members and ``__dict__`` entries, set by its
    ``__init__`` or by ``functools.update_wrapper``. A slot shadows partial's own ``func``,
    ``args`` or ``keywords`` as CPython's class lookup finds it."""

    models = functools.partial  # (user subclasses of)

    base = functools.partial
    native_classes = (functools.partial, object)
    maker = staticmethod(make_partial_subclass)

    def __init__(self, fn: VariableTracker, args: list[VariableTracker], kwargs: dict[str, VariableTracker],
                 user_cls: type, source: Source | None = None, instance: Any = None) -> None:
        PartialVariable.__init__(self, fn, args, kwargs, cls=user_cls)
        self.source = source  # (one passed in: its fields were read through partial_field)
        self.user_cls, self.instance = user_cls, instance
        self.attributes: dict[str, VariableTracker] = {}  # its slots' and its __dict__'s (written, for one passed in)
        self.dict_made = False  # (a __dict__ entry set)

    def python_type(self) -> type:
        return self.user_cls

    def dict_never_made(self) -> bool:
        return not self.dict_made

    def subvalues(self) -> list[VariableTracker]:
        return [*PartialVariable.subvalues(self), *self.attributes.values()]

    def _slot(self, tx: TracerContext, name: str) -> Any:
        """The ``__slots__`` member descriptor ``name`` of the class (a Python class's), or None."""
        static = class_static(tx, self.user_cls, name)
        return static if is_slot(static, name) and by_class_statement(static.__objclass__) else None

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        if self._slot(tx, name) is not None:
            if name in self.attributes:
                return self.attributes[name]
            if self.source is not None:
                try:
                    value = getattr(self.instance, name)  # (the slot's descriptor: no code of the user's)
                except AttributeError:
                    raise Unsupported(f"reading the unset slot {name!r} of {self.describe()}") from None
                return tx.wrap(value, AttrSource(self.source, name))
            raise AttributeMissing.exactly(unset_slot(self.user_cls, name))
        if name in _PARTIAL_FIELDS and class_static(tx, self.user_cls, name) is _PARTIAL_FIELDS[name]:
            return PartialVariable.var_getattr(self, tx, name)  # func, args, keywords
        if name == "__dict__":
            raise Unsupported(f"reading the __dict__ of {self.describe()}")
        return SubclassInstance.var_getattr(self, tx, name)

    def _own_attribute(self, tx: TracerContext, name: str) -> VariableTracker | None:
        """As ``SubclassInstance``'s, the ``__dict__`` of one passed in read without making it."""
        if name in self.attributes or self.source is None:
            return self.attributes.get(name)
        if name in partial_field(self.instance, "dict"):
            return tx.wrap(getattr(self.instance, name), AttrSource(self.source, name))
        tx.guards.not_in_instance_dict(self.source, name, where=PartialFieldSource(self.source, "dict"))
        return None

    def generic_store(self, tx: TracerContext, name: str, value: VariableTracker | None) -> None:
        if value is not None and self._slot(tx, name) is not None:
            if self.source is not None:  # (replayed as obj.name = value: its slot's descriptor)
                tx.trace.side_effects.store_attr(self, name, value)
            self.attributes[name] = value
            return
        SubclassInstance.generic_store(self, tx, name, value)
        self.dict_made = True

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if class_static(tx, self.user_cls, "__call__") is _PARTIAL_CALL:
            return PartialVariable.call_function(self, tx, args, kwargs)
        return SubclassInstance.call_function(self, tx, args, kwargs)

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        own = own_method_call(tx, self, self.user_cls, functools.partial, name, args, kwargs)
        return own if own is not None else self.native_call_method(tx, name, args, kwargs)

    def native_call_method(self, tx: TracerContext, name: str, args: list[VariableTracker],
                           kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if self.native_setattr(tx, name, args, kwargs):
            return ConstantVariable(None)
        if name == "__call__":
            return PartialVariable.call_function(self, tx, args, kwargs)
        raise Unsupported(f"calling {name} of {self.describe()}")

    def push_contents(self, cg: Any) -> int:
        cg.load_const(self.user_cls)
        cg.reconstruct(self.fn)
        cg.reconstruct(TupleVariable(list(self.args)))
        cg.reconstruct(ConstDictVariable(dict(self.kwargs)))
        return 4

    def __repr__(self) -> str:
        return f"PartialSubclassVariable({self.user_cls.__qualname__}, {self.fn!r})"


def construct_partial_subclass(tx: TracerContext, cls: type, args: list[VariableTracker],
                               kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """``cls(*args, **kwargs)`` for a user subclass of functools.partial: partial's ``__new__``
    stores the function (flattening a partial of a partial), then the class's ``__init__`` runs
    (inlined) with the same arguments."""
    if class_static(tx, cls, "__new__") is not _PARTIAL_NEW:
        raise Unsupported(f"constructing {cls.__qualname__}, a functools.partial subclass with its own __new__")
    if not args:
        raise Unsupported("TypeError: type 'partial' takes at least one argument")
    fn, flat_args, flat_kwargs, known = partial_fields(tx, args[0], list(args[1:]), kwargs)
    obj = PartialSubclassVariable(fn, flat_args, flat_kwargs, cls)
    obj.fields_known = known
    init = class_static(tx, cls, "__init__")
    if isinstance(init, types.FunctionType):
        run_python(tx, init, [obj, *args], kwargs)
    elif init is not object.__init__:
        raise Unsupported(f"constructing {cls.__qualname__}: its __init__ is not Python")
    return obj

