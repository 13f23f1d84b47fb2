"""``torch.vmap`` (``torch.func.vmap``): functorch's batching traced into the graph, as under
torch.compile.

``torch.vmap`` itself is traced into (its body only checks its arguments and makes the
``wrapped`` closure); the call of that closure reaches ``torch._functorch.vmap.vmap_impl``,
which this module models: it does what ``vmap_impl`` and ``_flat_vmap`` do, with functorch's
C-level steps recorded as graph nodes *and* run while tracing, so that the vmapped function is
traced on BatchedTensors that wrap fake tensors and its operations record their own nodes::

    lazy_load_decompositions()
    _vmap_increment_nesting(batch_size, randomness)      # pushes vmap level L
    _add_batch_dim(x, in_dim, L)                         # one per batched input
    ... the function's operations, on batched values ...
    _remove_batch_dim(y, L, batch_size, out_dim)         # one per output
    _vmap_decrement_nesting()                            # pops level L

The level is a constant of the graph: every entry is guarded to start with no functorch
transform active (``global_state.py``), so the graph pushes the same levels each time.

What it does not model, it breaks on *before* the vmap: a graph break inside the vmapped
function (no level may stay pushed across a break), an exception raised inside it, a batched
value escaping through a side effect, ``randomness`` other than ``"error"``, ``chunk_size``,
and arguments vmap rejects (CPython then raises vmap's own error). Whatever way the trace
leaves, the level it pushed is popped.
"""

from __future__ import annotations

from typing import Any

import torch
import torch._functorch.vmap as functorch_vmap
import torch.utils._pytree as pytree
from torch._C._functorch import _vmap_decrement_nesting as _pop_level_now, is_batchedtensor, maybe_get_level
from torch._functorch import eager_transforms, predispatch

from ..context import TracerContext
from ..exc import TracedException, Unsupported
from .base import VariableTracker, as_proxy
from .builtin_functions import handler
from .constant import ConstantVariable
from .lists import TupleVariable
from .pytree import _flatten, _unflatten
from .tensor import TensorVariable, record_call

# functorch's forward-mode transforms: a jvp level pushed while tracing (functorch's C state)
# and fake tensors do not mix (vmap's model runs its C steps for real; jvp's would need the
# same modelling). The graph breaks before any of them runs; CPython runs the transform.
# (torch.compile captures them in its graph.) Reached as torch functions (``torch.func.jvp``
# is public) through ``torch_functions``, as Python functions through this handler.
FORWARD_AD = frozenset(getattr(eager_transforms, name) for name in (
    "jvp", "_jvp_with_argnums", "jacfwd", "hessian", "linearize", "jvp_increment_nesting", "enter_jvp_nesting")
    if hasattr(eager_transforms, name))


