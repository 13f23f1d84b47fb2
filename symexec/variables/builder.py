"""Wrap a real Python value, with its source, into the fitting tracker.

The choice goes through a registry keyed by type: ``wrap`` walks the value's MRO and calls the
first wrapper registered for a class on it, with one fallback, the generic user-object tracker.
Wrapping an input also installs the guards its tracker relies on: the tensor match of a
tensor, the type and length of a list, the identity of a function or module. Constants are
guarded lazily, when the trace first uses their value (``constant.py``).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import operator
import os
import re
import types
import typing
import weakref
from typing import Any, Callable

import torch

from ..context import TracerContext
from ..exc import Unsupported
from ..guards import GuardKind
from ..torch_api import allowed_in_graph_by_torch, compiler_api_kind
from ..source import (AttrSource, ClosureSource, DictItemSource, DictKeySource, GetItemSource, GlobalSource, IteratorItemSource, LocalSource,
                      NativeItemSource, PartialFieldSource,
                      PrivateObjectSource, Source, display, partial_field, peek)
from .autograd import AutogradApplyVariable, AutogradFunctionVariable, is_apply_method, is_user_function_class
from .base import Registry, VariableTracker, class_static, find_on_class, hash_key
from .builtin_subclasses import INPUT_LIST_DISPATCHED, ListSubclassVariable, overrides_protocol
from .builtin_functions import FOLDABLE, HANDLERS, BuiltinVariable
from .partials import PartialSubclassVariable, PartialVariable
from .constant import LITERAL_TYPES, ConstantVariable, is_literal, is_object_constant
from .ctx import AutocastVariable, GradModeExit, GradModeExitVariable
from .deques import wrap_deque
from .dicts import ConstDictVariable, DictSubclassVariable, MappingProxyVariable, dict_base, wrap_tensor_keyed_dict
from .higher_order import HigherOrderOpVariable
from .functions import GraphBreakVariable, UserFunctionVariable, UserMethodVariable, real_cell
from .lru_cache import LruCacheVariable
from .lists import InputIteratorVariable, ListVariable, NamedTupleVariable, RangeVariable, SizeVariable, TupleVariable
from .model_output import is_model_output_class, wrap_model_output
from .classes import PythonModuleVariable, UserDefinedClassVariable
from .compiler_api import CompilerApiVariable
from .sets import SetVariable
from . import numpy_ufuncs
from .ndarray import NdarrayVariable, array_input
from . import numpy_functions  # noqa: F401  (fills ndarray's tables)
from .numpy_calls import NumpyFunctionVariable, is_numpy_function
from .nn_module import NNModuleVariable
from .optimizer import OptimizerVariable
from .regex import RegexPatternVariable
from .stdlib import EnvironVariable, WeakRefVariable, operator_callable
from .user_objects import ObjectConstantVariable, UserDefinedObjectVariable
from .object_protocol import is_slot
from .tensor import tensor_method
# The families that only register what they model (handlers of builtins, operators and torch
# functions, constructors): imported here, the one module that sees every family, so that
# what is registered does not depend on which module happened to import which.
from . import (enums, functorch, generators, iteration, itertools_objects, native_methods, new_modules,  # noqa: F401
               number_builtins, operators, pytree, user_operators)
from .torch_functions import ScriptFunctionVariable, TorchModuleVariable, TorchVariable, is_torch_object, is_torch_operation

Wrapper = Callable[["VariableBuilder", Any, "Source | None"], VariableTracker]
WRAPPERS: dict[type, Wrapper] = Registry("builder.WRAPPERS")  # (a type wrapped two ways is refused)


def wraps(*types_: type) -> Callable[[Wrapper], Wrapper]:
    def register(fn: Wrapper) -> Wrapper:
        for t in types_:
            WRAPPERS[t] = fn
        return fn
    return register


class _Cycle(Unsupported):
    """A container reached again while its own items are being wrapped (``a = []; a.append(a)``)."""


class VariableBuilder:
    """Wraps values for one trace, with their guards, for the translator ``tx`` that owns it.
    The wrappers here receive the builder; what they call of the families receives the
    translator itself (``b.tx``), never the builder. It holds the translator weakly: a
    translator holds its builder, and the cycle would keep an inlined frame's locals (this
    call's arguments) alive until the cycle collector ran."""

    def __init__(self, tx: TracerContext) -> None:
        self.tx: TracerContext = weakref.proxy(tx)
        self.graph = tx.trace.graph
        self.memos = tx.trace.memos
        self.guards = tx.guards
        self.wrapping: set[int] = set()  # the ids of the containers whose items are being wrapped

    def __call__(self, value: Any, source: Source | None) -> VariableTracker:
        memos = self.memos
        cache = memos.input_trackers
        if source is not None and is_literal(value) and isinstance(source.root(), PrivateObjectSource):
            # A constant read from the trace's own copy is that constant: the copy may be
            # changed for real later in the trace, and re-reading it would see the change.
            source = None
        if source is not None and source in cache:
            return cache[source]
        # (What the tracker code asks of a real value it asks of its type: isinstance() would
        # also read ``value.__class__``, through a Python __getattribute__ if the class has one.)
        kind = type(value)
        mutable = issubclass(kind, (list, dict)) or not issubclass(kind, _VALUE_TYPES) and kind.__module__ != "torch"
        if mutable and source is not None:
            value_and_var = memos.objects_by_id.get(id(value))
            known = value_and_var[1] if value_and_var is not None and value_and_var[0] is value else None
            if known is not None and known.source is not None:
                # One object reached through two sources: one tracker, so mutations agree.
                self.guards.alias(source, known.source)
                cache[source] = known
                return known
        for cls in kind.__mro__:
            wrapper = WRAPPERS.get(cls)
            if wrapper is not None:
                break
        else:
            wrapper = _wrap_object
        if cls is dict and is_model_output_class(self.tx, kind):
            wrapper = _wrap_model_output  # (a dataclass: its __eq__ is its own)
        elif cls is not kind and cls in _CONTAINERS and overrides_protocol(self.tx, kind, cls,
                                                                       INPUT_LIST_DISPATCHED if cls is list else _INPUT_DICT_DISPATCHED):
            wrapper = _wrap_object  # a subclass's own __getitem__, keys()...: its methods must run
        if issubclass(kind, _TORCH_CALLABLE_TYPES) and is_torch_object(value) and is_torch_operation(value):
            wrapper = _wrap_torch_callable
        if kind is types.FunctionType and compiler_api_kind(value) is not None:
            wrapper = _wrap_compiler_api  # torch._dynamo.graph_break, torch.compiler.is_compiling...
        if numpy_ufuncs.numpy is not None and kind in _NUMPY_FUNCTION_TYPES and is_numpy_function(value):
            wrapper = _wrap_numpy_function
        if mutable:
            if id(value) in self.wrapping:  # (its tracker is not made yet: a second would be two)
                raise _Cycle(f"a {kind.__name__} that contains itself")
            self.wrapping.add(id(value))
        try:
            var = wrapper(self, value, source)
        except Unsupported as e:
            if source is None or wrapper is _wrap_object or isinstance(e, _Cycle):
                raise
            # A value its family cannot model (a dict with tensor keys...): an opaque object,
            # guarded on its type; only what is done with it can break the graph.
            var = _wrap_object(self, value, source)
        finally:
            self.wrapping.discard(id(value))
        if source is not None:
            cache[source] = var
            memos.input_values[source] = value
            if mutable and isinstance(var, (ListVariable, ConstDictVariable, UserDefinedObjectVariable,
                                            InputIteratorVariable, SetVariable, NdarrayVariable)):
                memos.objects_by_id[id(value)] = (value, var)  # (held: an id is unique only while alive)
            if var.source == source and _identity_matters(value, source):
                self.guards.distinct(source)
        return var


