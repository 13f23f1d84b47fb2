"""torch's higher-order operators (``variables/higher_order.py``): ``torch.cond``,
``torch._higher_order_ops.map``, ``while_loop`` and ``scan`` traced into subgraphs, against eager and
torch.compile; what torch forbids inside them breaks cleanly and eager's error is raised."""

import pytest
import torch
from torch._higher_order_ops.associative_scan import associative_scan
from torch._higher_order_ops.map import map as hop_map
from torch._higher_order_ops.scan import scan
from torch._higher_order_ops.while_loop import while_loop

import symexec
from helpers import CountingBackend, assert_same, assert_same_graphs_as_dynamo, check, check_sequence, run_both, symexec_graphs

W = torch.randn(3)


def _true(x):
    return x.sin() + 1


def _false(x):
    return x.cos() * 2


def cond_tensor_pred(x):
    return torch.cond(x.sum() > 0, _true, _false, (x,))


def cond_lambdas_and_closure(x, y):
    w = y * 2
    return torch.cond(x.sum() > 0, lambda a: a + w, lambda a: a - w + W, (x,))


def cond_ops_namespace(x):
    return torch.ops.higher_order.cond(x.sum() > 0, _true, _false, (x,))


def cond_tuple_outputs(x, y):
    def t(a, b):
        return a + b, a * b

    def f(a, b):
        return a - b, (a / b).relu()

    p, q = torch.cond(x.mean() > y.mean(), t, f, (x, y))
    return p.sum() + q


def cond_nested(x):
    def t(a):
        return torch.cond(a.max() > 1, lambda b: b * 3, lambda b: b + 3, (a,))

    return torch.cond(x.sum() > 0, t, lambda a: a.neg(), (x,))


class _CondModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.register_buffer("buf", torch.ones(3))

    def true_branch(self, x):
        return self.lin(x) + self.buf

    def false_branch(self, x):
        return self.lin(x).sin()

    def forward(self, x):
        return torch.cond(x.sum() > 0, self.true_branch, self.false_branch, (x,))


@pytest.mark.parametrize("fn, args", [
    (cond_tensor_pred, (torch.randn(3),)),
    (cond_tensor_pred, (torch.randn(3).abs(),)),
    (cond_tensor_pred, (-torch.randn(3).abs(),)),
    (cond_lambdas_and_closure, (torch.randn(3), torch.randn(3))),
    (cond_ops_namespace, (torch.randn(2, 3),)),
    (cond_tuple_outputs, (torch.randn(4), torch.rand(4) + 1)),
    (cond_nested, (torch.randn(3) * 2,)),
])
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_cond_matches_eager(fn, args, backend):
    check(fn, *args, backend=backend)


def test_cond_module_methods_lift_parameters():
    torch.manual_seed(0)
    m = _CondModule()
    compiled = symexec.compile(m)
    for x in (torch.randn(3).abs(), -torch.randn(3).abs()):
        torch.testing.assert_close(compiled(x), m(x))
    assert_same_graphs_as_dynamo(m, torch.randn(3))


def test_cond_inductor():
    check(cond_lambdas_and_closure, torch.randn(3), torch.randn(3), backend="inductor")


@pytest.mark.parametrize("fn, args", [
    (cond_tensor_pred, (torch.randn(3),)),
    (cond_lambdas_and_closure, (torch.randn(3), torch.randn(3))),
    (cond_tuple_outputs, (torch.randn(4), torch.rand(4) + 1)),
    (cond_nested, (torch.randn(3),)),
])
def test_cond_graphs_as_torch_compile(fn, args):
    assert_same_graphs_as_dynamo(fn, *args)


def test_cond_both_branches_run_from_one_graph():
    """One graph serves both values of the predicate: the branch is chosen at run time."""
    calls = [(torch.randn(3).abs(),), (-torch.randn(3).abs(),), (torch.randn(3).abs(),)]
    compiled, ours, theirs = run_both(cond_tensor_pred, calls)
    assert ours.graph_count == theirs.graph_count == 1
    assert len(symexec.cache_entries(compiled)) == 1