@handler(*FORWARD_AD)
def forward_ad_call(tx: TracerContext, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker:
    raise Unsupported("a functorch forward-mode transform (torch.func.jvp, jacfwd, hessian, linearize) "
                      "inside a compiled function", hint="the graph breaks; CPython runs the transform")


# Public functions of torch's that are traced into rather than recorded as one node.
TRACED_INTO = frozenset({torch.vmap})
# Arguments vmap rejects: the graph breaks before it, and CPython raises vmap's own error.
_EAGER_RAISES = "vmap raises; CPython raises it"


@handler(functorch_vmap.vmap_impl)
def _vmap_impl(tx: TracerContext, func: VariableTracker, in_dims: VariableTracker, out_dims: VariableTracker,
               randomness: VariableTracker, chunk_size: VariableTracker, *args: VariableTracker,
               **kwargs: VariableTracker) -> VariableTracker:
    in_dims_value, out_dims_value = _constant(in_dims, "in_dims"), _constant(out_dims, "out_dims")
    if _constant(randomness, "randomness") != "error" or _constant(chunk_size, "chunk_size") is not None:
        raise Unsupported("torch.vmap with randomness other than 'error' or with a chunk_size")
    _check_out_dims(out_dims_value)
    flat_args, spec = _flatten(tx, TupleVariable(list(args)), None)
    flat_in_dims = _flat_in_dims(in_dims_value, flat_args, spec)
    batch_size = _batch_size(tx, flat_in_dims, flat_args)
    record_call(tx, "call_function", predispatch.lazy_load_decompositions, [], {})
    level = _push_level(tx, batch_size)
    try:
        outputs, batched = _call_batched(tx, func, flat_args, flat_in_dims, spec, level, kwargs)
        result = _unwrap_outputs(tx, outputs, out_dims_value, level, batch_size, batched)
    except BaseException:
        _pop_level_now()  # (the trace is abandoned: the graph's nodes do not matter any more)
        raise
    tx.trace.graph.create_call("call_function", predispatch._vmap_decrement_nesting, (), {})
    _check_no_escape(tx, level)
    return result


def _constant(var: VariableTracker, what: str) -> Any:
    if not var.is_python_constant():
        raise Unsupported(f"torch.vmap with {what} not known while tracing")
    return var.as_python_constant()


def _check_out_dims(out_dims: Any) -> None:
    """``out_dims``: an int, or a pytree of ints and Nones (else vmap raises)."""
    if not isinstance(out_dims, int) and not all(d is None or isinstance(d, int) for d in pytree.tree_leaves(out_dims)):
        raise Unsupported(f"torch.vmap with out_dims={out_dims!r}", hint=_EAGER_RAISES)


def _flat_in_dims(in_dims: Any, flat_args: list[VariableTracker], spec: Any) -> list[int | None]:
    """One batch dimension (or None) per leaf of the arguments, normalised, as
    ``_process_batched_inputs`` checks them; anything it would reject breaks (it raises)."""
    rejected = Unsupported(f"torch.vmap's in_dims={in_dims!r} do not fit its inputs", hint=_EAGER_RAISES)
    if not isinstance(in_dims, (int, tuple)) or not flat_args:
        raise rejected
    flat = pytree._broadcast_to_and_flatten(in_dims, spec)
    if flat is None:
        raise rejected
    result: list[int | None] = []
    for arg, in_dim in zip(flat_args, flat):
        if in_dim is None:
            result.append(None)
            continue
        if not isinstance(in_dim, int) or not isinstance(arg, TensorVariable):
            raise rejected
        ndim = arg.example.dim()
        if not -ndim <= in_dim < ndim:
            raise rejected
        result.append(in_dim % ndim)
    return result


def _batch_size(tx: TracerContext, flat_in_dims: list[int | None], flat_args: list[VariableTracker]) -> VariableTracker:
    """The size of the mapped dimension, as ``_validate_and_get_batch_size`` reads it: a
    constant, or a symbolic size (its equality with the other inputs' becomes a shape guard)."""
    mapped = [(arg, in_dim) for arg, in_dim in zip(flat_args, flat_in_dims) if in_dim is not None]
    if not mapped:
        raise Unsupported("torch.vmap with no input to map over", hint=_EAGER_RAISES)
    sizes = [arg.example.size(in_dim) for arg, in_dim in mapped]
    if any(size != sizes[0] for size in sizes):
        raise Unsupported("torch.vmap over inputs of different sizes", hint=_EAGER_RAISES)
    arg, in_dim = mapped[0]
    return arg.call_method(tx, "size", [ConstantVariable(in_dim)], {})


def _push_level(tx: TracerContext, batch_size: VariableTracker) -> int:
    """Record ``_vmap_increment_nesting`` and run it: the new level, pushed for real."""
    args = (as_proxy(batch_size), "error")
    _, level = tx.trace.graph.create_call("call_function", predispatch._vmap_increment_nesting, args, {})
    return level


def _call_batched(tx: TracerContext, func: VariableTracker, flat_args: list[VariableTracker], flat_in_dims: list[int | None],
                  spec: Any, level: int, kwargs: dict[str, VariableTracker]) -> tuple[VariableTracker, dict[int, Any]]:
    """``func`` traced on the batched arguments, and each batched argument's input (by the
    batched tracker's id). A break or an exception inside it breaks the graph before the vmap:
    CPython runs it all (no level stays pushed across a break)."""
    batched = [arg if in_dim is None else
               record_call(tx, "call_function", predispatch._add_batch_dim,
                           [arg, ConstantVariable(in_dim), ConstantVariable(level)], {})
               for arg, in_dim in zip(flat_args, flat_in_dims)]
    inputs = {id(b): arg for b, arg, in_dim in zip(batched, flat_args, flat_in_dims) if in_dim is not None}
    try:
        return func.call_function(tx, _unflatten(tx, batched, spec).unpack(tx), kwargs), inputs
    except (Unsupported, TracedException) as e:
        reason = e.reason if isinstance(e, Unsupported) else f"{e.exception.describe()} is raised"
        raise Unsupported(f"inside a function torch.vmap maps: {reason}",
                          hint="the graph breaks before the vmap; CPython runs it") from e


def _unwrap_outputs(tx: TracerContext, outputs: VariableTracker, out_dims: Any, level: int,
                    batch_size: VariableTracker, inputs: dict[int, Any]) -> VariableTracker:
    """Each output with the batch dimension moved to its out_dim, as ``_unwrap_batched`` does.
    An output that is a batched input itself, its batch dimension where it was, unwraps to that
    input tensor itself (``vmap(Tensor.sin_)(x) is x``), as functorch's ``_remove_batch_dim``
    hands back the tensor it wraps."""
    flat_outputs, spec = _flatten(tx, outputs, None)
    if isinstance(outputs, TensorVariable):
        flat_out_dims = list(out_dims) if isinstance(out_dims, tuple) and len(out_dims) == 1 else [out_dims]
        if isinstance(flat_out_dims[0], tuple):
            flat_out_dims = None
    else:
        flat_out_dims = pytree._broadcast_to_and_flatten(out_dims, spec)
    if flat_out_dims is None:
        raise Unsupported(f"torch.vmap's out_dims={out_dims!r} do not fit its outputs", hint=_EAGER_RAISES)
    unwrapped = []
    for output, out_dim in zip(flat_outputs, flat_out_dims):
        if out_dim is None:
            if isinstance(output, TensorVariable) and is_batchedtensor(output.example):
                raise Unsupported("torch.vmap: a batched output with out_dims None", hint=_EAGER_RAISES)
            unwrapped.append(output)
        elif not isinstance(output, TensorVariable):
            raise Unsupported(f"torch.vmap of a function returning {output.describe()}", hint=_EAGER_RAISES)
        else:
            result = record_call(tx, "call_function", predispatch._remove_batch_dim,
                                 [output, ConstantVariable(level), batch_size, ConstantVariable(out_dim)], {})
            original = inputs.get(id(output))
            if original is not None and _same_view(result.example, original.example):
                result = original  # (the node left unused is dead code)
            unwrapped.append(result)
    return _unflatten(tx, unwrapped, spec)


def _same_view(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.size() == b.size() and a.stride() == b.stride() and a.storage_offset() == b.storage_offset()


def _level_of(var: TensorVariable) -> int:
    """The innermost vmap level that batches this tensor (-1 for none)."""
    level = maybe_get_level(var.example)
    return -1 if level is None else level


def _check_no_escape(tx: TracerContext, level: int) -> None:
    """A batched value the function stored outside (a list, an attribute, a cell) outlives its
    level: eager keeps a dead BatchedTensor there, which the trace cannot hold."""
    todo = list(tx.trace.side_effects.values())
    for frame in tx.trace.translators:
        if not frame.done:
            todo += [*frame.stack, *frame.locals.values(), *frame.cells.values()]
    seen: set[int] = set()
    while todo:
        var = todo.pop()
        if id(var) in seen:
            continue
        seen.add(id(var))
        if isinstance(var, TensorVariable) and _level_of(var) >= level:
            raise Unsupported("a function torch.vmap maps stored a batched tensor outside it")
        todo += var.subvalues()
