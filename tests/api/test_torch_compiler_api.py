"""torch's compiler API in user code (torch.compiler.*, torch._dynamo.*), honoured as
torch.compile honours it: against eager, and graph counts against torch.compile. Cases after
PyTorch's test_decorators.py and test_misc.py."""

import sys
import types
import warnings

import pytest
import torch
import torch._dynamo  # the user's code calls it (symexec itself never imports it)

import symexec
from helpers import (CountingBackend, assert_same, assert_same_graphs_as_dynamo, check, check_sequence, copy_args,
                     run_both)
from symexec.torch_api import compiler_api_kind


def _cosines(x):
    x = torch.cos(x)
    x = torch.cos(x)
    torch._dynamo.graph_break()
    x = torch.cos(x)
    x = torch.cos(x)
    torch._dynamo.graph_break()
    return torch.cos(torch.cos(x))


def test_torch_dynamo_graph_break_breaks_like_symexecs_own():
    check(_cosines, torch.randn(4, 5))
    ours, dynamo = assert_same_graphs_as_dynamo(_cosines, torch.randn(4, 5))
    assert ours.graph_count == 3 and ours.op_counts() == [2, 2, 2]
    out = symexec.explain(_cosines, torch.randn(4, 5))
    assert [b.reason for b in out.break_reasons] == ["torch._dynamo.graph_break() was called"] * 2


def test_graph_break_with_a_message_and_imported_by_name():
    from torch._dynamo import graph_break

    def fn(x):
        y = x.sin()
        graph_break("here")
        return y + 1

    check(fn, torch.randn(3))
    assert_same_graphs_as_dynamo(fn, torch.randn(3))


def test_a_users_function_named_like_torchs_is_not_torchs():
    def graph_break():
        return torch.ones(1)

    graph_break.__module__ = "torch._dynamo.decorators"  # claims to be torch's, is not the one it holds
    assert compiler_api_kind(graph_break) is None
    assert compiler_api_kind(torch._dynamo.graph_break) == "graph_break"

    def fn(x):
        return x + graph_break()

    check(fn, torch.randn(2))  # traced into, no break
    assert symexec.explain(fn, torch.randn(2)).graph_break_count == 0


def _disabled_callee(marker):
    @marker
    def log_stats(t):
        return t * 2

    def fn(x):
        return log_stats(x.sin()).cos()

    return fn


def _disable_with_reason(fn):
    return torch._dynamo.disable(reason="io")(fn)


@pytest.mark.parametrize("marker", [
    torch._disable_dynamo,
    torch.compiler.disable, torch._dynamo.disable,
    lambda fn: torch._dynamo.disable(fn, recursive=False),
    lambda fn: torch.compiler.disable(recursive=False)(fn),
    _disable_with_reason,
], ids=["torch_internal_spelling", "compiler", "dynamo", "nonrecursive", "nonrecursive_as_call", "with_reason"])
def test_torch_disable_runs_the_function_at_a_break(marker):
    fn = _disabled_callee(marker)
    check(fn, torch.randn(4))
    ours, _ = assert_same_graphs_as_dynamo(fn, torch.randn(4))
    assert ours.graph_count == 2
    out = symexec.explain(fn, torch.randn(4))
    reason = " (io)" if marker is _disable_with_reason else ""
    assert [b.reason for b in out.break_reasons] == [
        f"_disabled_callee.<locals>.log_stats() is marked torch.compiler.disable{reason}"]


def test_torch_skip_runs_the_function_at_a_break():
    from torch._dynamo.decorators import skip

    @skip
    def helper(t):
        return t + 1

    def fn(x):
        return helper(x.sin()).cos()

    check(fn, torch.randn(4))
    ours, _ = symexec_and_dynamo_counts(fn, torch.randn(4))
    assert ours == 2


@pytest.mark.parametrize("marker", [lambda fn: torch._dynamo.disable(fn, recursive=False),
                                    lambda fn: torch._dynamo.decorators.skip(fn)], ids=["nonrecursive", "skip"])
