"""``optimizer.step()`` compiled as torch.compile captures it, and what it needs: a
``record_function`` that records nothing, ``param.grad`` as an input (read and assigned), and
an input dict keyed by tensors (``optimizer.state``). Each compared with eager, and graph
counts with torch.compile."""

import collections

import pytest
import torch
import torch._dynamo  # the reference

import symexec
from helpers import CountingBackend, assert_same, assert_same_graphs_as_dynamo, check, check_sequence, symexec_graphs

record_function = torch.autograd.profiler.record_function


# -- record_function ------------------------------------------------------------------------------
def _labelled(x):
    with record_function("label"):
        y = x * 2
    return y + 1


def test_record_function_is_a_no_op_while_nothing_records():
    check(_labelled, torch.randn(3))
    assert_same_graphs_as_dynamo(_labelled, torch.randn(3))  # one graph, as torch.compile


def test_record_function_under_a_profiler_still_records_its_label():
    # The entry traced with the profiler off must not run under a profiler: its guard fails,
    # the retrace breaks at the record_function and CPython records the label.
    compiled = symexec.compile(_labelled)
    x = torch.randn(3)
    assert_same(_labelled(x), compiled(x))
    with torch.profiler.profile() as prof:
        out = compiled(x)
    assert_same(_labelled(x), out)
    assert "label" in {event.name for event in prof.events()}


def test_a_graph_break_inside_a_record_function_block():
    def fn(x):
        with torch.profiler.record_function("label", "args"):
            y = x * 2
            print("inside")
            y = y + 1
        return y

    check(fn, torch.randn(3))


def test_record_function_with_a_name_that_is_not_a_string_raises_as_in_eager():
    def fn(x):
        with record_function(3):
            return x + 1

    check(fn, torch.randn(3), expect_traced=False, expect_reuse=False)


# -- tensor.grad --------------------------------------------------------------------------------
def _with_grad(dtype, has_grad):
    p = torch.nn.Parameter(torch.arange(6.0, dtype=dtype).reshape(2, 3))
    p.grad = torch.full((2, 3), 3.0, dtype=dtype) if has_grad else None
    return p


def _descend(p):
    scaled = p * 2
    if p.grad is None:
        return scaled
    return scaled - 0.1 * p.grad


def test_reading_grad_makes_it_an_input_guarded_on_none_and_its_metadata():
    compiled = symexec.compile(_descend)
    for dtype, has_grad in ((torch.float32, True), (torch.float32, True), (torch.float32, False),
                            (torch.float64, True), (torch.float32, False), (torch.float32, True)):
        assert_same(_descend(_with_grad(dtype, has_grad)), compiled(_with_grad(dtype, has_grad)))
    assert len(symexec.cache_entries(compiled)) == 3  # a float32 grad, None, float64


def test_reading_grad_is_one_graph_like_torch_compile():
    ours, dynamo = CountingBackend(), CountingBackend()
    symexec.compile(_descend, backend=ours)(_with_grad(torch.float32, True))
    torch._dynamo.reset()
    torch.compile(_descend, backend=dynamo)(_with_grad(torch.float32, True))
    torch._dynamo.reset()
    assert ours.graph_count == dynamo.graph_count == 1
    assert ours.op_counts() == dynamo.op_counts()


def test_assigning_grad_is_replayed_and_seen_by_later_reads():
    def fn(p, g):
        p.grad = g * 2
        first = p.grad + 1
        p.grad = None
        second = p.grad is None
        p.grad = g
        return first, second, p.grad

    compiled = check(fn, torch.nn.Parameter(torch.randn(3)), torch.randn(3))
    p, g = torch.nn.Parameter(torch.randn(3)), torch.randn(3)
    compiled(p, g)
    assert p.grad is g
    assert symexec.explain(fn, p, g).graph_break_count == 0


@pytest.mark.parametrize("grad", [torch.randn(4), torch.randn(3, dtype=torch.float64)], ids=["size", "dtype"])
def test_assigning_grad_a_tensor_torch_rejects_raises_as_in_eager(grad):
    def fn(p, g):
        p.grad = g
        return p + 1

    check(fn, torch.nn.Parameter(torch.randn(3)), grad, expect_traced=False, expect_reuse=False)


# -- dicts keyed by tensors -----------------------------------------------------------------------
def _plain(value, keys):
    """``value`` with the tensors of ``keys`` named by their place (tensor keys compare by
    identity, which the comparison of two worlds cannot use)."""
    if isinstance(value, dict):
        return [(_plain(k, keys), _plain(v, keys)) for k, v in value.items()]
    if isinstance(value, (list, tuple)):
        return [_plain(v, keys) for v in value]
    index = next((i for i, k in enumerate(keys) if k is value), None)
    return f"key {index}" if index is not None else value


def _twin(fn, make, rounds):
    """``fn`` compiled and eager, each round on its own copy of ``make(round)`` (tensors first):
    results and arguments afterwards equal. Returns the compiled function."""
    compiled = symexec.compile(fn)
    for number in range(rounds):
        eager_args, args = make(number), make(number)
        expected, actual = fn(*eager_args), compiled(*args)
        eager_keys, keys = [a for a in eager_args if isinstance(a, torch.Tensor)], [a for a in args if isinstance(a, torch.Tensor)]
        assert_same(_plain(expected, eager_keys), _plain(actual, keys), f"round {number}: result")
        assert_same(_plain(eager_args, eager_keys), _plain(args, keys), f"round {number}: arguments")
    return compiled