def test_cond_dynamic_shapes():
    calls = [(torch.randn(n, 2),) for n in (3, 5, 7)]
    compiled, ours, theirs = run_both(cond_closure_sizes, calls, dynamic=True)
    assert ours.graph_count == theirs.graph_count == 1


def cond_closure_sizes(x):
    w = x.sum(0)
    n = x.size(0)
    return torch.cond(x.sum() > 0, lambda a: a + w, lambda a: (a - w).reshape(n, -1) * n, (x,))


def test_cond_symbolic_size_predicate():
    def fn(x):
        return torch.cond(x.shape[0] > 4, lambda a: a.sin(), lambda a: a.cos(), (x,))
    check_sequence(fn, [torch.randn(3)], [torch.randn(6)], [torch.randn(5)], dynamic=True)


def test_cond_constant_predicate_inlines_the_branch():
    def fn(x, flag):
        return torch.cond(flag, lambda a: a.sin(), lambda a: a.cos(), (x,))
    compiled = check_sequence(fn, [torch.randn(3), True], [torch.randn(3), False], [torch.randn(3), True])
    assert len(symexec.cache_entries(compiled)) == 2  # the bool is guarded
    _, ours = symexec_graphs(fn, torch.randn(3), True)
    assert "cond" not in ours.graphs[0].code


def test_cond_recompiles_when_the_predicate_changes_type():
    def fn(x, p):
        return torch.cond(p, lambda a: a + 1, lambda a: a - 1, (x,))
    compiled = check_sequence(fn, [torch.randn(3), True], [torch.randn(3), torch.tensor(False)],
                              [torch.randn(3), torch.tensor(True)], [torch.randn(3), True])
    assert len(symexec.cache_entries(compiled)) == 2


def test_cond_training_grads_aot_eager():
    w = torch.randn(3, requires_grad=True)

    def fn(x, w):
        return torch.cond(x.sum() > 0, lambda a: a * w, lambda a: a + w.sin(), (x,)).sum()

    for x in (torch.randn(3).abs(), -torch.randn(3).abs()):
        w1, w2 = w.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
        fn(x, w1).backward()
        symexec.compile(fn, backend="aot_eager")(x, w2).backward()
        torch.testing.assert_close(w2.grad, w1.grad)


_LOG = []


def _appends(a):
    _LOG.append(1)
    return a.sin()


def _prints(a):
    print("inside")
    return a.sin()


def _mutates(a):
    return a.add_(1)


def _returns_input(a):
    return a


def _returns_view(a):
    return a[:2]


def _returns_int(a):
    return a.int()


def _raises(a):
    raise ValueError("no")


def _break_reasons(compiled):
    return " | ".join(str(entry.break_reason) for entry in symexec.cache_entries(compiled))


@pytest.mark.parametrize("branch, reason", [
    (_appends, "changes objects outside it"), (_prints, "print()"), (_mutates, "mutates an input in place"),
    (_returns_input, "returns one of its inputs"), (_returns_view, "returns one of its inputs"),
    (_returns_int, "expected same dtype"), (_raises, "raises ValueError"),
])
def test_cond_forbidden_branches_break_and_raise_as_eager(branch, reason):
    """What torch forbids in a branch breaks the graph; CPython runs torch.cond, which raises
    eager's own error (torch.cond compiles its branches itself)."""
    def fn(x):
        y = x * 2
        return torch.cond(y.sum() > 0, branch, lambda a: a.cos(), (y,))
    compiled = check(fn, torch.randn(3))
    assert reason in _break_reasons(compiled)
    assert not _LOG  # (torch.cond raised before running the branch)


def test_cond_branch_writing_a_nonlocal_breaks():
    def fn(x):
        count = 0

        def t(a):
            nonlocal count
            count += 1
            return a.sin()
        return torch.cond(x.sum() > 0, t, lambda a: a.cos(), (x,)), count
    compiled = check(fn, torch.randn(3))
    assert "changes objects outside it" in _break_reasons(compiled)


