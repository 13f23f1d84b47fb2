"""Reading values out of tensors: ``item()`` and ``tolist()`` as numbers known only at run time
(unbacked symbols, with ``capture_scalar_outputs`` or under ``fullgraph``) and the checks on
them, compared with eager and with torch.compile."""

import pytest
import torch
import torch._dynamo

import symexec
from helpers import assert_same, assert_same_graphs_as_dynamo, check


@pytest.fixture
def capture(monkeypatch):
    monkeypatch.setattr(symexec.config, "capture_scalar_outputs", True)
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        yield


def _eager_raises(fn, *args):
    with pytest.raises(RuntimeError):
        fn(*args)


def test_a_check_on_an_item_is_checked_when_the_graph_runs(capture):
    # torch._check(z == 3) made the ShapeEnv replace z by 3: without the check in the graph a
    # later call with 4 returned x + 4 where eager raises.
    def fn(x, y):
        z = y.item()
        torch._check(z == 3)
        return x + z

    compiled = check(fn, torch.randn(4), torch.tensor([3]))
    _eager_raises(fn, torch.randn(4), torch.tensor([4]))
    with pytest.raises(RuntimeError):
        compiled(torch.randn(4), torch.tensor([4]))


def test_a_size_from_an_item_is_checked_when_the_graph_runs(capture):
    def fn(x, n):
        k = n.item()
        torch._check(k >= 2)
        torch._check(k <= x.shape[0])
        return x[:k] * 2, torch.zeros(k)

    compiled = check(fn, torch.randn(5), torch.tensor(3))
    assert_same(fn(torch.randn(5).zero_(), torch.tensor(4)), compiled(torch.randn(5).zero_(), torch.tensor(4)))
    _eager_raises(fn, torch.randn(5), torch.tensor(1))
    with pytest.raises(RuntimeError):
        compiled(torch.randn(5), torch.tensor(1))


def test_tolist_of_an_integer_tensor_element_by_element(capture):
    def fn(x):
        out = []
        for i in x.tolist():
            out.append(i * 4)
        return out

    assert_same_graphs_as_dynamo(fn, torch.tensor([2, 1]))
    assert_same_graphs_as_dynamo(fn, torch.tensor([[2, 1], [3, 4], [5, 6]]))
    check(fn, torch.tensor([[[2, 1], [2, 1]], [[2, 1], [2, 1]]]))
    check(fn, torch.tensor(42))


def test_check_is_size_stays_in_the_graph(capture):
    # torch._check_is_size is a node, as under torch.compile (inlined, its deprecation
    # warning broke the graph)
    def fn(x):
        u = x.sum().item()
        torch._check_is_size(u)
        return torch.arange(u, dtype=torch.float32) * 2

    check(fn, torch.tensor([1, 2, 3]))
    ours, _ = assert_same_graphs_as_dynamo(fn, torch.tensor([1, 2, 3]))
    assert ours.graph_count == 1


def test_fullgraph_captures_item_and_tolist():
    # Without capture_scalar_outputs torch.compile captures them under fullgraph=True rather
    # than fail; so does symexec.
    def fn(x, y):
        a, b = y.tolist()
        return x * x.sum().item() + a * b

    args = (torch.randn(3), torch.tensor([2, 5]))
    compiled = symexec.compile(fn, backend="eager", fullgraph=True)
    assert_same(fn(*args), compiled(*args))
    other = (torch.randn(3), torch.tensor([-1, 7]))
    assert_same(fn(*other), compiled(*other))
    assert len(symexec.cache_entries(compiled)) == 1


def test_item_and_tolist_break_without_the_option():
    def fn(x, y):
        s = y.tolist()
        return x * x.sum().item() + s[0]

    args = (torch.randn(3), torch.tensor([2, 5]))
    check(fn, *args)
    ours, _ = assert_same_graphs_as_dynamo(fn, *args)
    assert ours.graph_count == 2  # (none before tolist(), which reads an input)


# --- tensor.data -------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_data_read_is_a_node(backend):
    # (it broke the graph) the tensor without its autograd history, sharing its memory: a
    # write through it changes the input
    def fn(x, y):
        z = x.data
        z.mul_(2)
        return x[y.data] + 1, z.requires_grad, z.shape

    x = torch.rand(8, requires_grad=True)
    check(fn, x, torch.ones(8, dtype=torch.int64), backend=backend)
    ours, _ = assert_same_graphs_as_dynamo(fn, x, torch.ones(8, dtype=torch.int64))
    assert ours.graph_count == 1


def test_data_of_a_parameter_read_and_returned():
    def fn(m, x):
        w = m.weight.data
        return x @ w.t(), w

    check(fn, torch.nn.Linear(3, 2), torch.randn(4, 3))


def _set_data(x, y):
    z = x
    x.data = y
    y.data = torch.zeros([0])
    return x * 2, x is z, x._version, y._version, x.requires_grad, x.shape


