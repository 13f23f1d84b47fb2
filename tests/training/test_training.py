"""Training as users run it: a whole step (``zero_grad``, forward, loss, ``backward``,
``opt.step()``) or ``opt.step()`` alone, compiled with the backends users pick (``aot_eager``,
``inductor``), for several steps, beside eager. Losses, parameters, gradients and optimizer state
equal eager's after every step; graphs and recompiles no more than torch.compile's."""

import contextlib
import logging

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


def _steps(model, opt, x, y):
    """(the whole training step, ``opt.step()`` alone) on this model, optimizer and batch."""
    def train_step():
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    def optimizer_step():
        opt.step()

    return train_step, optimizer_step


def _train(cls, kwargs, compile_fn, whole, steps=STEPS):
    """``steps`` training steps; the whole step or only ``opt.step()`` goes through
    ``compile_fn``. Returns what each step left: loss, parameters, gradients, state."""
    model, opt = _world(cls, kwargs)
    torch.manual_seed(1)
    x, y = torch.randn(8, 4), torch.randn(8, 3)
    train_step, optimizer_step = _steps(model, opt, x, y)
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


class _Counter(logging.Handler):
    def __init__(self):
        super().__init__()
        self.count = 0

    def emit(self, record):
        self.count += 1


@contextlib.contextmanager
def _counting_recompiles(ours):
    """The recompiles symexec's (``ours``) or torch.compile's ``recompiles`` log reports."""
    counter = _Counter()
    name = "symexec.recompiles" if ours else "torch._dynamo.guards.__recompiles"
    logging.getLogger(name).addHandler(counter)
    symexec.set_logs("recompiles") if ours else torch._logging.set_logs(recompiles=True)
    try:
        yield counter
    finally:
        symexec.set_logs(None) if ours else torch._logging.set_logs()
        logging.getLogger(name).removeHandler(counter)


# -- every optimizer of torch's optim_db --------------------------------------------------------
_SLICE = (torch.optim.SGD, torch.optim.AdamW, torch.optim.RAdam)


def _optimizer_configs():
    """Each optimizer of ``optim_db`` that steps on dense CPU gradients without a closure, by
    default and with ``foreach`` where it has one. (``capturable=True`` needs CUDA parameters,
    eager refuses it on the CPU, as tested below; ``fused`` too.)"""
    from torch.testing._internal.common_optimizers import optim_db

    configs = []
    for info in optim_db:
        cls = info.optim_cls
        if cls not in broad_or([cls], _SLICE):
            continue
        if info.only_supports_sparse_grads or info.step_requires_closure or cls.__name__ == "Muon":
            continue  # (SparseAdam: sparse gradients; LBFGS: a closure; Muon: 2-d parameters only)
        foreach = "foreach" in info.supported_impls
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
    assert ours <= theirs, f"symexec made {ours} graphs in {STEPS} steps, torch.compile {theirs}"


# (a whole step is opt.step() with a forward and backward before it: a few optimizers suffice)
@pytest.mark.parametrize("cls,kwargs", [p for p in _optimizer_configs() if not p.values[1] and p.values[0] in broad_or(
    (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW, torch.optim.RAdam), (torch.optim.AdamW,))])
def test_a_whole_training_step_under_aot_eager_like_eager(cls, kwargs):
    ours, theirs = compare_training(cls, kwargs, "aot_eager", whole=True)
    assert ours <= theirs, f"symexec made {ours} graphs in {STEPS} steps, torch.compile {theirs}"


@pytest.mark.parametrize("cls", broad_or([torch.optim.Adam, torch.optim.AdamW, torch.optim.SGD, torch.optim.Adagrad],
                                         [torch.optim.AdamW]))
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


@pytest.mark.parametrize("backend,whole", broad_or([pytest.param("aot_eager", True, id="aot_eager-whole-step"),
                                                   pytest.param("eager", True, id="eager-whole-step"),
                                                   pytest.param("aot_eager", False, id="aot_eager-opt.step")],
                                                  [pytest.param("aot_eager", True, id="aot_eager-whole-step")]))
def test_adafactor_does_not_retrace_every_step(backend, whole):
    # Adafactor reads its step count and each parameter's norms with .item(), per parameter, and
    # branches on them: its frames broke inside the loop over the parameters, and each
    # continuation, guarded on that step's floats (L['___stack1'] == 1.0, the step count),
    # retraced on every step up to the cache limit: 86 graphs in 6 steps (aot_eager, whole
    # step; 85 for opt.step() alone), where torch.compile, which runs a frame breaking in a loop
    # uncompiled, makes 1 (0) and recompiles nothing. The step now runs uncompiled at the break.
    with _counting_recompiles(ours=True) as ours:
        ours_graphs, theirs_graphs = compare_training(torch.optim.Adafactor, {}, backend, whole)
    with _counting_recompiles(ours=False) as theirs:
        _train(torch.optim.Adafactor, {}, lambda fn: torch.compile(fn, backend=backend), whole)
    torch._dynamo.reset()
    assert ours_graphs <= theirs_graphs, f"symexec made {ours_graphs} graphs in {STEPS} steps, torch.compile {theirs_graphs}"
    assert ours.count <= theirs.count, f"symexec recompiled {ours.count} times in {STEPS} steps, torch.compile {theirs.count}"


