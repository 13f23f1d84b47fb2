"""Fake results made from their inputs' metadata by a rule (``symexec/shape_rules.py``: pointwise
ops, 2-d matmul, one-dim sum/mean) on symbolic traces. A rule must give what torch's own meta
functions give wherever it applies, and decline everywhere else; compiled results and every fact
a trace reads of them (sizes, strides, contiguity, dtype, requires_grad) must be eager's."""

from __future__ import annotations

import itertools
import operator
import random

import pytest
import torch
import torch.nn.functional as F
from helpers import assert_same, check_sequence
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

import symexec
from symexec import shape_rules
from symexec.source import LocalSource


def facts(t):
    return t.shape, t.stride(), t.dtype, t.requires_grad, t.is_contiguous(), t.is_leaf, t.storage_offset()


def _fake_inputs(tensors, dynamic):
    mode = FakeTensorMode(shape_env=ShapeEnv())
    mode.cache_enabled = False
    fakes = []
    for i, t in enumerate(tensors):
        dims = [DimDynamic.DUCK if d else DimDynamic.STATIC for d in dynamic[i]]
        fakes.append(mode.from_tensor(t, source=LocalSource(f"t{i}"),
                                      symbolic_context=StatelessSymbolicContext(dynamic_sizes=dims)))
    return mode, fakes


def _exprs(values):
    return tuple(v if type(v) is int else v.node.expr for v in values)


BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, torch.add, torch.sub, torch.mul, torch.div,
          torch.true_divide]
UNARY = [operator.neg, torch.neg, torch.relu, torch.tanh, torch.sigmoid, torch.exp, F.relu, F.gelu, F.silu]


def _inputs(rng):
    """A random tensor pair and the operands to call an op on: shapes with size-1 and static
    dims, dtypes the rule takes and does not, contiguous and not."""
    ndim = rng.randint(0, 4)
    shape = [rng.choice([1, 2, 3, 5]) for _ in range(ndim)]
    dtype = rng.choice([torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.bool])
    make = (lambda s: torch.randn(s).to(dtype)) if dtype.is_floating_point else (lambda s: torch.ones(s, dtype=dtype))
    a = make(shape)
    layout = rng.choice(["same", "same", "transposed", "sliced", "broadcast", "other dtype"])
    if layout == "transposed" and ndim >= 2:
        a = make(shape[::-1]).transpose(0, ndim - 1)
        b = make(shape)
    elif layout == "sliced" and ndim >= 1:
        a = make([shape[0] * 2] + shape[1:])[::2]
        b = make(shape)
    elif layout == "broadcast" and ndim >= 1:
        b = make([1] + shape[1:])
    elif layout == "other dtype":
        b = torch.randn(shape).to(torch.float64 if dtype is not torch.float64 else torch.float32)
    else:
        b = make(shape)
    dynamic = [[rng.random() < 0.7 for _ in range(t.dim())] for t in (a, b)]
    return a, b, dynamic


@pytest.mark.broad  # (a sweep of rules against fake tensors: no bytecode)
@pytest.mark.parametrize("seed", range(6))
def test_the_rule_gives_torchs_own_fake_result_or_declines(seed):
    rng = random.Random(seed)
    applied = declined = 0
    for _ in range(120):
        a, b, dynamic = _inputs(rng)
        mode, (fa, fb) = _fake_inputs([a, b], dynamic)
        op = rng.choice(BINARY + UNARY)
        if op in UNARY:
            operands = (fa,)
        else:
            other = rng.choice([fb, fb, 2, 0.5, fa.size(0) if fa.dim() and not isinstance(fa.size(0), int) else 3])
            operands = (fa, other) if rng.random() < 0.5 else (other, fa)
        ours = shape_rules.known_result(mode, "call_function", op, operands, {})
        try:
            with mode:
                theirs = op(*operands)
        except Exception:  # noqa: BLE001 - the op does not take these operands (bool neg, ...)
            assert ours is None, (op, a.dtype, b.dtype)
            continue
        if ours is None:
            declined += 1
            continue
        applied += 1
        assert type(ours) is type(theirs)
        assert ours.fake_mode is mode
        assert _exprs(ours.size()) == _exprs(theirs.size()), (op, a.shape, a.stride())
        assert _exprs(ours.stride()) == _exprs(theirs.stride()), (op, a.shape, a.stride())
        assert (ours.dtype, ours.device, ours.requires_grad, ours.storage_offset()) == (
            theirs.dtype, theirs.device, theirs.requires_grad, theirs.storage_offset())
        assert not ours._is_view()
    assert applied > 10 and declined > 10  # both ways were exercised


