"""A graph break inside a nested call compiles the callee's frame on its own (issue 11).

Where a break happens inside an inlined call, the outer frame breaks at the call and the call
runs through the callee's compiled stand-in: the callee's torch code lands in graphs of its
own, around its own break, as torch.compile compiles every frame. Each case runs eagerly and
compiled (``check``) and, where Dynamo sees the same break, makes as many graphs with as many
ops each as torch.compile (``assert_same_graphs_as_dynamo``).
"""

from __future__ import annotations

import functools
import gc
import weakref

import pytest
import torch
import torch._dynamo  # the reference, compared against over several calls
from helpers import (CountingBackend, assert_same_graphs_as_dynamo, check, check_sequence, copy_args, dynamo_graphs,
                     symexec_graphs)

import symexec


def _t(*shape):
    return torch.randn(*shape) if shape else torch.randn(4)


# -- kinds of callees ---------------------------------------------------------------------------
def leaf(x):
    y = x.exp()
    print("leaf")
    return y + 1


def middle(x):
    return leaf(x * 2) - 1


def _make_closure(k):
    def scaled(x):
        y = x * k
        print("scaled", k)
        return y - 1
    return scaled


scaled_by_3 = _make_closure(3)


def twice(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs) * 2
    return wrapper


@twice
def decorated(x):
    y = x.cos()
    print("decorated")
    return y + 1


class Scaler:
    def __init__(self, k):
        self.k = k

    def apply(self, x):
        y = x.sin()
        print("apply")
        return y * self.k


class Base:
    def apply(self, x):
        y = x.tanh()
        print("base")
        return y + 2


class Derived(Base):
    def apply(self, x):  # super() makes this a closure over __class__
        return super().apply(x * 3) - 1


scaler = Scaler(3.0)
partial_leaf = functools.partial(leaf)


def test_module_level_function():
    def fn(x):
        return leaf(x + 1) * 2

    check(fn, _t())
    assert_same_graphs_as_dynamo(fn, _t())


def test_closure():
    def fn(x):
        return scaled_by_3(x + 1) * 2

    check(fn, _t())
    ours, _ = assert_same_graphs_as_dynamo(fn, _t())
    assert ours.graph_count == 4  # fn's add; scaled's mul and sub; fn's mul


def test_closures_of_one_code_each_run_their_own_cells():
    # Both are guarded by their code only: the stand-in is looked up for the one called.
    def fn(x, f):
        return f(x + 1) * 2

    check_sequence(fn, [_t(), scaled_by_3], [_t(), _make_closure(5)], [_t(), scaled_by_3])


def test_closures_of_one_code_share_its_compiled_entries():
    # A closure made anew for each call is compiled once per code, as Dynamo's cache is one per
    # code object: its cells are arguments of the compiled code, their contents guarded (the int
    # turns symbolic once it changes), and no closure object is held.
    def fn(x, f):
        return f(x + 1) * 2

    compiled = symexec.compile(fn)
    for k in range(12):
        x = _t()
        closure = _make_closure(k)
        alive = weakref.ref(closure)
        assert torch.allclose(compiled(x, closure), fn(x, _make_closure(k)))
        del closure
        gc.collect()
        assert alive() is None  # (its cells' contents are guarded, not held)
    callees = compiled._symexec.callees
    assert not [key for key in callees.callee_wrappers if key.__code__ is scaled_by_3.__code__]
    states = [w._symexec for w in callees.wrappers.values() if w._symexec.fn.__qualname__ == scaled_by_3.__qualname__]
    assert len(states) == 1 and len(states[0].cache.entries) == 2  # k = 0, then k symbolic


