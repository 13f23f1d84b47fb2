"""NumPy's functions and ndarray methods translated to torch operations (see ``ndarray.py``).

Each entry takes the call's trackers with NumPy's own parameter names and records torch
operations on the arrays' tensors: the result's dtype and scalar-ness are what NumPy answers
(``dtype_oracle``), the computation runs in that dtype. A function of NumPy not here, or an
argument an entry does not model (``out=``, ``where=``, a non-C ``order``), breaks the graph.
Calls on constants only are run for real where they give a constant (``np.prod((2, 3))``).
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import torch

from ..context import TracerContext
from ..exc import Unsupported
from .base import VariableTracker
from .constant import ConstantVariable, is_literal
from .lists import BaseListVariable, ListVariable, SliceVariable, TupleVariable
from .ndarray import (ATTRIBUTES, FUNCTION_HANDLERS, METHODS, TORCH_DTYPES, NdarrayVariable, call_ufunc, cast,
                      dtype_oracle, getitem, numpy, read_only, result_kind, setitem, tensor_numpy, torch_dtype,
                      wrap_array, writable)
from .tensor import SymNodeVariable, TensorVariable, record_call


def _record(tx: TracerContext, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in the graph; plain Python values become constants."""
    def wrap(v: Any) -> VariableTracker:
        if isinstance(v, VariableTracker):
            return v
        if isinstance(v, (list, tuple)) and any(isinstance(i, VariableTracker) for i in v):
            return (ListVariable if isinstance(v, list) else TupleVariable)([wrap(i) for i in v])
        return ConstantVariable(v)
    op = "call_method" if isinstance(fn, str) else "call_function"
    return record_call(tx, op, fn, [wrap(a) for a in args], {k: wrap(v) for k, v in kwargs.items()})


def _value(var: VariableTracker | None, default: Any = None) -> Any:
    """A constant argument's value (a symbolic int stays its tracker: torch takes it)."""
    if var is None:
        return default
    if isinstance(var, SymNodeVariable):
        return var
    if isinstance(var, BaseListVariable) and not isinstance(var, SliceVariable):
        return type(var.python_type()([]))([_value(v) for v in var.items]) if var.python_type() in (list, tuple) \
            else tuple(_value(v) for v in var.items)
    return var.as_python_constant()


def _not_modelled(name: str, **given: Any) -> None:
    for key, var in given.items():
        if var is not None:
            raise Unsupported(f"numpy.{name} with {key}= is not translated to torch", hint="the graph breaks; CPython runs it")


def _array(tx: TracerContext, var: VariableTracker, tensors: bool = False) -> NdarrayVariable:
    """An argument NumPy takes as an array: an array, or numbers known while tracing; with
    ``tensors``, a tensor too, as the functions that convert it with ``np.asarray`` take it
    (its ``__array__``: the array over its memory, or eager's error)."""
    if isinstance(var, NdarrayVariable):
        return var
    if isinstance(var, TensorVariable) and tensors:
        return tensor_numpy(tx, var, [], {})  # type: ignore[return-value]
    if isinstance(var, TensorVariable):
        raise Unsupported("a tensor where NumPy takes an array (NumPy would convert it)",
                          hint="convert it with .numpy() first")
    if isinstance(var, BaseListVariable) and not isinstance(var, SliceVariable) and _holds_arrays(var):
        return _stacked(tx, var)
    value = _value(var)
    if not is_literal(value) and not isinstance(value, (list, tuple)):
        raise Unsupported(f"{var.describe()} where NumPy takes an array")
    with numpy.errstate(all="raise"):
        real = numpy.asarray(value)
    if real.dtype not in TORCH_DTYPES:
        raise Unsupported(f"an array of {real.dtype} made from {var.describe()}")
    tensor = _record(tx, torch.tensor, real.tolist(), dtype=torch_dtype(real.dtype))
    return wrap_array(tensor)


def _holds_arrays(var: VariableTracker) -> bool:
    if isinstance(var, NdarrayVariable):
        return True
    return isinstance(var, BaseListVariable) and not isinstance(var, SliceVariable) and any(map(_holds_arrays, var.items))


def _stacked(tx: TracerContext, var: BaseListVariable) -> NdarrayVariable:
    """``np.array([x, y])`` of arrays or NumPy scalars (and numbers): stacked along a new first
    axis, in the dtype NumPy finds for these items (items of different shapes: eager's error)."""
    items = [_array(tx, item) for item in var.items]
    oracle = dtype_oracle(numpy.array, [TupleVariable(items)], {})  # type: ignore[arg-type]
    dtype, _ = result_kind(oracle)
    return wrap_array(_record(tx, torch.stack, [cast(tx, item.tensor, dtype) for item in items]))


def _result(tx: TracerContext, tensor: Any, oracle: Any) -> NdarrayVariable:
    dtype, scalar = result_kind(oracle)
    return wrap_array(cast(tx, tensor, dtype), scalar=scalar)


def numpy_function(*fns: Any, method: str | None = None) -> Callable[[Callable[..., VariableTracker]], Callable[..., VariableTracker]]:
    """Register a translation for NumPy functions (by identity) and, under ``method``, for the
    ndarray method of that name (the array as first argument)."""
    def register(handler: Callable[..., VariableTracker]) -> Callable[..., VariableTracker]:
        for fn in fns:
            if fn is not None:
                FUNCTION_HANDLERS[fn] = handler
        if method is not None:
            METHODS[method] = handler
        return handler
    return register


# -- reductions ----------------------------------------------------------------------------------
def _dims(axis: Any) -> Any:
    return () if axis is None else axis