def test_data_assigned_on_inputs():
    # (it broke the graph) x takes y's memory and metadata and keeps its autograd identity; no
    # version counter moves. (AOTAutograd backends do not keep that: versions move, and
    # symexec's aot_eager, which does not keep inference graphs' input mutations, refuses the
    # set_ of an input, as torch's AOTAutograd does under torch.compile.)
    check(_set_data, torch.ones(6), torch.arange(6.0))
    check(_set_data, torch.ones(6, requires_grad=True), torch.arange(4.0, requires_grad=True))
    ours, _ = assert_same_graphs_as_dynamo(_set_data, torch.ones(6), torch.arange(6.0))
    assert ours.graph_count == 1


def test_data_assigned_then_backward_through_the_input():
    def fn(x, y):
        z = x.sin()  # saved for backward: .data = does not count as a change of x
        x.data = y
        x.add_(1) if not x.requires_grad else None
        return z

    def run(f):
        x, y = torch.ones(3, requires_grad=True), torch.full((3,), 2.0)
        z = f(x, y)
        z.sum().backward()
        return z, x.grad, x._version, x

    compiled = symexec.compile(fn, backend="eager")
    assert_same(run(fn), run(compiled))


def test_data_assigned_where_torch_changes_the_dtype_breaks():
    def fn(x, y, w):
        w.data = torch.ones(2)  # a tensor of the trace: breaks
        x.data = y  # another dtype: breaks
        return x + 1, x.dtype

    check(fn, torch.ones(3), torch.ones(4, dtype=torch.float64), torch.zeros(5))


# --- tensor.grad -------------------------------------------------------------------------------


def test_grad_of_a_tensor_made_in_the_trace_is_none():
    # (it broke the graph) only backward() fills it, and that breaks
    def fn(a, b):
        made = torch.ones(2, 2)
        c = a + made
        return [made.grad, c + 1, b.grad]

    b = torch.ones(2, 2)
    b.grad = torch.full((2, 2), 7.0)
    check(fn, torch.ones(2, 2, requires_grad=True), b)
    ours, _ = assert_same_graphs_as_dynamo(fn, torch.ones(2, 2, requires_grad=True), b)
    assert ours.graph_count == 1


def test_grad_of_an_input_returned_by_an_operation_is_read():
    # torch.relu_(x) returns x itself: its grad is the input's, not None
    def fn(x):
        y = torch.relu_(x)
        return y.grad, y._grad

    x = torch.ones(3)
    x.grad = torch.full((3,), 2.0)
    check(fn, x)


def test_requires_grad_set_to_what_it_is():
    # (torch.testing.make_tensor sets it on the tensor it made: it broke the graph) the same
    # flag on a leaf changes nothing; a change, or any set on a non-leaf (torch's error), breaks
    def fn(x, flag):
        a = torch.empty(2, 3).uniform_(-1, 1)
        a.requires_grad = False
        x.requires_grad = True
        y = x * 2
        if flag:
            y.requires_grad = True
        return a.requires_grad, y

    check(fn, torch.ones(3, requires_grad=True), False)
    check(fn, torch.ones(3, requires_grad=True), True, expect_traced=False)
    check(fn, torch.ones(3), False, expect_traced=False)


# --- x.untyped_storage() ----------------------------------------------------------------------


def test_storage_size_of_an_input_is_read_and_guarded():
    # (an operation returned a UntypedStorage: it broke the graph) FSDP's _same_storage_size; a
    # view of a larger tensor has the same tensor guard and another storage size
    def fn(x):
        n = x.untyped_storage().size() // x.element_size()
        return x + n, x.untyped_storage().nbytes()

    check(fn, torch.zeros(100))
    compiled = symexec.compile(fn, backend="eager")
    base = torch.zeros(200)
    for x in (torch.zeros(100), base[:100], torch.zeros(100)):  # (the helpers' copies are no views)
        assert_same(fn(x), compiled(x))
    assert len(symexec.cache_entries(compiled)) == 2


def test_storage_kept_or_resized_in_the_trace_breaks():
    def kept(x):
        y = torch.sin(x + 1)
        storage = x.untyped_storage()
        return torch.cos(y), storage is x.untyped_storage(), storage.size()

    check(kept, torch.randn(10), expect_traced=False)  # (runs as written: a storage is not rebuilt at a break)

    def grown(x):
        x.resize_(20)
        x.zero_()  # (resize_ leaves the new memory as it was)
        return x.untyped_storage().nbytes()

    check(grown, torch.randn(10), expect_traced=False)  # (runs as written: the storage grew in the trace)


def test_storage_identity_breaks():
    # two views share one storage: `is` between storages cannot be told from the tensors
    def fn(x, y):
        return x + 1, x.untyped_storage() is y.untyped_storage(), x.untyped_storage() == y.untyped_storage()

    base = torch.zeros(6)
    for args in ((torch.zeros(3), torch.zeros(3)), (base[:3], base[3:])):  # (the helpers' copies are no views)
        assert_same(fn(*args), symexec.compile(fn, backend="eager")(*args))


def test_class_of_a_tensor_and_its_name_in_an_f_string():
    # (x.__class__ was a bound method of the tensor) the tensor's exact type, pinned by its guard
    def fn(x):
        tmp = f"{x.__class__.__name__} foo"
        if tmp.startswith("Tensor"):
            return x + 1, x.__class__
        return x - 1

    check(fn, torch.randn(3))
    check(fn, torch.nn.Parameter(torch.randn(3)))
    assert_same_graphs_as_dynamo(fn, torch.randn(3))
