"""TensorVariable: attributes read at trace time, tuple-returning ops, torch dtype/device constants."""

import pytest
import torch

import symexec

from helpers import assert_same_graphs_as_dynamo, check, dynamo_graphs, symexec_graphs


def _t(*shape):
    return torch.randn(*shape)


# --- attributes --------------------------------------------------------------------------------------


def test_shape_and_size():
    def fn(x):
        return x.shape, x.size(), x.shape[0], x.size(-1), x.shape == (2, 3)

    check(fn, _t(2, 3), captured=False)


def test_shape_used_in_arithmetic():
    def fn(a, b):
        return a.shape[0] * a * b

    check(fn, _t(3, 2), _t(3, 2))


def test_shape_unpacked():
    def fn(x):
        n, m = x.shape
        return x.view(m, n), n * m

    check(fn, _t(2, 3))


def test_dtype_device_ndim():
    def fn(x):
        return x.dtype, x.device, x.ndim, x.dim(), x.is_floating_point(), x.is_cuda

    check(fn, _t(2), captured=False)


def test_dtype_of_int_tensor():
    def fn(x):
        return x.dtype, x.dtype == torch.int64, x.dtype.is_floating_point

    check(fn, torch.tensor([1, 2]), captured=False)


def test_transpose_attributes():
    def fn(x):
        return x.T, x.mT, x.T.shape

    check(fn, _t(2, 3))


def test_requires_grad_and_is_leaf():
    def fn(x, w):
        y = x * w
        return x.requires_grad, w.requires_grad, y.requires_grad, w.is_leaf, y.is_leaf

    check(fn, _t(2), torch.randn(2, requires_grad=True))


def test_grad_attribute_none():
    def fn(x):
        return x.grad is None, x + 1

    check(fn, _t(2))


def test_data_attribute():
    def fn(x):
        return x.data * 2

    check(fn, _t(3))


def test_real_and_itemsize():
    def fn(x):
        return x.real + 1, x.itemsize, x.element_size()

    check(fn, _t(3))


def test_attributes_of_intermediate():
    def fn(x):
        y = x.unsqueeze(0).expand(4, -1)
        return y.shape, y.stride(), y.is_contiguous(), y.contiguous().stride()

    check(fn, _t(3))


def test_layout_and_names():
    def fn(x):
        return x.layout, x.is_sparse, x + 1

    check(fn, _t(2))


# --- ops that return tuples -----------------------------------------------------------------------------


def test_max_dim_namedtuple():
    def fn(x):
        r = x.max(dim=0)
        return r.values, r.indices, r[0], r[1]

    check(fn, _t(3, 2))


def test_max_dim_unpacked_and_returned_whole():
    def fn(x):
        values, indices = torch.max(x, 1)
        return values * 2, indices, x.min(dim=1)

    check(fn, _t(3, 4))


def test_sort_and_topk():
    def fn(x):
        s = x.sort(descending=True)
        t = torch.topk(x, 2)
        return s.values, s.indices, t.values + 1, t.indices

    check(fn, torch.tensor([3.0, 1.0, 2.0, 5.0]))


def test_chunk_and_split():
    def fn(x):
        a, b = torch.chunk(x, 2)
        c = x.split(1, dim=1)
        return a + b, len(c), c[-1]

    check(fn, _t(4, 3))


def test_chunk_in_loop():
    def fn(x):
        out = []
        for part in x.chunk(3, dim=0):
            out.append(part.sum())
        return torch.stack(out)

    check(fn, _t(6, 2))


def test_unbind():
    def fn(x):
        rows = x.unbind(0)
        return rows[0] - rows[1], len(rows)

    check(fn, _t(2, 3))


def test_var_mean_tuple():
    def fn(x):
        var, mean = torch.var_mean(x, dim=0)
        return var, mean

    check(fn, _t(4, 2))


def test_aminmax_named_fields():
    def fn(x):
        r = torch.aminmax(x)
        return r.min, r.max

    check(fn, _t(5))


# --- dtype, device and other torch constants -----------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.bool, torch.float16])
def test_dtype_constant_argument(dtype):
    def fn(x, dtype):
        return x.to(dtype), dtype, x.dtype == dtype

    check(fn, _t(3), dtype)


