"""The models of tests/test_models.py and the HF set in training: forward, a loss over every
floating output, backward, compiled with ``aot_eager`` (AOTAutograd's forward/backward split),
twice. The loss and every parameter's gradient equal eager's; the second call reuses the
entry. (All of them on CPython 3.11, a slice elsewhere: helpers.BROAD.) (Eval mode, so that dropout does not make the two runs differ; gradients are on.)"""

from __future__ import annotations


import pytest
import torch

import symexec
from helpers import broad_or
from models_common import build_hf25, differences, sizes_of, tensors
from test_hf_models import SELECTED as HF_SELECTED
from test_models import MODELS, build


def _loss(output):
    floats = [t for t in tensors(output) if t.is_floating_point() and t.requires_grad]
    assert floats, "the model returned no floating output with a gradient"
    return sum(t.float().mean() for t in floats)


def _gradients(model, step, args, kwargs):
    model.zero_grad(set_to_none=True)
    loss = step(*args, **kwargs)
    loss.backward()
    return loss.detach(), {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


def _train_like_eager(model, args, kwargs, backend="aot_eager"):
    compiled = symexec.compile(model, backend=backend)

    def eager(*a, **k):
        return _loss(model(*a, **k))

    def ours(*a, **k):
        return _loss(compiled(*a, **k))

    for call in range(2):
        expected_loss, expected = _gradients(model, eager, args, kwargs)
        loss, actual = _gradients(model, ours, args, kwargs)
        torch.testing.assert_close(loss, expected_loss, rtol=1e-4, atol=1e-5, msg=f"call {call}: loss")
        assert actual.keys() == expected.keys(), f"call {call}: parameters with a gradient differ"
        for name in expected:
            found = differences(actual[name], expected[name])
            assert not found, f"call {call}: gradient of {name}: {found}"
    entries = symexec.cache_entries(compiled)
    assert len(entries) == 1 and entries[0].fallback_reason is None, [e.fallback_reason for e in entries]
    return compiled


@pytest.mark.parametrize("name", broad_or(MODELS, ("gpt2", "cnn")))
def test_model_trains_under_aot_eager_like_eager(name):
    model, make = build(name)
    args, kwargs = make(16)
    _train_like_eager(model, args, kwargs)


@pytest.mark.parametrize("name", broad_or(HF_SELECTED, ("qwen2",)))
def test_hf_model_trains_under_aot_eager_like_eager(name):
    model, make = build_hf25(name)
    args, kwargs = make(sizes_of(name)[0])
    _train_like_eager(model, args, kwargs)