def test_methods_are_ruled_like_functions():
    mode, (fa, fb) = _fake_inputs([torch.randn(3, 4), torch.randn(3, 4)], [[True, True], [True, True]])
    for name, operands in [("add", (fa, fb)), ("mul", (fa, 3)), ("div", (fa, fb)), ("relu", (fa,)), ("neg", (fa,))]:
        ours = shape_rules.known_result(mode, "call_method", name, operands, {})
        with mode:
            theirs = getattr(operands[0], name)(*operands[1:])
        assert ours is not None and _exprs(ours.size()) == _exprs(theirs.size())
        assert _exprs(ours.stride()) == _exprs(theirs.stride()) and ours.dtype == theirs.dtype


def test_what_the_rule_declines():
    mode, (fa, fb, fc) = _fake_inputs([torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4, requires_grad=True)],
                                      [[True, True]] * 3)
    rule = shape_rules.known_result
    assert rule(mode, "call_function", torch.add, (fa, fb), {"alpha": 2}) is None  # keywords
    assert rule(mode, "call_function", torch.add, (fa, fc), {}) is None  # requires grad
    assert rule(mode, "call_function", torch.add, (fa, True), {}) is None  # a bool number
    assert rule(mode, "call_function", torch.add, (fa, 1j), {}) is None  # a complex number
    assert rule(mode, "call_function", torch.add, (fa, fb.t().t()), {}) is not None
    assert rule(mode, "call_function", torch.add, (fa, fb.t()), {}) is None  # another shape
    assert rule(mode, "call_function", torch.matmul, (fa, fb), {}) is None  # inner sizes differ
    assert rule(mode, "call_function", torch.add, (2, 3), {}) is None  # no tensor
    assert rule(mode, "call_function", torch.add, (fa,), {}) is None  # the wrong arity
    assert rule(mode, "call_method", "add_", (fa, fb), {}) is None  # in place
    with mode:
        zero = torch.empty(0, 3)
    assert rule(mode, "call_function", torch.add, (zero, 1), {}) is None  # a size 0
    assert rule(FakeTensorMode(), "call_function", torch.add, (fa, 1), {}) is None  # another trace's


def _same_metadata(ours, theirs, mode, what):
    assert type(ours) is type(theirs) and ours.fake_mode is mode, what
    assert _exprs(ours.size()) == _exprs(theirs.size()), what
    assert _exprs(ours.stride()) == _exprs(theirs.stride()), (what, ours.stride(), theirs.stride())
    assert (ours.dtype, ours.device, ours.requires_grad, ours.storage_offset()) == (
        theirs.dtype, theirs.device, theirs.requires_grad, theirs.storage_offset()), what
    assert not ours._is_view()


@pytest.mark.broad
@pytest.mark.parametrize("seed", range(4))
def test_matmul_and_reductions_give_torchs_own_fake_results_or_decline(seed):
    rng = random.Random(seed)
    applied = declined = 0
    for _ in range(100):
        dims = [rng.choice([1, 2, 3, 5]) for _ in range(4)]
        dtype = rng.choice([torch.float32, torch.float64, torch.bfloat16, torch.int64])
        a = torch.randn(dims[:2]).to(dtype)
        if rng.random() < 0.2:
            a = torch.randn(dims[1::-1]).to(dtype).t()  # transposed
        which = rng.choice(["matmul", "mm", "@", "sum", "mean", "sum3", "mean_kw"])
        if which in ("matmul", "mm", "@"):
            b = torch.randn(dims[1], dims[2]).to(rng.choice([dtype, dtype, torch.float16]))
            mode, (fa, fb) = _fake_inputs([a, b], [[rng.random() < 0.7 for _ in range(2)] for _ in range(2)])
            target, op = {"matmul": (torch.matmul, "call_function"), "mm": ("mm", "call_method"),
                          "@": (operator.matmul, "call_function")}[which]
            operands, kwargs = (fa, fb), {}
        else:
            t = torch.randn(dims[:3]).to(dtype) if which.endswith("3") else a
            mode, (ft,) = _fake_inputs([t], [[rng.random() < 0.7 for _ in range(t.dim())]])
            dim = rng.randrange(-t.dim(), t.dim())
            keepdim = rng.random() < 0.5
            target, op = (torch.sum, "call_function") if which.startswith("sum") else ("mean", "call_method")
            operands, kwargs = ((ft, dim), {"keepdim": keepdim}) if which == "mean_kw" or rng.random() < 0.5 \
                else ((ft, dim, keepdim), {})
        ours = shape_rules.known_result(mode, op, target, operands, kwargs)
        try:
            with mode:
                theirs = (getattr(operands[0], target)(*operands[1:], **kwargs) if op == "call_method"
                          else target(*operands, **kwargs))
        except Exception:  # noqa: BLE001 - the op does not take these operands (mean of ints...)
            assert ours is None, (which, dtype)
            continue
        if ours is None:
            declined += 1
            continue
        applied += 1
        _same_metadata(ours, theirs, mode, (which, a.shape, a.stride(), operands[1:], kwargs))
    assert applied > 10 and declined > 10


def pointwise_chain(a, b):
    y = torch.relu(a * 2 + b) - b / 3
    z = F.gelu(y).mul(a) / a.shape[-1]
    return y, z, facts(y), facts(z), facts(-z)