def test_dtype_attributes():
    def fn(x):
        d = torch.float16
        return x.to(d), d.is_floating_point, d.itemsize, torch.float32 is x.dtype

    check(fn, _t(2))


def test_finfo_iinfo_constants():
    def fn(x):
        return x.clamp(min=torch.finfo(x.dtype).min), torch.iinfo(torch.int8).max

    check(fn, _t(2))


def test_device_constant():
    def fn(x):
        return x.to(torch.device("cpu")), x.device.type, x.device == torch.device("cpu")

    check(fn, _t(2))


def test_torch_size_constant():
    def fn(x):
        s = torch.Size([3, 2])
        return x.reshape(s), s.numel(), x.new_zeros(s)

    check(fn, _t(6))


def test_get_default_dtype():
    def fn(x):
        return torch.zeros(2, dtype=torch.get_default_dtype()) + x

    check(fn, _t(2))


def test_is_tensor_and_is_floating_point():
    def fn(x, n):
        return torch.is_tensor(x), torch.is_tensor(n), torch.is_floating_point(x)

    check(fn, _t(2), 3, captured=False)


# --- fresh tensors made inside the function ----------------------------------------------------------


def test_tensor_created_from_python_values():
    def fn(x, n):
        t = torch.tensor([n, n + 1], dtype=torch.float32)
        return x + t

    check(fn, _t(2), 3)


def test_random_with_manual_seed():
    def fn(x):
        torch.manual_seed(1)
        return x + torch.rand(2)

    check(fn, _t(2))


def test_parameter_input():
    def fn(p, x):
        return (p * x).sum(), isinstance(p, torch.nn.Parameter), p.requires_grad

    check(fn, torch.nn.Parameter(_t(3)), _t(3))


def test_op_keyword_arguments_named_by_python_keywords():
    # x.random_(**{"from": a, "to": b}): graph code cannot spell `from=`; the arguments go by
    # position (PyTorch's test_repros test_tensor_random / test_tensor_uniform: a SyntaxError)
    def fn(x, params):
        ints = x.clone().random_(**params)
        floats = x.clone().uniform_(**params)
        return ints.dtype, ((ints >= -10) & (ints < 10)).all(), ((floats >= -10) & (floats <= 10)).all()

    check(fn, torch.zeros(4, 5), {"from": -10, "to": 10})
    _, ours = symexec_graphs(fn, torch.zeros(4, 5), {"from": -10, "to": 10})
    _, theirs = dynamo_graphs(fn, torch.zeros(4, 5), {"from": -10, "to": 10})
    assert ours.graph_count <= theirs.graph_count  # one graph; torch.compile breaks around the calls


def test_arange_between_tensor_values():
    # torch.arange(t0, t1) of 0-d tensors: a size computed from two tensor values, which torch's
    # fake tensors cannot bind to a symbol (PyTorch's test_repros test_do_paste_mask: an
    # internal error); the graph breaks there
    def fn(boxes):
        x0, y0 = torch.clamp(boxes.min(dim=0).values.floor()[:2] - 1, min=0).to(dtype=torch.int32)
        y1 = torch.clamp(boxes[:, 3].max().ceil() + 1, max=20).to(dtype=torch.int32)
        return torch.arange(y0, y1, dtype=torch.float32) + 0.5, x0

    boxes = torch.tensor([[1.0, 2.0, 10.0, 12.0], [3.0, 1.0, 8.0, 9.0]])
    check(fn, boxes)
    _, ours = symexec_graphs(fn, boxes)
    _, theirs = dynamo_graphs(fn, boxes)
    assert ours.graph_count <= theirs.graph_count


def test_python_number_types_as_dtypes():
    # (the class bool as an argument of a graph operation broke the graph) torch's parser reads
    # bool/int/float/complex as torch.bool/int64/float64/complex128
    def fn(x):
        return ((x * 5).to(bool).to(float).to(int) + 8, torch.zeros(2, dtype=float), x.sum(dtype=int),
                x.new_ones(2, dtype=bool), x.to(x.device, complex))

    check(fn, _t(5))
    (_, ours), (_, theirs) = symexec_graphs(fn, _t(5)), dynamo_graphs(fn, _t(5))
    assert ours.graph_count == theirs.graph_count == 1


def test_type_with_a_python_type_is_torchs_error():
    def fn(x):
        return x.type(float)

    check(fn, _t(2), expect_traced=False)


