"""symexec.disable and symexec.allow_in_graph, against eager and against torch.compile's
torch.compiler.disable / torch.compiler.allow_in_graph."""

import pytest
import torch

import symexec
from tests.helpers import CountingBackend, assert_same, check, copy_args


def _graphs(compile_fn, fn, *args):
    backend = CountingBackend()
    result = compile_fn(fn, backend=backend)(*copy_args(list(args)))
    return result, backend


def _against_dynamo(make, *args):
    """``make(marker)`` builds the function with symexec's or torch's marker; both systems
    must agree with eager and make as many graphs with as many ops."""
    import torch._dynamo

    torch._dynamo.reset()
    expected, theirs = _graphs(torch.compile, make(torch.compiler), *args)
    torch._dynamo.reset()
    actual, ours = _graphs(symexec.compile, make(symexec), *args)
    assert_same(make(symexec)(*copy_args(list(args))), actual)
    assert_same(expected, actual)
    assert ours.graph_count == theirs.graph_count
    assert ours.op_counts() == theirs.op_counts()
    return ours


def test_disabled_callee_breaks_the_graph_and_runs_eagerly():
    def make(marker):
        @marker.disable
        def log_stats(t):
            print("mean", round(float(t.mean()), 4))  # would break anyway; runs as is
            return t.numpy().sum()  # numpy: never traced

        def fn(x):
            y = x.sin() + 1
            s = log_stats(y)
            return y * 2, s

        return fn

    x = torch.randn(4)
    check(make(symexec), x)
    ours = _against_dynamo(make, x)
    assert ours.graph_count == 2


def test_disabled_function_compiled_directly_runs_as_is():
    calls = []

    def fn(x):
        calls.append(1)
        return x + 1

    compiled = symexec.compile(symexec.disable(fn))
    x = torch.randn(3)
    assert_same(fn(x), compiled(x))
    entries = symexec.cache_entries(compiled)
    assert len(entries) == 1 and "symexec.disable" in entries[0].fallback_reason
    explained = symexec.explain(symexec.disable(fn), x)
    assert explained.graph_count == 0
    assert any("symexec.disable" in r for r in explained.fallback_reasons)


def test_disabled_callee_inside_a_loop():
    def make(marker):
        @marker.disable
        def record(i, t, log):
            log.append((i, t.shape))

        def fn(x, log):
            for i in range(3):
                x = x * 2
                record(i, x, log)
            return x + 1

        return fn

    # a frame whose loop breaks runs as its code (no graph), as torch.compile skips it
    check(make(symexec), torch.randn(2), [], expect_traced=False)


def test_allow_in_graph_is_one_node():
    def make(marker):
        @marker.allow_in_graph
        def fused(a, b):
            return torch.relu(a) * b.sigmoid() + a.sum()

        def fn(x, y):
            return fused(x + 1, y) - 3

        return fn

    x, y = torch.randn(4, 3), torch.randn(4, 3)
    check(make(symexec), x, y)
    ours = _against_dynamo(make, x, y)
    assert ours.graph_count == 1
    targets = [n.target for n in ours.graphs[0].graph.nodes if n.op == "call_function"]
    assert any(getattr(t, "__name__", "") == "fused" for t in targets)


@pytest.mark.parametrize("marker", [symexec, torch.compiler], ids=["symexec", "torch"])
def test_allow_in_graph_staticmethod_read_from_its_class_is_one_node(marker):
    # Read through the class, the staticmethod's function reached no builder and was traced
    # into: its break (never run, in the graph) broke the graph (PyTorch's
    # test_staticmethod_allow_in_graph).
    class Scaling:
        factor = 3

        @staticmethod
        def inner(x):
            return torch.mul(x, Scaling.factor)

        @staticmethod
        @marker.allow_in_graph
        def outer(x):
            symexec.graph_break()  # (run with real tensors when the graph runs: a no-op there)
            return Scaling.inner(x)

    def fn(x):
        return Scaling.outer(x) + 1

    check(fn, torch.randn(2, 2))
    assert symexec.explain(fn, torch.randn(2, 2)).graph_break_count == 0


def test_allow_in_graph_given_what_a_graph_cannot_hold_is_traced_into():
    # (a frozen dataclass made in the trace: one node cannot take it, so the function is
    # traced into; asking its mark again there recursed without end: PyTorch's
    # test_frozen_dataclass_default_value)
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Pair:
        x: torch.Tensor
        y: torch.Tensor
        z: int = dataclasses.field(default=5)

    @symexec.allow_in_graph
    def combine(pair):
        return pair.x + pair.y + pair.z

    def fn(x, y):
        return combine(Pair(x, y))

    check(fn, torch.ones(2, 2), torch.ones(2, 2))
    assert symexec.explain(fn, torch.ones(2, 2), torch.ones(2, 2)).graph_break_count == 0


def test_allow_in_graph_under_explain_shows_the_call():
    @symexec.allow_in_graph
    def scale(t, k):
        return t * k

    def fn(x):
        return scale(x.cos(), 2.0)

    out = symexec.explain(fn, torch.randn(3))
    assert out.graph_count == 1 and out.graph_break_count == 0
    assert "scale" in out.graphs[0].code
    assert_same(fn(torch.ones(3)), symexec.compile(fn)(torch.ones(3)))


def test_disable_and_allow_in_graph_reject_bad_input():
    with pytest.raises(TypeError, match="symexec.disable expects a function"):
        symexec.disable(3)
    with pytest.raises(TypeError, match="symexec.allow_in_graph expects a Python function"):
        symexec.allow_in_graph("fn")


class _Logged(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    @symexec.disable
    def summary(self, t):
        return t.detach().numpy().sum()

    def forward(self, x):
        y = self.lin(x)
        return y.relu(), self.summary(y)


def test_disabled_method_of_a_module_breaks_there():
    torch.manual_seed(0)
    model = _Logged()
    x = torch.randn(2, 3)
    out = symexec.explain(model, x)
    assert [b.reason for b in out.break_reasons] == ["_Logged.summary() is marked symexec.disable"]
    assert_same(model(x), symexec.compile(model)(x))


def test_a_users_function_torch_dynamo_disables_runs_at_a_break_never_traced_into():
    # torch._dynamo.disable(fn)'s wrapper switches torch.compile's frame hook off and on: never
    # traced into (those calls would go into the graph). A user's function so marked runs as
    # plain Python at a break, as under torch.compile (torch's own functions behind the
    # wrapper, Optimizer.zero_grad, are traced through: tests/training/test_optimizers.py).
    @torch._dynamo.disable
    def side(x):
        return x * 3

    def fn(x):
        return side(x + 1) - 1

    check(fn, torch.ones(2))
    out = symexec.explain(fn, torch.ones(2))
    targets = [str(n.target) for gm in out.graphs for n in gm.graph.nodes]
    assert out.graph_break_count == 1 and not any("eval_frame" in t for t in targets)