def test_a_nonrecursive_disable_still_compiles_what_the_function_calls(marker):
    # after PyTorch's test_decorators.py test_skip: fn1's frame runs as it is, fn2 is compiled
    def fn2(x):
        return x.sin()

    def fn1(x):
        x = x.sigmoid()
        return fn2(x.cos())

    fn1 = marker(fn1)

    def fn(x):
        return fn1(x.tan())

    check(fn, torch.randn(4))
    ours, theirs = symexec_and_dynamo_counts(fn, torch.randn(4))
    assert ours == theirs == 2


def test_a_recursive_disable_runs_what_the_function_calls_as_is_too():
    def fn2(x):
        return x.sin()

    @torch.compiler.disable
    def fn1(x):
        return fn2(x.cos())

    def fn(x):
        return fn1(x.tan())

    check(fn, torch.randn(4))
    ours, theirs = symexec_and_dynamo_counts(fn, torch.randn(4))
    assert ours == theirs == 1


def symexec_and_dynamo_counts(fn, *args):
    _, ours, theirs = run_both(fn, [copy_args(list(args))])
    return ours.graph_count, theirs.graph_count


def test_a_function_torch_disables_compiled_directly_runs_as_is():
    calls = []

    @torch.compiler.disable
    def fn(x):
        calls.append(1)
        return x + 1

    compiled = symexec.compile(fn)
    assert_same(compiled(torch.ones(2)), torch.ones(2) + 1)
    assert symexec.cache_entries(compiled)[0].fallback_reason == "the function is marked torch.compiler.disable"


def test_disabled_method_of_a_module_breaks_there():
    class Logged(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)

        @torch.compiler.disable
        def summary(self, y):
            return y.mean()

        def forward(self, x):
            y = self.lin(x)
            return y, self.summary(y)

    torch.manual_seed(0)
    model = Logged()
    x = torch.randn(2, 3)
    out = symexec.explain(model, x)
    assert [b.reason for b in out.break_reasons] == [
        "test_disabled_method_of_a_module_breaks_there.<locals>.Logged.summary() is marked torch.compiler.disable"]
    assert_same(model(x), symexec.compile(model)(x))


@pytest.mark.parametrize("ask", [torch.compiler.is_compiling, torch.compiler.is_dynamo_compiling,
                                 torch._dynamo.is_compiling, torch._utils.is_compiling],
                         ids=["compiler", "dynamo_compiling", "dynamo", "utils"])
def test_is_compiling_is_true_while_tracing_false_in_eager(ask):
    def fn(x):
        if ask():
            return x + 1
        return x - 1

    x = torch.randn(3)
    assert_same(fn(x), x - 1)
    backend = CountingBackend()
    compiled = symexec.compile(fn, backend=backend)
    assert_same(compiled(x), x + 1)  # as torch.compile's
    assert_same(torch.compile(fn, backend="eager")(x), x + 1)
    torch._dynamo.reset()
    assert backend.graph_count == 1 and backend.op_counts() == [1]
    assert_same(compiled(x), x + 1)
    assert len(symexec.cache_entries(compiled)) == 1


def test_is_compiling_without_tensors_is_a_constant():
    def f1():
        if torch._dynamo.is_compiling():
            return torch.ones(2, 2)
        return torch.zeros(2, 2)

    compiled = symexec.compile(f1)
    assert_same(compiled(), torch.ones(2, 2))
    assert_same(f1(), torch.zeros(2, 2))


def test_assume_constant_result_is_computed_once_at_trace_time():
    calls = []

    @torch._dynamo.assume_constant_result
    def const_fn(n, s):
        calls.append(n)
        return n * s

    def fn(x):
        return x * const_fn(3, 2)

    check(fn, torch.randn(4))
    assert_same_graphs_as_dynamo(fn, torch.randn(4))
    calls.clear()
    compiled = symexec.compile(fn)
    for _ in range(3):
        compiled(torch.randn(4))
    assert calls == [3]  # once, while tracing