def test_type_with_a_legacy_tensor_class():
    # (the class HalfTensor as an argument of a graph operation broke the graph)
    def fn(a, b):
        m = a.type(torch.HalfTensor)
        return b.type(m.type()), a.type(torch.FloatTensor) is a, m, a.type(torch.LongTensor).type()

    check(fn, _t(3), _t(3))
    (_, ours), (_, theirs) = symexec_graphs(fn, _t(3), _t(3)), dynamo_graphs(fn, _t(3), _t(3))
    assert ours.graph_count == theirs.graph_count == 1


def test_legacy_tensor_class_constructed_from_data():
    # torch.LongTensor([1, 2]) broke the graph ("constructing torch's LongTensor"); it is the data
    # in the class's dtype on the CPU (values truncated as torch.tensor(..., dtype) truncates them)
    def fn(x, n):
        return x + torch.LongTensor([1, 2.7, -1.5]), torch.FloatTensor((n, 2)), torch.DoubleTensor([[1], [2]])

    check(fn, torch.ones(3, dtype=torch.long), 3)
    assert symexec.explain(fn, torch.ones(3, dtype=torch.long), 3).graph_break_count == 0
    # sizes (an uninitialised tensor) still break
    check(lambda x: torch.FloatTensor(2, 3).shape, _t(1), expect_traced=False, captured=False)


@pytest.mark.parametrize("fn, args", [
    (lambda a, b: torch.tensor([a, b]), (torch.tensor(1.5), torch.tensor(2.5))),
    (lambda a, b: torch.tensor([a, 1.5, b]), (torch.tensor(3, dtype=torch.int32), torch.tensor(True))),
    (lambda a, b: torch.tensor([[a], [b]], dtype=torch.float64), (torch.tensor(1.5), torch.tensor(2.5))),
    (lambda a, b: torch.as_tensor((a, b, 3)), (torch.tensor(1), torch.tensor(2))),
    (lambda a, b: torch.tensor([a, b]), (torch.ones(2), torch.ones(2))),  # (eager's ValueError)
], ids=["floats", "int32_float_bool", "nested_dtype", "as_tensor", "not_scalars"])
def test_tensor_of_a_list_of_tensors(fn, args):
    # it failed on fake tensors ("data is not allocated yet") and broke the graph: the values are
    # read as torch reads them, in the dtype torch infers for these kinds (asked of torch)
    check(fn, *args, expect_traced=False)
    if args[0].dim() == 0:
        assert symexec.explain(fn, *args).graph_break_count == 0


def test_tensor_of_numpy_scalars_and_a_legacy_class():
    np = pytest.importorskip("numpy")

    def fn():
        x = np.array([1, 2, 3, 4, 5, 6], dtype=np.int64)
        y = [x[0], x[2], x[4]]
        return torch.LongTensor(y), torch.tensor([x[1], np.float32(2)])

    check(fn)
    assert symexec.explain(fn)().graph_break_count == 0


def test_tensor_of_tensors_that_require_grad_breaks():
    # eager warns (once per process) reading a tensor that requires grad into Python
    check(lambda r: torch.tensor([r, r]), torch.randn((), requires_grad=True), expect_traced=False)


def _mv_into(out, m, v):
    torch.mv(m, v, out=out)
    return out


def _mv_into_new(m, v):
    out = torch.empty(0)
    torch.mv(m, v, out=out)
    return out * 2


def test_out_argument_resizing_an_input_runs_in_cpython():
    # (AOTAutograd's graph cannot resize its input: the op raised a size mismatch instead)
    check(_mv_into, torch.empty(0), torch.randn(3, 3), torch.randn(3), backend="aot_eager", captured=False)
    assert_same_graphs_as_dynamo(_mv_into, torch.empty(0), torch.randn(3, 3), torch.randn(3))


def test_out_argument_of_the_right_size_or_made_inside_stays_in_the_graph():
    check(_mv_into, torch.empty(3), torch.randn(3, 3), torch.randn(3), backend="aot_eager")
    check(_mv_into_new, torch.randn(3, 3), torch.randn(3), backend="aot_eager")
    assert_same_graphs_as_dynamo(_mv_into, torch.empty(3), torch.randn(3, 3), torch.randn(3))
