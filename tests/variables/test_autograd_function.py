"""Custom ``torch.autograd.Function``s called inside compiled functions (variables/autograd.py).

Each test compares with eager: forward results, and the gradients of the sum of the outputs
with respect to every input that requires grad (autograd runs the user's real backward). Graph
and op counts are compared with torch.compile where it captures the call.
"""

import pytest
import torch
from helpers import (
    assert_same,
    assert_same_graphs_as_dynamo,
    check,
    check_sequence,
    copy_args,
    dynamo_graphs,
    symexec_graphs,
)
from torch.testing._internal.autograd_function_db import autograd_function_db

import symexec


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _tensors(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _tensors(item)]
    return []


def _outputs_and_grads(fn, args, kwargs):
    """``fn``'s result and the gradients of the sum of its differentiable outputs."""
    result = fn(*args, **kwargs)
    inputs = [t for t in _tensors((args, kwargs)) if t.requires_grad]
    outputs = [t for t in _tensors(result) if t.requires_grad]
    if not inputs or not outputs:
        return result, None
    total = sum(t.sum() for t in outputs)
    return result, torch.autograd.grad(total, inputs, allow_unused=True)


def check_grads(fn, *args, expect_graphs=None, backend="eager", dynamic=None, **kwargs):
    """Compiled and eager agree on results and gradients, on two calls (the second a cache hit)."""
    compiled = symexec.compile(fn, backend=backend, dynamic=dynamic)
    for _ in range(2):
        eager_args, eager_kwargs = copy_args((list(args), kwargs))
        compiled_args, compiled_kwargs = copy_args((list(args), kwargs))
        expected, expected_grads = _outputs_and_grads(fn, eager_args, eager_kwargs)
        actual, actual_grads = _outputs_and_grads(compiled, compiled_args, compiled_kwargs)
        assert_same(expected, actual)
        assert (expected_grads is None) == (actual_grads is None)
        if expected_grads is not None:
            for e, a in zip(expected_grads, actual_grads):
                assert (e is None) == (a is None)
                if e is not None:
                    assert_same(e, a, "grad")
    assert len(symexec.cache_entries(compiled)) >= 1
    if expect_graphs is not None:
        _, ours = symexec_graphs(fn, *args, **kwargs)
        assert ours.graph_count == expect_graphs
    return compiled


# -- Functions of every style --------------------------------------------------------------------


