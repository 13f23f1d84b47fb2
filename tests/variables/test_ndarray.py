"""NumPy through torch (variables/ndarray.py, numpy_functions.py): arrays traced as tensors,
NumPy's dtype rules, NumPy scalars where eager returns them, ndarray inputs guarded as tensors,
aliasing between ``t.numpy()`` / ``torch.from_numpy`` and the tensor, and clean breaks for what
is not translated. Each case runs eagerly and compiled (``check``) and compares exactly: type
(a numpy.float64 is not a 0-d array), dtype, shape, values, the arguments afterwards."""

import operator

import numpy as np
import pytest
import torch

import symexec
from symexec.variables.ndarray import UFUNCS
from tests.helpers import assert_same, check, copy_args, dynamo_graphs, symexec_graphs


def _arange(*shape, dtype=np.float64):
    values = np.arange(int(np.prod(shape))).reshape(shape) + 1
    return (values % 2 == 0) if dtype is np.bool_ else values.astype(dtype)


# -- arithmetic by NumPy's dtype rules ---------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64, np.uint8, np.bool_])
@pytest.mark.parametrize("op", [
    lambda a: a + 1, lambda a: a * 2.5, lambda a: a / 2, lambda a: 1 - a, lambda a: a ** 2,
    lambda a: -a, lambda a: abs(a), lambda a: a > 2, lambda a: a == a, lambda a: a + a.astype(np.float32),
    lambda a: np.sqrt(a), lambda a: np.maximum(a, 3), lambda a: np.exp(a * 0.1), lambda a: np.float32(2) * a,
], ids=["add", "mul_float", "truediv", "rsub", "pow", "neg", "abs", "gt", "eq", "mixed", "sqrt", "maximum", "exp",
        "np_scalar"])
def test_elementwise_dtype_rules(dtype, op):
    a = _arange(2, 3, dtype=dtype)
    try:
        op(a)
    except Exception:  # noqa: BLE001 - NumPy refuses it for this dtype: the compiled call must too
        check(op, a, expect_traced=False, captured=False)
        return
    check(op, a)


@pytest.mark.parametrize("fn", [
    lambda a: a.sum(), lambda a: np.sum(a, axis=0), lambda a: a.mean(), lambda a: np.mean(a, axis=1, keepdims=True),
    lambda a: a.max(), lambda a: np.min(a, axis=0), lambda a: a.argmax(), lambda a: np.argmin(a, axis=1),
    lambda a: a.prod(), lambda a: a.std(), lambda a: np.var(a, axis=0, ddof=1), lambda a: a.cumsum(),
    lambda a: np.cumsum(a, axis=1), lambda a: (a > 3).all(), lambda a: np.any(a > 3, axis=0),
    lambda a: a.sum(axis=(0, 1)), lambda a: a.sum(dtype=np.float32),
], ids=lambda f: None)
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
def test_reductions_give_scalars_and_numpys_dtypes(fn, dtype):
    check(fn, _arange(2, 3, dtype=dtype))


def test_integer_floor_division_breaks_where_numpy_and_torch_differ():
    # NumPy gives 0 (and warns) for an integer division by zero, torch raises: the graph breaks.
    def fn(a, b):
        return a // b + 1
    check(fn, np.array([1, 2, 3]), np.array([1, 0, 2]), expect_traced=False, captured=False)