def test_compiled_bound_step_is_the_optimizers_step():
    # symexec.compile(opt.step): the bound method was traced as any method, not as torch's
    # step (Adafactor retraced per step; capturable=True on CPU stepped: test above)
    from helpers import CountingBackend

    def run(compile_fn):
        model, opt = _world(torch.optim.Adafactor, {})
        step = compile_fn(opt.step)
        for _ in range(STEPS):
            opt.zero_grad()
            F.mse_loss(model(torch.ones(8, 4)), torch.zeros(8, 3)).backward()
            step()
        return [p.detach().clone() for p in model.parameters()], opt.state_dict()

    backend = CountingBackend()
    assert_same(run(lambda fn: fn), run(lambda fn: symexec.compile(fn, backend=backend)))
    assert backend.graph_count == 0  # (torch.compile: 0, the step runs uncompiled)


def _capturable_outcome(cls, kwargs, compile_fn, whole):
    """One training step with ``capturable=True`` on CPU parameters: the exception it raised
    (type and message), and what it left: parameters, gradients, optimizer state."""
    model, opt = _world(cls, {"capturable": True, **kwargs})
    x, y = torch.randn(8, 4), torch.randn(8, 3)
    train_step, optimizer_step = _steps(model, opt, x, y)
    if whole != True:
        F.mse_loss(model(x), y).backward()
    try:
        compile_fn({True: train_step, False: optimizer_step, "bound": opt.step}[whole])()
        raised = None
    except Exception as e:  # noqa: BLE001 - compared with eager's
        raised = (type(e), str(e))
    return raised, [p.detach().clone() for p in model.parameters()], [p.grad for p in model.parameters()], opt.state_dict()


_CAPTURABLE = [pytest.param(torch.optim.Adam, {}, id="Adam"),
               pytest.param(torch.optim.Adam, {"foreach": True}, id="Adam-foreach"),
               pytest.param(torch.optim.NAdam, {}, id="NAdam"),
               pytest.param(torch.optim.RMSprop, {"foreach": True}, id="RMSprop-foreach")]


@pytest.mark.parametrize("whole", [True, False, "bound"], ids=["whole-step", "opt.step", "compile(opt.step)"])
@pytest.mark.parametrize("cls,kwargs", broad_or(_CAPTURABLE, _CAPTURABLE[1:2]))
def test_capturable_on_cpu_raises_as_in_eager(cls, kwargs, whole):
    # Eager refuses capturable=True with CPU parameters at step() (AssertionError: "If
    # capturable=True, params and state_steps must be on supported devices: [...]"), a check
    # torch skips while torch.compiler.is_compiling(): traced, the step ran and stepped.
    torch.manual_seed(1)
    expected = _capturable_outcome(cls, kwargs, lambda fn: fn, whole)
    torch.manual_seed(1)
    actual = _capturable_outcome(cls, kwargs, symexec.compile, whole)
    assert expected[0] is not None and expected[0][0] is AssertionError
    assert actual[0] == expected[0]
    assert_same(expected[1:], actual[1:], "params, grads, state after the refused step")


def test_capturable_turned_on_after_compiled_steps_raises_as_in_eager():
    # The entries traced with capturable=False are guarded on it: the step after it is turned
    # on retraces, and the refused step runs for real.
    def run(compile_fn):
        model, opt = _world(torch.optim.Adam, {})
        x, y = torch.randn(8, 4), torch.randn(8, 3)
        step = compile_fn(lambda: opt.step())
        raised = []
        for number in range(3):
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            if number == 2:
                opt.param_groups[0]["capturable"] = True
            try:
                step()
            except AssertionError as e:
                raised.append((number, str(e)))
        return raised, opt.state_dict()

    expected, actual = run(lambda fn: fn), run(symexec.compile)
    assert [number for number, _ in expected[0]] == [2] and actual[0] == expected[0]
    assert_same(expected[1], actual[1], "state after the refused step")


# -- autograd around the compiled call (PyTorch's test_repros) ----------------------------------


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_leaf_created_inside_is_a_leaf_with_its_grad(backend):
    # (test_intermediate_leaf_requires_grad) made in an AOTAutograd graph, the "leaf" was a
    # graph output that did not require grad; as torch.compile, it is made outside the graph
    def fn(x):
        leaf = torch.ones(2, requires_grad=True)
        return leaf, leaf * 2 + x.sum()

    x = torch.arange(4.0).reshape(2, 2)
    results = []
    for run in (fn, symexec.compile(fn, backend=backend)):
        leaf, out = run(x)
        out.sum().backward()
        results.append((leaf.is_leaf, leaf.requires_grad, leaf.grad))
    assert_same(results[0], results[1])
    torch._dynamo.reset()
    dynamo, ours = Counting("eager"), Counting("eager")
    torch.compile(fn, backend=dynamo)(x)
    symexec.compile(fn, backend=ours)(x)
    assert ours.graphs <= dynamo.graphs


def test_saved_tensor_hooks_run_when_the_compiled_code_runs():
    # (test_unpack_hooks_dont_run_during_tracing) the pack hook ran on the trace's fake tensors too
    def fn(x, y):
        return x * y

    for run in (fn, symexec.compile(fn, backend="aot_eager")):
        counts = {"pack": 0, "unpack": 0}

        def pack(t):
            counts["pack"] += 1
            return t

        def unpack(t):
            counts["unpack"] += 1
            return t

        x = torch.ones(4, requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            out = run(x, torch.ones(4))
            assert counts == {"pack": 1, "unpack": 0}
            out.sum().backward()
            assert counts == {"pack": 1, "unpack": 1}
