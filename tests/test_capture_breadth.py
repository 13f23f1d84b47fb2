"""Capture what torch.compile captures (issue 11): each cause found on code nobody here wrote,
with a regression test against eager (and torch.compile where graph counts matter)."""

import torch

import symexec
from helpers import assert_same_graphs_as_dynamo, check, check_sequence


def _t(*shape):
    return torch.randn(*shape)


def test_a_torch_size_argument_does_not_recompile_every_call():
    def fn(x, size):
        return x.reshape(size) + len(size)

    check(fn, _t(6), torch.Size([2, 3]), calls=3)  # (the later calls reuse the first entry)
    compiled = check_sequence(fn, [_t(6), torch.Size([2, 3])], [_t(6), torch.Size([3, 2])],
                              [_t(6), torch.Size([2, 3])], [_t(6), (3, 2)])
    # One entry per distinct size, and a plain tuple is not taken for a torch.Size.
    assert len(symexec.cache_entries(compiled)) == 3
    assert_same_graphs_as_dynamo(fn, _t(6), torch.Size([2, 3]))


def test_unbound_tensor_methods():
    def fn(x, y):
        return torch.Tensor.add(x, y, alpha=2), torch.Tensor.mul(x, 3), torch.Tensor.__add__(x, y), torch.Tensor.sum(x)

    check(fn, _t(3), _t(3))
    ours, _ = assert_same_graphs_as_dynamo(fn, _t(3), _t(3))
    assert ours.graph_count == 1


class _Doubling(torch.Tensor):
    def add(self, other, **kwargs):  # overrides Tensor.add: torch.Tensor.add must not call this
        return torch.Tensor.add(self, other, **kwargs) * 2


def test_unbound_tensor_method_on_a_subclass_that_overrides_it():
    def fn(x, y):
        return torch.Tensor.add(x, y), x.add(y)

    x = torch.randn(3).as_subclass(_Doubling)
    check(fn, x, _t(3), expect_traced=False)


def test_unbound_tensor_method_replaced_on_the_class_retraces(monkeypatch):
    def fn(x):
        return torch.Tensor.neg(x)

    compiled = symexec.compile(fn)
    x = _t(3)
    assert torch.equal(compiled(x), -x)
    monkeypatch.setattr(torch.Tensor, "neg", lambda self: self + 100)
    assert torch.equal(compiled(x), x + 100)