def test_torch_compiler_assume_constant_result():
    @torch.compiler.assume_constant_result
    def scale():
        return 5

    def fn(x):
        return x + scale()

    check(fn, torch.randn(2))
    assert_same_graphs_as_dynamo(fn, torch.randn(2))


def _custom(x):
    return torch.add(x, 1).relu()


@pytest.mark.parametrize("register", [torch._dynamo.allow_in_graph, torch.compiler.allow_in_graph])
def test_allow_in_graph_registered_with_torch_is_one_node(register):
    def inner(x):
        return x.relu() * 2 + 1

    register(inner)

    def fn(a):
        x = torch.add(a, 1)
        x = torch.add(x, 1)
        x = inner(x)
        return torch.add(x, 1)

    check(fn, torch.randn(10))
    ours, _ = assert_same_graphs_as_dynamo(fn, torch.randn(10))
    assert ours.graph_count == 1 and ours.op_counts() == [4]
    targets = [n.target for gm in ours.graphs for n in gm.graph.nodes]
    assert inner in targets


def test_allow_in_graph_read_when_traced_not_at_import():
    def inner(x):
        return x.cos() + 1

    def fn(x):
        return inner(x) * 2

    _, before = symexec_graphs_ops(fn)
    torch._dynamo.allow_in_graph(inner)
    _, after = symexec_graphs_ops(fn)
    assert before == [3] and after == [2]


def test_disallow_in_graph_breaks_at_the_torch_op():
    # after PyTorch's test_decorators.py test_disallow_in_graph
    def fn(a):
        x = torch.add(a, 1)
        x = torch.add(x, 1)
        x = torch.sub(x, 1)
        x = torch.add(x, 1)
        return torch.add(x, 1)

    torch._dynamo.disallow_in_graph(torch.sub)
    try:
        check(fn, torch.randn(10))
        ours, _ = assert_same_graphs_as_dynamo(fn, torch.randn(10))
    finally:
        torch._dynamo.allow_in_graph(torch.sub)
    assert ours.graph_count == 2 and sum(ours.op_counts()) == 4
    ours, _ = assert_same_graphs_as_dynamo(fn, torch.randn(10))  # allowed again: one graph
    assert ours.graph_count == 1


def symexec_graphs_ops(fn):
    backend = CountingBackend()
    out = symexec.compile(fn, backend=backend)(torch.ones(3))
    return out, backend.op_counts()


def test_dynamo_config_reads_are_constants():
    def fn(x):
        if torch._dynamo.config.suppress_errors:
            return x + 1
        return x + 2 * torch._dynamo.config.recompile_limit

    check(fn, torch.randn(3))
    assert_same_graphs_as_dynamo(fn, torch.randn(3))


@pytest.mark.parametrize("mark", [
    lambda t: torch._dynamo.mark_dynamic(t, 0), lambda t: torch._dynamo.maybe_mark_dynamic(t, 0),
    lambda t: torch._dynamo.mark_static(t, 0), lambda t: torch._dynamo.mark_static_address(t),
    lambda t: torch._dynamo.allow_in_graph(_custom),
], ids=["mark_dynamic", "maybe_mark_dynamic", "mark_static", "mark_static_address", "allow_in_graph"])
def test_marks_made_inside_a_compiled_function_run_at_a_break(mark):
    # torch.compile raises on mark_dynamic here; symexec runs the call as eager does.
    def fn(x):
        y = x + 1
        mark(x)
        return y * 2, x.__dict__.get("_dynamo_dynamic_indices")

    check(fn, torch.randn(4, 3))


def _counts(compile_fn, fn, seq, dynamic=None):
    torch._dynamo.reset()
    backend = CountingBackend()
    compiled = compile_fn(fn, backend=backend, dynamic=dynamic)
    for mark, shape in seq:
        x = torch.randn(*shape)
        mark(x)
        assert_same(fn(x), compiled(x))
    torch._dynamo.reset()
    return backend