def test_closures_of_one_code_with_their_own_defaults_and_cells():
    # Each closure's defaults are bound as its own call binds them; a parameter that is a cell
    # (an inner lambda closes over it) gets a new cell per call; a nonlocal write lands in the
    # closure's own cell.
    def make(k, default):
        count = 0

        def inner(x, y=default, *rest, scale=k, **extra):
            nonlocal count
            count += 1
            g = lambda: x * scale  # noqa: E731 - x is a cell of inner's frame
            symexec.graph_break()
            return g() + y + len(rest) + len(extra) + count

        return inner

    def fn(x, f, args, kwargs):
        return f(x + 1, *args, **kwargs) * 2

    compiled = symexec.compile(fn)
    steps = [(2, 1.0, (), {}), (3, 5.0, (7.0,), {}), (2, 1.0, (1.0, 2.0), {}), (4, 0.5, (1.0, 2.0, 3.0), {}),
             (2, 1.0, (), {"scale": 9, "z": 1})]
    for k, default, args, kwargs in steps:
        x = _t()
        ours, theirs = make(k, default), make(k, default)
        for _ in range(2):  # (the second call sees count 1)
            assert torch.equal(compiled(x, ours, args, kwargs), fn(x, theirs, args, kwargs))
        assert ours.__closure__[0].cell_contents == theirs.__closure__[0].cell_contents == 2


def test_a_closure_called_wrongly_raises_eagers_error():
    def fn(x, f):
        return f(x + 1, 1, 2, 3)

    check(fn, _t(), _make_closure(2))


def test_bound_method():
    def fn(x):
        return scaler.apply(x + 1) * 2

    check(fn, _t())
    assert_same_graphs_as_dynamo(fn, _t())


def test_method_calling_super():
    obj = Derived()

    def fn(x):
        return obj.apply(x + 1) * 2

    check(fn, _t())
    assert_same_graphs_as_dynamo(fn, _t())


def test_functools_wraps_wrapper():
    def fn(x):
        return decorated(x + 1) - 3

    check(fn, _t())
    ours, _ = assert_same_graphs_as_dynamo(fn, _t())
    assert ours.graph_count == 5  # fn's add | decorated's cos | its + 1 | the wrapper's * 2 | fn's - 3


def test_functools_partial():
    def fn(x):
        return partial_leaf(x + 1) * 2

    check(fn, _t())
    assert_same_graphs_as_dynamo(fn, _t())


def test_partial_made_in_the_traced_code():
    def fn(x):
        f = functools.partial(leaf)
        return f(x + 1) * 2

    check(fn, _t())
    assert_same_graphs_as_dynamo(fn, _t())


def test_two_levels_deep():
    def fn(x):
        z = x.sin()
        return middle(z) * z

    check(fn, _t())
    ours, _ = assert_same_graphs_as_dynamo(fn, _t())
    assert ours.graph_count == 6  # sin | mul (middle) | exp (leaf) | add (leaf) | sub (middle) | mul


def test_callee_called_twice_is_traced_once():
    def fn(x):
        return leaf(x) + leaf(x * 2)

    check(fn, _t())
    assert_same_graphs_as_dynamo(fn, _t())
    out = symexec.explain(fn, _t())
    leaf_entries = [r for r in out.functions if r.name == "leaf"]
    assert len(leaf_entries) == 1 and leaf_entries[0].kind == "callee"


def test_callee_recompiles_on_a_new_shape():
    def fn(x):
        return leaf(x + 1) * 2

    check_sequence(fn, [_t(4)], [_t(8)], [_t(16)], [_t(4)])
    ours, dynamo = CountingBackend(), CountingBackend()
    torch._dynamo.reset()
    compiled_ours = symexec.compile(fn, backend=ours)
    compiled_dynamo = torch.compile(fn, backend=dynamo)
    for size in (4, 8, 16):
        x = _t(size)
        compiled_ours(copy_args(x))
        compiled_dynamo(copy_args(x))
    torch._dynamo.reset()
    assert ours.op_counts() == dynamo.op_counts()
    leaf_wrapper = compiled_ours._symexec.callees.callee_wrappers[leaf]
    assert len(symexec.recompile_reasons(leaf_wrapper)) == 1  # 4 then 8: one retrace, dynamic from there