class SinScale(torch.autograd.Function):
    """Old style: forward(ctx, ...), saved tensors, a ctx attribute, a float argument."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x.sin() * k

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos() * ctx.k, None


class MulNew(torch.autograd.Function):
    """New style: forward(...) and setup_context, needs_input_grad in backward."""

    @staticmethod
    def forward(x, y):
        return x * y

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        gx = g * y if ctx.needs_input_grad[0] else None
        gy = g * x if ctx.needs_input_grad[1] else None
        return gx, gy


class ExpOnce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = x.exp()
        ctx.save_for_backward(out)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * out


class SortNonDiff(torch.autograd.Function):
    """Several outputs, two of them non-differentiable, a constant output too."""

    @staticmethod
    def forward(ctx, x, dim):
        values, ind = x.sort(dim)
        ctx.mark_non_differentiable(ind)
        ctx.save_for_backward(ind)
        ctx.dim = dim
        return values, ind, dim

    @staticmethod
    def backward(ctx, g, _ind, _dim):
        (ind,) = ctx.saved_tensors
        return torch.zeros_like(g).scatter(ctx.dim, ind, g), None


class Branchy(torch.autograd.Function):
    """Python control flow on needs_input_grad, None and tuple arguments."""

    @staticmethod
    def forward(ctx, x, pair, maybe):
        ctx.grad_x = ctx.needs_input_grad[0]
        a, b = pair
        out = x * a + b
        if maybe is not None:
            out = out + maybe
        return out

    @staticmethod
    def backward(ctx, g):
        return (g * 2 if ctx.grad_x else None), None, None


class Printing(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        print("in forward")
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


class ItemReading(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * x.sum().item()

    @staticmethod
    def backward(ctx, g):
        return g


class ValueBranch(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        if x.sum() > 0:
            return x * 2
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return g


LOG = []


class Logging(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        LOG.append(1)
        return x + 1

    @staticmethod
    def backward(ctx, g):
        return g


class Scaled(torch.autograd.Function):
    scale = 2.0

    @staticmethod
    def forward(ctx, x):
        return x * Scaled.scale

    @staticmethod
    def backward(ctx, g):
        return g * Scaled.scale


# -- captured, with eager's gradients ------------------------------------------------------------------


def test_old_style_saved_tensors_and_ctx_attribute():
    def fn(x):
        return SinScale.apply(x + 1, 2.0).sum()

    check_grads(fn, torch.randn(4, requires_grad=True), expect_graphs=1)
    assert_same_graphs_as_dynamo(fn, torch.randn(4, requires_grad=True))


def test_new_style_setup_context_and_needs_input_grad():
    def fn(x, y):
        return MulNew.apply(x, y).relu()

    check_grads(fn, torch.randn(3, requires_grad=True), torch.randn(3), expect_graphs=1)
    check_grads(fn, torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True), expect_graphs=1)
    assert_same_graphs_as_dynamo(fn, torch.randn(3, requires_grad=True), torch.randn(3))


def test_once_differentiable_backward():
    def fn(x):
        return ExpOnce.apply(x * 2) + 1

    check_grads(fn, torch.randn(5, requires_grad=True), expect_graphs=1)
    assert_same_graphs_as_dynamo(fn, torch.randn(5, requires_grad=True))


def test_several_outputs_non_differentiable_and_constant():
    def fn(x):
        values, ind, dim = SortNonDiff.apply(x, 1)
        return values * 2, ind, dim, ind.requires_grad

    check_grads(fn, torch.randn(3, 4, requires_grad=True), expect_graphs=1)
    assert_same_graphs_as_dynamo(fn, torch.randn(3, 4, requires_grad=True))


def test_unused_outputs_leave_no_nodes():
    def fn(x):
        return SortNonDiff.apply(x, 0)[0] + 1

    check_grads(fn, torch.randn(3, 4, requires_grad=True), expect_graphs=1)
    assert_same_graphs_as_dynamo(fn, torch.randn(3, 4, requires_grad=True))


def test_none_tuple_and_int_arguments():
    def fn(x, bias):
        return Branchy.apply(x, (3, 0.5), bias) + Branchy.apply(x, (2, 1), None)

    check_grads(fn, torch.randn(4, requires_grad=True), torch.randn(4), expect_graphs=1)
    check_grads(fn, torch.randn(4), torch.randn(4), expect_graphs=1)


def test_no_grad_and_inputs_without_grad():
    def fn(x):
        with torch.no_grad():
            y = SinScale.apply(x, 3.0)
        return y, SinScale.apply(x, 1.5)

    check_grads(fn, torch.randn(4, requires_grad=True), expect_graphs=1)
    check(fn, torch.randn(4))


def test_apply_kept_in_a_variable_and_class_attribute():
    apply = Scaled.apply

    def fn(x):
        return apply(x) + Scaled.apply(x)

    check_grads(fn, torch.randn(4, requires_grad=True), expect_graphs=1)


def test_default_arguments_of_a_new_style_forward():
    class Select(torch.autograd.Function):
        @staticmethod
        def forward(x, idx=1):
            return x[idx]

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, idx = inputs
            ctx.shape, ctx.idx = x.shape, idx

        @staticmethod
        def backward(ctx, g):
            result = g.new_zeros(ctx.shape)
            result[ctx.idx] = g
            return result, None

    def fn(x):
        return Select.apply(x) * Select.apply(x, idx=2)

    check_grads(fn, torch.randn(3, 4, requires_grad=True), expect_graphs=1)


def test_backward_of_the_graph_output_matches_eager_on_a_module():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return SinScale.apply(self.lin(x), 0.5).sum()

    torch.manual_seed(0)
    eager, compiled_net = Net(), Net()
    compiled_net.load_state_dict(eager.state_dict())
    compiled = symexec.compile(compiled_net)
    x = torch.randn(2, 4)
    eager(x).backward()
    compiled(x).backward()
    for (name, p), q in zip(eager.named_parameters(), compiled_net.parameters()):
        assert_same(p.grad, q.grad, name)


class Pow(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, n):
        ctx.n = n
        ctx.save_for_backward(x)
        return x**n

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ctx.n * x ** (ctx.n - 1), None


def test_symbolic_sizes_and_int_argument():
    def fn(x, n):
        return Pow.apply(x, n) * x.shape[0]

    for size, n in [(3, 2), (5, 3), (7, 4)]:
        check_grads(fn, torch.randn(size, requires_grad=True), n, dynamic=True, expect_graphs=1)


def test_aot_eager_backend():
    def fn(x, y):
        return SinScale.apply(x, 2.0) + MulNew.apply(x, y) + SortNonDiff.apply(x, 0)[0]

    check_grads(fn, torch.randn(4, requires_grad=True), torch.randn(4, requires_grad=True), backend="aot_eager")


def test_apply_inside_forward_is_one_node():
    class Outer(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return SinScale.apply(x, 2.0) + 1

        @staticmethod
        def backward(ctx, g):
            return g * 7

    def fn(x):
        return Outer.apply(x)

    check_grads(fn, torch.randn(3, requires_grad=True), expect_graphs=1)
    _, ours = symexec_graphs(fn, torch.randn(3, requires_grad=True))
    assert ours.op_counts() == [2]  # Outer's node and its getitem: SinScale runs inside it


# -- what cannot be traced breaks the graph, and runs eagerly ------------------------------------------


@pytest.mark.parametrize("cls", [Printing, ItemReading, ValueBranch], ids=lambda c: c.__name__)
def test_untraceable_forward_breaks_the_graph(cls):
    def fn(x):
        y = x + 1
        return cls.apply(y) * 2

    check(fn, torch.randn(4))
    check_grads(fn, torch.randn(4, requires_grad=True))
    assert symexec.explain(fn, torch.randn(4)).graph_break_count == 1


def test_fullgraph_raises_at_an_untraceable_forward():
    def fn(x):
        return Printing.apply(x) + 1

    with pytest.raises(symexec.Unsupported, match="print"):
        symexec.compile(fn, fullgraph=True)(torch.randn(3))


def test_forward_mutating_a_global_breaks_the_graph():
    def fn(x):
        return Logging.apply(x * 2)

    LOG.clear()
    check(fn, torch.randn(3, requires_grad=True))
    assert len(LOG) == 4  # two eager calls and two compiled ones, each once
    assert symexec.explain(fn, torch.randn(3, requires_grad=True)).graph_break_count == 1
    # Where autograd records nothing, forward is traced like any function: the append replayed.
    # (Each call changes the length of LOG, which the trace guards: no `check` of a cache hit.)
    LOG.clear()
    x = torch.randn(3)
    assert_same(fn(x), symexec.compile(fn)(x))
    assert LOG == [1, 1]
    assert symexec.explain(fn, torch.randn(3)).graph_break_count == 0


def test_pending_mutation_before_apply_is_not_reordered():
    class ReadsLog(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x + len(LOG)

        @staticmethod
        def backward(ctx, g):
            return g

    def fn(x):
        LOG.append(1)
        return ReadsLog.apply(x)

    compiled = symexec.compile(fn)
    x = torch.randn(3)
    for _ in range(2):  # (LOG starts empty for each run: forward must see the append)
        LOG.clear()
        expected = fn(x)
        LOG.clear()
        assert_same(expected, compiled(x))


def test_list_argument_is_not_captured():
    class TakesList(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, items):
            items.append(x)
            return x * len(items)

        @staticmethod
        def backward(ctx, g):
            return g, None

    def fn(x):
        items = []
        y = TakesList.apply(x, items)
        return y, len(items)

    check(fn, torch.randn(3))


def test_mark_dirty_runs_eagerly():
    class AddOne_(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    def fn(x):
        return AddOne_.apply(x.clone()) * 2

    check_grads(fn, torch.randn(3, requires_grad=True))


# -- guards ---------------------------------------------------------------------------------------------


def test_redefining_forward_retraces():
    class Fn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    original = Fn.__dict__["forward"]

    def fn(x):
        return Fn.apply(x)

    def replace():
        Fn.forward = staticmethod(lambda ctx, x: (x * 3, x))

    def restore():
        Fn.forward = original

    try:
        check_sequence(fn, [torch.randn(3)], replace, [torch.randn(3)], restore, [torch.randn(3)])
    finally:
        Fn.forward = original


def test_redefining_setup_context_and_backward_retraces():
    class Fn(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 2

    def fn(x):
        return Fn.apply(x)

    compiled = symexec.compile(fn)
    x = torch.randn(3, requires_grad=True)
    compiled(x).sum().backward()
    assert_same(x.grad, torch.full((3,), 2.0))

    def printing_setup(ctx, inputs, output):
        print("setup")
    old_setup, old_backward = Fn.__dict__["setup_context"], Fn.__dict__["backward"]
    try:
        Fn.setup_context = staticmethod(printing_setup)
        Fn.backward = staticmethod(lambda ctx, g: g * 5)
        # symexec captures nothing here: the redefined (printing) setup_context breaks; Fn.apply runs eagerly
        check(fn, torch.randn(3), captured=False)
        x.grad = None
        compiled(x).sum().backward()
        assert_same(x.grad, torch.full((3,), 5.0))
        assert len(symexec.cache_entries(compiled)) == 2
    finally:
        Fn.setup_context, Fn.backward = old_setup, old_backward


# -- torch's autograd.Function database ----------------------------------------------------------------


def _db_cases():
    for op in autograd_function_db:
        for i, sample in enumerate(op.sample_inputs("cpu", torch.float32, requires_grad=True)):
            yield pytest.param(op, sample, id=f"{op.name}-{i}")


# Where symexec's graph count differs from torch.compile's on the db, and why (checked, so that
# a change shows):
# - torch.compile does not trace code that lives in a torch module (its skip rules leave it to
#   eager): no graph. symexec captures the call (one graph). For NumpyExp_, whose forward goes
#   through NumPy, the call breaks the graph, and the db's lambda around it (torch's code) then
#   runs as it is in both: no graph;
# - NumpyCubeNotComposable: torch.compile traces NumPy (torch._numpy); symexec breaks at
#   ``Tensor.numpy()`` and runs the call eagerly. The other NumPy entries: no graph in either.
_DB_SYMEXEC_GRAPHS = {"SelectAutogradFunction": 1, "CubeGenVmapAutogradFunction": 1, "MulGenVmapAutogradFunction": 1,
                      "SortGenVmapAutogradFunction": 1, "SelectGenVmapAutogradFunction": 1,
                      "ScaleGradGenVmapAutogradFunction": 1, "ZeroGradientsGenVmapAutogradFunction": 1,
                      "ForwardHasDefaultArgsAutogradFunction": 1,
                      "NumpyCubeNotComposableAutogradFunction": 0}


@pytest.mark.parametrize("op, sample", list(_db_cases()))
def test_autograd_function_db(op, sample):
    def fn(*a, **k):
        return op.op(*a, **k)

    args = (sample.input, *sample.args)
    check_grads(fn, *args, **sample.kwargs)
    result, ours = symexec_graphs(fn, *args, **sample.kwargs)
    _, dynamo = dynamo_graphs(fn, *args, **sample.kwargs)
    assert ours.graph_count == _DB_SYMEXEC_GRAPHS.get(op.name, dynamo.graph_count)
    if ours.graph_count and dynamo.graph_count:
        assert ours.op_counts() == dynamo.op_counts()
    elif ours.graph_count and op.name != "NumpyExpMarkDirtyAutogradFunction":
        # the node and one getitem per tensor output, as torch.compile's graphs have
        assert ours.op_counts() == [1 + len(_tensors(result))]


# -- Where autograd records nothing: forward traced into the graph ------------------------------


class Returns(torch.autograd.Function):
    """Returns its input as it came, a new tensor and a number."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x, torch.tanh(x) * 0.5, 3

    @staticmethod
    def backward(ctx, g, h, _):
        (x,) = ctx.saved_tensors
        return g + h * 0.5 * (1 - torch.tanh(x) ** 2)