def _none(x):
    pass


def _dynamic0(x):
    torch._dynamo.mark_dynamic(x, 0)


def _maybe0(x):
    torch._dynamo.maybe_mark_dynamic(x, 0)


def _static0(x):
    torch._dynamo.mark_static(x, 0)


def _symexec_dynamic0(x):
    symexec.mark_dynamic(x, 0)


@pytest.mark.parametrize("seq, dynamic", [
    ([(_dynamic0, (4, 3)), (_dynamic0, (5, 3)), (_dynamic0, (9, 3))], None),
    ([(_maybe0, (4, 3)), (_none, (6, 3)), (_none, (7, 3))], None),
    ([(_none, (4, 3)), (_dynamic0, (4, 3)), (_none, (4, 3)), (_dynamic0, (4, 3))], None),
    ([(_dynamic0, (4, 3)), (_none, (4, 3))], None),
    ([(_none, (4, 3)), (_maybe0, (4, 3))], None),
    ([(_none, (4, 3)), (_static0, (4, 3))], True),
    ([(_static0, (4, 3)), (_none, (4, 3)), (_static0, (5, 3))], True),
    ([(_static0, (4, 3)), (_dynamic0, (4, 3))], True),
], ids=["dynamic_from_the_first", "maybe", "static_then_marked", "marked_then_unmarked", "static_then_maybe",
        "symbolic_then_static", "static_marked_under_dynamic", "static_then_dynamic"])
def test_torch_dimension_marks_are_honoured_and_guarded_like_torch_compile(seq, dynamic):
    def fn(x):
        return x.sum(0) * x.shape[0]

    ours = _counts(symexec.compile, fn, seq, dynamic)
    theirs = _counts(torch.compile, fn, seq, dynamic)
    assert ours.graph_count == theirs.graph_count


@pytest.mark.parametrize("mark", [_dynamic0, _maybe0])
def test_a_marked_size_of_one_is_specialised_once_not_retraced_each_call(mark):
    def fn(x):
        return x * x.shape[0]

    seq = [(mark, (1, 3))] * 3
    ours, theirs = _counts(symexec.compile, fn, seq), _counts(torch.compile, fn, seq)
    assert ours.graph_count == theirs.graph_count == 1


def test_a_module_instance_torch_disables_runs_as_is():
    class Doubler(torch.nn.Module):
        def forward(self, x):
            return x * 2

    module = torch.compiler.disable(Doubler())

    def fn(x):
        return module(x.sin()).cos()

    check(fn, torch.randn(3))


def test_marked_dimension_is_symbolic_from_the_first_trace():
    backend = CountingBackend()
    compiled = symexec.compile(lambda a: a.sum(0) * a.shape[0], backend=backend)
    a = torch.randn(5, 3)
    torch._dynamo.mark_dynamic(a, 0)
    compiled(a)
    example = next(n for n in backend.graphs[0].graph.nodes if n.op == "placeholder").meta["example_value"]
    assert isinstance(example.shape[0], torch.SymInt) and example.shape[1] == 3


def test_symexec_marks_are_guarded_too():
    def fn(x):
        return x * x.shape[0]

    # an entry that specialised dimension 0 is not reused for a tensor marked there
    ours = _counts(symexec.compile, fn, [(_none, (4, 3)), (_symexec_dynamic0, (4, 3))])
    assert ours.graph_count == 2
    ours = _counts(symexec.compile, fn, [(_none, (4, 3)), (_symexec_dynamic0, (4, 3)), (_symexec_dynamic0, (6, 3))])
    assert ours.graph_count == 2


def test_torch_refs_function_is_called_with_its_codes_parameters():
    # torch._refs.add's wrapper announces a signature (``a, b, *, alpha, out``) its code takes
    # through ``*args, **kwargs``: binding to the announced one made locals the code has not.
    def fn(x, y):
        return x + torch._refs.add(x, y)

    check(fn, torch.randn(4), torch.randn(4))
    check(lambda x: torch._refs.mul(x, 2.0, out=None), torch.randn(3))


