"""Graph breaks and continuation functions (SPEC section 6): the answer, the printed output and the
replayed side effects must match eager, and the graph count must match torch.compile."""

import warnings

import torch

import symexec
from helpers import CountingBackend, assert_same_graphs_as_dynamo, check

LOG = []


def _t(*shape):
    return torch.randn(*shape)


def _breaks(x):
    print("inside helper")
    return x * 3


def _helper_with_torch_around_break(x):
    y = x.sin()
    print("helper", y.shape)
    return y.cos()


def test_print_between_torch_ops():
    def fn(a):
        b = a + 2
        print("Hi")
        return b + a

    check(fn, _t(3))


def test_print_twice_gives_three_graphs_like_dynamo():
    def fn(a):
        b = a + 2
        print("one")
        c = b * a
        print("two")
        return c - 1

    assert_same_graphs_as_dynamo(fn, _t(3))


def test_continuation_cached_on_later_calls():
    backend = CountingBackend()

    def fn(a):
        b = a + 2
        print("Hi")
        return b + a

    compiled = symexec.compile(fn, backend=backend)
    for _ in range(3):
        a = _t(3)
        assert torch.equal(compiled(a), (a + 2) + a)
    assert backend.graph_count == 2


def test_live_locals_of_every_kind_cross_the_break():
    def fn(x, n, items):
        t = x * 2
        s = "label"
        d = {"k": x + 1}
        print("break", n)
        return t + d["k"] * n, s, items[0] + len(items)

    check(fn, _t(2), 3, [5, 6])


def test_list_mutation_before_break_is_replayed():
    def fn(items, x):
        items.append(x * 2)
        print("break")
        items.append(x * 3)
        return len(items)

    check(fn, [], _t(2))


def test_dict_and_attribute_mutation_before_break():
    class Obj:
        pass

    def fn(d, x):
        d["a"] = x + 1
        o = Obj()
        o.v = x * 2
        print("break")
        return d["a"] + o.v

    check(fn, {}, _t(2))


def test_global_mutation_before_break():
    def fn(x):
        LOG.append(x.shape[0])
        print("break")
        return x + LOG[-1]

    del LOG[:]
    check(fn, _t(2), calls=1)
    assert LOG == [2, 2]  # once from the eager run, once from the compiled run


def test_break_inside_inlined_helper():
    def fn(x):
        y = x + 1
        z = _breaks(y)
        return z - x

    check(fn, _t(3))


def test_torch_code_of_broken_callee_is_still_compiled():
    def fn(x):
        return _helper_with_torch_around_break(x + 1) * 2

    ours, dynamo = assert_same_graphs_as_dynamo(fn, _t(3))
    assert ours.graph_count >= 2


def test_break_in_loop_still_correct():
    def fn(x):
        for i in range(3):
            x = x + i
            print("step", i)
        return x

    check(fn, _t(2), expect_traced=False)


def test_data_dependent_branch_breaks():
    def fn(x):
        y = x.cos()
        if y.sum() > 1:
            y = y * 2
        return y + 1

    check(fn, _t(4))


def test_break_with_values_on_the_stack():
    def fn(x):
        return (x + 1, print("mid"), x * 2)

    check(fn, _t(2))


def test_break_inside_with_no_grad():
    def fn(x):
        with torch.no_grad():
            y = x * 2
            print("in no_grad")
            z = y + 1
        return z, z.requires_grad

    check(fn, torch.ones(2, requires_grad=True))


def test_a_graph_that_only_enters_no_grad_is_dropped():
    # (the graph before the break held only the grad-mode switch: one graph more than
    # torch.compile) the code sets the mode instead
    def fn(x):
        with torch.no_grad():
            symexec.graph_break()
            return x + 1, torch.is_grad_enabled()

    check(fn, torch.ones(2, requires_grad=True))
    backend = CountingBackend()
    symexec.compile(fn, backend=backend)(torch.ones(2, requires_grad=True))
    assert backend.graph_count == 1


def test_user_exception_after_break_propagates():
    def fn(x, n):
        y = x + 1
        print("before")
        if n > 0:
            raise ValueError(f"bad n {n}")
        return y

    check(fn, _t(2), 1, expect_traced=False)


def test_explicit_graph_break():
    def fn(x):
        y = x + 1
        symexec.graph_break()
        return y * 2

    backend = CountingBackend()
    compiled = symexec.compile(fn, backend=backend)
    x = _t(2)
    assert torch.equal(compiled(x), (x + 1) * 2)
    assert backend.graph_count == 2