def test_cond_branch_appending_to_a_list_of_the_caller_breaks():
    def fn(x):
        seen = []

        def t(a):
            seen.append(a.sum())
            return a.sin()
        return torch.cond(x.sum() > 0, t, lambda a: a.cos(), (x,)), seen
    compiled = check(fn, torch.randn(3))
    assert "changes objects outside it" in _break_reasons(compiled)


def cond_branch_with_its_own_list(x):
    def t(a):
        parts = []
        for i in range(2):
            parts.append(a * (i + 1))
        return parts[0] + parts[1]
    return torch.cond(x.sum() > 0, t, lambda a: a.cos(), (x,))


def test_cond_branch_changing_only_what_it_made_is_captured():
    check(cond_branch_with_its_own_list, torch.randn(3))
    assert_same_graphs_as_dynamo(cond_branch_with_its_own_list, torch.randn(3))


def test_cond_branches_with_different_structures_break():
    def fn(x):
        return torch.cond(x.sum() > 0, lambda a: (a * 2, a + 1), lambda a: a.cos(), (x,))
    compiled = check(fn, torch.randn(3))
    assert "different structures" in _break_reasons(compiled)


def test_cond_operands_not_tensors_break():
    def fn(x):
        return torch.cond(x.sum() > 0, lambda a, n: a + n, lambda a, n: a - n, (x, 2))
    compiled = check(fn, torch.randn(3))
    assert "symexec traces only tensors there" in _break_reasons(compiled)


def test_cond_multi_element_predicate_raises_as_eager():
    def fn(x):
        return torch.cond(x > 0, lambda a: a + 1, lambda a: a - 1, (x,))
    compiled = check(fn, torch.randn(3))
    assert "more than one element" in _break_reasons(compiled)


# -- map --------------------------------------------------------------------------------------
def map_simple(xs, y):
    return hop_map(lambda a, b: a * b + W, xs, y)


def map_structured(xs, ys):
    def body(pair, scale):
        a, b = pair
        return {"s": a + b * scale, "p": (a * b).sum()}
    out = hop_map(body, (xs, ys), torch.tensor(2.0))
    return out["s"], out["p"]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn, args", [
    (map_simple, (torch.randn(4, 3), torch.randn(3))),
    (map_structured, (torch.randn(2, 3), torch.randn(2, 3))),
])
def test_map_matches_eager(fn, args, backend):
    check(fn, *args, backend=backend)


def test_map_graphs_as_torch_compile():
    assert_same_graphs_as_dynamo(map_simple, torch.randn(4, 3), torch.randn(3))


def test_map_dynamic_shapes():
    calls = [(torch.randn(n, 3), torch.randn(3)) for n in (2, 4, 6)]
    _, ours, theirs = run_both(map_simple, calls, dynamic=True)
    assert ours.graph_count == theirs.graph_count


# -- while_loop --------------------------------------------------------------------------------
def loop_count(x):
    return while_loop(lambda i, a: i < 5, lambda i, a: (i + 1, a * 2 + W), (torch.tensor(0), x))


def loop_until(x, limit):
    return while_loop(lambda a: a.sum() < limit, lambda a: (a + 1,), (x,))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn, args", [
    (loop_count, (torch.randn(3),)),
    (loop_until, (torch.zeros(3), torch.tensor(10.0))),
])
def test_while_loop_matches_eager(fn, args, backend):
    check(fn, *args, backend=backend)


def test_while_loop_graphs_as_torch_compile():
    assert_same_graphs_as_dynamo(loop_count, torch.randn(3))


def test_while_loop_body_mutating_its_input_breaks():
    def fn(x):
        return while_loop(lambda a: a.sum() < 10, lambda a: (a.add_(1),), (x.clone(),))
    check(fn, torch.zeros(3), captured=True)