@pytest.mark.parametrize("make", [
    lambda n: (torch.randn(n, 4), torch.randn(n, 4)),
    lambda n: (torch.randn(n, 1, 3), torch.randn(n, 1, 3)),  # a size-1 dim
    lambda n: (torch.randn(4, n).t(), torch.randn(n, 4)),  # a transposed input
    lambda n: (torch.randn(2 * n, 4)[::2], torch.randn(n, 4)),  # a strided input
    lambda n: (torch.randn(n, 4), torch.randn(1, 4)),  # broadcasting
    lambda n: (torch.randn(n, 4, dtype=torch.float64), torch.randn(n, 4)),  # mixed dtypes
    lambda n: (torch.randn(n, 4).half(), torch.randn(n, 4).half()),
    lambda n: (torch.randn(n, 4).bfloat16(), torch.randn(n, 4).bfloat16()),
    lambda n: (torch.randn(n, 4, requires_grad=True), torch.randn(n, 4)),
])
@pytest.mark.parametrize("dynamic", [True, None])
def test_compiled_results_and_their_facts_are_eagers(make, dynamic):
    check_sequence(pointwise_chain, *[list(make(n)) for n in (3, 5, 8)], dynamic=dynamic)


def test_integer_tensors_take_torchs_own_promotion():
    def fn(a, b):
        return a * 2, a / 2, a + b, facts(a / 2), facts(a * 2.5)

    check_sequence(fn, *[[torch.arange(n * 3).view(n, 3), torch.ones(n, 3, dtype=torch.int32)] for n in (3, 5, 8)],
                   dynamic=True)


def test_the_rules_make_these_results_on_symbolic_traces(monkeypatch):
    """The rules make these fake results (torch's meta functions for mul, add, relu, sub, div,
    matmul, sum and mean are not run on the symbolic trace), and only there: not under autocast."""
    seen = []
    original = shape_rules.known_result

    def spy(*args):
        result = original(*args)
        seen.append(result is not None)
        return result

    monkeypatch.setattr(symexec.output_graph, "known_result", spy)
    compiled = symexec.compile(pointwise_chain, dynamic=True)
    a, b = torch.randn(5, 4), torch.randn(5, 4)
    assert_same(pointwise_chain(a, b), compiled(a, b))
    assert sum(seen) >= 7, seen

    seen.clear()
    compiled = symexec.compile(matmul_and_reductions, dynamic=True)
    a, w = torch.randn(5, 4), torch.randn(4, 3)
    assert_same(matmul_and_reductions(a, w), compiled(a, w))
    assert sum(seen) >= 6, seen  # @, sum, mean, *, torch.sum, mm, mean

    def under_autocast(a, b):
        with torch.autocast("cpu"):
            return a * 2 + b

    seen.clear()
    symexec.compile(under_autocast, dynamic=True)(a, b)
    assert not any(seen)


def test_every_combination_of_operand_kinds():
    """Tensor, number and symbolic-number operands in either position."""
    def fn(a, b, k):
        n = a.shape[0]
        outs = [op(x, y) for op, (x, y) in itertools.product(
            (operator.add, operator.sub, operator.mul, operator.truediv),
            ((a, b), (a, 2), (2, a), (a, 0.5), (a, n), (n, a), (a, k)))]
        return outs, [facts(o) for o in outs]

    check_sequence(fn, *[[torch.randn(n, 3) + 2, torch.randn(n, 3) + 2, 1.5] for n in (3, 5, 8)], dynamic=True)


def matmul_and_reductions(a, w):
    h = a @ w
    s, m = h.sum(1), h.mean(-1, keepdim=True)
    t = torch.sum(h * 2, dim=0)
    return h, s, m, t, facts(h), facts(s), facts(m), facts(t), facts(torch.mm(a, w).mean(0))


@pytest.mark.parametrize("make", [
    lambda n: (torch.randn(n, 4), torch.randn(4, 3)),
    lambda n: (torch.randn(n, 1), torch.randn(1, n)),  # size-1 dims
    lambda n: (torch.randn(4, n).t(), torch.randn(4, 3)),  # a transposed input
    lambda n: (torch.randn(n, 4, dtype=torch.float64), torch.randn(4, 3, dtype=torch.float64)),
    lambda n: (torch.randn(n, 4).bfloat16(), torch.randn(4, 3).bfloat16()),
    lambda n: (torch.randn(n, 4, requires_grad=True), torch.randn(4, 3)),
    lambda n: (torch.randn(n, 4), torch.randn(4, 3, dtype=torch.float64)),  # eager raises
])
@pytest.mark.parametrize("dynamic", [True, None])
def test_matmul_and_reduction_results_and_their_facts_are_eagers(make, dynamic):
    check_sequence(matmul_and_reductions, *[list(make(n)) for n in (3, 5, 8)], dynamic=dynamic)