def rec(x, n):
    if n == 0:
        return x
    y = x * 2
    print(n)
    return rec(y, n - 1) + 1


def test_recursion_shares_the_functions_own_cache():
    check(rec, _t(), 3)
    # torch.compile also compiles the innermost call's `return (x,)`, a graph of no op, and a
    # graph of `n - 1` alone; symexec compiles no graph without an op, and runs one of numbers
    # only as Python.
    _, ours = symexec_graphs(rec, _t(), 3)
    _, dynamo = dynamo_graphs(rec, _t(), 3)
    assert ours.op_counts() == [n for n in dynamo.tensor_op_counts() if n] == [1, 1, 1]
    compiled = symexec.compile(rec)
    compiled(_t(), 3)
    assert compiled._symexec.callees.wrappers[rec]._symexec is compiled._symexec


# -- results equal eager's -------------------------------------------------------------------
def _raises_after_break(x):
    y = x * 2
    print("about to raise")
    if y.shape[0] == 4:
        raise ValueError("shape four")
    return y


def _mutates_after_break(x, log):
    y = x + 1
    print("mutating")
    log.append(y.shape[0])
    x.add_(1)
    return y


def test_exception_raised_by_the_callee():
    def fn(x):
        return _raises_after_break(x + 1)

    check(fn, _t(), expect_traced=True)


def test_mutations_by_the_callee():
    def fn(x, log):
        y = _mutates_after_break(x, log)
        return y * x

    check(fn, _t(), [])


def test_exception_of_the_callee_caught_by_the_caller():
    def fn(x):
        try:
            return _raises_after_break(x + 1)
        except ValueError as e:
            return x * len(str(e))

    check(fn, _t())
    check(fn, _t(3))


def test_callee_under_no_grad():
    def fn(x):
        with torch.no_grad():
            y = leaf(x * 2)
        return y + x

    check(fn, _t().requires_grad_())


def test_callee_through_star_arguments():
    def fn(x, args):
        return middle(*args, x + 1) * 2  # CALL_FUNCTION_EX

    check(fn, _t(), ())
    assert_same_graphs_as_dynamo(fn, _t(), ())


def _keywords(x, *, scale=1.0, shift=0.0):
    y = x * scale
    print("kw")
    return y + shift


def test_keyword_arguments_reach_the_callee():
    def fn(x):
        return _keywords(x, shift=2.0, scale=3.0) - 1

    check(fn, _t())
    assert_same_graphs_as_dynamo(fn, _t())


@pytest.mark.parametrize("make", [lambda: leaf, lambda: scaled_by_3, lambda: Outer(PrintingBlock())],
                         ids=["function", "closure", "module"])
def test_a_nested_break_keeps_no_tensor_of_the_call_alive(make):
    callee = make()

    def fn(x):
        return callee(x + 1) * 2

    compiled = symexec.compile(fn)
    gc.collect()
    gc.disable()  # by reference counts alone
    try:
        x = torch.randn(4)
        ref = weakref.ref(x)
        out = compiled(x)
        assert torch.allclose(out, fn(x))
        del x, out
        assert ref() is None
    finally:
        gc.enable()


# -- callees that run as they are -------------------------------------------------------------
@symexec.disable
def _disabled(x):
    return x * 5


def _gen(x):
    y = x * 2
    print("gen")
    yield y
    yield y + 1


def test_disabled_callee_runs_as_is():
    def fn(x):
        return _disabled(x + 1) * 2

    check(fn, _t())
    out = symexec.explain(fn, _t())
    assert [r.kind for r in out.functions if r.name == "_disabled"] == []
    assert out.graph_count == 2


def test_generator_callee_runs_as_is():
    def fn(x):
        total = x
        for item in _gen(x):
            total = total + item
        return total

    # The generator runs item by item, so its print breaks the graph in the loop: the frame
    # runs as its code (torch.compile skips it too) and the generator as it is.
    check(fn, _t(), expect_traced=False)
    out = symexec.explain(fn, _t())
    assert all(r.kind != "callee" for r in out.functions)


