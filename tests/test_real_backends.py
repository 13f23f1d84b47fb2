"""What the backends users pick (``aot_eager``, ``inductor``) are given works with them as with
the eager backend: each test runs the same calls under each and compares with eager."""

import collections

import pytest
import torch

import symexec
from helpers import assert_same

BACKENDS = ["eager", "aot_eager", "inductor"]


def _calls(fn, calls, backend):
    compiled = symexec.compile(fn, backend=backend)
    for args in calls:
        assert_same(fn(*args), compiled(*args), f"{args[1:]!r}")
    return compiled


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_float_that_changes_between_calls(backend):
    # Made symbolic once it changes, the float was a graph argument, which AOTAutograd's trace
    # baked in without a guard: every later value ran with the third call's (x * 6.0).
    def fn(x, s):
        return x * (s * 2.0), 1 - s ** -0.8

    x = torch.randn(4)
    calls = [(x, s) for s in (1.0, 2.0, 3.0, 4.0, 5.0)]
    compiled = _calls(fn, calls, backend)
    if backend != "inductor":  # (the same graphs as aot_eager's, compiled for minutes)
        # eager: the first value, then one symbolic entry; aot_eager: `1 - s ** -0.8` returned
        # cannot become a tensor, and AOTAutograd asks for the float constant each time.
        assert len(symexec.cache_entries(compiled)) <= _dynamo_graphs(fn, calls, backend)


def _dynamo_graphs(fn, calls, backend):
    import torch._dynamo
    from torch._dynamo.backends.registry import lookup_backend

    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return lookup_backend(backend)(gm, example_inputs)

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=counting)
    for args in calls:
        compiled(*args)
    torch._dynamo.reset()
    return len(graphs)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_floats_read_with_python_math_stay_exact(backend):
    def fn(x, s):
        alpha = max(1e-3, s / (x.numel() ** 0.5)) * min(0.01, 1 / (s ** 0.5))
        return x * alpha

    _calls(fn, [(torch.randn(4), s) for s in (1.0, 2.0, 3.0, 4.0, 9.0)], backend)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_an_int_that_changes_between_calls(backend):
    def fn(x, n):
        return x * (n * 2), x.sum() * x.shape[0]

    _calls(fn, [(torch.ones(n), n) for n in (2, 3, 4, 5)], backend)


def test_a_defaultdict_with_a_lambda_factory_compared_with_none():
    # `d is None` asked the tracker for its value: defaultdict(items) made from it raised
    # TypeError (the first argument is the factory), an internal error (Optimizer.zero_grad
    # with foreach=True builds one).
    def fn(x):
        d = collections.defaultdict(lambda: collections.defaultdict(list))
        if d is None:
            return x
        for v in d.values():
            x = x + len(v)
        return x + 1

    _calls(fn, [(torch.ones(2),)], "eager")