# -- making and reshaping arrays --------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda a: np.zeros(3) + a[0], lambda a: np.ones((2, 3), dtype=np.int32) * a, lambda a: np.full((2, 3), 7) - a,
    lambda a: np.zeros_like(a) + 1, lambda a: np.ones_like(a, dtype=np.float32), lambda a: np.arange(3) * a[:, 0],
    lambda a: np.arange(0.0, 1.0, 0.25) + a[0, 0], lambda a: np.linspace(0, 1, 5) * a[1, 1],
    lambda a: np.eye(3) @ a.T, lambda a: np.array(a) + 1, lambda a: (np.asarray(a) is a, np.asarray(a) + 1, np.array(a) is a),
    lambda a: a.reshape(3, 2), lambda a: a.reshape((6,)), lambda a: np.reshape(a, (-1, 2)), lambda a: a.T,
    lambda a: np.transpose(a), lambda a: a.transpose(1, 0), lambda a: a.flatten(), lambda a: a.ravel(),
    lambda a: np.concatenate([a, a]), lambda a: np.concatenate((a, a), axis=1), lambda a: np.stack([a, a], axis=1),
    lambda a: np.vstack([a, a]), lambda a: np.hstack([a, a]), lambda a: np.expand_dims(a, 0),
    lambda a: np.squeeze(a[None]), lambda a: np.flip(a, 0), lambda a: np.roll(a, 1, 1), lambda a: np.tile(a, 2),
    lambda a: np.repeat(a, 2, axis=0), lambda a: np.tril(a), lambda a: np.swapaxes(a, 0, 1),
    lambda a: np.meshgrid(a[0], a[1]), lambda a: np.meshgrid(a, a[0], indexing="ij"), lambda a: np.where(a > 2, a, -1.5), lambda a: np.clip(a, 2, 4),
    lambda a: np.round(a / 3, 2), lambda a: a.astype(np.int32), lambda a: a.copy(), lambda a: np.copy(a),
    lambda a: a.dot(a.T), lambda a: np.matmul(a, a.T), lambda a: np.outer(a[0], a[1]),
    lambda a: np.einsum("ij,kj->ik", a, a), lambda a: np.linalg.norm(a), lambda a: np.linalg.norm(a, axis=1),
    lambda a: np.sort(-a, axis=1), lambda a: np.argsort(-a, kind="stable"), lambda a: np.isclose(a, a + 1e-9),
    lambda a: np.take_along_axis(a, np.argsort(a, axis=1, kind="stable"), axis=1),
    lambda a: (a.shape, a.ndim, a.size, a.dtype, a.itemsize, a.nbytes, a.strides, len(a), a + 1),
    lambda a: [row.sum() for row in a], lambda a: a[1], lambda a: a[1, 2], lambda a: a[:, 1:], lambda a: a[..., None],
    lambda a: a[np.array([1, 0])],
], ids=lambda f: None)
def test_functions_and_methods(fn):
    check(fn, _arange(2, 3))


# -- inputs, mutation, aliasing ------------------------------------------------------------------------------
def test_an_input_array_mutated_in_place_is_the_callers_array():
    def fn(a, b):
        a += 1
        a[0, 0] = 10
        b[1:] = a[0, 1:]
        a.fill(3) if False else None
        return a
    check(fn, _arange(2, 3), np.zeros(2))


def test_an_input_array_returned_is_the_same_object():
    def fn(a):
        return a, a * 2
    compiled = symexec.compile(fn, backend="eager")
    a = _arange(3)
    out = compiled(a)
    assert out[0] is a and np.array_equal(out[1], a * 2)


def test_tensor_numpy_shares_memory_both_ways():
    def fn(t):
        a = t.numpy()
        a *= 2  # (writes t)
        u = torch.from_numpy(a)
        u.add_(1)  # (writes a and t)
        return a, t + 0
    check(fn, torch.arange(4.0))


def test_array_inputs_are_guarded_like_tensors():
    def fn(a):
        return (a * 2).sum(axis=0)
    compiled = symexec.compile(fn, backend="eager")
    for a in (_arange(2, 3), _arange(2, 3) + 1, _arange(4, 3), _arange(2, 3, dtype=np.float32), _arange(3, 2).T):
        out = compiled(a)
        expected = fn(a)
        assert type(out) is type(expected) and out.dtype == expected.dtype and np.allclose(out, expected)
    assert len(symexec.cache_entries(compiled)) >= 3  # (shape, dtype, strides: recompiled)


def test_a_read_only_array_runs_eagerly():
    a = _arange(3)
    a.flags.writeable = False

    def fn(a):
        return a + 1
    check(fn, a, expect_traced=False, captured=False)


def test_numpy_of_a_tensor_that_requires_grad_raises_as_eager():
    def fn(t):
        return t.numpy() + 1
    check(fn, torch.ones(3, requires_grad=True), expect_traced=False, captured=False)


def test_data_dependent_branch_on_an_array_breaks():
    def fn(a):
        if a.sum() > 3:
            return a + 1
        return a - 1
    check(fn, _arange(3), expect_traced=False, captured=False)


def test_not_translated_functions_break_and_run_eagerly():
    def fn(a):
        b = a * 2
        c = np.unique(b)  # (not translated: the graph breaks, CPython runs it)
        return c + 1
    check(fn, _arange(4))