def _reduction(np_fn: Any, compute: Callable[..., Any], cast_input: bool, tuple_axis: bool = True) -> Callable[..., VariableTracker]:
    def reduce(tx: TracerContext, a: VariableTracker, axis: VariableTracker | None = None, dtype: VariableTracker | None = None,
               out: VariableTracker | None = None, keepdims: VariableTracker | None = None, **rest: VariableTracker) -> VariableTracker:
        _not_modelled(np_fn.__name__, out=out, **rest)
        array = _array(tx, a)
        asked = {"axis": axis, "dtype": dtype, "keepdims": keepdims}
        oracle = dtype_oracle(np_fn, [array], {k: v for k, v in asked.items() if v is not None})
        out_dtype, _ = result_kind(oracle)
        axis_value, keep = _value(axis), bool(_value(keepdims, False))
        if isinstance(axis_value, (tuple, list)) and not tuple_axis:
            raise Unsupported(f"numpy.{np_fn.__name__} over a tuple of axes")
        tensor = cast(tx, array.tensor, out_dtype) if cast_input else array.tensor
        return _result(tx, compute(tx, tensor, axis_value, keep), oracle)
    return reduce


def _sum(tx: TracerContext, t: Any, axis: Any, keep: bool) -> Any:
    return _record(tx, torch.sum, t, dim=_dims(axis), keepdim=keep) if axis is not None else \
        _reshape_kept(tx, _record(tx, torch.sum, t), t, keep)


def _reshape_kept(tx: TracerContext, result: Any, t: Any, keep: bool) -> Any:
    """A reduction over every axis with ``keepdims``: a 1 for each."""
    return _record(tx, torch.reshape, result, (1,) * t.example.dim()) if keep else result


def _over_all(torch_fn: Any) -> Callable[..., Any]:
    def compute(tx: TracerContext, t: Any, axis: Any, keep: bool) -> Any:
        if axis is None:
            return _reshape_kept(tx, _record(tx, torch_fn, t), t, keep)
        if isinstance(axis, (tuple, list)):
            raise Unsupported(f"torch.{torch_fn.__name__} over a tuple of axes")
        return _record(tx, torch_fn, t, axis, keepdim=keep)
    return compute


def _amax(torch_fn: Any) -> Callable[..., Any]:
    return lambda tx, t, axis, keep: _record(tx, torch_fn, t, dim=_dims(axis), keepdim=keep)


def _over_all_or_axes(torch_fn: Any) -> Callable[..., Any]:
    """``torch.all(t)`` over every axis (``dim=()`` reduces none for all/any), else over ``axis``."""
    def compute(tx: TracerContext, t: Any, axis: Any, keep: bool) -> Any:
        if axis is None:
            return _reshape_kept(tx, _record(tx, torch_fn, t), t, keep)
        return _record(tx, torch_fn, t, dim=axis, keepdim=keep)
    return compute


def _mean(tx: TracerContext, t: Any, axis: Any, keep: bool) -> Any:
    return _record(tx, torch.mean, t, dim=axis, keepdim=keep) if axis is not None else \
        _reshape_kept(tx, _record(tx, torch.mean, t), t, keep)


def _argminmax(torch_fn: Any) -> Callable[..., Any]:
    def compute(tx: TracerContext, t: Any, axis: Any, keep: bool) -> Any:
        if axis is None:
            return _reshape_kept(tx, _record(tx, torch_fn, t), t, keep)
        return _record(tx, torch_fn, t, axis, keepdim=keep)
    return compute


def _cumulative(torch_fn: Any) -> Callable[..., Any]:
    def compute(tx: TracerContext, t: Any, axis: Any, keep: bool) -> Any:
        if axis is None:
            return _record(tx, torch_fn, _record(tx, torch.ravel, t), 0)
        return _record(tx, torch_fn, t, axis)
    return compute


_REDUCTIONS = {
    "sum": (numpy.sum, _sum, True, True), "prod": (numpy.prod, _over_all(torch.prod), True, False),
    "mean": (numpy.mean, _mean, True, True), "max": (numpy.max, _amax(torch.amax), False, True),
    "min": (numpy.min, _amax(torch.amin), False, True), "argmax": (numpy.argmax, _argminmax(torch.argmax), False, False),
    "argmin": (numpy.argmin, _argminmax(torch.argmin), False, False),
    "all": (numpy.all, _over_all_or_axes(torch.all), False, True),
    "any": (numpy.any, _over_all_or_axes(torch.any), False, True),
    "cumsum": (numpy.cumsum, _cumulative(torch.cumsum), True, False),
    "cumprod": (numpy.cumprod, _cumulative(torch.cumprod), True, False),
}
for _name, (_fn, _compute, _cast_input, _tuples) in _REDUCTIONS.items():
    _aliases = {"max": (numpy.amax,), "min": (numpy.amin,)}.get(_name, ())
    numpy_function(_fn, *_aliases, method=_name)(_reduction(_fn, _compute, _cast_input, _tuples))


def _deviation(np_fn: Any, torch_fn: Any) -> Callable[..., VariableTracker]:
    def deviation(tx: TracerContext, a: VariableTracker, axis: VariableTracker | None = None, dtype: VariableTracker | None = None,
                  out: VariableTracker | None = None, ddof: VariableTracker | None = None,
                  keepdims: VariableTracker | None = None, **rest: VariableTracker) -> VariableTracker:
        _not_modelled(np_fn.__name__, out=out, **rest)
        array = _array(tx, a)
        asked = {"axis": axis, "dtype": dtype, "ddof": ddof, "keepdims": keepdims}
        oracle = dtype_oracle(np_fn, [array], {k: v for k, v in asked.items() if v is not None})
        out_dtype, _ = result_kind(oracle)
        tensor = cast(tx, array.tensor, out_dtype)
        axis_value = _value(axis)
        return _result(tx, _record(tx, torch_fn, tensor, dim=axis_value, correction=_value(ddof, 0),
                                   keepdim=bool(_value(keepdims, False))), oracle)
    return deviation