@pytest.mark.parametrize("grad_mode", [True, False], ids=["grad", "no_grad"])
def test_forward_traced_into_the_graph_when_no_input_requires_grad(grad_mode):
    def fn(x):
        a, b, n = Returns.apply(x * 2)
        return a, b * n, SinScale.apply(x, 2.0)

    with torch.set_grad_enabled(grad_mode):
        check(fn, torch.randn(4))
        _, dynamo = dynamo_graphs(fn, torch.randn(4))
        _, ours = symexec_graphs(fn, torch.randn(4))
    # As many graphs; every op of torch.compile's, and the grad-mode switches apply makes (and
    # the view it returns for an input) on top.
    assert ours.graph_count == dynamo.graph_count == 1
    assert ours.op_counts()[0] >= dynamo.op_counts()[0]
    targets = [n.target for gm in ours.graphs for n in gm.graph.nodes]
    assert torch.tanh in targets and not any("apply" in getattr(t, "__name__", "") for t in targets)
    # Under no_grad an input that requires grad still goes through the real apply.
    with torch.no_grad():
        check(fn, torch.randn(4, requires_grad=True))


def test_input_returned_by_forward_is_a_new_view_of_it():
    def fn(x):
        return x, Returns.apply(x)[0], Returns.apply(x[1:])[0]

    x = torch.randn(4)
    _, same, sliced = symexec.compile(fn)(x)
    _, eager_same, eager_sliced = fn(x)
    for out, expected in ((same, eager_same), (sliced, eager_sliced)):
        assert out is not x and (out._base is x) == (expected._base is x)
        assert_same(expected, out)


def test_forward_traced_without_grad_restores_grad_mode_at_a_break():
    def fn(x):
        return Printing.apply(x) + 1

    check(fn, torch.randn(3))
    assert torch.is_grad_enabled()