def test_item_and_tolist_break():
    def fn(a):
        return (a * 2).tolist(), a.sum().item()
    check(fn, _arange(3), expect_traced=False, captured=False)


def test_constant_numpy_calls_fold():
    def fn(x):
        n = np.prod((2, 3))
        return x.reshape(int(n)) * np.float32(np.pi)
    check(fn, torch.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("op", [
    operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.lt, operator.ge,
    operator.eq, operator.ne, operator.matmul, operator.iadd, operator.imul,
], ids=lambda op: op.__name__)
@pytest.mark.parametrize("order", ["tensor_first", "array_first"])
@pytest.mark.parametrize("dtypes", [(torch.float32, np.float32), (torch.int64, np.float32), (torch.float32, np.int32)],
                         ids=["f32_f32", "i64_f32", "f32_i32"])
def test_a_tensor_and_an_array_in_one_operator(op, order, dtypes):
    # What eager does depends on both libraries' versions (some raise, `t == a` is a bool): a break.
    def fn(t, a):
        return op(t, a) if order == "tensor_first" else op(a, t)
    t, a = torch.arange(1, 6).to(dtypes[0]), np.arange(1, 6).astype(dtypes[1])
    check(fn, t, a, expect_traced=False, captured=False)


def test_a_tensor_and_a_numpy_scalar_break():
    def fn(t, a):
        return t + a.sum(), t * a[0]
    check(fn, torch.ones(3), _arange(3), expect_traced=False, captured=False)


# -- against torch.compile, and real backends --------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda x: torch.from_numpy((np.sin(x.numpy()) ** 2 + np.cos(x.numpy()) ** 2).sum(axis=0)),
    lambda x: torch.from_numpy(np.concatenate([x.numpy(), np.zeros((1, 4), dtype=np.float32)]).T.copy()),
    lambda x: x + torch.from_numpy(np.clip(x.numpy(), -0.5, 0.5)).sum(),
], ids=["trig", "concat", "clip"])
def test_as_many_graphs_as_torch_compile(fn):
    # (op counts differ: torch.compile's NumPy layer records its own casts and views)
    x = torch.randn(3, 4)
    expected, dynamo = dynamo_graphs(fn, x)
    actual, ours = symexec_graphs(fn, x)
    assert_same(expected, actual)
    assert ours.graph_count == dynamo.graph_count == 1


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_real_backends(backend):
    def fn(a, b):
        c = np.matmul(a, b) + np.exp(-a.sum(axis=1, keepdims=True))
        a *= 0.5
        return c.mean(axis=0), np.where(c > 1, c, 0.0)
    check(fn, _arange(3, 3) / 10, _arange(3, 3) / 5, backend=backend)


def test_numpy_in_a_model_forward():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            with torch.no_grad():
                y = self.lin(x).numpy()
            z = np.tanh(y) * np.float32(2)
            return torch.from_numpy(z).sum(dim=1)
    net = Net()
    check(net, torch.randn(3, 4))
    _, ours = symexec_graphs(net, torch.randn(3, 4))
    _, dynamo = dynamo_graphs(net, torch.randn(3, 4))
    assert ours.graph_count == dynamo.graph_count == 1


def test_imag_of_a_real_array_is_read_only_zeros():
    def fn(x):
        a = x.numpy()
        return a.T, a.imag, a.real

    def writes(x):
        b = x.numpy().imag
        b += 1  # (eager: ValueError, the destination is read-only)
        return b
    check(fn, torch.randn(2, 3))
    check(writes, torch.randn(2, 3), expect_traced=False, captured=False)
    out = symexec.compile(fn, backend="eager")(torch.randn(2, 3))
    assert not out[1].flags.writeable and out[2].flags.writeable


@pytest.mark.parametrize("fn", [
    lambda x: np.ones_like(x, dtype=np.float64), lambda x: np.full_like(x, 2.4, dtype=np.dtype("float")),
    lambda x: np.array(x) * 2, lambda x: np.float32(x.numpy().sum()) + np.int8(3),
    lambda x: x + int(np.issubdtype(np.int32, np.integer)),
], ids=["ones_like_tensor", "full_like_dtype", "array_of_tensor", "scalar_types", "issubdtype"])
def test_tensors_where_numpy_converts_them_and_scalar_types(fn):
    check(fn, torch.randn(2, 3))


