"""Training as users run it: a whole step (``zero_grad``, forward, loss, ``backward``,
``opt.step()``) or ``opt.step()`` alone, compiled with the backends users pick (``aot_eager``,
``inductor``), for several steps, beside eager. Losses, parameters, gradients and optimizer state
equal eager's after every step; graphs and recompiles no more than torch.compile's."""

import pytest
import torch
import torch._dynamo  # the reference
import torch.nn.functional as F

import symexec
from helpers import assert_same

STEPS = 6


class Counting:
    """A backend counting the graphs it is given, handing each to a real backend."""

    def __init__(self, inner):
        self.inner, self.graphs = inner, 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        if self.inner == "eager":
            return gm.forward
        from torch._dynamo.backends.registry import lookup_backend  # (tests may use Dynamo's backends)

        return lookup_backend(self.inner)(gm, example_inputs)


def _world(cls, kwargs):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
    return model, cls(model.parameters(), **kwargs)


def _train(cls, kwargs, compile_fn, whole, steps=STEPS):
    """``steps`` training steps; the whole step or only ``opt.step()`` goes through
    ``compile_fn``. Returns what each step left: loss, parameters, gradients, state."""
    model, opt = _world(cls, kwargs)
    torch.manual_seed(1)
    x, y = torch.randn(8, 4), torch.randn(8, 3)

    def train_step():
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    def optimizer_step():
        opt.step()

    compiled = compile_fn(train_step if whole else optimizer_step)
    history = []
    for _ in range(steps):
        if whole:
            loss = compiled()
        else:
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            compiled()
        history.append((loss.detach(), [p.detach().clone() for p in model.parameters()],
                        [p.grad.clone() for p in model.parameters()], opt.state_dict()))
    return history


def compare_training(cls, kwargs, backend, whole, steps=STEPS):
    """Eager, symexec and torch.compile with the same backend: symexec's steps equal eager's,
    and it makes no more graphs than torch.compile."""
    expected = _train(cls, kwargs, lambda fn: fn, whole, steps)
    ours = Counting(backend)
    actual = _train(cls, kwargs, lambda fn: symexec.compile(fn, backend=ours), whole, steps)
    for number, (e, a) in enumerate(zip(expected, actual)):
        assert_same(e, a, f"step {number} (loss, params, grads, state)")
    torch._dynamo.reset()
    theirs = Counting(backend)
    _train(cls, kwargs, lambda fn: torch.compile(fn, backend=theirs), whole, steps)
    torch._dynamo.reset()
    return ours.graphs, theirs.graphs


@pytest.mark.parametrize("whole", [True, False], ids=["whole-step", "opt.step"])
@pytest.mark.parametrize("cls", [torch.optim.Adam, torch.optim.AdamW])
def test_adam_trains_under_aot_eager_past_its_first_step(cls, whole):
    # The step after the first reads the state's 0-d `step` tensor: Adam passes -lr/(1-b1**step),
    # a 0-d tensor, as addcdiv_'s number, which torch reads with .item(). symexec's fake run of
    # it left an unbacked symbol pending in the ShapeEnv, and AOTAutograd, sharing it, raised
    # PendingUnbackedSymbolNotFound on step 2.
    compare_training(cls, {}, "aot_eager", whole)