# -- cases from PyTorch's own Dynamo tests --------------------------------------------------------
def cond_pytree_operands(pred, tree):
    def total(flat):
        out = 0
        for value in flat:
            out = out + value
        return out

    def t(tree):
        a, b, c, d, e = tree
        return total([a, b[0][0][0], c, d[0], d[1][0], d[2], e["g"]])

    def f(tree):
        a, b, c, d, e = tree
        return total([a.max(), b[0][0][0], c * 2, d[0], e["g"]])

    return torch.cond(pred, t, f, (tree,))


def _tree():
    a, b, c, d, e, f, g = (torch.randn(3, 3) for _ in range(7))
    return (a, [[[b]]], c, (d, (e,), f), {"g": g})


@pytest.mark.parametrize("pred", [torch.tensor(True), torch.tensor(False)])
def test_cond_pytree_operands(pred):
    check(cond_pytree_operands, pred, _tree())
    assert_same_graphs_as_dynamo(cond_pytree_operands, pred, _tree())


def test_cond_pytree_operands_with_non_tensor_leaves_raise_as_eager():
    def fn(pred, tree):
        return torch.cond(pred, lambda x: x[0] + 1, lambda x: x[0] * 2, (tree,))
    for tree in [(1,), ("string",), (1.0,)]:
        # symexec captures nothing here: the cond, the only operation, breaks
        check(fn, torch.tensor(True), tree, captured=False)


def test_cond_without_operands_reads_closures():
    def fn(x, y, z):
        return torch.cond(x, lambda: y + 2, lambda: z + 1)
    for x in (torch.tensor(True), torch.tensor(False)):
        check(fn, x, torch.zeros(1), torch.ones(1))
    assert_same_graphs_as_dynamo(fn, torch.tensor(True), torch.zeros(1), torch.ones(1))


def test_cond_branches_without_arguments_or_closures():
    def fn(x):
        return torch.cond(x.sum() > 0, lambda: torch.ones(3, 4), lambda: torch.ones(3, 4).sin())
    check(fn, torch.randn(4, 5))
    assert_same_graphs_as_dynamo(fn, torch.randn(4, 5))


def test_cond_operator_with_keyword_arguments():
    from torch._higher_order_ops.cond import cond_op

    def fn(pred, x):
        return cond_op(pred=pred, true_fn=lambda a: a + 1, false_fn=lambda a: -a, operands=[x])
    check_sequence(fn, [torch.Tensor([True]), torch.ones(3, 3)], [torch.Tensor([False]), torch.ones(3, 3)])


def test_cond_operator_with_unknown_keyword_breaks():
    from torch._higher_order_ops.cond import cond_op

    def fn(pred, x):
        return cond_op(pred=pred, true_fn=lambda a: a + 1, false_fn=lambda a: -a, operands=[x], invalid=True)
    check(fn, torch.tensor(True), torch.ones(3), captured=False)  # symexec captures nothing here: the cond breaks


def test_cond_reads_a_closure_the_caller_just_wrote():
    c = 0

    def t(x):
        return x - c

    def f(x):
        return x + c

    def fn(pred, x):
        nonlocal c
        c = 1
        return torch.cond(pred, t, f, [x])
    check(fn, torch.tensor(False), torch.tensor([0.25, 0.25]))


def test_cond_nested_predicate_operand():
    def fn(pred, pred2, x):
        def false_fn(p, a):
            return a + torch.cond(p, lambda b: b * 10, lambda b: b * -1, [a])
        return torch.cond(pred, lambda p, a: a.sin(), false_fn, [pred2, x])
    compiled = check_sequence(fn, *[[torch.tensor(p), torch.tensor(q), torch.tensor([0.25, 0.25])]
                                    for p in (True, False) for q in (True, False)])
    assert len(symexec.cache_entries(compiled)) == 1