def test_an_int_that_changes_beside_a_narrow_array():
    # NumPy 2 raises OverflowError for uint8 + 1000: an int traced symbolically must not hide it.
    def fn(a, n):
        return a + n
    a = np.arange(3, dtype=np.uint8)
    compiled = symexec.compile(fn, backend="eager")
    assert np.array_equal(compiled(a, 1), a + 1) and np.array_equal(compiled(a, 2), a + 2)
    with pytest.raises(OverflowError):
        compiled(a, 1000)
    check(fn, np.arange(3, dtype=np.int64), 5)


@pytest.mark.parametrize("args", [(np.float64(1), np.float64(2)), (np.arange(2), np.arange(2) + 2),
                                  (np.arange(2.0), np.float32(3) * np.ones(2, dtype=np.float32))],
                         ids=["scalars", "arrays", "mixed_dtypes"])
def test_an_array_of_arrays(args):
    def fn(x, y):
        return np.array([x * 1, y * 1, [5, 6] if x.ndim else 7])
    check(fn, *args)


def test_issubdtype_folds():
    def fn(x, n):
        return np.issubdtype(type(n), np.integer) + x
    check(fn, torch.randn(4), 4096)


def test_array_sizes_become_dynamic_like_tensor_sizes():
    # A second size makes the dimension symbolic (automatic dynamic), as for a tensor input:
    # the third size reuses that entry.
    def fn(a):
        b = np.concatenate([a, a * 2]).reshape(2, -1)
        return b.mean(axis=1), b.shape, len(a)
    compiled = symexec.compile(fn, backend="eager")
    for n in (3, 5, 7, 9):
        a = _arange(n)
        assert_same(fn(a), compiled(a))
    assert len(symexec.cache_entries(compiled)) == 2


_SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.5, 0.5, 2.5, -1.0, 3.0, 1e300])
_INTS = np.array([-3, -1, 0, 1, 2, 7, 2 ** 62])


@pytest.mark.broad  # (a sweep of the translation layer over torch: the traced code is one line)
@pytest.mark.parametrize("name", sorted(UFUNCS))
def test_every_translated_ufunc_on_special_values(name):
    # nan, infinities, -0.0, halves (rounding), huge values, integer extremes and booleans, in
    # each dtype: the dtype, the values (nan where NumPy gives nan) or the same error as eager.
    ufunc = getattr(np, name)
    for array in (_SPECIAL, _SPECIAL.astype(np.float32), _INTS, _INTS.astype(np.int32), _SPECIAL > 0):
        args = [array] if ufunc.nin == 1 else [array, array[::-1].copy()]
        with np.errstate(all="ignore"):
            check(lambda *a: ufunc(*a), *args, expect_traced=False, captured=None, calls=1)


def test_read_only_arrays_made_in_the_trace():
    # torch.from_numpy/as_tensor of a read-only array warn in eager: they run eagerly.
    def fn(x):
        a = x.numpy().imag
        return torch.tensor(a) + 1, torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(a)
    check(fn, torch.randn(3))


def test_arrays_live_across_a_graph_break_keep_their_memory():
    # After the break, `a` is rebuilt over t's memory and `v` over the input array's: writes
    # after the break reach t and the caller's array, as in eager.
    def fn(t, arr):
        a = t.numpy()
        v = arr[1:]
        s = np.float64(2.0) * a.sum()
        print("break")
        a += 1
        v *= 3
        return t, s, a is not None, arr.sum()
    check(fn, torch.arange(4.0), _arange(5))


# -- conversions, transforms, replacements, out= (PyTorch's Dynamo tests' NumPy cases) -----------------
def check_whole(fn, *args, **options):
    """``check``, and the function captured whole: under fullgraph=True it compiles and agrees."""
    check(fn, *args, **options)
    assert_same(fn(*copy_args(list(args))), symexec.compile(fn, fullgraph=True)(*copy_args(list(args))))


def test_asarray_of_a_numpy_scalar_is_a_new_0d_array():
    # np.asarray(np.float32(...)) is a 0-d array torch.from_numpy takes (it was kept a NumPy
    # scalar, and torch.from_numpy of it broke the graph as if eager raised)
    def fn(x):
        total = np.sum(np.mean(x.numpy(), 1))
        array = np.asarray(total)
        return torch.from_numpy(array), np.array(total), array.shape, type(array)
    check_whole(fn, torch.randn(3, 4))