numpy_function(numpy.std, method="std")(_deviation(numpy.std, torch.std))
numpy_function(numpy.var, method="var")(_deviation(numpy.var, torch.var))


# -- making arrays -------------------------------------------------------------------------------
def _shape(var: VariableTracker) -> Any:
    value = _value(var)
    return (value,) if not isinstance(value, (tuple, list)) else tuple(value)


def _filled(np_fn: Any, torch_fn: Any) -> Callable[..., VariableTracker]:
    def filled(tx: TracerContext, shape: VariableTracker, dtype: VariableTracker | None = None,
               order: VariableTracker | None = None, **rest: VariableTracker) -> VariableTracker:
        _not_modelled(np_fn.__name__, **rest)
        if order is not None and _value(order) != "C":
            raise Unsupported(f"numpy.{np_fn.__name__} in Fortran order")
        oracle = dtype_oracle(np_fn, [ConstantVariable(1)], {"dtype": dtype} if dtype is not None else {})
        return _result(tx, _record(tx, torch_fn, _shape(shape), dtype=torch_dtype(oracle.dtype)), oracle)
    return filled


numpy_function(numpy.empty)(_filled(numpy.empty, torch.empty))  # (any values: eager's are whatever memory held)
numpy_function(numpy.zeros)(_filled(numpy.zeros, torch.zeros))
numpy_function(numpy.ones)(_filled(numpy.ones, torch.ones))


@numpy_function(numpy.full)
def _full(tx: TracerContext, shape: VariableTracker, fill_value: VariableTracker, dtype: VariableTracker | None = None,
          order: VariableTracker | None = None) -> VariableTracker:
    if order is not None and _value(order) != "C":
        raise Unsupported("numpy.full in Fortran order")
    oracle = dtype_oracle(numpy.full, [ConstantVariable(1), fill_value], {"dtype": dtype} if dtype is not None else {})
    fill = fill_value.tensor if isinstance(fill_value, NdarrayVariable) else _value(fill_value)
    if isinstance(fill, TensorVariable):
        raise Unsupported("numpy.full with an array as its value")
    if isinstance(fill, numpy.generic):
        fill = fill.item()
    return _result(tx, _record(tx, torch.full, _shape(shape), fill, dtype=torch_dtype(oracle.dtype)), oracle)


def _like(np_fn: Any, fill: Any) -> Callable[..., VariableTracker]:
    def like(tx: TracerContext, a: VariableTracker, *args: VariableTracker, dtype: VariableTracker | None = None,
             **rest: VariableTracker) -> VariableTracker:
        _not_modelled(np_fn.__name__, **rest)
        array = _array(tx, a, tensors=True)
        values = list(args)
        if np_fn is numpy.full_like:
            if not values:
                raise Unsupported("numpy.full_like without a fill value")
            fill_var, values = values[0], values[1:]
        if values:
            dtype = values[0]
        oracle = dtype_oracle(np_fn, [array, *([fill_var] if np_fn is numpy.full_like else [])],
                              {"dtype": dtype} if dtype is not None else {})
        if np_fn is numpy.empty_like:
            return _result(tx, _record(tx, torch.empty_like, array.tensor, dtype=torch_dtype(oracle.dtype)), oracle)
        value = _value(fill_var) if np_fn is numpy.full_like else fill
        if isinstance(value, numpy.generic):
            value = value.item()
        return _result(tx, _record(tx, torch.full_like, array.tensor, value, dtype=torch_dtype(oracle.dtype)), oracle)
    return like


numpy_function(numpy.zeros_like)(_like(numpy.zeros_like, 0))
numpy_function(numpy.ones_like)(_like(numpy.ones_like, 1))
numpy_function(numpy.full_like)(_like(numpy.full_like, None))
numpy_function(numpy.empty_like)(_like(numpy.empty_like, None))


@numpy_function(numpy.arange)
def _arange(tx: TracerContext, *args: VariableTracker, dtype: VariableTracker | None = None, **rest: VariableTracker) -> VariableTracker:
    _not_modelled("arange", **rest)
    if not 1 <= len(args) <= 3:
        raise Unsupported("numpy.arange with these arguments")
    oracle = dtype_oracle(numpy.arange, list(args), {"dtype": dtype} if dtype is not None else {})
    values = [_value(a) for a in args]
    values = [v.item() if isinstance(v, numpy.generic) else v for v in values]
    return wrap_array(_record(tx, torch.arange, *values, dtype=torch_dtype(oracle.dtype)))


@numpy_function(numpy.linspace)
def _linspace(tx: TracerContext, start: VariableTracker, stop: VariableTracker, num: VariableTracker | None = None,
              endpoint: VariableTracker | None = None, retstep: VariableTracker | None = None,
              dtype: VariableTracker | None = None, axis: VariableTracker | None = None) -> VariableTracker:
    if _value(endpoint, True) is not True or _value(retstep, False) or _value(axis, 0) != 0:
        raise Unsupported("numpy.linspace with endpoint=False, retstep or axis")
    if isinstance(start, NdarrayVariable) or isinstance(stop, NdarrayVariable):
        raise Unsupported("numpy.linspace between arrays")
    oracle = dtype_oracle(numpy.linspace, [start, stop], {"num": ConstantVariable(2), **({"dtype": dtype} if dtype else {})})
    if oracle.dtype.kind not in "fc":
        raise Unsupported(f"numpy.linspace in {oracle.dtype} (NumPy floors what torch rounds)")
    return wrap_array(_record(tx, torch.linspace, _value(start), _value(stop), _value(num, 50),
                              dtype=torch_dtype(oracle.dtype)))


