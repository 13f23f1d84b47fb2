"""``functools.lru_cache``/``functools.cache`` wrappers called while tracing: traced as their
wrapped function where the cache's answer is what the function computes (``LruCacheVariable``
says when, and what is left different from eager)."""

from __future__ import annotations

import functools
from typing import Any

import torch

from ..context import TracerContext
from ..exc import TracedException, Unsupported
from ..source import Source
from .base import Identity, VariableTracker, class_static
from .constant import ConstantVariable, is_literal
from .dicts import ConstDictVariable
from .functions import UserFunctionVariable, call_marked_constant, is_marked_constant
from .lists import ListVariable, TupleVariable
from .tensor import SymNodeVariable, TensorVariable


class LruCacheVariable(VariableTracker):
    """A ``functools.lru_cache``/``functools.cache`` wrapper called while tracing.

    Its cache is state the trace cannot see into. A call is traced as a call of the wrapped
    function, checked to be one whose cached answer equals what the function computes now:

    - the arguments must be what the cache can key (eager's TypeError for a list, a dict, a
      set); objects hashed and compared by identity, constants and symbolic numbers (whose
      values are ints, floats, bools) are; a tensor is not modelled (the cache would answer
      from the tensor's first call, whatever its data is now);
    - the wrapped function, inlined, must change nothing that existed before the call (no side
      effect, no tensor operation: symbolic arithmetic only); then skipping the cache skips
      only its own bookkeeping: which entries it holds and its ``cache_info()`` counts;
    - the real wrapper is also called once with the values of this call, as eager's call
      would, where the trace knows them (constants, what its symbolic sizes are now; not an
      object the trace made), and must answer what the traced code computed for them (a stale
      entry, made before a global changed, breaks the graph instead); later calls that reuse
      the entry skip the wrapper;
    - with constant arguments and a constant answer, the answer is that constant; otherwise
      (symbolic sizes, objects made by the trace, an answer that is an object made by the
      trace) the traced answer is the call's, as under torch.compile, which inlines
      ``__wrapped__``. The answer must hold no tensor. What differs from eager then is only
      the identity of a mutable answer (a hit returns the object stored at the miss, the trace
      a new equal one): visible to code that compares answers with ``is`` or mutates what the
      cache returned, which changes the answer of every later hit for eager callers too. An
      entry made stale by a global that changed after it was filled, for other values of the
      symbolic sizes than this call's, is not detected: the trace's guards are on the globals
      as they are now."""

    models = functools._lru_cache_wrapper

    def __init__(self, value: Any, wrapped: VariableTracker, source: Source | None = None) -> None:
        super().__init__(source)
        self.value, self.wrapped = value, wrapped

    def python_type(self) -> type:
        return type(self.value)

    def describe(self) -> str:
        return f"lru_cache wrapper of {getattr(self.value, '__qualname__', '?')}"

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        if name == "__wrapped__":  # (read from the wrapper's __dict__ when it was wrapped: guarded there)
            return self.wrapped
        return super().var_getattr(tx, name)

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        for arg in [*args, *kwargs.values()]:
            _check_cache_key(tx, arg, self.describe())
        constants = all(a.is_python_constant() for a in [*args, *kwargs.values()])
        if constants and isinstance(self.wrapped, UserFunctionVariable) and is_marked_constant(self.wrapped.fn):
            return call_marked_constant(self.value, args, kwargs)  # (through the cache, as eager calls it)
        if not args and not kwargs:
            filled = self._filled_answer(tx)
            if filled is not None:
                return filled
        tensor_ops = tx.trace.graph.tensor_op_count()
        with tx.trace.side_effects.watch() as changes:
            result = self.wrapped.call_function(tx, args, kwargs)
            if not changes.only_its_own() or tx.trace.graph.tensor_op_count() != tensor_ops:
                raise Unsupported(f"the {self.describe()} changes state: its cache decides whether its code runs")
        if constants and result.is_python_constant():
            self._check_cached([a.as_python_constant() for a in args],
                               {k: v.as_python_constant() for k, v in kwargs.items()}, result.as_python_constant())
            return result
        if _holds_tensor(result):
            raise Unsupported(f"the {self.describe()} returns a tensor: a hit returns the one stored")
        try:  # (the values of this call, where each is known: its sizes' values)
            at_hints = ([_value_at_hints(a) for a in args], {k: _value_at_hints(v) for k, v in kwargs.items()},
                        _value_at_hints(result))
        except _NoValue:
            return result
        self._check_cached(*at_hints)
        return result

    def _filled_answer(self, tx: TracerContext) -> VariableTracker | None:
        """A call with no argument has one key: where the cache already holds it, eager's call
        is a hit that runs no code (torch's ``is_fx_tracing`` logs its warning once this way),
        and the answer, a literal, is the call's. Guarded: the cache still holds it (else the
        code runs again, as after ``cache_clear()``). None where the cache is empty."""
        info = getattr(self.value, "cache_info", None)
        if info is None or info().currsize == 0:
            return None
        answer = self.value()  # (a hit: its counts are what differs from eager, as above)
        if not is_literal(answer):
            return None
        tx.guards.global_state([(f"{self.describe()} holds its answer", _holds_answer(self.value), True)])
        return ConstantVariable(answer)

    def _check_cached(self, args: list[Any], kwargs: dict[str, Any], traced: Any) -> None:
        """The real wrapper's answer for these values (constants, or what the symbolic ones are
        in this call) equals the traced one: called once, as eager's call would."""
        try:
            real = self.value(*args, **kwargs)
        except Exception as e:  # (its code, traced, did not raise: the cache is not what it computes)
            raise Unsupported(f"the {self.describe()} raises {type(e).__name__} when called for real") from e
        if type(real) is not type(traced) or repr(real) != repr(traced):  # (repr: nan and -0.0 too)
            raise Unsupported(f"the cache of the {self.describe()} holds a value its code no longer computes")

    def __repr__(self) -> str:
        return f"LruCacheVariable({getattr(self.value, '__qualname__', '?')})"