def test_asarray_of_a_scalar_read_from_an_array_shares_no_memory():
    def fn(a):
        item = a[1]
        b = np.asarray(item)
        b += 5
        return a, b, item
    check_whole(fn, _arange(3))


@pytest.mark.parametrize("fn", [
    lambda a: np.fft.fftshift(a), lambda a: np.fft.ifftshift(a, axes=0), lambda a: np.fft.fft(a),
    lambda a: np.fft.rfft(a, 8), lambda a: np.fft.ifft(a, axis=0, norm="ortho"), lambda a: np.fft.fft2(a),
    lambda a: np.fft.fftn(a, axes=(1,)), lambda a: np.fft.irfft(np.fft.rfft(a)), lambda a: np.fft.ifft2(a, None, (0, 1)),
], ids=["fftshift", "ifftshift", "fft", "rfft_n", "ifft_ortho", "fft2", "fftn_axes", "irfft", "ifft2_positional"])
@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.float32])
def test_fft_in_numpys_dtypes(fn, dtype):
    # integers transform as float64 (torch would take float32), float32 as complex64; torch's
    # conjugated views of inverse transforms are resolved before they become arrays
    check_whole(fn, _arange(3, 4, dtype=dtype))


_NON_FINITE = np.array([np.nan, np.inf, -np.inf, 1.5, -0.0])


@pytest.mark.parametrize("fn", [
    lambda a: np.nan_to_num(a), lambda a: np.nan_to_num(a, nan=2.0, posinf=9.0, neginf=-9.0),
    lambda a: (np.nan_to_num(a, copy=False), a), lambda a: np.nan_to_num(a)[1:] is a,
], ids=["default", "replacements", "in_place", "new"])
@pytest.mark.parametrize("array", [_NON_FINITE, _NON_FINITE.astype(np.float32),
                                   (_NON_FINITE + 1j * _NON_FINITE[::-1]).astype(np.complex64), np.arange(3)],
                         ids=["float64", "float32", "complex64", "int64"])
def test_nan_to_num(fn, array):
    # complex arrays part by part (torch's nan_to_num has no complex kernel); integers unchanged
    check_whole(fn, array.copy(), captured=array.dtype.kind != "i")


def test_ufunc_into_out_returns_out():
    def fn():
        x = np.arange(5)
        out = np.empty((x.shape[0], x.shape[0]))
        result = np.sin(x, out=out)
        return result is out, result, np.add(x, 1, out=np.zeros(5, dtype=np.int64))
    check_whole(fn)


def test_ufunc_into_an_input_reads_before_it_writes():
    def fn(a):
        np.add(a[1:], a[:-1], out=a[:-1])
        return a
    check_whole(fn, _arange(6))


def test_ufunc_into_another_dtype_breaks():
    def fn(a):
        out = np.zeros(3, dtype=np.float32)
        np.sin(a, out=out)
        return out
    check(fn, _arange(3), expect_traced=False, captured=False)


def test_empty_arrays_have_the_shape_and_dtype_asked():
    def fn(a):
        e = np.empty((2, 3), dtype=np.int32)
        f = np.empty_like(a)
        e.fill(1)
        f[:] = 2
        return e, f
    check_whole(fn, _arange(4))


def test_item_and_tolist_of_arrays_under_fullgraph_are_numbers_known_at_run_time():
    # under fullgraph (or capture_scalar_outputs) as torch.compile captures them; otherwise a break
    def fn(a):
        return a.tolist(), a.sum().item(), a[0].item() + 1
    compiled = symexec.compile(fn, fullgraph=True)
    for n in (3, 5):
        assert_same(fn(_arange(n, dtype=np.int64)), compiled(_arange(n, dtype=np.int64)))
    check(fn, _arange(2, 2), expect_traced=False, captured=False)


def test_numpy_force_detaches_and_shares_memory():
    # torch's force=True: detach (and resolve conjugate/negative bits) first; the array is
    # still over the tensor's memory (a write through it is seen in the tensor)
    def fn(x):
        a = x.numpy(force=True)
        a[0] = 5.0
        return a * 2, x.detach().clone()
    check_whole(fn, torch.randn(3, requires_grad=True))
    check_whole(lambda x: x.conj().numpy(force=True) + 1, torch.randn(3, dtype=torch.complex64))
    check_whole(lambda x: x.numpy(force=False) + 1, torch.randn(3))
