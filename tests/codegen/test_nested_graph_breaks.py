"""Nested graph breaks (``symexec.config.nested_graph_breaks``, torch.compile's option of the same
name): a break inside an inlined call goes on inside the callee.

The graph before the break spans the caller and the callee; after the instruction runs, the
callee's continuation hands its result to the caller's, compiled as one function, so the graph
after the break spans both too. Each case runs eagerly and compiled (``check``: results, printed
output, mutated inputs) and is compared with torch.compile under the same option (graphs, ops
per graph). Where the break cannot go on inside the callee (a ``try`` or ``with`` around the
call, a loop, a callee with cells) the caller breaks at the call, as with the option off.
"""

from __future__ import annotations

import contextlib

import pytest
import torch
import torch._dynamo  # the reference, compared against with the same option
from helpers import CountingBackend, assert_same, assert_same_graphs_as_dynamo, check, copy_args, symexec_graphs

import symexec


@pytest.fixture(autouse=True)
def nested_breaks():
    before = symexec.config.nested_graph_breaks
    symexec.config.nested_graph_breaks = True
    try:
        with torch._dynamo.config.patch(nested_graph_breaks=True):
            yield
    finally:
        symexec.config.nested_graph_breaks = before


def _t(*shape):
    return torch.randn(*shape or (4,))


def same_as_dynamo(fn, *args):
    check(fn, *args)
    return assert_same_graphs_as_dynamo(fn, *args)


# -- callees -------------------------------------------------------------------------------------
G = torch.tensor([0.5, 0.5, 0.5, 0.5])


def branches_on_a_global(s):
    if G[0] < 10:
        return s * s
    return s


def branches_on_its_argument(s):
    s = s + 1
    if s.sum() > 0:
        return s * 2
    return s - 2


def prints(s):
    s = s * 2
    print("inside", s.shape)
    return s + 1


def graph_break_twice(s):
    s = s.sin()
    torch._dynamo.graph_break()  # (symexec honours torch's as its own)
    s = s.cos()
    torch._dynamo.graph_break()
    return s.exp()


def middle(s):
    return prints(s * 3) - 1


class Scaler:
    def __init__(self, k):
        self.k = k

    def apply(self, s):
        s = s * self.k
        print("scaling by", self.k)
        return s + self.k


# -- the cases -----------------------------------------------------------------------------------
def test_data_dependent_branch_in_the_callee():
    def fn(x, y):
        x = x + 1
        y = branches_on_a_global(y)
        y = y + 10
        return x * y

    ours, _ = same_as_dynamo(fn, _t(), _t())
    assert ours.graph_count == 2


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_branch_on_the_callees_own_values(sign):
    def fn(x):
        return branches_on_its_argument(x.abs() * sign) * 3

    same_as_dynamo(fn, _t())


def test_print_in_the_callee_keeps_its_place_in_the_output():
    def fn(x):
        print("before")
        y = prints(x + 1)
        print("after")
        return y.relu()

    ours, _ = same_as_dynamo(fn, _t())
    assert ours.graph_count == 3  # (the caller's own prints break too)


def test_two_levels_deep():
    def fn(x):
        return middle(x.cos()) + 1

    ours, _ = same_as_dynamo(fn, _t())
    assert ours.graph_count == 2


def test_a_callee_that_breaks_twice():
    def fn(x):
        y = x * 2
        return graph_break_twice(y) + y

    ours, _ = same_as_dynamo(fn, _t())
    assert ours.graph_count == 3


def test_caller_values_under_the_call_on_the_stack():
    def fn(x):
        a = x.sum()
        return (a, [x + 1, prints(x), x - 1], a * 2)

    same_as_dynamo(fn, _t())


def test_method_of_an_object():
    scaler = Scaler(3.0)

    def fn(x):
        return scaler.apply(x - 1) / 2

    ours, _ = same_as_dynamo(fn, _t())
    assert ours.graph_count == 2


def test_keyword_and_star_arguments():
    def fn(x, extra):
        a = Scaler.apply(Scaler(2.0), s=x)
        b = prints(*extra)
        return a + b

    same_as_dynamo(fn, _t(), (_t(),))


def test_mutations_before_and_after_the_break():
    def callee(items, s):
        items.append(s * 2)
        print("between")
        items.append(s * 3)
        return len(items)

    def fn(x, items):
        n = callee(items, x)
        items.append(x + n)
        return n

    check(fn, _t(), [])


def test_exception_raised_after_the_break_reaches_the_caller_of_the_compiled_function():
    def callee(s):
        s = s + 1
        print("then raising")
        raise ValueError(f"bad {s.shape}")

    def fn(x):
        return callee(x * 2) + 1

    with pytest.raises(ValueError, match="bad"):
        fn(_t())
    with pytest.raises(ValueError, match="bad"):
        symexec.compile(fn)(_t())


def test_a_try_around_the_call_breaks_at_the_call():
    # (torch.compile goes on inside the callee here too, in 2 graphs: symexec does not yet carry
    # a caller's handler into the continuations)
    def callee(s):
        s = s * 2
        print("inside")
        if s.sum() > 1e9:
            raise KeyError("never")
        return s

    def fn(x):
        try:
            y = callee(x)
        except KeyError:
            y = x
        return y + 1

    _, ours = symexec_graphs(fn, _t())
    check(fn, _t())
    assert ours.graph_count == 3  # at the call: the callee's own two graphs, the caller's rest


