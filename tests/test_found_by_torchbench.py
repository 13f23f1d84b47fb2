"""What TorchBench's models (``benchmarks/torchbench.py``) found, each reduced to a few lines of
plain torch: compared with eager, and with torch.compile where graph counts matter."""

import copy

import torch

import symexec
from helpers import assert_same, check


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