_CONTAINERS = (dict, list, tuple, set, frozenset)
# Members of a set passed in that its guard pins by ``==``: exact types equal only to themselves.
_EQUAL_IF_IDENTICAL = (types.FunctionType, types.BuiltinFunctionType, type, types.ModuleType)
# Values whose identity the trace never relies on, or pins with an identity guard anyway.
_VALUE_TYPES = (*LITERAL_TYPES, tuple, frozenset, range, slice, type, types.ModuleType, types.FunctionType,
                types.BuiltinFunctionType, types.MethodType, functools.partial)


def _wrap_model_output(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
    return wrap_model_output(b.tx, value, source)


def _identity_matters(value: Any, source: Source) -> bool:
    """Whether passing this object twice instead of two objects could change what the trace
    does (mutations seen through both, ``a is b``): tensors, lists, dicts, sets and objects
    reached from arguments, globals and cells through items. Objects reached through
    attributes (a module's parameters and submodules) are guarded by the alias guard where
    they are one object, not for distinctness: their number would make every cache hit pay."""
    kind = type(value)
    if not issubclass(kind, (torch.Tensor, list, dict, set)) and (
            kind.__module__ == "builtins" or issubclass(kind, (type, types.ModuleType, types.FunctionType))):
        return False
    while isinstance(source, (GetItemSource, IteratorItemSource)):
        source = source.base
    return isinstance(source, (LocalSource, GlobalSource, ClosureSource))


@wraps(*LITERAL_TYPES)
def _wrap_literal(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
    attribute = False
    if type(value) in (int, float) and source is not None and (
            _may_be_dynamic(source) or (attribute := _of_a_plain_object(b, source))):
        graph = b.graph
        if graph.policy.number_is_dynamic(source, value, changed_only=attribute):
            add = graph.add_int_input if type(value) is int else graph.add_float_input
            symbolic = add(value, source)
            if symbolic is not None:
                return symbolic
    if source is None:
        return ConstantVariable(value)
    if is_object_constant(value):  # (its attributes are read from the object)
        return ObjectConstantVariable(value, source, b.guards)
    return ConstantVariable(value, source, b.guards)


def _of_a_plain_object(b: VariableBuilder, source: Source) -> bool:
    """An attribute of an object of a user class that is no ``nn.Module`` (a generation
    config's ``max_length``): symbolic once it changes between traces, as torch.compile's
    automatic dynamic makes it (``dynamic=True`` alone leaves it static, like a module's); an
    item of a tuple there too (a distribution's ``_batch_shape``, a torch.Size)."""
    while isinstance(source, GetItemSource):
        source = source.base
    if not isinstance(source, AttrSource):
        return False
    base = b.memos.input_trackers.get(source.base)
    return type(base) is UserDefinedObjectVariable


def _may_be_dynamic(source: Source) -> bool:
    """Ints that automatic dynamic may make symbolic: arguments and items of arguments (the
    next items of a loop's iterator handed to a continuation among them: its index changes every
    turn), and what those hold in the closure cells of a function among them (a continuation's
    closure, made before the break, holding sizes) or in a cell passed as an argument; not attributes of objects (a module's config
    ints stay specialised, as in torch.compile)."""
    while True:
        while isinstance(source, (GetItemSource, IteratorItemSource)):
            source = source.base
        cell = _closure_cell_of(source)
        if cell is None:
            if isinstance(source, AttrSource) and source.member == "cell_contents":
                source = source.base  # a cell passed as an argument (a continuation's, an opened closure's)
            return isinstance(source, (LocalSource, GlobalSource, ClosureSource))
        source = cell


def _closure_cell_of(source: Source) -> Source | None:
    """``f`` where ``source`` is ``f.__closure__[i].cell_contents``; else None."""
    if isinstance(source, AttrSource) and source.member == "cell_contents" and isinstance(source.base, GetItemSource):
        closure = source.base.base
        if isinstance(closure, AttrSource) and closure.member == "__closure__":
            return closure.base
    return None


@wraps(torch.Tensor)
def _wrap_tensor(b: VariableBuilder, value: torch.Tensor, source: Source | None) -> VariableTracker:
    if source is None:
        raise Unsupported("a tensor that cannot be re-fetched from the inputs (no source)")
    return b.graph.add_tensor_input(value, source, lazy=True)


@wraps(tuple, list)
def _wrap_sequence(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
    kind = type(value)
    list_subclass = isinstance(value, list) and kind is not list
    if kind not in (list, tuple) and not hasattr(kind, "_fields") and not list_subclass:
        return _wrap_object(b, value, source)  # a tuple subclass: its own methods must run
    if source is not None:
        b.guards.type_match(source, value)
        b.guards.len_match(source, len(value))
    if kind is list and source is not None:
        return _wrap_list(b, value, source)
    items = [b(item, GetItemSource(source, i) if source is not None else None) for i, item in enumerate(value)]
    if list_subclass:  # (one overriding list's protocol is an object: see VariableBuilder.__call__)
        return ListSubclassVariable(items, kind, source, instance=value)
    if isinstance(value, list):
        return ListVariable(items, source)
    if hasattr(type(value), "_fields"):
        return NamedTupleVariable(items, type(value), source)
    return TupleVariable(items, source)


def _wrap_list(b: VariableBuilder, value: list, source: Source) -> ListVariable:
    """A list passed in: its tracker is known before its items are wrapped, so an item that is
    the list itself (``root[:] = [root, None]``) is that tracker, with an alias guard."""
    var = ListVariable([], source)
    b.memos.input_trackers[source] = var
    b.memos.objects_by_id[id(value)] = (value, var)
    try:
        var.items = [b(item, GetItemSource(source, i)) for i, item in enumerate(value)]
    except BaseException:
        del b.memos.input_trackers[source], b.memos.objects_by_id[id(value)]
        raise
    return var


@wraps(type(iter(())), type(iter([])), type(iter(range(0))))
def _wrap_iterator(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
    """An iterator passed in (a loop's, handed to a continuation): its remaining items, read
    without advancing it while tracing; the generated code advances it."""
    if source is None:
        raise Unsupported("an iterator that cannot be re-fetched from the inputs")
    b.guards.type_match(source, value)
    return InputIteratorVariable(value, source, lambda i: b(peek(value, i), IteratorItemSource(source, i)), b.guards,
                                 lambda var: b.tx.trace.side_effects.advance(var))


@wraps(collections.deque)
def _wrap_deque(b: VariableBuilder, value: collections.deque, source: Source | None) -> VariableTracker:
    return wrap_deque(b.tx, value, source)


@wraps(typing.TypeVar, typing.ParamSpec)
def _wrap_type_variable(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
    """A ``TypeVar`` (or ``ParamSpec``): a fixed description of a type, used where annotations
    are evaluated (``Callable[[T], Any]``): a constant, pinned by identity."""
    if source is not None:
        b.guards.id_match(source, value)
    return ConstantVariable(value)


@wraps(weakref.ReferenceType)
def _wrap_weakref(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
    if source is None or type(value) is not weakref.ReferenceType:
        raise Unsupported("a weak reference not passed in, or of a subclass")
    b.guards.type_match(source, value)
    return WeakRefVariable(value, source)


@wraps(GradModeExit)
def _wrap_grad_mode_exit(b: VariableBuilder, value: GradModeExit, source: Source | None) -> VariableTracker:
    return GradModeExitVariable.wrap(b.tx, value, source)


@wraps(torch.amp.autocast_mode.autocast)
def _wrap_autocast(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
    return AutocastVariable.wrap(b.tx, value, source)


@wraps(torch.Size)
def _wrap_size(b: VariableBuilder, value: torch.Size, source: Source | None) -> VariableTracker:
    if source is None:
        return SizeVariable([ConstantVariable(int(v)) for v in value])
    # Each size is an int of the inputs: a constant guarded by value, or symbolic where the
    # dynamic policy makes it so (a Size handed to a continuation keeps its symbolic sizes).
    b.guards.type_match(source, value)
    b.guards.len_match(source, len(value))
    return SizeVariable([b(int(v), GetItemSource(source, i)) for i, v in enumerate(value)], source)


@wraps(dict)
def _wrap_dict(b: VariableBuilder, value: dict, source: Source | None) -> VariableTracker:
    # A subclass's items as the dict holds them: its own __iter__/__getitem__/items may be
    # anything (a new object per read); the trace reads the stored ones, and so do the guards.
    native = type(value) not in _DICT_TYPES
    # (an OrderedDict's order is its own, which move_to_end changes: not the dict storage's)
    keys = list((collections.OrderedDict if isinstance(value, collections.OrderedDict) else dict).keys(value))
    literal = [is_literal(k) or _size_key(k) for k in keys]
    if not all(literal) and (all(map(_identity_tensor, keys)) or source is None or native or not all(
            lit or _identity_tensor(k) or _identity_object(k) for lit, k in zip(literal, keys))):
        return wrap_tensor_keyed_dict(b.tx, value, source)  # (or unsupported: an opaque object)
    if source is not None:
        b.guards.type_match(source, value)
        # (the keys go in as a constant of the guard function, never as source text)
        b.guards.keys_match(source, keys, GuardKind.EQUALS_MATCH, "list({}.keys())", exact_dict=not native, native=native,
                            ordered=isinstance(value, collections.OrderedDict))
    if not all(literal):  # constants beside tensors: each tensor key re-read by its position
        return _wrap_mixed_dict(b, value, source, keys)
    item_source = NativeItemSource if native else GetItemSource
    items = {k: b(v, item_source(source, k) if source is not None else None) for k in keys for v in (dict.__getitem__(value, k),)}
    if type(value) not in _DICT_TYPES and (base := dict_base(b.tx, type(value))) is not None:  # a user subclass
        return DictSubclassVariable(items, type(value), base, source, instance=value)
    factory = None
    if type(value) is collections.defaultdict and source is not None:
        factory = b(value.default_factory, AttrSource(source, "default_factory"))
    return ConstDictVariable(items, source, user_cls=type(value), default_factory=factory)


_DICT_TYPES = (dict, collections.OrderedDict, collections.defaultdict)
# What a dict subclass passed in may define in Python and still be a dict here: its __iter__
# (run where it is iterated: DictSubclassVariable.unpack); the guards read its items natively.
_INPUT_DICT_DISPATCHED = frozenset({"__iter__"})


def _identity_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and type(value).__hash__ is torch.Tensor.__hash__


def _size_key(value: Any) -> bool:
    """A ``torch.Size`` of ints keying a dict (a cache by shape): a constant, as a tuple is."""
    return type(value) is torch.Size and all(type(v) is int for v in value)


def _identity_object(value: Any) -> bool:
    """An object that is equal only to itself (a class, a module, a function, a TypeVar; a
    builtin function of a module, such as ``len`` or ``torch.add``: equal to another only if both
    are the same C function of the same module, made once when the module is): a dict key the
    keys' guard compares by identity."""
    if type(value) is types.BuiltinFunctionType:
        return value.__self__ is None or type(value.__self__) is types.ModuleType
    return type(value).__hash__ is object.__hash__ and type(value).__eq__ is object.__eq__


def _wrap_mixed_dict(b: VariableBuilder, value: dict, source: Source, keys: list[Any]) -> VariableTracker:
    """A builtin dict passed in whose keys are constants, objects equal only to themselves
    (classes, modules: the keys' guard holds them and compares them by identity) and tensors
    (hashed by identity: the guard checks the class at each tensor's place, the tensors' own
    guards, match and aliasing, the rest). Each object key is an input reached by its position
    (``DictKeySource``), its value by the key's source."""
    items: dict[Any, VariableTracker] = {}
    for i, k in enumerate(keys):
        if is_literal(k) or _size_key(k):
            items[k] = b(dict.__getitem__(value, k), GetItemSource(source, k))
            continue
        key_source = DictKeySource(source, i)
        key = b(k, key_source)
        items[hash_key(key, b.tx)] = b(dict.__getitem__(value, k), DictItemSource(source, key_source))
    factory = None
    if type(value) is collections.defaultdict:
        factory = b(value.default_factory, AttrSource(source, "default_factory"))
    return ConstDictVariable(items, source, user_cls=type(value), default_factory=factory)


@wraps(range, slice, set, frozenset)
def _wrap_value(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
    if source is not None:
        b.guards.type_match(source, value)
        if isinstance(value, (set, frozenset)):  # its elements in their order (the trace iterates it so)
            exact = b.guards.items_match(source, list(value))
        else:
            exact = b.guards.exactly(source, value)
        b.guards.add(GuardKind.EQUALS_MATCH, f"{source.name} == {display(value)}", exact, source)
    if isinstance(value, range):
        return RangeVariable(value, source)
    if isinstance(value, (set, frozenset)):
        if not all(isinstance(v, LITERAL_TYPES) or type(v) in _EQUAL_IF_IDENTICAL for v in value):
            raise Unsupported("a set of non-constant values")
        # (the guard above pins each member: a function, a class, a module is equal only to itself)
        var = SetVariable.known_order([ConstantVariable(v) if isinstance(v, LITERAL_TYPES) else b(v, None) for v in value],
                                      isinstance(value, frozenset))
        var.source = source
        return var
    return ConstantVariable(value)  # slice: immutable, compared by value


@wraps(re.Pattern)
def _wrap_pattern(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
    # (immutable; equal patterns, by text and flags, answer alike)
    if source is not None:
        b.guards.equals_match(source, value)
    return RegexPatternVariable(value, source)


@wraps(types.FunctionType)
def _wrap_function(b: VariableBuilder, value: types.FunctionType, source: Source | None) -> VariableTracker:
    pinned = source is None or _pin_function(b, value, source)
    if getattr(value, "_symexec_graph_break", False):
        return GraphBreakVariable(value, source)
    if getattr(value, "_symexec_allow_in_graph", False) or allowed_in_graph_by_torch(value):
        return TorchVariable(value, source)  # one node in the graph, not traced into
    if value in HANDLERS:  # a Python function symexec models itself (copy.deepcopy, inspect...)
        return BuiltinVariable(value, source)
    original = getattr(value, "_symexec_original", None)
    # A symexec.compile wrapper: trace what it wraps. (Not a user's functools.wraps wrapper of
    # one: it copies the mark, but wraps the compiled function, not the original.)
    if original is not None and getattr(value, "__wrapped__", None) is original:
        return UserFunctionVariable(original, None)
    var = UserFunctionVariable(value, source)
    var.identity_pinned = pinned
    return var


@wraps(types.CellType)
def _wrap_cell(b: VariableBuilder, value: types.CellType, source: Source | None) -> VariableTracker:
    """A closure cell passed as a value (a nested break's continuation takes its callee's cells
    as arguments): the cell itself, its contents read and written through it."""
    if source is None:
        raise Unsupported("a closure cell that generated code cannot reach")
    b.guards.type_match(source, value)

    def store(cg: Any) -> None:
        source.emit_load(cg)
        cg.emit("STORE_ATTR", "cell_contents")

    return real_cell(b.tx, value, AttrSource(source, "cell_contents"), store, source)


@wraps(torch.jit.ScriptFunction)
def _wrap_script_function(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
    if source is None or not isinstance(getattr(value, "_torchdynamo_inline", None), types.FunctionType):
        return _wrap_object(b, value, source)
    b.guards.id_match(source, value)  # (its Python original is fixed when it is scripted)
    return ScriptFunctionVariable(value, source)


def _pin_function(b: VariableBuilder, fn: types.FunctionType, source: Source) -> bool:
    """Guard what the trace relies on of a function; whether that is its identity. A function
    made inside another's call (a closure; a nested ``def``, lambda or genexpr: ``<locals>`` in
    its name; one on a continuation's stack is made anew by the generated code) is new at each
    call: what is pinned then is its code, its globals and an empty ``__dict__`` (no marks, no
    ``__wrapped__``); defaults and cells are guarded where read, and ``is`` on it by source
    (operators.identical). Any other function, or one carrying attributes, is pinned itself."""
    own = fn.__dict__
    per_call = not own and (bool(fn.__closure__) or "<locals>" in fn.__qualname__ and fn not in HANDLERS)
    if per_call:
        b.guards.id_match(AttrSource(source, "__globals__"), fn.__globals__)
        b.guards.len_match(AttrSource(source, "__dict__"), 0)
    else:
        b.guards.id_match(source, fn)
    # The code runs inlined: pinned even on the same function object (%autoreload swaps it).
    b.guards.id_match(AttrSource(source, "__code__"), fn.__code__)
    return not per_call


@wraps(types.BuiltinFunctionType)  # (types.BuiltinMethodType is the same type)
def _wrap_builtin(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
    # Calls fold or hit a handler (builtin_functions.py); any other builtin is unsupported when called.
    if isinstance(getattr(value, "__self__", None), torch.Tensor):
        return tensor_method(b.tx, value, source)
    var = BuiltinVariable(value, source)
    if source is not None:
        owner = getattr(value, "__self__", None)
        var.owner_pinned = owner is None or isinstance(owner, (types.ModuleType, type)) or _modelled(value)
        _pin_callable(b, value, source, owner_matters=var.owner_pinned)
    return var


def _modelled(fn: Any) -> bool:
    """Whether a call of this builtin is folded or handled (``BuiltinVariable.call_function``),
    reading what it is bound to; any other builtin's call breaks the graph and runs for real."""
    try:
        return fn in HANDLERS or fn in FOLDABLE
    except TypeError:  # (bound to an unhashable object: in neither)
        return False


def _pin_callable(b: VariableBuilder, value: Any, source: Source, owner_matters: bool = True) -> None:
    """The trace runs this callable's behaviour: pin which one it is. A builtin bound to an
    object (``lst.append``) is a new object at each attribute read: its object and name; only
    the object's type where no call of it reads the object (``owner_matters`` False)."""
    owner = getattr(value, "__self__", None)
    if owner is None or isinstance(owner, types.ModuleType) or not isinstance(
            value, (types.BuiltinMethodType, types.MethodWrapperType)):
        b.guards.id_match(source, value)
        return
    b.guards.type_match(source, value)
    base = b.memos.input_trackers.get(source.base) if isinstance(source, AttrSource) else None
    if not owner_matters and not isinstance(owner, type):
        # (a ``params.keys`` of a mappingproxy made per call, on a continuation's stack)
        b.guards.type_match(AttrSource(source, "__self__"), owner)
    elif base is not None and getattr(base, "value", None) is owner:
        # ``obj.append`` of an input ``obj``: bound to whatever object is there on each call
        # (one made afresh per call, too), not to the traced one.
        b.guards.alias(AttrSource(source, "__self__"), source.base)
    else:
        b.guards.id_match(AttrSource(source, "__self__"), owner)
    b.guards.equals_match(AttrSource(source, "__name__"), value.__name__)


if numpy_ufuncs.numpy is not None:
    @wraps(numpy_ufuncs.numpy.ufunc)
    def _wrap_ufunc(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
        if source is not None:
            b.guards.id_match(source, value)
        return numpy_ufuncs.NumpyUfuncVariable(value, source)


    _NUMPY_FUNCTION_TYPES = (type(numpy_ufuncs.numpy.sum), types.BuiltinFunctionType, types.FunctionType)

    @wraps(numpy_ufuncs.numpy.ndarray)
    def _wrap_ndarray(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
        if source is None:
            raise Unsupported("a NumPy array that cannot be re-fetched from the inputs (no source)")
        return array_input(b.tx, value, source)

    def _wrap_numpy_function(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
        if source is not None:
            b.guards.id_match(source, value)
        return NumpyFunctionVariable(value, source)
else:  # pragma: no cover - numpy missing
    _NUMPY_FUNCTION_TYPES = ()


@wraps(type)
def _wrap_class(b: VariableBuilder, value: type, source: Source | None) -> VariableTracker:
    made = b.memos.made_classes.get(id(value))
    if made is not None and made.as_python_constant() is value:  # (a class the trace made: one tracker)
        return made
    if source is not None:
        b.guards.id_match(source, value)
    if value in HANDLERS or value in FOLDABLE:
        return BuiltinVariable(value, source)
    if is_user_function_class(value):  # (before torch's classes: one may live in a torch module)
        return AutogradFunctionVariable(value, source)
    if is_torch_object(value) and not dataclasses.is_dataclass(value):
        return TorchVariable(value, source)
    return UserDefinedClassVariable(value, source)  # (a dataclass of torch's is plain data, a user's)


@wraps(torch._ops.HigherOrderOperator)
def _wrap_higher_order_op(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
    if source is not None:
        b.guards.id_match(source, value)
    return HigherOrderOpVariable(value, source)


@wraps(types.ModuleType)
def _wrap_module(b: VariableBuilder, value: types.ModuleType, source: Source | None) -> VariableTracker:
    if source is not None:
        b.guards.id_match(source, value)
    if is_torch_object(value):
        return TorchModuleVariable(value, source)
    return PythonModuleVariable(value, source)


# What of torch's is a function to record in the graph (not a module, a tensor, a class).
_TORCH_CALLABLE_TYPES = (
    types.FunctionType, types.BuiltinFunctionType, types.BuiltinMethodType, types.MethodDescriptorType,
    types.WrapperDescriptorType, types.MethodWrapperType, torch._ops.OpOverload, torch._ops.OpOverloadPacket,
)


@wraps(types.MethodType)
def _wrap_bound_method(b: VariableBuilder, value: types.MethodType, source: Source | None) -> VariableTracker:
    if source is None or not isinstance(value.__func__, types.FunctionType):
        raise Unsupported(f"the bound method {getattr(value, '__qualname__', value)}")
    if is_apply_method(value):  # ``MyFn.apply`` kept in an object: the class's, pinned by its function
        b.guards.id_match(AttrSource(source, "__func__"), value.__func__)
        b(value.__self__, AttrSource(source, "__self__"))  # (guards the class's identity)
        return AutogradApplyVariable(value.__self__, AttrSource(source, "__self__"), source)
    fn = b(value.__func__, AttrSource(source, "__func__"))
    obj = b(value.__self__, AttrSource(source, "__self__"))
    if isinstance(obj, OptimizerVariable):  # ``opt.step`` passed around: as ``opt.step`` read in the trace
        return obj.method(fn, source)
    return UserMethodVariable(fn, obj)


@wraps(operator.itemgetter, operator.attrgetter, operator.methodcaller)
def _wrap_operator_callable(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
    if source is not None:
        b.guards.id_match(source, value)
    var = operator_callable(value)
    var.source = source
    return var


@wraps(types.MappingProxyType)
def _wrap_mapping_proxy(b: VariableBuilder, value: types.MappingProxyType, source: Source | None) -> VariableTracker:
    if source is None or not isinstance(source.root(), PrivateObjectSource) or not all(is_literal(k) for k in value):
        return _wrap_object(b, value, source)  # (a view of a dict the trace may change through another name)
    views = {type({}.keys()): dict, type(collections.OrderedDict().keys()): collections.OrderedDict}
    return MappingProxyVariable({k: b(v, GetItemSource(source, k)) for k, v in value.items()}, source,
                                view_base=views.get(type(value.keys())))


@wraps(functools._lru_cache_wrapper)
def _wrap_lru_cache(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
    if source is None:
        raise Unsupported("an lru_cache wrapper that cannot be re-fetched")
    b.guards.id_match(source, value)  # (its cache is its own: the wrapper is pinned by identity)
    wrapped = b(value.__wrapped__, AttrSource(source, "__wrapped__"))
    return LruCacheVariable(value, wrapped, source)


@wraps(functools.partial)
def _wrap_partial(b: VariableBuilder, value: functools.partial, source: Source | None) -> VariableTracker:
    if source is None:
        raise Unsupported("a functools.partial that cannot be re-fetched")
    cls = type(value)
    if cls is not functools.partial and any(find_on_class(b.tx, cls, name)[0] not in functools.partial.__mro__
                                            for name in ("__call__", "__getattribute__")):
        return _wrap_object(b, value, source)  # a subclass's own __call__ (or attribute lookup) must run
    shadowed = [name for name in ("func", "args", "keywords") if find_on_class(b.tx, cls, name)[0] not in functools.partial.__mro__]
    if shadowed:  # (a subclass's slot named func: pyro's _bound_partial) partial's own fields, read past it
        if not all(is_slot(class_static(b.tx, cls, name), name) for name in shadowed):
            return _wrap_object(b, value, source)
        return _partial_subclass(b, value, source)
    b.guards.type_match(source, value)
    b.guards.len_match(AttrSource(source, "args"), len(value.args))
    b.guards.keys_match(AttrSource(source, "keywords"), list(value.keywords))
    args = [b(a, GetItemSource(AttrSource(source, "args"), i)) for i, a in enumerate(value.args)]
    kwargs = {k: b(v, GetItemSource(AttrSource(source, "keywords"), k)) for k, v in value.keywords.items()}
    var = PartialVariable(b(value.func, AttrSource(source, "func")), args, kwargs, source=source, cls=type(value))
    var.own_attrs = frozenset(partial_field(value, "dict"))  # (not vars(): it would make the __dict__)
    return var


def _partial_subclass(b: VariableBuilder, value: functools.partial, source: Source) -> VariableTracker:
    """An instance of a subclass of functools.partial passed in whose ``__slots__`` shadow
    partial's own fields: those read through ``partial_field``, its attributes as an object's."""
    b.guards.type_match(source, value)
    fields = {name: PartialFieldSource(source, name) for name in ("func", "args", "keywords")}
    args, keywords = partial_field(value, "args"), partial_field(value, "keywords")
    b.guards.len_match(fields["args"], len(args))
    b.guards.keys_match(fields["keywords"], list(keywords))
    return PartialSubclassVariable(b(partial_field(value, "func"), fields["func"]),
                                   [b(a, GetItemSource(fields["args"], i)) for i, a in enumerate(args)],
                                   {k: b(v, GetItemSource(fields["keywords"], k)) for k, v in keywords.items()},
                                   type(value), source=source, instance=value)


def _wrap_compiler_api(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
    if source is not None:
        b.guards.id_match(source, value)
    return CompilerApiVariable(value, compiler_api_kind(value), source)


def _wrap_torch_callable(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
    if source is not None:
        _pin_callable(b, value, source)
    return TorchVariable(value, source)


@wraps(os._Environ)
def _wrap_environ(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
    if source is None or type(value) is not os._Environ:
        return _wrap_object(b, value, source)
    b.guards.type_match(source, value)
    return EnvironVariable(value, source)


def _wrap_object(b: VariableBuilder, value: Any, source: Source | None) -> VariableTracker:
    if source is None:
        raise Unsupported(f"a {type(value).__qualname__} object that cannot be re-fetched from the inputs")
    b.guards.type_match(source, value)
    if issubclass(type(value), torch.nn.Module):
        return NNModuleVariable(value, source)
    if issubclass(type(value), torch.optim.Optimizer):
        return OptimizerVariable(value, source)
    return UserDefinedObjectVariable(value, source)