def test_no_graph_of_only_unused_size_arithmetic():
    # (the sizes' arithmetic was recorded, dropped as dead when the graph closed, and the empty
    # graph still went to the backend: generate() compiled `def forward(self): return ()`)
    def fn(x):
        x.size(0) + 1
        symexec.graph_break()
        return x * 2
    backend = CountingBackend()
    compiled = symexec.compile(fn, backend=backend, dynamic=True)
    x = torch.randn(3)
    assert torch.equal(compiled(x), fn(x))
    assert backend.op_counts() == [1]


# -- a graph break in a loop: the frame runs as its code, what it calls compiled, as torch.compile
# skips such a frame ("graph break in loop") and its frame hook compiles the calls.

def _layer(x):
    return x.sin() * 2


def _prints_in_a_loop(x):
    x = x + 1
    for i in range(4):
        x = _layer(x)
        print(i)
    return x


def test_break_in_a_loop_runs_the_frame_as_its_code_like_torch_compile():
    # (a continuation inside the loop was made and traced again for the loop's next turns)
    check(_prints_in_a_loop, _t(3), expect_traced=False)  # (its own entry runs its code)
    ours, dynamo = assert_same_graphs_as_dynamo(_prints_in_a_loop, _t(3))
    assert ours.op_counts() == [2]  # _layer's, compiled once at its call site
    report = symexec.explain(_prints_in_a_loop, _t(3))
    assert [r.lineno for r in report.break_reasons] == [_prints_in_a_loop.__code__.co_firstlineno + 4]
    assert "in a loop" in report.break_reasons[0].reason


def _counts_by_turn(x, y):
    # (TorchBench's maml: a list indexed by the loop's index after a .item() break in the loop)
    corrects = [0 for _ in range(15)]
    for k in range(14):
        x = _layer(x)
        correct = (x > y).sum().item()
        corrects[k + 1] = corrects[k + 1] + correct
    return torch.tensor(corrects), x


def test_break_in_a_loop_reading_a_list_by_the_index_does_not_retrace():
    # (its continuation retraced on every turn, `L['k'] == 1`, until the cache size limit)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no cache-limit warning
        check(_counts_by_turn, _t(4), _t(4), expect_traced=False)
    assert_same_graphs_as_dynamo(_counts_by_turn, _t(4), _t(4))


def _breaks_before_a_loop(x):
    y = x * 2
    print("before")
    for i in range(3):
        y = y + i
    return y


def test_break_before_a_loop_still_splits():
    check(_breaks_before_a_loop, _t(3))
    ours, _ = assert_same_graphs_as_dynamo(_breaks_before_a_loop, _t(3))
    assert ours.graph_count == 2


def _while_with_a_data_dependent_exit(x):
    steps = 0
    while bool(x.sum() < 10):  # (a break in the loop's own condition)
        x = x + 1
        steps += 1
    return x, steps


def test_data_dependent_while_condition_is_a_break_in_a_loop():
    check(_while_with_a_data_dependent_exit, torch.zeros(2), expect_traced=False)
    assert_same_graphs_as_dynamo(_while_with_a_data_dependent_exit, torch.zeros(2))


def _calls_a_breaking_helper_in_a_loop(x):
    for _ in range(3):
        x = _breaks(x)  # (the break is inside the callee, whose own frame breaks, not in a loop)
    return x


def test_a_callee_that_breaks_inside_a_loop_is_compiled_around_its_break():
    check(_calls_a_breaking_helper_in_a_loop, _t(2), expect_traced=False)
    ours, _ = assert_same_graphs_as_dynamo(_calls_a_breaking_helper_in_a_loop, _t(2))
    assert ours.op_counts() == [1]


def test_a_break_after_a_try_except_is_not_in_a_loop():
    # 3.12 places an except block after the function's end and jumps back from it: that jump
    # made any break after the try look like one inside a loop, and the frame ran as its code.
    def fn(x, d):
        try:
            y = d["missing"]
        except KeyError as e:
            y = len(str(e))
        z = x * y
        print("between")
        return z + 1

    check(fn, torch.randn(3), {})
    assert symexec.explain(fn, torch.randn(3), {}).graph_count == 2


def test_a_break_in_a_loop_through_its_handler_is_in_a_loop():
    # (a `continue` from an except block is the loop's back edge, reached from the break)
    def fn(x, n):
        for i in range(n):
            try:
                x = x + i
                print("step")
            except RuntimeError:
                continue
        return x

    check(fn, torch.randn(3), 3, expect_traced=False)


def test_the_code_at_a_break_keeps_nothing_alive_the_continuation_does_not_get():
    # The graph's outputs and the temporaries stayed in the replacement's frame while the
    # continuation ran: a value eager no longer names stayed alive (a weakref to it was not
    # dead, its memory not free).
    import weakref

    def fn(x):
        y = x * 2
        r = weakref.ref(y)  # (of a value the trace made: a break)
        y = None
        return r() is None, x + 1

    check(fn, torch.randn(3))
    assert symexec.compile(fn)(torch.randn(3))[0] is True