def test_cond_branch_updating_a_module_buffer_breaks():
    class Foo(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.buffer = torch.nn.Buffer(torch.ones(6, 4))

        def forward(self, x):
            def true_fn(x):
                self.buffer += 1
                return self.buffer.sum() + x.sum()
            return torch.cond(x.sum() > 4, true_fn, lambda x: (x - 1).sum(), [x])

    m = Foo()
    with pytest.raises(Exception) as eager:
        m(torch.ones(6, 4))
    with pytest.raises(type(eager.value)):
        symexec.compile(m)(torch.ones(6, 4))
    assert torch.equal(m.buffer, torch.ones(6, 4))


def test_map_multiple_and_structured_returns():
    def fn(x):
        return hop_map(lambda a: (a.sin(), {"c": a.cos()}), x)
    check(fn, torch.randn(3, 2))
    assert_same_graphs_as_dynamo(fn, torch.randn(3, 2))


def test_map_with_an_int_argument():
    def fn(x, y):
        return hop_map(lambda a, n: torch.sin(a + n), x, y.size(0))
    check(fn, torch.randn(3, 1), torch.randn(3, 1))


def test_map_body_updating_a_module_attribute_breaks():
    class Module(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.tensor(1)

        def forward(self, xs):
            def body(x):
                self.w += 1
                return x.sin()
            return hop_map(body, xs)

    m = Module()
    with pytest.raises(Exception) as eager:
        m(torch.randn(3, 2))
    with pytest.raises(type(eager.value)):
        symexec.compile(m)(torch.randn(3, 2))
    assert torch.equal(m.w, torch.tensor(1))


def test_map_and_while_loop_inductor():
    check(map_simple, torch.randn(4, 3), torch.randn(3), backend="inductor")
    check(loop_count, torch.randn(3), backend="inductor")


# -- scan and associative_scan --------------------------------------------------------------------
def scan_simple(x):
    return scan(lambda c, x: (c + x, c * 2), torch.zeros(3), x)


def scan_structured(x, h):
    def step(carry, xs):
        a, b = xs
        new = (carry["h"] * a + b + W).tanh()
        return {"h": new}, (new.sum(), new * 2)
    return scan(step, {"h": h}, (x, x.cos()))


def scan_reversed_along_dim_1(x):
    return scan(lambda c, x: (c + x, c * 2), torch.zeros(3), x, dim=1, reverse=True)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn, args", [
    (scan_simple, (torch.randn(4, 3),)),
    (scan_structured, (torch.randn(4, 3), torch.randn(3))),
    (scan_reversed_along_dim_1, (torch.randn(3, 4),)),
])
def test_scan_matches_eager_and_torch_compile(fn, args, backend):
    check(fn, *args, backend=backend)
    if backend == "eager":
        assert_same_graphs_as_dynamo(fn, *args)


def test_scan_carry_changing_shape_breaks_and_raises_as_eager():
    def fn(x):
        return scan(lambda c, x: (c.sum(), c * 2), torch.zeros(3), x)
    compiled = check(fn, torch.randn(4, 3))
    assert "carry unlike its init" in _break_reasons(compiled)


def test_associative_scan_generic_mode():
    def fn(x):
        return associative_scan(lambda a, b: a + b, x, dim=0, combine_mode="generic")
    check(fn, torch.randn(4, 3))
    assert_same_graphs_as_dynamo(fn, torch.randn(4, 3))


def test_public_spellings():
    """``torch.while_loop`` and functorch's ``control_flow.cond`` are the same wrappers (a
    function of torch's public API, once recorded whole as one node with functions for
    arguments)."""
    from functorch.experimental import control_flow

    def fn(x):
        y = control_flow.cond(x.sum() > 0, lambda a: a + 1, lambda a: a - 1, [x])
        return torch.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2), (torch.tensor(0), y))
    check(fn, torch.randn(3))
    assert_same_graphs_as_dynamo(fn, torch.randn(3))


class _ModuleCondDeep(torch.nn.Module):
    """Branches defined in a method reached through two others, one branch itself a cond over
    closures of its frame."""

    def forward(self, pred, x):
        return self._indirection(pred, x)

    def _indirection(self, pred, x):
        return self.indirection(pred, x)

    def indirection(self, pred, x):
        def true_fn(y):
            return y + 2

        def false_fn(y):
            return y - 2

        def shallow(x):
            return x * 2

        def deep(x):
            return torch.cond(x[0][0] > 0, true_fn, false_fn, [x])
        return torch.cond(pred, shallow, deep, [x])


