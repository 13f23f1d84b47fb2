"""NumPy's functions as values (``NumpyFunctionVariable``: ``np.sum`` read from the module), how
a call of one is taken (``call_numpy``: folded on constants, translated by
``FUNCTION_HANDLERS``, else a break), torch's conversions of arrays (``torch.from_numpy``,
``torch.as_tensor``, ``torch.tensor``) and NumPy's scalar types and ``np.dtype`` as
constructors. See ``ndarray.py``.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import torch

from ..context import TracerContext
from ..exc import TracedException, Unsupported
from .base import VariableTracker
from .builtin_functions import BuiltinVariable
from .constant import ConstantVariable, is_literal
from .lists import BaseListVariable, ListVariable, TupleVariable
from .ndarray import FUNCTION_HANDLERS, NdarrayVariable, cast, numpy, stand_in, wrap_array
from .object_protocol import HANDLERS
from .tensor import SymNodeVariable, TensorVariable, record_call
from .torch_functions import _SPECIAL_CALLS


# -- torch's conversions --------------------------------------------------------------------------
def _from_numpy(tx: TracerContext, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    if len(args) != 1 or kwargs or not isinstance(args[0], NdarrayVariable):
        return None
    if args[0].scalar:
        raise Unsupported("torch.from_numpy of a NumPy scalar (eager raises TypeError)")
    if not args[0].writeable:
        raise Unsupported("torch.from_numpy of a read-only array (eager warns)")
    return args[0].tensor  # (the same memory: the same tensor)


def _holds_values(var: VariableTracker) -> bool:
    """A list or tuple (nested) with a tensor or an array among its items."""
    return type(var) in (ListVariable, TupleVariable) and any(
        isinstance(item, (TensorVariable, NdarrayVariable)) or _holds_values(item) for item in var.items)


def _stand_in(var: VariableTracker) -> Any:
    """What ``torch.tensor`` is asked about in place of an item: a real value of its kind."""
    if type(var) in (ListVariable, TupleVariable):
        return type(var.python_type()([]))(_stand_in(item) for item in var.items)
    if isinstance(var, NdarrayVariable):
        return stand_in(var)  # (NumPy's stand-in: an array of its dtype and dimensions)
    if isinstance(var, TensorVariable):
        if var.example.requires_grad:  # (eager warns, once per process: not something to replay)
            raise Unsupported("torch.tensor of a tensor that requires grad (eager warns)")
        return torch.ones(tuple(var.example.shape), dtype=var.example.dtype)
    value = var.as_python_constant()
    if type(value) not in (int, float, bool, complex) and not isinstance(value, numpy.generic):
        raise Unsupported(f"torch.tensor of a list holding {var.describe()}")
    return value


def _flat(var: VariableTracker) -> list[VariableTracker]:
    if type(var) in (ListVariable, TupleVariable):
        return [leaf for item in var.items for leaf in _flat(item)]
    return [var]


def _tensor_of_values(tx: TracerContext, fn: Any, data: VariableTracker, kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """``torch.tensor([t0, t1])`` of 0-d tensors, NumPy scalars and numbers: each value read as
    torch reads it (``item()``), in the dtype torch infers, asked of torch itself on stand-ins of
    the same kinds and dtypes; a warning (a tensor that requires grad) or an error breaks, as
    does a device. The values are the tensors' own, cast: what reading each into Python and
    back gives."""
    options = {k: v.as_python_constant() for k, v in kwargs.items()}
    if options.get("device") not in (None, "cpu", torch.device("cpu")) or set(options) - {"dtype", "device"}:
        raise Unsupported("torch.tensor of tensors with these options")
    stand_ins = _stand_in(data)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            answer = fn(stand_ins, dtype=options.get("dtype"))
    except Exception as e:  # noqa: BLE001 - eager raises it (a tensor of more than one element...)
        raise Unsupported(f"torch.tensor of these values raises {type(e).__name__} in eager") from None
    if caught:
        raise Unsupported(f"torch.tensor of these values warns in eager ({caught[0].message})")
    dtype = ConstantVariable(answer.dtype)
    leaves = []
    for leaf in _flat(data):
        if isinstance(leaf, NdarrayVariable):
            leaf = leaf.tensor
        if isinstance(leaf, TensorVariable):
            leaves.append(record_call(tx, "call_method", "to", [leaf, dtype], {}))
        else:
            leaves.append(record_call(tx, "call_function", torch.tensor, [leaf], {"dtype": dtype}))
    stacked = record_call(tx, "call_function", torch.stack, [ListVariable(leaves)], {})
    return record_call(tx, "call_method", "reshape", [stacked, ConstantVariable(tuple(answer.shape))], {})


def _as_tensor(tx: TracerContext, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    """``torch.as_tensor(a)`` shares the array's memory; ``torch.tensor(a)`` copies it."""
    if len(args) == 1 and _holds_values(args[0]) and all(v.is_python_constant() for v in kwargs.values()):
        return _tensor_of_values(tx, fn, args[0], kwargs)
    if not args or not isinstance(args[0], NdarrayVariable) or len(args) > 1 or set(kwargs) - {"dtype", "device"}:
        return None
    array = args[0]
    device = kwargs.get("device")
    if device is not None and not (device.is_python_constant() and device.as_python_constant() in (None, "cpu", torch.device("cpu"))):
        raise Unsupported("an array made a tensor on another device")
    tensor = array.tensor
    dtype = kwargs.get("dtype")
    if dtype is not None and dtype.as_python_constant() is not None:
        tensor = record_call(tx, "call_method", "to", [tensor, dtype], {})
    if fn is torch.as_tensor and not array.writeable and tensor is array.tensor:
        raise Unsupported("torch.as_tensor of a read-only array (eager warns)")
    if fn is torch.tensor or array.scalar:
        return record_call(tx, "call_function", torch.clone, [tensor], {}) if tensor is array.tensor else tensor
    return tensor


