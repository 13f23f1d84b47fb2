"""The fake results of repeated operations in one symbolic trace (``OutputGraph.fake_memo``): an
op run again on tensors of the same metadata makes a tensor of the remembered metadata. Every
fact a trace reads of such a result (shape, stride, dtype, requires_grad, is_leaf, being a view,
its aliasing) must be what eager gives, so each test reads them back on symbolic traces (and on
a static one, which keeps torch's own cache instead)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from helpers import check, check_sequence

import symexec


def facts(t):
    return (t.shape, t.stride(), t.dtype, t.requires_grad, t.is_leaf, t._is_view(), t.is_contiguous(),
            t.storage_offset())


def test_repeated_linear_of_a_3d_input_is_a_view_each_time():
    """F.linear with a bias on a 3-d input is a view of its 2-d matmul in eager: the remembered
    result is made as such a view, without aliasing the inputs or the other result."""
    w, b = torch.randn(5, 4), torch.randn(5)

    def fn(x, y):
        p, q, r = F.linear(x, w, b), F.linear(y, w, b), F.linear(x, w)
        p.add_(1)  # in place on one result: the other, and x, unchanged
        return p, q, r, facts(p), facts(q), facts(r)

    check(fn, torch.randn(2, 3, 4), torch.randn(2, 3, 4))
    check_sequence(fn, *[[torch.randn(2, n, 4), torch.randn(2, n, 4)] for n in (3, 5, 7)])
    check_sequence(fn, *[[torch.randn(2, n, 4), torch.randn(2, n, 4)] for n in (3, 5, 7)], dynamic=True)


def test_in_place_and_aliasing_results_are_never_reused():
    """add_, detach and contiguous of a contiguous tensor return (a tensor sharing) an input's
    storage: each run makes its own, so mutations through them show."""
    def fn(a, b):
        a.add_(1)
        b.add_(1)
        d1, d2 = a.detach(), b.detach()
        d1.mul_(2)
        c1, c2 = a.contiguous(), b.contiguous()
        c2.sub_(3)
        return a, b, facts(d1), facts(d2), c1 is a, c2 is b

    check(fn, torch.randn(3, 4), torch.randn(3, 4))
    check_sequence(fn, *[[torch.randn(n, 4), torch.randn(n, 4)] for n in (3, 5, 6)], dynamic=True)


def test_grad_mode_is_part_of_the_key():
    w = torch.randn(4, 4, requires_grad=True)

    def fn(x):
        with torch.no_grad():
            a = x @ w
        b = x @ w
        with torch.no_grad():
            c = x @ w
        return facts(a), facts(b), facts(c), a, c

    check(fn, torch.randn(3, 4))
    check_sequence(fn, *[[torch.randn(n, 4)] for n in (3, 5, 6)], dynamic=True)


def test_constants_of_different_types_give_different_results():
    def fn(x):
        results = x + 1, x + 1.0, x + True, x * 2, x * 2.5, x.sum(0), x.sum(1), x.sum(-1, keepdim=True)
        return results, [facts(t) for t in results]  # (the dtypes as the trace knows them)

    check(fn, torch.arange(12).reshape(3, 4))
    check_sequence(fn, *[[torch.arange(4 * n).reshape(n, 4)] for n in (3, 5, 6)], dynamic=True)


def test_different_symbols_of_equal_value_are_different_keys():
    """Two sizes equal in this call but of different symbols (automatic dynamic gives each its
    own): the ops on them are not one."""
    def fn(a, b):
        za, zb = a.new_zeros(a.shape[0], 2), a.new_zeros(b.shape[0], 2)
        return za.shape, zb.shape, torch.cat([za, zb]).shape, a.sum() + b.sum()

    check_sequence(fn, [torch.randn(3), torch.randn(3)], [torch.randn(4), torch.randn(5)],
                   [torch.randn(6), torch.randn(6)], [torch.randn(7), torch.randn(2)])


def test_strides_are_part_of_the_key():
    def fn(x):
        t = x.t()
        return facts(t * 2), facts(x * 2), facts(t.contiguous()), facts(x.t().contiguous())

    check(fn, torch.randn(3, 4))
    check_sequence(fn, *[[torch.randn(n, 4)] for n in (3, 5, 6)], dynamic=True)


def test_an_autocast_block_entered_in_the_trace_is_not_mixed_with_outside():
    w = torch.randn(4, 4)

    def fn(x):
        a = x @ w
        with torch.autocast("cpu", dtype=torch.bfloat16):
            b = x @ w
            c = x @ w
        d = x @ w
        return a.dtype, b.dtype, c.dtype, d.dtype, a, d

    check(fn, torch.randn(3, 4))
    check_sequence(fn, *[[torch.randn(n, 4)] for n in (3, 5, 6)], dynamic=True)


def test_parameters_requiring_grad_in_a_model_layer_stack():
    """Repeated layers of one shape in training mode (results require grad: made each time)
    and under no_grad (remembered): the same outputs and facts as eager."""
    layers = torch.nn.ModuleList([torch.nn.Linear(8, 8) for _ in range(3)])
    norm = torch.nn.LayerNorm(8)

    def fn(x):
        seen = []
        for layer in layers:
            h = torch.nn.functional.gelu(layer(x))
            x = norm(h + x)
            seen += [facts(h), facts(x)]
        return x, seen

    check_sequence(fn, *[[torch.randn(2, n, 8)] for n in (5, 7, 9)], dynamic=True)
    with torch.no_grad():
        check(fn, torch.randn(2, 5, 8))
        compiled = check_sequence(fn, *[[torch.randn(2, n, 8)] for n in (5, 7, 9)])
    assert len(symexec.cache_entries(compiled)) == 2


def test_an_op_of_many_inner_ops_runs_with_torch_cache_on_symbolic_traces():
    """Bicubic interpolate decomposes into about a thousand fake ops: once seen, symbolic
    traces run it with torch's dispatch cache on (and off again for the ops after it)."""
    def fn(x):
        y = F.interpolate(x, size=(x.shape[2] * 2, x.shape[3] + 3), mode="bicubic", align_corners=False)
        z = F.interpolate(x * 2, size=(x.shape[2] * 2, x.shape[3] + 3), mode="bicubic", align_corners=False)
        return y + z, facts(y), facts(z), (y * 3).sum(1)

    check(fn, torch.randn(1, 2, 5, 6))
    compiled = check_sequence(fn, *[[torch.randn(1, 2, n, n + 1)] for n in (5, 6, 7, 9)])
    assert len(symexec.cache_entries(compiled)) == 2
    check_sequence(fn, *[[torch.randn(1, 2, n, 4)] for n in (5, 6, 7)], dynamic=True)