def test_cond_branches_from_a_deep_method():
    m, backend = _ModuleCondDeep(), CountingBackend()
    compiled = symexec.compile(m, backend=backend)
    x = torch.randn(3, 3)
    for pred in (torch.tensor(False), torch.tensor(True), torch.tensor(False)):
        assert_same(m(pred, x), compiled(pred, x))
    assert backend.graph_count == 1  # (both predicates, nested, in one graph)


def _map_loss(x, w):
    return hop_map(lambda a: (a * w).sin(), x).sum()


def _while_loop_loss(x, w):
    return while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * w), (torch.tensor(0), x))[1].sum()


def _scan_loss(x, w):
    return scan(lambda c, a: (c * w + a, c.sin()), torch.zeros(3), x)[1].sum()


@pytest.mark.parametrize("fn", [_map_loss, _while_loop_loss, _scan_loss])
def test_gradients_through_map_while_loop_and_scan(fn):
    x, w = torch.randn(4, 3), torch.randn(3)
    w_eager, w_compiled = w.clone().requires_grad_(), w.clone().requires_grad_()
    fn(x, w_eager).backward()
    symexec.compile(fn, backend="aot_eager")(x, w_compiled).backward()
    torch.testing.assert_close(w_compiled.grad, w_eager.grad)


def loop_any_size(x):
    return while_loop(lambda i, a: i < 5, lambda i, a: (i + 1, a * 2 - a.mean()), (torch.tensor(0), x))


@pytest.mark.parametrize("fn, make", [
    (loop_any_size, lambda n: (torch.randn(n),)),
    (scan_simple, lambda n: (torch.randn(n, 3),)),
])
def test_while_loop_and_scan_dynamic_shapes(fn, make):
    _, ours, theirs = run_both(fn, [make(n) for n in (3, 5, 7)], dynamic=True)
    assert ours.graph_count == theirs.graph_count


SCALE = 2
OFFSET = torch.ones(3)


def cond_reading_globals(x):
    return torch.cond(x.sum() > 0, lambda a: a * SCALE + OFFSET, lambda a: a - OFFSET, (x,))


def _rebind_scale():
    global SCALE
    SCALE = 5


def _rebind_offset():
    global OFFSET
    OFFSET = torch.full((3,), 7.0)


def test_cond_branch_globals_are_guarded():
    """What a branch reads while traced (a global int, a global tensor) is guarded like any
    read: rebinding either retraces."""
    saved = SCALE, OFFSET
    try:
        check_sequence(cond_reading_globals, [torch.randn(3).abs()], _rebind_scale, [torch.randn(3).abs()],
                       _rebind_offset, [torch.randn(3).abs()], [-torch.randn(3).abs()])
    finally:
        globals().update(SCALE=saved[0], OFFSET=saved[1])


def test_cond_branch_reading_a_scalar_breaks_and_raises_as_eager():
    def fn(x):
        return torch.cond(x.sum() > 0, lambda a: a * a.sum().item(), lambda a: a.cos(), (x,))
    compiled = check(fn, torch.randn(3))
    assert "item()" in _break_reasons(compiled)


def test_cond_with_an_int_predicate_runs_its_branch():
    def fn(x, p):
        return torch.cond(p, lambda a: a.sin(), lambda a: a.cos(), (x,))
    check_sequence(fn, [torch.randn(3), 1], [torch.randn(3), 0])


@pytest.mark.parametrize("fn, args", [
    (lambda x, y: torch.ops.higher_order.map_impl(lambda a, b: a * b, [x], [y]), (torch.randn(2, 3), torch.randn(3))),
    (lambda x: torch.ops.higher_order.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2),
                                                 (torch.tensor(0), x), ()), (torch.randn(3),)),
    (lambda x: torch.ops.higher_order.scan(lambda c, a: (c + a, c * 2), [torch.zeros(3)], [x], []),
     (torch.randn(4, 3),)),
])
def test_operators_called_directly(fn, args):
    check(fn, *args)
