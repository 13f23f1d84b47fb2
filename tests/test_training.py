"""Training as users run it: a whole step (``zero_grad``, forward, loss, ``backward``,
``opt.step()``) or ``opt.step()`` alone, compiled with the backends users pick (``aot_eager``,
``inductor``), for several steps, beside eager. Losses, parameters, gradients and optimizer state
equal eager's after every step; graphs and recompiles no more than torch.compile's."""

import pytest
import torch
import torch._dynamo  # the reference
import torch.nn.functional as F

import symexec
from helpers import assert_same, broad_or

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


# -- every optimizer of torch's optim_db --------------------------------------------------------
# Adafactor reads its step and norms with .item() and branches on them in Python: correct, but
# each step's values retrace its continuations up to the cache limit (torch.compile runs those
# frames uncompiled): the open gap of issue 19's note, its graph count not asserted.
_MORE_GRAPHS_THAN_DYNAMO = {torch.optim.Adafactor}


_SLICE = (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW, torch.optim.RAdam, torch.optim.Adamax)


def _optimizer_configs():
    """Each optimizer of ``optim_db`` that steps on dense CPU gradients without a closure, by
    default and with ``foreach`` where it has one. (``capturable=True`` needs CUDA parameters,
    eager refuses it on the CPU; ``fused`` is tested below.)"""
    from torch.testing._internal.common_optimizers import optim_db

    configs = []
    for info in optim_db:
        cls = info.optim_cls
        if cls not in broad_or([cls], _SLICE):
            continue
        if info.only_supports_sparse_grads or info.step_requires_closure or cls.__name__ == "Muon":
            continue  # (SparseAdam: sparse gradients; LBFGS: a closure; Muon: 2-d parameters only)
        foreach = "foreach" in info.supported_impls and cls not in _MORE_GRAPHS_THAN_DYNAMO  # (its steps are slow)
        for kwargs in ([{}, {"foreach": True}] if foreach else [{}]):
            configs.append(pytest.param(cls, kwargs, id=f"{cls.__name__}-{'foreach' if kwargs else 'default'}"))
    return configs


@pytest.mark.parametrize("cls,kwargs", _optimizer_configs())
def test_every_optimizer_steps_under_aot_eager_like_eager(cls, kwargs):
    # Adam's step 2 reads the state's 0-d `step` tensor and passes -lr/(1-b1**step), a 0-d
    # tensor, as addcdiv_'s number, which torch reads with .item(): symexec's fake run of it left
    # an unbacked symbol pending in the ShapeEnv, and AOTAutograd, sharing it, raised
    # PendingUnbackedSymbolNotFound (RAdam, ASGD: a graph per step; Adamax foreach: TypeError).
    ours, theirs = compare_training(cls, kwargs, "aot_eager", whole=False)
    if cls not in _MORE_GRAPHS_THAN_DYNAMO:
        assert ours <= theirs, f"symexec made {ours} graphs in {STEPS} steps, torch.compile {theirs}"


# (a whole step is opt.step() with a forward and backward before it: a few optimizers suffice)
@pytest.mark.parametrize("cls,kwargs", [p for p in _optimizer_configs() if not p.values[1] and p.values[0] in (
    torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW, torch.optim.RAdam)])
def test_a_whole_training_step_under_aot_eager_like_eager(cls, kwargs):
    ours, theirs = compare_training(cls, kwargs, "aot_eager", whole=True)
    if cls not in _MORE_GRAPHS_THAN_DYNAMO:
        assert ours <= theirs, f"symexec made {ours} graphs in {STEPS} steps, torch.compile {theirs}"


@pytest.mark.parametrize("cls", [torch.optim.Adam, torch.optim.AdamW, torch.optim.SGD, torch.optim.Adagrad])
def test_fused_optimizers_step_like_eager(cls):
    # The fused kernel runs at a graph break: AOTAutograd cannot functionalize it (it raised).
    compare_training(cls, {"fused": True, "lr": 0.01}, "aot_eager", False)


def test_a_whole_training_step_is_two_graphs_and_never_recompiles():
    # zero_grad() read every grad to skip the None ones: None before the first backward, a
    # tensor after, the guard on it made step 2 retrace. And the optimizer's state, made by
    # step 1, made a second optimizer graph. torch.compile: 2 graphs, no recompile.
    ours, theirs = compare_training(torch.optim.Adam, {}, "eager", True)
    assert ours == theirs == 2


@pytest.mark.parametrize("cls,whole", [(torch.optim.Adam, True), (torch.optim.SGD, False)], ids=["Adam-whole-step", "SGD-opt.step"])
def test_training_under_inductor_equals_eager(cls, whole):
    expected = _train(cls, {}, lambda fn: fn, whole)
    actual = _train(cls, {}, lambda fn: symexec.compile(fn, backend="inductor"), whole)
    for number, (e, a) in enumerate(zip(expected, actual)):
        assert_same(e, a, f"step {number} (loss, params, grads, state)")


def test_zero_grad_under_a_profiler_still_records_its_label():
    model, opt = _world(torch.optim.SGD, {"lr": 0.1})

    def step(x):
        opt.zero_grad()
        return model(x).sum()

    compiled = symexec.compile(step)
    x = torch.randn(2, 4)
    compiled(x).backward()
    with torch.profiler.profile() as prof:
        compiled(x)
    assert any("zero_grad" in event.name for event in prof.events())
    assert all(p.grad is None for p in model.parameters())


def test_zero_grad_keeping_the_tensors_is_traced_as_it_is():
    model, opt = _world(torch.optim.SGD, {"lr": 0.1})
    x = torch.randn(2, 4)
    model(x).sum().backward()
    grads = [p.grad for p in model.parameters()]
    symexec.compile(lambda: opt.zero_grad(set_to_none=False))()
    assert all(p.grad is g and not g.any() for p, g in zip(model.parameters(), grads))


def test_a_param_group_changed_inside_the_step_keeps_its_real_capturable():
    # The trace sees groups as capturable=True; a traced write to one would replay that view.
    model, opt = _world(torch.optim.Adam, {})

    def step():
        opt.param_groups[0]["lr"] = 0.5
        opt.step()

    x = torch.randn(2, 4)
    model(x).sum().backward()
    symexec.compile(step)()
    assert opt.param_groups[0]["capturable"] is False and opt.param_groups[0]["lr"] == 0.5