def test_function_made_in_the_traced_code_runs_as_is():
    def fn(x):
        k = 2

        def inner(y):
            print("inner")
            return y * k
        return inner(x + 1) - 1

    check(fn, _t())


# -- nn.Modules -------------------------------------------------------------------------------
class PrintingBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        print("block")
        return y.relu()


class BranchingBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if y.sum() > 0:
            y = y * 2
        return y.relu()


class BreakingBlock(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        symexec.graph_break()
        return y + 1


class Outer(torch.nn.Module):
    def __init__(self, block):
        super().__init__()
        self.pre = torch.nn.Linear(4, 4)
        self.block = block

    def forward(self, x):
        return self.block(self.pre(x)) + 1


class Deep(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Outer(PrintingBlock())
        self.post = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.post(self.inner(x * 2))


class Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([PrintingBlock() for _ in range(4)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


@pytest.mark.parametrize("block", [PrintingBlock, BranchingBlock], ids=["print", "data_dependent_if"])
def test_submodule_with_a_break(block):
    torch.manual_seed(0)
    model = Outer(block())
    check(model, _t())
    ours, _ = assert_same_graphs_as_dynamo(model, _t())
    assert ours.graph_count == 4  # pre | the block's linear... | the block's rest | + 1


def test_submodule_with_symexec_graph_break():
    model = Outer(BreakingBlock())
    check(model, _t())
    out = symexec.explain(model, _t())
    names = [[getattr(op, "__name__", op) for op in ops] for ops in out.ops_per_graph]
    assert names == [["linear"], ["mul"], ["add"], ["add"]]  # pre | block: y = x * 2 | y + 1 | + 1
    assert out.graph_break_count == 1


def test_submodules_two_levels_deep():
    torch.manual_seed(0)
    model = Deep()
    check(model, _t())
    assert_same_graphs_as_dynamo(model, _t())


def test_many_blocks_of_one_class_share_a_cache():
    torch.manual_seed(0)
    model = Stack()
    check(model, _t(), expect_traced=False)  # (the blocks' loop breaks: forward runs as its code, as torch.compile's)
    assert_same_graphs_as_dynamo(model, _t())


def test_submodule_hooks_still_run():
    torch.manual_seed(0)
    model = Outer(PrintingBlock())
    calls = []
    model.block.register_forward_pre_hook(lambda m, args: calls.append("pre"))
    model.block.register_forward_hook(lambda m, args, out: out * 2)
    check(model, _t())
    assert calls == ["pre"] * 4  # two rounds, eager and compiled
    assert "forward" not in vars(model.block)  # the compiled forward was only lent for the call
    backend = CountingBackend()
    symexec.compile(model, backend=backend)(_t())
    # (torch.compile also compiles the hook's own frame: one graph more, the hook's `* 2`)
    assert backend.op_counts() == [1, 1, 1, 1]


def test_training_flag_of_a_submodule_is_respected():
    class Dropping(torch.nn.Module):
        def forward(self, x):
            y = x * 2
            print("training" if self.training else "eval")
            return y + (1 if self.training else 2)

    model = Outer(Dropping())
    compiled = symexec.compile(model)
    for mode in ("train", "eval", "train"):
        getattr(model, mode)()
        x = _t()
        assert torch.allclose(compiled(x), model(x))


def test_submodule_with_its_own_call():
    class Calling(torch.nn.Module):
        def __call__(self, x):
            y = x.cos()
            print("call")
            return y * 2

    model = Outer(Calling())
    check(model, _t())
    assert_same_graphs_as_dynamo(model, _t())


# -- explain and fullgraph -------------------------------------------------------------------
def test_explain_counts_a_nested_break_once():
    def fn(x):
        z = x.sin()
        return middle(z) * z

    out = symexec.explain(fn, _t())
    assert out.graph_count == 6
    assert out.graph_break_count == 1
    (reason,) = out.break_reasons
    assert [frame[2] for frame in reason.user_stack] == ["fn", "middle", "leaf"]
    assert reason.function == "leaf"
    assert {r.name for r in out.functions} >= {"fn", "middle", "leaf"}


def test_explain_counts_a_callees_break_once_however_often_it_is_called():
    def fn(x):
        return leaf(x) + leaf(x * 2)

    out = symexec.explain(fn, _t())
    assert out.graph_break_count == 1


def _two_breaks(x):
    y = x + 1
    print("one")
    y = y * 2
    print("two")
    return y


def test_explain_keeps_two_breaks_of_one_callee():
    def fn(x):
        return _two_breaks(x) - 1

    out = symexec.explain(fn, _t())
    assert out.graph_break_count == 2


class _Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(4))

    def forward(self, x):
        return x * self.weight

    def scaled_twice(self, x):
        y = x * self.weight
        print("between")
        return y * 2

    @symexec.compile
    def compiled_method(self, x):
        return (x * self.weight).cos()


def test_explain_takes_what_compile_takes():
    # A bound method raised TypeError ("expects a function..."), where symexec.compile takes it.
    model, x = _Scaled(), _t()
    expected = model.scaled_twice(x)
    out = symexec.explain(model.scaled_twice, x)
    assert (out.graph_count, out.graph_break_count) == (2, 1)
    assert torch.equal(out.result, expected)
    assert out.fn_name == "_Scaled.scaled_twice" and out.filename == __file__
    assert out.source is not None and "def scaled_twice" in out.source[0][0]
    partial = symexec.explain(functools.partial(model.scaled_twice), x)
    assert (partial.graph_count, partial.graph_break_count) == (2, 1) and torch.equal(partial.result, expected)
    compiled = symexec.explain(symexec.compile(model.scaled_twice), x)  # compile's result, explained
    assert (compiled.graph_count, compiled.graph_break_count) == (2, 1)
    bound = symexec.explain(model.compiled_method, x)  # a compiled function bound as a method
    assert bound.graph_count == 1 and torch.equal(bound.result, (x * model.weight).cos())
    assert symexec.explain(model, x).graph_count == symexec.explain(symexec.compile(model), x).graph_count == 1
    with pytest.raises(TypeError, match="expects a function"):
        symexec.explain(42)


def test_fullgraph_still_raises_at_a_nested_break():
    def fn(x):
        return middle(x + 1)

    with pytest.raises(symexec.Unsupported):
        symexec.compile(fn, fullgraph=True)(_t())


# -- a user's functools.wraps wrapper of a compiled function ---------------------------------
@twice
@symexec.compile
def _compiled_then_wrapped(x):
    return x + 1


def test_wrapper_of_a_compiled_function_is_not_taken_for_it():
    # functools.wraps copies the compiled wrapper's marks onto the user's wrapper: its own code
    # (the `* 2`) must still run, traced, compiled again, disabled or explained.
    def fn(x):
        return _compiled_then_wrapped(x) - 1

    check(fn, _t())
    check(_compiled_then_wrapped, _t())
    x = _t()
    assert torch.allclose(symexec.disable(_compiled_then_wrapped)(x), (x + 1) * 2)
    assert torch.allclose(symexec.explain(_compiled_then_wrapped, x).result, (x + 1) * 2)


# -- locals a continuation gets: a function imported inside, a recursive inner function ---------
def test_function_imported_inside_from_a_torch_module_survives_a_break():
    def fn(x):
        from torch.nn.modules.utils import _pair  # a torch function traced into, held across the break

        y = x + 1
        print("between")
        return y * _pair(2)[0]

    check(fn, _t())
    assert_same_graphs_as_dynamo(fn, _t())


def test_recursive_inner_function_survives_a_break():
    def fn(x):
        def fact(n):
            return 1 if n == 0 else n * fact(n - 1)

        held = [fact]
        y = x + fact(2)
        print("between")
        # One function object, the one its own cell holds, in generated code too.
        return y * held[0](3), held[0] is fact, fact.__closure__[0].cell_contents is fact

    check(fn, _t())
    # As many graphs as torch.compile (whose result differs: its rebuilt cell holds a second
    # function object, so `is` says False where eager says True).
    ours = symexec_graphs(fn, _t())[1]
    assert ours.graph_count == dynamo_graphs(fn, _t())[1].graph_count == 2


def test_recursive_inner_function_called_at_a_break():
    def fn(x, n):
        def rec(k, me):
            if k == 0:
                return x, me is rec  # the function called is the one its cell holds
            y, same = rec(k - 1, me)
            print("level", k)
            return y * 2 + 1, same

        return rec(n, rec)

    # symexec captures nothing here: y * 2 + 1 runs in the recursive calls after the break
    check(fn, _t(), 3, captured=False)


def test_inner_function_held_twice_is_one_object_after_a_break():
    def fn(x):
        def g(t):
            return t * 2

        held = [g, g]
        y = x + 1
        print("between")
        return held[0](y), held[0] is held[1]

    check(fn, _t())


# A zero-argument super() after a break in the method: CPython reads the frame's first local
# slot (and the __class__ cell), so the continuation must hold the method's first argument there.
class _Greeter:
    def __call__(self, x):
        return x * 2

    def scale(self, x, k):
        return x * k


class _LoudGreeter(_Greeter):
    def __call__(self, arg):
        print("hi")  # a break with nothing on the stack: the first slot is a live local ('arg')
        return super().__call__(arg) + 1

    def scale(self, x, k):
        return len(str(print("mid"))) + super().scale(x, k)  # a break with values on the stack


class _LoudModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def __call__(self, *args, **kwargs):
        print("calling")
        return super().__call__(*args, **kwargs)

    def forward(self, x):
        return self.lin(x)


@pytest.mark.parametrize("call", [
    lambda x: _LoudGreeter()(x.sin()).cos(),
    lambda x: _LoudGreeter().scale(x.sin(), 3).cos(),
    lambda x: _LOUD_MODULE(x.sin()).cos(),
], ids=["live_local_first", "stack_value_first", "module_call"])
def test_zero_argument_super_after_a_break_in_the_method(call):
    check(call, torch.randn(3))


_LOUD_MODULE = _LoudModule()


# -- a break inside what an attribute load or an autograd.Function runs --------------------------
class _Lazy:
    """A property, a descriptor with a Python __get__ and a cached_property, each breaking."""

    def __init__(self, x):
        self.x = x

    @property
    def value(self):
        y = self.x.sin()
        print("value")
        return y * 2

    @functools.cached_property
    def cached(self):
        y = self.x.cos()
        print("cached")
        return y + 1


class _Doubled:
    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        y = obj.x.exp()
        print("doubled")
        return y * 2


class _LazyWithDescriptor(_Lazy):
    doubled = _Doubled()


def _through_property(x):
    return _LazyWithDescriptor(x + 1).value - 1


def _through_descriptor(x):
    return _LazyWithDescriptor(x + 1).doubled - 1


@pytest.mark.parametrize("fn", [_through_property, _through_descriptor])
def test_a_break_inside_an_attributes_getter_compiles_the_getter(fn):
    # torch.compile cannot resume after a load (2.13 runs all of fn eagerly, 0 graphs): its
    # hook compiles the getter's frame where the load is deeper (gpytorch's lazy covariance).
    check(fn, _t())
    _, ours = symexec_graphs(fn, _t())
    assert ours.op_counts() == [1, 1, 1, 1]  # fn's add; the getter's op before and after its print; fn's sub


def test_a_break_inside_a_cached_property_compiles_its_function():
    def fn(lazy):
        return lazy.cached * 3

    check(fn, _Lazy(_t()))
    _, ours = symexec_graphs(fn, _Lazy(_t()))
    assert ours.op_counts() == [1, 1, 1]  # the function's cos; its add; fn's mul


def test_a_getter_raising_attribute_error_falls_back_to_getattr():
    class WithFallback:
        def __init__(self, x):
            self.x = x

        @property
        def missing(self):
            print("missing")
            raise AttributeError("missing")

        def __getattr__(self, name):
            return self.x * 5

    def fn(x):
        return WithFallback(x).missing + 1

    check(fn, _t())


def test_an_instance_attribute_shadows_a_non_data_descriptor_at_a_break():
    def fn(lazy):
        return lazy.doubled + 1

    lazy = _LazyWithDescriptor(_t())
    lazy.__dict__["doubled"] = torch.ones(4)  # the instance's own wins over a non-data descriptor
    check(fn, lazy)


class _ScaleFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, f):
        y = x.sin()
        z = f(y)
        return z * 2

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def test_an_autograd_function_called_at_a_break_runs_its_forward_compiled():
    # apply() given a function made in the trace, with an input that requires grad, breaks:
    # forward still runs compiled, as the frame torch.compile's hook compiles, and autograd
    # still records the class's own backward.
    def fn(x):
        return _ScaleFn.apply(x + 1, lambda t: t * 3) - 1

    check(fn, _t().requires_grad_())
    x = _t().requires_grad_()
    backend = CountingBackend()
    out = symexec.compile(fn, backend=backend)(x)
    assert torch.allclose(out, (x + 1).sin() * 6 - 1)
    assert type(out.grad_fn.next_functions[0][0]).__name__ == "_ScaleFnBackward"
    out.sum().backward()
    assert torch.equal(x.grad, torch.ones(4))  # the class's backward (the true gradient is 6 cos(x + 1))
    # fn's add; forward's sin, the lambda's mul (inlined) and its own mul; fn's sub
    assert backend.op_counts() == [1, 3, 1]


def test_a_graph_of_sizes_only_runs_without_a_backend():
    # After the break, the continuation's only work is size arithmetic: nothing to compile.
    def fn(x):
        y = x * 2
        symexec.graph_break()
        return x.size(0) * 3, y

    backend = CountingBackend()
    compiled = symexec.compile(fn, backend=backend, dynamic=True)
    for n in (4, 5, 6):
        x = torch.randn(n)
        assert compiled(x)[0] == n * 3
    assert all(count > 0 for count in backend.op_counts())


def _scaled_pieces(x):
    for k in range(3):
        yield leaf(x * k)  # leaf breaks (its print): compiled where the generator calls it


def test_a_generator_run_as_is_still_compiles_what_it_calls():
    # A generator's frames run as they are (no replacement stands in for one); what they call
    # runs through its compiled stand-in, as torch.compile's hook compiles those frames (pyro's
    # loop over its particles' traces).
    def fn(x):
        total = x * 0
        for piece in _scaled_pieces(x + 1):
            total = total + piece
        return total

    check(fn, _t(), expect_traced=False)  # (fn runs as its code: the break is in its loop)
    _, ours = symexec_graphs(fn, _t())
    _, dynamo = dynamo_graphs(fn, _t())
    assert sum(ours.op_counts()) >= sum(dynamo.tensor_op_counts())
    assert any(n == 1 and "exp" in gm.code for n, gm in zip(ours.op_counts(), ours.graphs))  # leaf's own graph


def test_the_jit_tracing_state_is_answered_while_tracing():
    # torch._C._get_tracing_state() is None outside torch.jit.trace (guarded by every entry):
    # it made graphs of that one call (pyro's distributions ask it).
    def fn(x):
        if torch._C._get_tracing_state() is None:
            return x + 1
        return x - 1

    check(fn, _t())
    _, ours = symexec_graphs(fn, _t())
    assert ours.graph_count == 1 and ours.op_counts() == [1]


def test_a_function_made_per_call_stays_alive_through_its_compiled_call():
    # Its compiled wrapper holds it weakly; called at a break, nothing else held it, and a miss
    # inside (a new size) found it collected: AttributeError to the user.
    def fn(x):
        return (lambda t: leaf(t) * 2)(x + 1)

    def comprehension(x):
        members = {x, x + 1}  # (iterating a set of tensors made here breaks: their order is their addresses)
        return [t.sum() for t in members], members.pop()  # (3.11: the comprehension, a function made per call,
        # handed to the continuation, its code guarded: the continuation called the first call's)

    check_sequence(fn, [_t(3)], [_t(4)], [_t(5)], [_t(3)])
    compiled = symexec.compile(comprehension)
    for size in (3, 3, 4, 5):
        x = _t(size)
        sums, popped = compiled(x)
        assert sorted(s.item() for s in sums) == sorted([x.sum().item(), (x + 1).sum().item()])
        assert popped.shape == x.shape


def test_torch_distributions_called_at_a_break_run_as_under_dynamo():
    # torch's own frames run as they are at a break (Normal.__init__'s validation branches on a
    # tensor, log_prob's too), as Dynamo's hook skips them: the graphs are torch.compile's.
    def fn(loc, x):
        d = torch.distributions.Normal(loc, torch.ones(()), validate_args=True)
        return d.log_prob(x) * 2

    check(fn, torch.randn(4), torch.randn(4))
    assert_same_graphs_as_dynamo(fn, torch.randn(4), torch.randn(4))


class _Meta(type):
    def __call__(cls, *args, **kwargs):
        made = super().__call__(*args, **kwargs)
        made.by_meta = True
        return made


class _Validated(metaclass=_Meta):
    def __init__(self, v):
        self.v = torch.sin(v) * 2
        if v.sum() > 0:  # (a break inside __init__)
            self.v = self.v + 1


class _Plain:
    def __init__(self, v):
        self.v = torch.cos(v)
        if v.sum() > 0:
            self.v = self.v - 1


class _Handler:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, x):
        y = torch.tanh(x)
        if y.sum() > 0:
            y = y * 3
        return self.fn(y)


def test_a_class_or_callable_object_called_at_a_break_runs_its_python_code_compiled():
    # A metaclass's __call__, the class's __init__ (reached through type.__call__, directly or by
    # super().__call__), an object's __call__: their frames compiled as Dynamo's hook compiles them.
    def fn(x, handler):
        a = _Validated(x)
        b = _Plain(x)
        return a.v + b.v + handler(x), a.by_meta

    check(fn, torch.randn(4), _Handler(torch.exp))
    assert_same_graphs_as_dynamo(fn, torch.randn(4), _Handler(torch.exp))  # (sin and mul, cos, tanh: each frame's)


def test_a_class_whose_init_returns_a_value_raises_as_eager():
    class Odd:
        def __init__(self, v):
            if v.sum() > 0:
                pass
            return 1  # noqa: PLE0101 - TypeError at construction

    def fn(x):
        return Odd(x)

    check(fn, torch.randn(3), expect_traced=False)


class Looping(torch.nn.Module):
    """A decoding loop's shape (HF generate(): ``model_forward = self.__call__``, called in a loop
    that breaks, so the loop runs as its code): the bound ``__call__`` runs forward compiled."""

    def __init__(self):
        super().__init__()
        self.inner = Outer(torch.nn.Linear(4, 4))

    def forward(self, x):
        step = self.inner.__call__
        for _ in range(3):
            x = step(x)
            if x.sum() > 1e6:  # a break in the loop
                break
        return x


def test_a_modules_bound_call_at_a_break_runs_its_forward_compiled():
    torch.manual_seed(0)
    model = Looping()
    check(model, _t(), expect_traced=False)
    ours, dynamo = assert_same_graphs_as_dynamo(model, _t())
    assert ours.op_counts() == [3, 3]  # Outer: pre, block, + 1 (again once x requires grad)
