"""What TorchBench's models (``benchmarks/torchbench.py``) found, each reduced to a few lines of
plain torch: compared with eager, and with torch.compile where graph counts matter."""

import copy

import torch

import symexec
from helpers import assert_same, check, run_both


def test_grad_of_a_loss_over_a_module_deep_copied_inside():
    # maml: the copy was made once while tracing and its parameters fed the graph; after the
    # break at torch.autograd.grad, the code saw a fresh copy, whose parameters the loss never
    # used: RuntimeError where eager runs.
    class Meta(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(4, 2)

        def forward(self, x):
            net = copy.deepcopy(self.net)
            loss = net(x).sum()
            (grad,) = torch.autograd.grad(loss, [net.weight])
            return grad

    torch.manual_seed(0)
    model, x = Meta(), torch.randn(3, 4)
    compiled = symexec.compile(model)
    for _ in range(2):
        assert_same(model(x), compiled(x))


def test_a_recurrent_module_runs_as_it_is_between_graphs():
    # demucs: LSTM.forward was traced; it checks its flat weights' weakrefs in a loop, which
    # broke once per weight (9 breaks, a continuation each). As torch.compile: one break at the
    # call, the LSTM run by CPython.
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv1d(4, 8, 3)
            self.lstm = torch.nn.LSTM(input_size=8, hidden_size=8, bidirectional=True)
            self.out = torch.nn.Linear(16, 4)

        def forward(self, x):
            x = self.conv(x).permute(2, 0, 1)
            return self.out(self.lstm(x)[0])

    torch.manual_seed(0)
    model = Model().eval()
    check(model.forward, torch.randn(2, 4, 20))
    assert symexec.explain(model, torch.randn(2, 4, 20)).graph_break_count == 1


def test_a_deep_copied_module_returned_with_a_loss_over_it():
    # The same fault without a break: the copy returned and the loss's graph must share one copy,
    # so that backward fills the returned copy's grads as in eager.
    def fn(m, x):
        m2 = copy.deepcopy(m)
        return m2, m2(x).sum()

    torch.manual_seed(0)
    m, x = torch.nn.Linear(4, 2), torch.randn(3, 4)
    compiled = symexec.compile(fn)
    for _ in range(2):
        (expected_copy, expected), (copy_, loss) = fn(m, x), compiled(m, x)
        expected.backward()
        loss.backward()
        assert_same(expected, loss)
        assert copy_ is not m and copy_.weight is not m.weight
        assert_same(expected_copy.weight.grad, copy_.weight.grad)


def test_a_distribution_constructed_inside_is_traced_into():
    # soft_actor_critic: Normal(mean, std) inside forward broke the graph ("constructing torch's
    # Normal"); torch.distributions is Python, and torch.compile traces into it: one graph.
    from torch.distributions import Normal

    def fn(mean, std, x):
        dist = Normal(mean * 2, std, validate_args=False)
        return dist.log_prob(x).sum() - dist.entropy().sum(), torch.tanh(dist.mean), dist.batch_shape

    mean, std, x = torch.randn(3), torch.rand(3) + 0.1, torch.randn(3)
    check(fn, mean, std, x)
    _, ours, theirs = run_both(fn, [(mean, std, x)] * 2)
    assert ours.graph_count == theirs.graph_count == 1

    def sample(mean, std):
        return Normal(mean, std, validate_args=False).rsample()

    compiled = symexec.compile(sample)
    for _ in range(2):
        torch.manual_seed(0)
        expected = sample(mean, std)
        torch.manual_seed(0)
        assert_same(expected, compiled(mean, std))


def test_an_autograd_function_given_a_module_list_under_no_grad():
    # hf_Reformer: _ReversibleFunction.apply(hidden, self.layers, ..., all_hidden_states, ...)
    # in eval broke the graph ("apply() with a ModuleList as an argument"). With no input
    # requiring grad autograd records nothing: forward is a plain call, traced as one.
    class Reversible(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, layers, seen):
            for layer in layers:
                x = layer(x)
                seen.append(x)
            ctx.layers = layers
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad, None, None

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(2)])

        def forward(self, x):
            seen = []
            return Reversible.apply(x + 1, self.layers, seen), seen

    torch.manual_seed(0)
    model = Model()

    def fn(x):
        with torch.no_grad():
            return model(x)

    check(fn, torch.randn(2, 4))
    _, ours, theirs = run_both(fn, [(torch.randn(2, 4),)] * 2)
    assert ours.graph_count == theirs.graph_count == 1


def test_numpy_ufuncs_on_constant_numbers_fold():
    # hf_Reformer: np.lcm(config.lsh_attn_chunk_length, config.local_attn_chunk_length) and
    # `key_vectors / np.sqrt(self.attention_head_size)` broke the graph ("ufunc has no Python
    # __call__"). A ufunc of constant numbers is a constant, its inputs guarded.
    import numpy as np

    class Config:
        chunk_a, chunk_b, head_size = 4, 6, 16

    config = Config()

    def fn(x):
        n = np.lcm(config.chunk_a, config.chunk_b)
        return x.reshape(-1, int(n)).cos() / np.sqrt(config.head_size)

    compiled = check(fn, torch.randn(2, 12))
    assert len(symexec.cache_entries(compiled)) == 1
    assert symexec.cache_entries(compiled)[0].graph is not None
    config.chunk_b = 3  # the guards on the inputs: traced again, lcm 12
    assert_same(fn(torch.ones(2, 12)), compiled(torch.ones(2, 12)))
    assert len(symexec.cache_entries(compiled)) == 2

    def warns(x):  # NumPy's error settings decide what it does: CPython runs it
        return x * np.sqrt(-1.0)

    check(warns, torch.randn(3), expect_traced=False)


def test_hasattr_of_a_tuple_is_false():
    # hf_Reformer: `if hasattr(self_attention_outputs, "buckets")` on a plain tuple broke the
    # graph ("reading attribute 'buckets' of a tuple"): a tuple or list has no attribute its
    # class lacks, and none can be added.
    import collections

    Output = collections.namedtuple("Output", ["hidden_states", "attention_probs"])

    def fn(x):
        out = (x + 1, x * 2)
        named = Output(x - 1, None)
        if hasattr(out, "buckets") or hasattr([x], "buckets") or hasattr(named, "buckets"):
            return out.buckets
        return out[0] * 3, getattr(out, "extra", None), named.hidden_states, getattr(named, "extra", 7)

    check(fn, torch.randn(3))
    _, ours, theirs = run_both(fn, [(torch.randn(3),)] * 2)
    assert ours.graph_count == theirs.graph_count == 1

    def raises(x):
        return (x,).buckets

    check(raises, torch.randn(3), expect_traced=False)