def test_a_loop_in_the_callee_breaks_at_the_call():
    def callee(s):
        for i in range(3):
            s = s * 2
            print("round", i)
        return s

    def fn(x):
        return callee(x + 1) - 1

    check(fn, _t())


def test_callee_with_an_inner_function():
    def callee(s):
        k = s.sum()

        def scaled(t):
            return t * k

        print("inside")
        return scaled(s)

    def fn(x):
        return callee(x + 1) - 1

    ours, _ = same_as_dynamo(fn, _t())
    assert ours.graph_count == 2


def test_closures_of_one_code_share_the_continuation():
    def make(k):
        def scaled(t):
            t = t * k
            print("scaled by", k)
            return t + k
        return scaled

    by_two, by_three = make(torch.tensor(2.0)), make(torch.tensor(3.0))

    def fn(x, f):
        return f(x + 1) - 1

    backend = CountingBackend()
    compiled = symexec.compile(fn, backend=backend)
    for f in (by_two, by_three, by_two, by_three):
        x = _t()
        assert_same(fn(copy_args(x), f), compiled(x, f))
    assert backend.graph_count == 2  # (the cells are arguments: one continuation for both)


def test_a_closure_cell_written_after_the_break():
    count = 0

    def bump(t):
        nonlocal count
        t = t * 2
        print("bumping")
        count += 1
        return t + count

    def fn(x):
        return bump(x) + bump(x)

    compiled = symexec.compile(fn)
    expected = fn(torch.ones(2))
    count = 0
    got = compiled(torch.ones(2))
    assert_same(expected, got)
    assert count == 2


def test_closure_made_per_call():
    def fn(x):
        k = x.sum()

        def inner(t):
            t = t * 2
            print("inner")
            return t + k

        return inner(x) + 1

    same_as_dynamo(fn, _t())


def test_later_calls_reuse_the_entries():
    def fn(x):
        return prints(x + 1) * 2

    backend = CountingBackend()
    compiled = symexec.compile(fn, backend=backend)
    for _ in range(5):
        x = _t()
        assert_same(fn(copy_args(x)), compiled(x))
    assert backend.graph_count == 2


def test_fullgraph_still_raises():
    def fn(x):
        return prints(x) + 1

    with pytest.raises(symexec.Unsupported):
        symexec.compile(fn, fullgraph=True)(_t())


def test_the_option_off_compiles_the_callee_on_its_own():
    def fn(x, y):
        x = x + 1
        return x * branches_on_a_global(y)

    symexec.config.nested_graph_breaks = False
    with torch._dynamo.config.patch(nested_graph_breaks=False):
        ours, _ = same_as_dynamo(fn, _t(), _t())
    assert ours.graph_count == 4


def test_training_through_a_nested_break_with_aot_eager():
    layer = torch.nn.Linear(4, 4)

    def callee(h):
        h = layer(h).tanh()
        print("mid")
        return h * 2

    def fn(x):
        return callee(x + 1).sum()

    x = torch.randn(3, 4)
    expected = fn(x)
    expected.backward()
    grads = [p.grad.clone() for p in layer.parameters()]
    layer.zero_grad()
    compiled = symexec.compile(fn, backend="aot_eager")
    got = compiled(x)
    got.backward()
    assert_same(expected, got)
    for p, g in zip(layer.parameters(), grads):
        assert_same(g, p.grad)
    assert len(symexec.explain(fn, x).graphs) == 2


def test_grad_mode_set_in_the_caller_holds_in_the_continuation():
    def fn(x):
        with contextlib.nullcontext():
            pass
        torch.set_grad_enabled(False)
        y = prints(x * 2)
        torch.set_grad_enabled(True)
        return y

    x = torch.randn(4, requires_grad=True)
    check(fn, x)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, h):
        h = self.linear(h).relu()
        print("block", h.shape)
        return h + 1


class Net(torch.nn.Module):
    def __init__(self, depth=3):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block() for _ in range(depth))
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x):
        x = x * 2
        x = self.blocks[0](x)
        x = self.blocks[1](x) * 3
        return self.head(x)


def test_a_submodules_forward_goes_on_inside_it():
    net = Net()

    def fn(x):
        return net(x).sum()

    ours, _ = same_as_dynamo(fn, torch.randn(2, 4))
    assert ours.graph_count == 3


def test_a_submodule_with_a_hook_breaks_at_its_call():
    net = Net()
    seen = []
    net.blocks[0].register_forward_hook(lambda m, i, o: seen.append(o.shape))

    def fn(x):
        return net(x).sum()

    check(fn, torch.randn(2, 4))
    assert seen


def test_through_functools_partial():
    import functools

    scaled = functools.partial(Scaler.apply, Scaler(2.0))

    def fn(x):
        return scaled(x + 1) * 2

    ours, _ = same_as_dynamo(fn, _t())
    assert ours.graph_count == 2


def test_a_nested_break_that_cannot_be_made_breaks_at_the_call():
    import random

    def fn(x):
        rng = random.Random()
        rng.seed(3)  # (random.py's seed: super().seed(a), a break whose stack holds a super object)
        return x * rng.random()

    check(fn, _t(), expect_reuse=False)


def test_a_break_inside_the_standard_librarys_code_is_made_at_the_users_call():
    import functools

    def fn(x):
        @functools.singledispatch
        def f(a):
            return 0

        @f.register
        def _(a: int):  # (register reads the annotations through typing: a break inside functools)
            return 1
        return x + f(1) + f("a")

    check(fn, _t())