@numpy_function(numpy.eye, numpy.identity)
def _eye(tx: TracerContext, N: VariableTracker, M: VariableTracker | None = None, k: VariableTracker | None = None,
         dtype: VariableTracker | None = None, order: VariableTracker | None = None, **rest: VariableTracker) -> VariableTracker:
    _not_modelled("eye", **rest)
    if _value(k, 0) != 0 or order is not None and _value(order) != "C":
        raise Unsupported("numpy.eye off the diagonal or in Fortran order")
    wanted = numpy.dtype(_value(dtype, float))
    m = _value(M)
    return wrap_array(_record(tx, torch.eye, _value(N), *([m] if m is not None else []), dtype=torch_dtype(wanted)))


def _array_of(copies: bool) -> Callable[..., VariableTracker]:
    """``np.array(x)`` and ``np.copy(x)`` copy; ``np.asarray(x)`` is ``x`` itself when no dtype
    changes it (``np.asarray(a) is a``)."""
    def array_of(tx: TracerContext, obj: VariableTracker, dtype: VariableTracker | None = None,
                 **rest: VariableTracker) -> VariableTracker:
        for key, var in rest.items():
            if not (key == "order" and _value(var) in ("C", "K", "A", None) or key == "copy" and _value(var) in (True, None)):
                raise Unsupported(f"numpy.array with {key}={_value(var)!r}")
        array = _array(tx, obj, tensors=True)
        made = array is not obj  # (from constants: new already)
        converted = cast(tx, array.tensor, numpy.dtype(_value(dtype)) if dtype is not None else array.dtype)
        if array.scalar:  # (of a NumPy scalar: a new 0-d array, sharing no memory)
            return wrap_array(_record(tx, torch.clone, converted) if converted is array.tensor else converted)
        if converted is array.tensor:
            if not copies or made:
                return array
            converted = _record(tx, torch.clone, converted)
        return wrap_array(converted)
    return array_of


numpy_function(numpy.array, numpy.copy, method="copy")(_array_of(True))
numpy_function(numpy.asarray, numpy.ascontiguousarray)(_array_of(False))


# -- shapes ------------------------------------------------------------------------------------------
def _shape_args(args: tuple[VariableTracker, ...]) -> Any:
    """``a.reshape(2, 3)`` or ``a.reshape((2, 3))``."""
    if len(args) == 1:
        return _shape(args[0])
    return tuple(_value(a) for a in args)


@numpy_function(numpy.reshape, method="reshape")
def _reshape(tx: TracerContext, a: VariableTracker, *shape: VariableTracker, order: VariableTracker | None = None,
             newshape: VariableTracker | None = None, **rest: VariableTracker) -> VariableTracker:
    shape = shape or tuple(v for v in (rest.pop("shape", None), newshape) if v is not None)
    _not_modelled("reshape", **rest)
    if order is not None and _value(order) != "C" or not shape:
        raise Unsupported("numpy.reshape in another order than C")
    array = _array(tx, a)
    return wrap_array(_record(tx, torch.reshape, array.tensor, _shape_args(shape)))


@numpy_function(numpy.transpose, method="transpose")
def _transpose(tx: TracerContext, a: VariableTracker, *axes: VariableTracker) -> VariableTracker:
    array = _array(tx, a)
    order = _shape_args(axes) if axes and not (len(axes) == 1 and _value(axes[0]) is None) else \
        tuple(reversed(range(array.ndim)))
    return wrap_array(_record(tx, "permute", array.tensor, order))