_SPECIAL_CALLS[torch.from_numpy] = _from_numpy
_SPECIAL_CALLS[torch.as_tensor] = _as_tensor
_SPECIAL_CALLS[torch.tensor] = _as_tensor


# -- calling NumPy's functions ------------------------------------------------------------------------
def _holds_array(var: VariableTracker) -> bool:
    if isinstance(var, NdarrayVariable):
        return True
    return isinstance(var, BaseListVariable) and any(_holds_array(v) for v in var.items)


def call_numpy(tx: TracerContext, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """A NumPy function called while tracing: run for real on constants where it gives a
    constant, translated to torch where an entry models it, else the graph breaks."""
    name = f"numpy.{getattr(fn, '__name__', fn)}"
    if not any(_holds_array(a) for a in (*args, *kwargs.values())) and all(
            a.is_python_constant() for a in (*args, *kwargs.values())):
        try:
            with numpy.errstate(all="raise"):
                value = fn(*[a.as_python_constant() for a in args], **{k: v.as_python_constant() for k, v in kwargs.items()})
        except Exception as e:  # noqa: BLE001 - the user's error, or NumPy's warning as an error
            if isinstance(e, (FloatingPointError, Warning)):
                raise Unsupported(f"{name} on these numbers warns by NumPy's error settings") from None
            raise TracedException(e) from e
        if is_literal(value):
            return ConstantVariable(value)
    handler = FUNCTION_HANDLERS.get(fn)
    if handler is None:
        raise Unsupported(f"{name} is not translated to torch", hint="the graph breaks; CPython runs it")
    try:
        return handler(tx, *args, **kwargs)
    except TypeError as e:  # (arguments NumPy's signature does not take: eager raises its own error)
        raise Unsupported(f"{name} with these arguments ({e})") from e


class NumpyFunctionVariable(BuiltinVariable):
    """A function of NumPy's (``np.sum``, ``np.zeros``, ``np.linalg.norm``), pinned by identity
    by the builder: its calls go through ``call_numpy``, never through the builtins' handlers.
    Not modelled: the functions no entry translates (the graph breaks)."""

    models = object  # NumPy's function objects, of several kinds (dispatchers, builtins, Python helpers)

    def describe(self) -> str:
        return f"numpy.{getattr(self.fn, '__name__', '?')}"

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return call_numpy(tx, self.fn, args, kwargs)


def is_numpy_function(value: Any) -> bool:
    """A function the builder wraps as a ``NumpyFunctionVariable``: one NumPy's dispatcher
    made, one with a translation, or a pure helper of NumPy's (folded on constants)."""
    return type(value) is _DISPATCHER or value in FUNCTION_HANDLERS or value in _PURE_HELPERS


_DISPATCHER = type(numpy.sum)
# NumPy's functions written in Python that are pure functions of constant arguments (types,
# dtypes): run while tracing on constants (``np.issubdtype(type(n), np.integer)``).
_PURE_HELPERS = frozenset({numpy.issubdtype, numpy.isscalar, numpy.iterable}) if numpy is not None else frozenset()


# -- NumPy's scalar types and dtype as constructors ---------------------------------------------------
def _scalar_type(cls: type) -> Callable[..., VariableTracker | None]:
    """``np.float32(x)``: folded on a constant; of an array, the array in that dtype (a NumPy
    scalar when 0-d: ``np.float32(a.sum())``)."""
    def make(tx: TracerContext, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker | None:
        if kwargs or len(args) > 1:
            return None
        if args and isinstance(args[0], NdarrayVariable):
            return wrap_array(cast(tx, args[0].tensor, numpy.dtype(cls)), scalar=True)
        if args and isinstance(args[0], (TensorVariable, SymNodeVariable)):
            raise Unsupported(f"numpy.{cls.__name__} of {args[0].describe()} reads its value into Python")
        values = [a.as_python_constant() for a in args]
        try:
            return ConstantVariable(cls(*values))
        except Exception as e:  # noqa: BLE001 - the user's error: eager raises it
            raise TracedException(e) from e
    return make


if numpy is not None:
    for _cls in {*numpy.sctypeDict.values()}:
        if issubclass(_cls, (numpy.number, numpy.bool_)) and _cls not in HANDLERS:
            HANDLERS[_cls] = _scalar_type(_cls)
    HANDLERS[numpy.dtype] = lambda tx, *args, **kwargs: ConstantVariable(numpy.dtype(
        *[a.as_python_constant() for a in args], **{k: v.as_python_constant() for k, v in kwargs.items()}))