def test_a_function_whose_signature_attribute_lies_binds_as_its_code():
    def inner(*args, **kwargs):
        return args[0] + kwargs.get("k", 0)

    import inspect

    inner.__signature__ = inspect.Signature([inspect.Parameter("a", inspect.Parameter.POSITIONAL_OR_KEYWORD),
                                             inspect.Parameter("k", inspect.Parameter.KEYWORD_ONLY, default=3)])
    check(inner, torch.ones(2))
    check(lambda x: inner(x, k=2), torch.ones(2))


@pytest.mark.parametrize("transform", [
    lambda f, x: torch.func.jacfwd(f)(x),
    lambda f, x: torch.func.jvp(f, (x,), (torch.ones_like(x),)),
    lambda f, x: torch.func.hessian(lambda t: f(t).sum())(x),
    lambda f, x: torch.func.linearize(f, x)[0],
], ids=["jacfwd", "jvp", "hessian", "linearize"])
def test_forward_mode_functorch_transforms_break_cleanly(transform):
    def f(t):
        return t.sin() * t

    def fn(x):
        return transform(f, x.cos())

    with warnings.catch_warnings():
        warnings.simplefilter("error", symexec.SymexecWarning)  # no internal error, no fallback
        check(fn, torch.randn(4))


def test_fx_symbolic_trace_inside_breaks_at_once():
    def f(x):
        return x.sin()

    def fn(x):
        gm = torch.fx.symbolic_trace(f)
        return gm(x) + 1

    with warnings.catch_warnings():
        warnings.simplefilter("error", symexec.SymexecWarning)
        check(fn, torch.randn(4), expect_reuse=False)
    out = symexec.explain(fn, torch.randn(4))
    assert out.break_reasons[0].reason.startswith("torch.fx._symbolic_trace.symbolic_trace() inside a compiled function")
    assert out.graph_break_count == 1


def test_recognition_never_imports_torch_dynamo():
    # The module symexec uses for it looks torch._dynamo up in sys.modules only.
    import symexec.torch_api as api

    assert "torch._dynamo" not in api.__dict__ and not any(
        isinstance(v, types.ModuleType) and v.__name__.startswith("torch._dynamo") for v in vars(api).values())
    assert sys.modules["symexec.torch_api"] is api


def _as_torch_code(source, name):
    """A function whose code is torch's own (its file in torch's package), as torch's
    flex_attention is: it calls mark_static only under is_compiling()."""
    import os

    namespace = {"torch": torch}
    exec(compile(source, os.path.join(os.path.dirname(torch.__file__), "_symexec_test_code.py"), "exec"), namespace)
    return namespace[name]


def test_mark_static_in_torchs_own_code_specialises_as_torch_compile():
    pin_rows = _as_torch_code(
        "def pin_rows(x):\n"
        "    if torch.compiler.is_dynamo_compiling():\n"
        "        torch._dynamo.mark_static(x, 0)\n"
        "    return x * 2\n", "pin_rows")

    def fn(x):
        return pin_rows(x + 1).sum(0)

    backend = CountingBackend()
    compiled = symexec.compile(fn, backend=backend, dynamic=True)
    x = torch.randn(5, 3)
    assert_same(fn(x), compiled(x))
    assert backend.graph_count == 1
    example = next(n for n in backend.graphs[0].graph.nodes if n.op == "placeholder").meta["example_value"]
    assert example.shape[0] == 5 and isinstance(example.shape[1], torch.SymInt)
    assert "_dynamo_static_indices" not in x.__dict__  # specialised, not marked (as torch.compile)
    _, ours, theirs = run_both(fn, [[torch.randn(5, 3)], [torch.randn(6, 3)], [torch.randn(5, 4)]], dynamic=True)
    assert ours.graph_count == theirs.graph_count