def _simple(np_fn: Any, torch_fn: Any, method: str | None = None) -> None:
    def simple(tx: TracerContext, a: VariableTracker, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker:
        array = _array(tx, a)
        return wrap_array(_record(tx, torch_fn, array.tensor, *[_value(v) for v in args],
                                  **{k: _value(v) for k, v in kwargs.items()}))
    numpy_function(np_fn, method=method)(simple)


_simple(numpy.swapaxes, torch.swapaxes, "swapaxes")
_simple(numpy.moveaxis, torch.movedim)
_simple(numpy.ravel, torch.ravel, "ravel")
_simple(numpy.tril, torch.tril)
_simple(numpy.triu, torch.triu)
_simple(numpy.fliplr, torch.fliplr)
_simple(numpy.flipud, torch.flipud)


@numpy_function(numpy.tile)
def _tile(tx: TracerContext, A: VariableTracker, reps: VariableTracker) -> VariableTracker:
    return wrap_array(_record(tx, torch.tile, _array(tx, A).tensor, _shape(reps)))


@numpy_function(numpy.expand_dims)
def _expand_dims(tx: TracerContext, a: VariableTracker, axis: VariableTracker) -> VariableTracker:
    axes = _value(axis)
    view = _array(tx, a).tensor
    for dim in sorted(axes) if isinstance(axes, (tuple, list)) else (axes,):
        view = _record(tx, torch.unsqueeze, view, dim)
    return wrap_array(view)


@numpy_function(numpy.squeeze, method="squeeze")
def _squeeze(tx: TracerContext, a: VariableTracker, axis: VariableTracker | None = None) -> VariableTracker:
    array = _array(tx, a)
    axes = _value(axis)
    return wrap_array(_record(tx, torch.squeeze, array.tensor, *([axes] if axes is not None else [])))


@numpy_function(None, method="flatten")
def _flatten(tx: TracerContext, a: VariableTracker, order: VariableTracker | None = None) -> VariableTracker:
    if order is not None and _value(order) != "C":
        raise Unsupported("ndarray.flatten in another order than C")
    return wrap_array(_record(tx, torch.clone, _record(tx, torch.ravel, _array(tx, a).tensor)))  # (always a copy)


@numpy_function(numpy.flip)
def _flip(tx: TracerContext, m: VariableTracker, axis: VariableTracker | None = None) -> VariableTracker:
    array = _array(tx, m)
    axes = _value(axis)
    dims = tuple(range(array.ndim)) if axes is None else axes if isinstance(axes, (tuple, list)) else (axes,)
    return wrap_array(_record(tx, torch.flip, array.tensor, dims))


@numpy_function(numpy.roll)
def _roll(tx: TracerContext, a: VariableTracker, shift: VariableTracker, axis: VariableTracker | None = None) -> VariableTracker:
    axes = _value(axis)
    return wrap_array(_record(tx, torch.roll, _array(tx, a).tensor, _value(shift), *([axes] if axes is not None else [])))


@numpy_function(numpy.repeat, method="repeat")
def _repeat(tx: TracerContext, a: VariableTracker, repeats: VariableTracker, axis: VariableTracker | None = None) -> VariableTracker:
    count = _value(repeats)
    if not isinstance(count, int):
        raise Unsupported("numpy.repeat with repeats per element")
    axes = _value(axis)
    return wrap_array(_record(tx, torch.repeat_interleave, _array(tx, a).tensor, count,
                              *([axes] if axes is not None else [])))


def _joined(np_fn: Any, torch_fn: Any) -> None:
    def joined(tx: TracerContext, arrays: VariableTracker, axis: VariableTracker | None = None, out: VariableTracker | None = None,
               dtype: VariableTracker | None = None, **rest: VariableTracker) -> VariableTracker:
        _not_modelled(np_fn.__name__, out=out, **rest)
        if not isinstance(arrays, BaseListVariable):
            raise Unsupported(f"numpy.{np_fn.__name__} of {arrays.describe()}")
        items = [_array(tx, a) for a in arrays.items]
        kwargs = {"axis": axis} if axis is not None else {}
        if dtype is not None:
            kwargs["dtype"] = dtype
        oracle = dtype_oracle(np_fn, [TupleVariable(items)], kwargs)  # type: ignore[arg-type]
        out_dtype, _ = result_kind(oracle)
        tensors = [cast(tx, a.tensor, out_dtype) for a in items]
        extra = {} if np_fn in (numpy.vstack, numpy.hstack) else {"dim": _value(axis, 0)}
        if np_fn is numpy.concatenate and _value(axis, 0) is None:
            tensors, extra = [_record(tx, torch.ravel, t) for t in tensors], {"dim": 0}
        return wrap_array(_record(tx, torch_fn, tensors, **extra))
    numpy_function(np_fn)(joined)


_joined(numpy.concatenate, torch.cat)
_joined(numpy.stack, torch.stack)
_joined(numpy.vstack, torch.vstack)
_joined(numpy.hstack, torch.hstack)


@numpy_function(numpy.meshgrid)
def _meshgrid(tx: TracerContext, *xi: VariableTracker, indexing: VariableTracker | None = None, **rest: VariableTracker) -> VariableTracker:
    _not_modelled("meshgrid", **rest)
    arrays = [_array(tx, x) for x in xi]
    # (NumPy flattens each input: torch takes 0-d or 1-d ones only)
    grids = _record(tx, torch.meshgrid, *[_record(tx, torch.ravel, a.tensor) if a.ndim > 1 else a.tensor for a in arrays],
                    indexing=_value(indexing, "xy"))
    # (NumPy's grids are copies; torch's are broadcast views of the inputs)
    return TupleVariable([wrap_array(_record(tx, torch.clone, g)) for g in grids.items])


# -- elementwise beyond ufuncs --------------------------------------------------------------------
@numpy_function(numpy.where)
def _where(tx: TracerContext, condition: VariableTracker, *xy: VariableTracker) -> VariableTracker:
    if len(xy) != 2:
        raise Unsupported("numpy.where with one argument (its size depends on the values)")
    cond = _array(tx, condition)
    oracle = dtype_oracle(numpy.where, [cond, *xy], {})
    dtype, _ = result_kind(oracle)
    operands = [cast(tx, x.tensor, dtype) if isinstance(x, NdarrayVariable) else _number(x) for x in xy]
    result = _record(tx, torch.where, cast(tx, cond.tensor, numpy.dtype(bool)), *operands)
    return _result(tx, result, oracle)


def _number(var: VariableTracker) -> Any:
    value = _value(var)
    if isinstance(value, numpy.generic):
        return value.item()
    if isinstance(value, SymNodeVariable) or type(value) in (int, float, bool, complex):
        return value
    raise Unsupported(f"{var.describe()} as a NumPy operand")


@numpy_function(numpy.clip, method="clip")
def _clip(tx: TracerContext, a: VariableTracker, a_min: VariableTracker | None = None, a_max: VariableTracker | None = None,
          out: VariableTracker | None = None, **rest: VariableTracker) -> VariableTracker:
    a_min = a_min if a_min is not None else rest.pop("min", None)
    a_max = a_max if a_max is not None else rest.pop("max", None)
    _not_modelled("clip", out=out, **rest)
    array = _array(tx, a)
    bounds = [b if b is not None else ConstantVariable(None) for b in (a_min, a_max)]
    oracle = dtype_oracle(numpy.clip, [array, *bounds], {})
    dtype, _ = result_kind(oracle)
    low, high = [cast(tx, b.tensor, dtype) if isinstance(b, NdarrayVariable) else _number(b) for b in bounds]
    return _result(tx, _record(tx, torch.clamp, cast(tx, array.tensor, dtype), low, high), oracle)


@numpy_function(numpy.round, numpy.around, method="round")
def _round(tx: TracerContext, a: VariableTracker, decimals: VariableTracker | None = None,
           out: VariableTracker | None = None) -> VariableTracker:
    _not_modelled("round", out=out)
    array = _array(tx, a)
    places = _value(decimals, 0)
    if array.dtype.kind not in "fc":
        if places < 0:
            raise Unsupported("numpy.round of integers to negative decimals")
        return wrap_array(_record(tx, torch.clone, array.tensor), scalar=array.scalar)
    return wrap_array(_record(tx, torch.round, array.tensor, decimals=places), scalar=array.scalar)


@numpy_function(numpy.nan_to_num)
def _nan_to_num(tx: TracerContext, x: VariableTracker, copy: VariableTracker | None = None, nan: VariableTracker | None = None,
                posinf: VariableTracker | None = None, neginf: VariableTracker | None = None) -> VariableTracker:
    """nan as ``nan`` (0.0), infinities as ``posinf``/``neginf`` (the dtype's extremes); of a
    complex array, in its real and imaginary parts (torch's too); ``copy=False`` in place."""
    array = _array(tx, x)
    values = [_number(v) if v is not None else None for v in (nan, posinf, neginf)]
    if values[0] is None:
        values[0] = 0.0
    if any(isinstance(v, VariableTracker) for v in values):
        raise Unsupported("numpy.nan_to_num with replacements known only at run time")
    if array.dtype.kind not in "fc":  # (integers and booleans: unchanged, a copy unless copy=False)
        return array if copy is not None and not _value(copy) else wrap_array(_record(tx, torch.clone, array.tensor),
                                                                              array.scalar)
    if array.dtype.kind == "c":  # (torch's has no complex kernel: the parts one by one)
        parts = [_record(tx, torch.nan_to_num, _record(tx, part, array.tensor), *values) for part in (torch.real, torch.imag)]
        fixed = _record(tx, torch.complex, *parts)
    else:
        fixed = _record(tx, torch.nan_to_num, array.tensor, *values)
    if copy is not None and not _value(copy):
        if array.scalar:
            raise Unsupported("numpy.nan_to_num of a NumPy scalar with copy=False")
        _record(tx, "copy_", writable(array).tensor, fixed)
        return array
    return wrap_array(fixed, array.scalar)


def _fft_shift(np_fn: Any, torch_fn: Any) -> None:
    def shift(tx: TracerContext, x: VariableTracker, axes: VariableTracker | None = None) -> VariableTracker:
        array = _array(tx, x)
        dims = _value(axes)
        return wrap_array(_record(tx, torch_fn, array.tensor, dim=tuple(range(array.ndim)) if dims is None else dims))
    numpy_function(np_fn)(shift)


_fft_shift(numpy.fft.fftshift, torch.fft.fftshift)
_fft_shift(numpy.fft.ifftshift, torch.fft.ifftshift)


def _fft(np_fn: Any, torch_fn: Any, many: bool) -> None:
    """NumPy's transforms in the dtype NumPy gives (complex128 of integers and float64, complex64
    of float32): integers become float64 first (torch would take float32)."""
    def transform(tx: TracerContext, a: VariableTracker, *given: VariableTracker, norm: VariableTracker | None = None,
                  out: VariableTracker | None = None, **rest: VariableTracker) -> VariableTracker:
        # (positional: n and axis of the 1-d transforms, s and axes of the others)
        names = ("s", "axes") if many else ("n", "axis")
        if len(given) > 2:
            raise Unsupported(f"numpy.fft.{np_fn.__name__} with these arguments")
        chosen = dict(zip(names, given))
        chosen.update({k: rest.pop(k) for k in names if k in rest})
        _not_modelled(np_fn.__name__, out=out, **rest)
        array = _array(tx, a)
        asked = {"norm": norm} if norm is not None else {}
        if not many:  # (the dtype does not depend on n; irfft of one element has none by default)
            asked["n"] = ConstantVariable(2)
        oracle = dtype_oracle(np_fn, [array], asked)
        tensor = cast(tx, array.tensor, numpy.dtype(numpy.float64)) if array.dtype.kind in "iub" else array.tensor
        options = {"norm": _value(norm)} if norm is not None else {}
        size, axes = _value(chosen.get(names[0])), _value(chosen.get(names[1]))
        if many:
            options.update({"s": size, "dim": (-2, -1) if axes is None and np_fn.__name__.endswith("2") else axes})
        else:
            options.update({"n": size, "dim": -1 if axes is None else axes})
        result = _record(tx, torch_fn, tensor, **options)
        if result.example.is_conj():  # (torch's inverse transforms may give a conjugated view)
            result = _record(tx, torch.resolve_conj, result)
        return _result(tx, result, oracle)
    numpy_function(np_fn)(transform)


for _np_fn, _torch_fn, _many in (
        (numpy.fft.fft, torch.fft.fft, False), (numpy.fft.ifft, torch.fft.ifft, False),
        (numpy.fft.rfft, torch.fft.rfft, False), (numpy.fft.irfft, torch.fft.irfft, False),
        (numpy.fft.fft2, torch.fft.fft2, True), (numpy.fft.ifft2, torch.fft.ifft2, True),
        (numpy.fft.fftn, torch.fft.fftn, True), (numpy.fft.ifftn, torch.fft.ifftn, True)):
    _fft(_np_fn, _torch_fn, _many)


@numpy_function(numpy.isclose)
def _isclose(tx: TracerContext, a: VariableTracker, b: VariableTracker, rtol: VariableTracker | None = None,
             atol: VariableTracker | None = None, equal_nan: VariableTracker | None = None) -> VariableTracker:
    x, y = _array(tx, a), _array(tx, b)
    common = numpy.result_type(x.dtype, y.dtype, numpy.float64 if x.dtype.kind in "iub" else x.dtype)
    oracle = dtype_oracle(numpy.isclose, [x, y], {})
    result = _record(tx, torch.isclose, cast(tx, x.tensor, common), cast(tx, y.tensor, common),
                     rtol=_value(rtol, 1e-05), atol=_value(atol, 1e-08), equal_nan=bool(_value(equal_nan, False)))
    return _result(tx, result, oracle)


# -- linear algebra -------------------------------------------------------------------------------
def _products(np_fn: Any, torch_fn: Any, method: str | None = None) -> None:
    def product(tx: TracerContext, a: VariableTracker, b: VariableTracker, out: VariableTracker | None = None) -> VariableTracker:
        _not_modelled(np_fn.__name__, out=out)
        x, y = _array(tx, a), _array(tx, b)
        if np_fn is numpy.dot and (x.ndim > 2 or y.ndim > 2 or x.ndim == 0 or y.ndim == 0):
            raise Unsupported("numpy.dot of arrays of 0 or more than 2 dimensions")
        oracle = dtype_oracle(np_fn, [x, y], {})
        dtype, _ = result_kind(oracle)
        if dtype.kind == "b":
            raise Unsupported(f"numpy.{np_fn.__name__} of booleans")
        return _result(tx, _record(tx, torch_fn, cast(tx, x.tensor, dtype), cast(tx, y.tensor, dtype)), oracle)
    numpy_function(np_fn, method=method)(product)


_products(numpy.matmul, torch.matmul)
_products(numpy.dot, torch.matmul, "dot")
_products(numpy.outer, torch.outer)


@numpy_function(numpy.einsum)
def _einsum(tx: TracerContext, subscripts: VariableTracker, *operands: VariableTracker, **rest: VariableTracker) -> VariableTracker:
    _not_modelled("einsum", **rest)
    equation = _value(subscripts)
    if not isinstance(equation, str):
        raise Unsupported("numpy.einsum without a subscripts string")
    arrays = [_array(tx, o) for o in operands]
    oracle = dtype_oracle(numpy.einsum, [subscripts, *arrays], {})
    dtype, _ = result_kind(oracle)
    if dtype.kind == "b":
        raise Unsupported("numpy.einsum of booleans")
    return _result(tx, _record(tx, torch.einsum, equation, *[cast(tx, a.tensor, dtype) for a in arrays]), oracle)


@numpy_function(numpy.linalg.norm)
def _norm(tx: TracerContext, x: VariableTracker, ord: VariableTracker | None = None, axis: VariableTracker | None = None,
          keepdims: VariableTracker | None = None) -> VariableTracker:
    array = _array(tx, x)
    if _value(ord) is not None or isinstance(_value(axis), (tuple, list)):
        raise Unsupported("numpy.linalg.norm with ord or a tuple of axes")
    oracle = dtype_oracle(numpy.linalg.norm, [array], {"axis": axis} if axis is not None else {})
    dtype, _ = result_kind(oracle)
    return _result(tx, _record(tx, torch.linalg.vector_norm, cast(tx, array.tensor, dtype), dim=_value(axis),
                               keepdim=bool(_value(keepdims, False))), oracle)


@numpy_function(numpy.take_along_axis)
def _take_along_axis(tx: TracerContext, arr: VariableTracker, indices: VariableTracker, axis: VariableTracker) -> VariableTracker:
    values, index = _array(tx, arr), _array(tx, indices)
    if index.dtype.kind not in "iu":
        raise Unsupported("numpy.take_along_axis with indices that are not integers")
    return wrap_array(_record(tx, torch.take_along_dim, values.tensor, cast(tx, index.tensor, numpy.dtype("int64")),
                              _value(axis)))


@numpy_function(numpy.sort)
def _sort(tx: TracerContext, a: VariableTracker, axis: VariableTracker | None = ConstantVariable(-1),
          kind: VariableTracker | None = None, order: VariableTracker | None = None) -> VariableTracker:
    _not_modelled("sort", order=order)
    tensor = _array(tx, a).tensor
    dim = _value(axis)
    if dim is None:
        tensor, dim = _record(tx, torch.ravel, tensor), 0
    return wrap_array(_record(tx, torch.sort, tensor, dim=dim, stable=True).items[0])


@numpy_function(None, method="sort")
def _sort_in_place(tx: TracerContext, a: VariableTracker, axis: VariableTracker | None = ConstantVariable(-1),
                   kind: VariableTracker | None = None, order: VariableTracker | None = None) -> VariableTracker:
    array = writable(_array(tx, a))
    if array.scalar:
        raise Unsupported("sorting a NumPy scalar")
    values = _sort(tx, array, axis, kind, order)
    _record(tx, "copy_", array.tensor, values.tensor)  # type: ignore[attr-defined]
    return ConstantVariable(None)


@numpy_function(numpy.argsort, method="argsort")
def _argsort(tx: TracerContext, a: VariableTracker, axis: VariableTracker | None = ConstantVariable(-1),
             kind: VariableTracker | None = None, order: VariableTracker | None = None, **rest: VariableTracker) -> VariableTracker:
    _not_modelled("argsort", order=order, **rest)
    if _value(kind) != "stable":
        raise Unsupported("numpy.argsort without kind='stable' (ties may come out in another order than torch's)")
    tensor = _array(tx, a).tensor
    dim = _value(axis)
    if dim is None:
        tensor, dim = _record(tx, torch.ravel, tensor), 0
    return wrap_array(_record(tx, torch.argsort, tensor, dim=dim, stable=True))


# -- ndarray methods and attributes -----------------------------------------------------------------
@numpy_function(None, method="astype")
def _astype(tx: TracerContext, a: VariableTracker, dtype: VariableTracker, order: VariableTracker | None = None,
            casting: VariableTracker | None = None, subok: VariableTracker | None = None,
            copy: VariableTracker | None = None) -> VariableTracker:
    _not_modelled("astype", order=order, casting=casting, subok=subok)
    array = _array(tx, a)
    converted = cast(tx, array.tensor, numpy.dtype(_value(dtype)))
    if converted is array.tensor:
        if _value(copy, True) is False:
            return array
        converted = _record(tx, torch.clone, converted)
    return wrap_array(converted, scalar=array.scalar)


@numpy_function(None, method="fill")
def _fill(tx: TracerContext, a: VariableTracker, value: VariableTracker) -> VariableTracker:
    array = writable(_array(tx, a))
    _record(tx, "fill_", array.tensor, _number(value))
    return ConstantVariable(None)


@numpy_function(None, method="__len__")
def _len(tx: TracerContext, a: VariableTracker) -> VariableTracker:
    array = _array(tx, a)
    if array.ndim == 0:
        raise Unsupported("TypeError: len() of unsized object")
    return array.tensor.call_method(tx, "size", [ConstantVariable(0)], {})


def _read_into_python(name: str, reason: str) -> Callable[..., VariableTracker]:
    """``a.item()`` / ``a.tolist()``: Python numbers, as the tensor's give them; numbers known only
    at run time where the trace captures them (``capture_scalar_outputs``, fullgraph), else a break."""
    def read(tx: TracerContext, a: VariableTracker, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker:
        array = _array(tx, a)
        if args or kwargs or not array.tensor.captures_scalars(tx):
            raise Unsupported(f"ndarray.{name}() {reason}", hint="the graph breaks; CPython runs it")
        return array.tensor.call_method(tx, name, [], {})
    return read


METHODS["item"] = _read_into_python("item", "reads a value into Python")
METHODS["tolist"] = _read_into_python("tolist", "reads values into Python")
for _name, _reason in (("tobytes", "reads the bytes into Python"), ("__bool__", "data-dependent control flow"),
                       ("__float__", "reads a value into Python"), ("__int__", "reads a value into Python"),
                       ("__index__", "reads a value into Python"), ("nonzero", "its size depends on the values")):
    METHODS[_name] = (lambda reason, name: lambda tx, *args, **kwargs: (_ for _ in ()).throw(
        Unsupported(f"ndarray.{name}() {reason}", hint="the graph breaks; CPython runs it")))(_reason, _name)
METHODS["__getitem__"] = lambda tx, a, index: getitem(tx, a, index)
METHODS["__setitem__"] = lambda tx, a, index, value: setitem(tx, a, index, value)
METHODS["conj"] = METHODS["conjugate"] = lambda tx, a: call_ufunc(tx, numpy.conjugate, [a], {})


def _sizes(tx: TracerContext, array: NdarrayVariable) -> VariableTracker:
    size = array.tensor.call_method(tx, "size", [], {})
    return TupleVariable(list(size.items))  # type: ignore[attr-defined]  # (a tuple, not a torch.Size)


ATTRIBUTES.update({
    "shape": _sizes,
    "ndim": lambda tx, a: ConstantVariable(a.ndim),
    "size": lambda tx, a: a.tensor.call_method(tx, "numel", [], {}),
    "dtype": lambda tx, a: ConstantVariable(a.dtype),
    "itemsize": lambda tx, a: ConstantVariable(a.dtype.itemsize),
    "nbytes": lambda tx, a: _times(tx, a.tensor.call_method(tx, "numel", [], {}), a.dtype.itemsize),
    "T": lambda tx, a: _transpose(tx, a),
    "real": lambda tx, a: a if a.dtype.kind != "c" else wrap_array(_record(tx, torch.real, a.tensor), a.scalar),
    # (of a real array: NumPy's read-only zeros)
    "imag": lambda tx, a: wrap_array(_record(tx, torch.imag, a.tensor), a.scalar) if a.dtype.kind == "c" else
    read_only(wrap_array(_record(tx, torch.zeros_like, a.tensor), a.scalar)),
    "strides": lambda tx, a: TupleVariable([_times(tx, s, a.dtype.itemsize)
                                            for s in a.tensor.call_method(tx, "stride", [], {}).items]),  # type: ignore[attr-defined]
})


def _times(tx: TracerContext, n: VariableTracker, k: int) -> VariableTracker:
    """``n * k`` of a size (a constant or a symbolic int) and a constant."""
    if isinstance(n, SymNodeVariable):
        return _record(tx, operator.mul, n, k)
    return ConstantVariable(n.as_python_constant() * k)