def _holds_answer(wrapper: Any) -> Any:
    return lambda: wrapper.cache_info().currsize != 0


_UNHASHABLE = (list, dict, set, bytearray)


def _check_cache_key(tx: TracerContext, arg: VariableTracker, what: str) -> None:
    """``arg`` can be part of an lru_cache key, as eager hashes it: constants, symbolic numbers,
    tuples of those, objects hashed and compared by identity. An unhashable one raises eager's
    TypeError; anything else (a tensor, an object with its own ``__hash__``) breaks."""
    if isinstance(arg, SymNodeVariable):
        return  # (an int, float or bool when it runs)
    if arg.is_python_constant():  # (hashed now, as the real wrapper hashes it: dtypes, devices, enums)
        try:
            hash(arg.as_python_constant())
        except TypeError as e:  # (a slice before 3.12)
            raise TracedException(e) from e
        return
    kind = arg.python_type()
    if kind in _UNHASHABLE:
        raise TracedException(TypeError(f"unhashable type: '{kind.__name__}'"))
    if isinstance(arg, TupleVariable) and issubclass(kind, tuple) and class_static(tx, kind, "__hash__") is \
            tuple.__hash__ and class_static(tx, kind, "__eq__") is tuple.__eq__:
        for item in arg.items:
            _check_cache_key(tx, item, what)
        return
    if not issubclass(kind, torch.Tensor) and class_static(tx, kind, "__hash__") in _IDENTITY_HASH \
            and class_static(tx, kind, "__eq__") in _IDENTITY_EQ:
        return
    raise Unsupported(f"calling the {what} with {arg.describe()}, whose hash the trace does not model")


# (a class's own: type defines neither; found on object)
_IDENTITY_HASH = (object.__hash__,)
_IDENTITY_EQ = (object.__eq__,)


class _NoValue(Exception):
    """A tracker whose value in this call the trace cannot tell (an object it made)."""


def _value_at_hints(var: VariableTracker) -> Any:
    """What ``var`` is in this call: a constant, a symbolic number's value here, a list, tuple
    or dict of those; raises ``_NoValue`` for anything else."""
    if isinstance(var, SymNodeVariable):
        hint = var.example.node.hint
        if hint is None:
            raise _NoValue
        return hint
    if var.is_python_constant():
        return var.as_python_constant()
    kind = var.python_type()
    if isinstance(var, (TupleVariable, ListVariable)) and kind in (tuple, torch.Size, list):
        return kind(_value_at_hints(item) for item in var.items)
    if isinstance(var, ConstDictVariable) and kind is dict and not any(isinstance(k, Identity) for k in var.items):
        return {k: _value_at_hints(v) for k, v in var.items.items()}
    raise _NoValue


def _holds_tensor(var: VariableTracker) -> bool:
    seen, todo = set(), [var]
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, TensorVariable):
            return True
        todo.extend(item.subvalues())
    return False