def _state_step(p, q, state):
    entry = state[p]  # a defaultdict: a new entry for a parameter it does not hold
    entry["n"] = entry.get("n", 0) + 1
    entry["sum"] = entry.get("sum", 0) + p.sum()
    return q in state, len(state), state.get(q, "absent")


def _states(number):
    torch.manual_seed(0)
    p, q = torch.randn(3), torch.randn(2)
    held = {p: {"n": 1, "sum": torch.tensor(2.0)}}
    states = [{}, held, {q: {"n": 5}, **held}, {q: {"n": 5}}, held, {}]
    return p, q, collections.defaultdict(dict, states[number])


def test_a_defaultdict_keyed_by_tensors_read_and_written():
    compiled = _twin(_state_step, _states, 6)
    assert len(symexec.cache_entries(compiled)) == 4  # empty, p held, p and q, q held


def test_writes_to_a_tensor_keyed_dict_keep_eager_order():
    def fn(a, b, c, d):
        del d[a]
        d[c] = 1
        d[a] = 2  # back in, at the end
        d[b] = 3  # kept in its place
        return d.pop(c), d.setdefault(c, 4), len(d), a in d

    def make(number):
        torch.manual_seed(number)
        a, b, c = torch.randn(1), torch.randn(2), torch.randn(3)
        return a, b, c, {a: 0, b: 0}

    compiled = _twin(fn, make, 2)
    assert len(symexec.cache_entries(compiled)) == 1
    assert symexec.explain(fn, *make(0)).graph_break_count == 0


def test_iterating_a_tensor_keyed_dict_breaks_the_graph_but_is_right():
    def fn(a, b, x, d):
        total = x + 1
        for key, value in d.items():
            total = total + key.sum() * value
        return total

    def make(number):
        torch.manual_seed(number)
        a, b = torch.randn(2), torch.randn(3)
        return a, b, torch.randn(1), {a: 2, b: 3}

    _twin(fn, make, 2)


# -- optimizer.step() ---------------------------------------------------------------------------
def _world(cls, kwargs):
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(3, 4)) for _ in range(2)]
    return params, cls(params, **kwargs)


def _set_grads(params, step):
    torch.manual_seed(100 + step)
    for p in params:
        p.grad = torch.randn_like(p)


def _steps(cls, kwargs, compile_fn, steps=3):
    """Three steps of an optimizer compiled by ``compile_fn``, beside eager ones: params, grads
    and optimizer state equal after each."""
    eager_params, eager_opt = _world(cls, kwargs)
    params, opt = _world(cls, kwargs)

    def step():
        opt.step()

    compiled = compile_fn(step)
    for number in range(steps):
        _set_grads(eager_params, number)
        _set_grads(params, number)
        eager_opt.step()
        compiled()
        assert_same(eager_params, params, f"step {number}: params")
        assert_same([p.grad for p in eager_params], [p.grad for p in params], f"step {number}: grads")
        assert_same(eager_opt.state_dict(), opt.state_dict(), f"step {number}: state")
    return compiled


OPTIMIZERS = [(torch.optim.SGD, {}), (torch.optim.SGD, {"momentum": 0.9}), (torch.optim.Adam, {}),
              (torch.optim.AdamW, {}), (torch.optim.AdamW, {"amsgrad": True}), (torch.optim.RAdam, {}),
              (torch.optim.Adagrad, {}), (torch.optim.RMSprop, {})]


@pytest.mark.parametrize("cls,kwargs", OPTIMIZERS, ids=[f"{c.__name__}-{k}" for c, k in OPTIMIZERS])
def test_optimizer_steps_equal_eager(cls, kwargs):
    _steps(cls, kwargs, symexec.compile)


@pytest.mark.parametrize("cls", [torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW])
def test_optimizer_step_is_one_graph_like_torch_compile(cls):
    import torch._dynamo

    ours, dynamo = CountingBackend(), CountingBackend()
    _steps(cls, {}, lambda fn: symexec.compile(fn, backend=ours), steps=1)
    torch._dynamo.reset()
    _steps(cls, {}, lambda fn: torch.compile(fn, backend=dynamo), steps=1)
    torch._dynamo.reset()
    assert ours.graph_count == dynamo.graph_count == 1


def test_zero_grad_behind_torch_disable_wrapper_is_traced_through():
    # Optimizer.zero_grad is wrapped by torch._disable_dynamo: traced into, the wrapper put
    # torch._C._dynamo's set_eval_frame calls in the graph (and broke four times). symexec
    # traces what it wraps.
    params, opt = _world(torch.optim.SGD, {})

    def fn(x):
        opt.zero_grad()
        return x + 1

    for p in params:
        p.grad = torch.ones_like(p)
    check(fn, torch.ones(2), calls=1)
    assert all(p.grad is None for p in params)
    _, ours = symexec_graphs(fn, torch.ones(2))
    targets = [str(n.target) for gm in ours.graphs for n in gm.graph.nodes]
    assert not any("eval_frame" in t for t in targets)
    assert symexec.explain(fn, torch.ones(2)).graph_break_count == 0


def test_optimizer_traced_by_torch_compile_first_still_one_graph():
    # torch.compile, tracing an optimizer, wraps its class's _init_group in torch's disable
    # wrapper (for the whole process): symexec still traces through it.
    test_optimizer_step_is_one_graph_like_torch_compile(torch.optim.Adam)
    test_optimizer_step_is_one_graph_like_torch_compile(torch.optim.Adam)
