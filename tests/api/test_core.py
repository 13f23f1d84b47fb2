"""SPEC §1–§3 as written, the public API, and the cache's promises."""

from __future__ import annotations

import gc
import logging
import operator
import re
import os
import subprocess
import sys
import warnings
import weakref

import pytest
import torch
from helpers import CountingBackend, assert_same_graphs_as_dynamo, check

import symexec


def mse(x, y):
    z = (x - y) ** 2
    return z.sum()


def call_nodes(gm):
    return [n for n in gm.graph.nodes if n.op in ("call_function", "call_method")]


# -- SPEC §1: a tracer that records torch operations into an FX graph ----------------------------
def test_mse_is_three_nodes_sub_pow_sum():
    backend = CountingBackend()
    f = symexec.compile(mse, backend=backend)
    x, y = torch.randn(200), torch.randn(200)
    assert torch.equal(f(x, y), mse(x, y))
    (gm,) = backend.graphs
    nodes = call_nodes(gm)
    assert [n.target for n in nodes] == [operator.sub, operator.pow, "sum"]
    assert [n.name for n in nodes] == ["sub", "z", "sum_1"]  # named after the user's local, as SPEC §1 shows
    placeholders = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    assert placeholders == ["l_x_", "l_y_"]
    (output,) = [n for n in gm.graph.nodes if n.op == "output"]
    assert output.args == ((nodes[-1],),)


def test_printed_graph_shows_file_line_and_code():
    backend = CountingBackend()
    symexec.compile(mse, backend=backend)(torch.randn(3), torch.randn(3))
    text = backend.graphs[0].print_readable(print_output=False)
    line = mse.__code__.co_firstlineno + 1
    assert f"test_core.py:{line} in mse, code: z = (x - y) ** 2" in text
    assert "code: return z.sum()" in text


def test_tracing_happens_at_call_time_not_at_decoration():
    backend = CountingBackend()
    f = symexec.compile(mse, backend=backend)
    assert backend.graph_count == 0 and symexec.cache_entries(f) == []
    f(torch.randn(2), torch.randn(2))
    assert backend.graph_count == 1


def test_mse_matches_torch_compile_graphs():
    assert_same_graphs_as_dynamo(mse, torch.randn(200), torch.randn(200))


# -- SPEC §2: specialisation of non-tensor values ------------------------------------------------
def branchy(y, n):
    if n >= 0:
        return (n + 1) * y
    return y


def test_int_is_a_constant_and_the_branch_disappears():
    backend = CountingBackend()
    f = symexec.compile(branchy, backend=backend)
    y = torch.randn(4)
    assert torch.equal(f(y, 2), branchy(y, 2))
    (mul,) = call_nodes(backend.graphs[0])
    assert mul.target is operator.mul and mul.args[0] == 3
    assert "mul = 3 * l_y_" in backend.graphs[0].code.replace(": \"f32[4]\"", "")


@pytest.mark.parametrize("value", [2.5, "text", None, True, (1, "a"), torch.float64])
def test_other_constants_specialise(value):
    def fn(x, v):
        if v is None:
            return x
        if isinstance(v, tuple):
            return x * v[0]
        if isinstance(v, torch.dtype):
            return x.to(v)
        return x * 2 if v else x

    check(fn, torch.randn(3), value, captured=value is not None)  # None: returns x, no op


# -- SPEC §3: guards, sources and the cache ------------------------------------------------------
def greet(t, b):
    if b == "Hello":
        return t + 1
    return t - 1


def test_string_change_recompiles_naming_the_guard(caplog):
    f = symexec.compile(greet)
    t = torch.randn(3)
    symexec.set_logs("recompiles")
    try:
        with caplog.at_level(logging.INFO, logger="symexec.recompiles"):
            logging.getLogger("symexec.recompiles").addHandler(caplog.handler)
            assert torch.equal(f(t, "Hello"), t + 1)
            assert torch.equal(f(t, "Hi"), t - 1)
    finally:
        logging.getLogger("symexec.recompiles").removeHandler(caplog.handler)
        symexec.set_logs(None)
    entries = symexec.cache_entries(f)
    assert len(entries) == 2
    assert "L['b'] == 'Hi'" in [g.text for g in entries[0].guards]
    assert "L['b'] == 'Hello'" in [g.text for g in entries[1].guards]
    assert symexec.recompile_reasons(f) == ["0: L['b'] == 'Hello'"]
    assert "L['b'] == 'Hello'" in caplog.text
    # Both entries are reused from now on.
    f(t, "Hello"), f(t, "Hi")
    assert len(symexec.cache_entries(f)) == 2


def first_word(x, l):
    if l[0] == "Hi":
        return x + len(l)
    return x


def test_list_guards():
    f = symexec.compile(first_word)
    x = torch.randn(2)
    assert torch.equal(f(x, ["Hi", "There"]), x + 2)
    texts = [g.text for g in symexec.cache_entries(f)[0].guards]
    assert "len(L['l']) == 2" in texts
    assert "L['l'][0] == 'Hi'" in texts
    assert not any("L['l'][1]" in t for t in texts), "an element never looked at is not guarded"
    f(x, ["Hi", "Again"])  # l[1] is not guarded: reused
    assert len(symexec.cache_entries(f)) == 1
    assert torch.equal(f(x, ["Hi", "a", "b"]), x + 3)  # length changed
    assert torch.equal(f(x, ["Ho", "There"]), x)  # first item changed
    assert len(symexec.cache_entries(f)) == 3


def test_tensor_guard_checks_dtype_shape_stride_and_requires_grad():
    f = symexec.compile(mse)
    x = torch.randn(4)
    f(x, x.clone())
    (text,) = [g.text for g in symexec.cache_entries(f)[0].guards if g.text.startswith("check_tensor(L['x']")]
    for part in ("torch.float32", "device=cpu", "requires_grad=False", "size=[4]", "stride=[1]"):
        assert part in text
    for x2 in (torch.randn(5), torch.randn(4, dtype=torch.float64), torch.randn(8)[::2], torch.randn(4, requires_grad=True)):
        before = len(symexec.cache_entries(f))
        out = f(x2, x2.detach().clone())
        assert torch.allclose(out, mse(x2, x2.detach().clone()))
        assert len(symexec.cache_entries(f)) == before + 1


def test_grad_mode_is_guarded():
    def fn(x):
        return x * 2

    f = symexec.compile(fn)
    x = torch.randn(3, requires_grad=True)
    assert f(x).requires_grad
    with torch.no_grad():
        assert not f(x).requires_grad
    assert len(symexec.cache_entries(f)) == 2


GLOBAL_SCALE = 3.0


def scaled(x):
    return x * GLOBAL_SCALE


def test_globals_read_are_guarded():
    global GLOBAL_SCALE
    f = symexec.compile(scaled)
    x = torch.ones(2)
    assert torch.equal(f(x), x * 3)
    assert "G['GLOBAL_SCALE'] == 3.0" in [g.text for g in symexec.cache_entries(f)[0].guards]
    GLOBAL_SCALE = 4.0
    try:
        assert torch.equal(f(x), x * 4)
    finally:
        GLOBAL_SCALE = 3.0


def helper(x):
    return x + 1


def calls_helper(x):
    return helper(x) * 2


def test_called_global_function_identity_is_guarded():
    global helper
    f = symexec.compile(calls_helper)
    x = torch.ones(2)
    assert torch.equal(f(x), (x + 1) * 2)
    texts = [g.text for g in symexec.cache_entries(f)[0].guards]
    assert "G['helper'] is helper" in texts
    original = helper
    helper = lambda x: x - 1  # noqa: E731
    try:
        assert torch.equal(f(x), (x - 1) * 2)
    finally:
        helper = original


def test_unused_arguments_add_no_guard():
    def fn(x, unused_int, unused_list):
        return x + 1

    f = symexec.compile(fn)
    f(torch.ones(1), 1, ["a"])
    f(torch.ones(1), 2, ["b", "c"])
    assert len(symexec.cache_entries(f)) == 1


def test_cache_size_limit_warns_once_then_runs_the_original():
    def fn(x, n):
        return x + n

    def fn(x, n):  # a string is always specialised (numbers would turn symbolic)
        return x + len(n)

    f = symexec.compile(fn)
    x = torch.zeros(1)
    old = symexec.config.cache_size_limit
    symexec.config.cache_size_limit = 3
    try:
        for n in range(3):
            f(x, "a" * n)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert torch.equal(f(x, "a" * 10), x + 10)
            assert torch.equal(f(x, "a" * 11), x + 11)
        limit_warnings = [w for w in caught if "cache size limit" in str(w.message)]
        assert len(limit_warnings) == 1
        assert len(symexec.cache_entries(f)) == 3
        # Past the limit a call keeps nothing: the reasons stop at the one that hit it (they
        # grew by one per call, with the work of gathering them).
        reasons = len(symexec.recompile_reasons(f))
        for n in range(12, 40):
            assert torch.equal(f(x, "a" * n), x + n)
        assert len(symexec.recompile_reasons(f)) == reasons
    finally:
        symexec.config.cache_size_limit = old


def test_cache_entries_do_not_keep_input_tensors_alive():
    f = symexec.compile(mse)
    x, y = torch.randn(3), torch.randn(3)
    f(x, y)
    f(x, y)
    refs = [weakref.ref(x), weakref.ref(y)]
    del x, y
    gc.collect()
    assert all(r() is None for r in refs)


def test_guard_function_has_the_functions_signature():
    def fn(a, b=2, *rest, k, m=3, **extra):
        return a * b + k + m + len(rest) + len(extra)

    f = symexec.compile(fn)
    x = torch.ones(2)
    assert torch.equal(f(x, k=1), fn(x, k=1))
    assert torch.equal(f(x, 3, 4, 5, k=1, m=2, z=9), fn(x, 3, 4, 5, k=1, m=2, z=9))
    passed_all, took_defaults = symexec.cache_entries(f)  # (newest first)
    import inspect

    assert inspect.signature(took_defaults.guard) == inspect.signature(fn)
    assert inspect.signature(took_defaults.replacement) == inspect.signature(fn)
    # An entry traced from a call that passed every argument takes no defaults (nor guards them).
    bare = inspect.signature(fn).replace(parameters=[
        p.replace(default=inspect.Parameter.empty) for p in inspect.signature(fn).parameters.values()])
    assert inspect.signature(passed_all.guard) == bare == inspect.signature(passed_all.replacement)
    assert not any("__defaults__" in g.text or "__kwdefaults__" in g.text for g in passed_all.guards)
    assert torch.equal(f(x, k=1), fn(x, k=1))  # (the first entry's call again)
    assert len(symexec.cache_entries(f)) == 2


def test_returning_an_input_returns_the_same_object():
    def fn(x, y):
        return x, y + 1, None, [x, 3], {"a": x}

    f = symexec.compile(fn)
    x, y = torch.randn(2), torch.randn(2)
    out = f(x, y)
    assert out[0] is x and out[3][0] is x and out[4]["a"] is x
    check(fn, torch.randn(2), torch.randn(2))


def test_no_torch_ops_means_no_graph():
    backend = CountingBackend()

    def fn(x, n):
        return n * 2, x

    f = symexec.compile(fn, backend=backend)
    x = torch.ones(1)
    assert f(x, 3) == (6, x)
    assert backend.graph_count == 0
    assert symexec.cache_entries(f)[0].graph is None


def test_generated_code_travels_as_constants_not_globals():
    before = dict(globals())
    symexec.compile(mse)(torch.randn(2), torch.randn(2))
    assert set(globals()) == set(before)


# -- unsupported code runs the original function -------------------------------------------------
def test_unsupported_code_runs_the_original_function(capsys):
    def fn(x):
        with torch.autocast("cpu"):  # a break inside an autocast block cannot be resumed
            print("side effect")
            y = x + 1
        return y * 2

    f = symexec.compile(fn)
    x = torch.ones(1)
    assert torch.equal(f(x), (x + 1) * 2)
    assert capsys.readouterr().out == "side effect\n"
    entry = symexec.cache_entries(f)[0]
    assert entry.fallback_reason is not None and "print" in entry.fallback_reason
    assert "autocast" in entry.fallback_reason
    assert torch.equal(f(x), (x + 1) * 2)
    assert len(symexec.cache_entries(f)) == 1


def test_user_errors_propagate_like_eager():
    def fn(x, y):
        return x @ y  # shapes do not match

    check(fn, torch.randn(2, 3), torch.randn(2, 3), expect_traced=False)


def test_fullgraph_raises_unsupported_with_location():
    def fn(x):
        print("no")
        return x

    f = symexec.compile(fn, fullgraph=True)
    with pytest.raises(symexec.Unsupported) as info:
        f(torch.ones(1))
    assert "print" in str(info.value) and "test_core.py" in str(info.value)


# -- the public API ------------------------------------------------------------------------------
def test_decorator_forms_keep_name_and_doc():
    @symexec.compile
    def a(x):
        """Doc of a."""
        return x + 1

    @symexec.compile(backend="eager")
    def b(x):
        return x + 2

    c = symexec.compile(lambda x: x + 3, backend="aot_eager")
    x = torch.ones(2)
    assert a.__name__ == "a" and a.__doc__ == "Doc of a."
    assert torch.equal(a(x), x + 1) and torch.equal(b(x), x + 2) and torch.equal(c(x), x + 3)


def test_any_dynamo_style_backend_callable_plugs_in():
    seen = []

    def my_backend(gm, example_inputs):
        seen.append((gm, [tuple(t.shape) for t in example_inputs]))
        return gm

    f = symexec.compile(mse, backend=my_backend)
    f(torch.randn(3), torch.randn(3))
    assert len(seen) == 1 and seen[0][1] == [(3,), (3,)]


def test_a_failing_backend_raises_instead_of_falling_back():
    def broken(gm, example_inputs):
        raise ValueError("my backend is broken")

    f = symexec.compile(mse, backend=broken)
    with pytest.raises(symexec.BackendCompilerFailed, match="my backend is broken"):
        f(torch.ones(1), torch.ones(1))


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="unknown backend 'nope'.*eager"):
        symexec.compile(mse, backend="nope")
    with pytest.raises(TypeError, match="expects a function"):
        symexec.compile(42)
    with pytest.raises(TypeError, match="backend"):
        symexec.compile(mse, backend=3)
    with pytest.raises(TypeError, match="dynamic"):
        symexec.compile(mse, dynamic="yes")
    with pytest.raises(ValueError, match="unknown log artifact"):
        symexec.set_logs("graph_code,nonsense")
    with pytest.raises(TypeError):
        symexec.cache_entries(mse)


def test_reset_empties_every_cache():
    f = symexec.compile(mse)
    g = symexec.compile(greet)
    f(torch.ones(1), torch.ones(1))
    g(torch.ones(1), "Hi")
    symexec.reset()
    assert symexec.cache_entries(f) == [] and symexec.cache_entries(g) == []
    assert torch.equal(f(torch.ones(1), torch.zeros(1)), torch.tensor(1.0))


def test_compiled_function_works_as_a_method():
    class Model:
        scale = 2

        @symexec.compile
        def forward(self, x):
            return x * self.scale

    x = torch.ones(2)
    assert torch.equal(Model().forward(x), x * 2)


def test_calling_another_compiled_function_inlines_it():
    backend = CountingBackend()
    inner = symexec.compile(lambda x: x.sin())

    def outer(x):
        return inner(x) + 1

    f = symexec.compile(outer, backend=backend)
    x = torch.randn(3)
    assert torch.equal(f(x), x.sin() + 1)
    assert backend.graph_count == 1 and len(call_nodes(backend.graphs[0])) == 2


@pytest.mark.parametrize("artifact", ["graph_code", "guards", "recompiles", "bytecode"])
def test_each_log_artifact_prints_when_on_and_nothing_when_off(artifact, capfd):
    x = torch.randn(2)
    symexec.compile(greet)(x, "Hello")
    symexec.reset()
    assert capfd.readouterr().err == ""
    symexec.set_logs(artifact)
    try:
        f = symexec.compile(greet)
        f(x, "Hello")
        f(x, "Hi")
    finally:
        symexec.set_logs(None)
    err = capfd.readouterr().err
    expected = {"graph_code": "l_t_ + 1", "guards": "L['b'] == 'Hello'", "recompiles": "L['b'] == 'Hello'",
                "bytecode": "MODIFIED BYTECODE"}[artifact]
    assert f"[symexec.{artifact}]" in err and expected in err


def test_hot_entries_become_one_call_and_stay_correct():
    def fn(x, n, *, k=1):
        return x * n + k

    compiled = symexec.compile(fn)
    x = torch.randn(3)
    for i in range(6):  # past the hits after which guards are spliced into the code
        assert torch.equal(compiled(x, 2, k=i % 2), fn(x, 2, k=i % 2))
    assert torch.equal(compiled(x, 2.5), fn(x, 2.5))  # a guard fails: a new entry, not a wrong one
    for bad in ((x,), (x, 1, 2)):
        with pytest.raises(TypeError) as eager:
            fn(*bad)
        with pytest.raises(TypeError) as ours:
            compiled(*bad)
        assert str(ours.value) == str(eager.value)


def test_every_symexec_warning_is_a_symexec_warning():
    for name in ("CacheLimitWarning", "ConfigWarning"):
        assert issubclass(getattr(symexec, name), symexec.SymexecWarning)
    assert issubclass(symexec.SymexecWarning, RuntimeWarning)


# (a misspelt artifact made `import symexec` raise a ValueError traceback)
def test_a_misspelt_symexec_logs_warns_in_one_line_and_the_rest_applies():
    code = "import symexec; print(symexec.logs.enabled('recompiles'), symexec.logs.enabled('graph_code'))"
    env = dict(os.environ, SYMEXEC_LOGS="graph_cod, recompiles")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"]
    warning = [line for line in out.stderr.splitlines() if "ConfigWarning" in line]
    assert len(warning) == 1 and "unknown log artifact(s) graph_cod ignored; known: all, graph_code" in warning[0]


# (register_backend("eager", f) replaced the built-in without a word)
def test_register_backend_refuses_a_name_taken():
    seen = []

    def counting(gm, example_inputs):
        seen.append(gm)
        return gm.forward

    try:
        symexec.register_backend("counting_for_the_test", counting)
        symexec.register_backend("counting_for_the_test", counting)  # the same again: nothing
        assert "counting_for_the_test" in symexec.list_backends()
        assert torch.equal(symexec.compile(mse, backend="counting_for_the_test")(torch.ones(2), torch.zeros(2)),
                           mse(torch.ones(2), torch.zeros(2)))
        assert len(seen) == 1
        with pytest.raises(ValueError, match="'counting_for_the_test' is already registered; choose"):
            symexec.register_backend("counting_for_the_test", lambda gm, inputs: gm.forward)
    finally:
        symexec.backends.BACKENDS.pop("counting_for_the_test", None)
    with pytest.raises(ValueError, match=r"'eager' is already registered \(built in\)"):
        symexec.register_backend("eager", counting)
    assert symexec.backends.BACKENDS["eager"] is symexec.backends.eager


# -- torch's spellings (issue 23, point 2) --------------------------------------------------------

def test_explain_fn_then_call_as_torch_spells_it():
    def fn(x):
        y = x.sin()
        print("break")
        return y.cos()

    explainer = symexec.explain(fn)
    assert "call it with its arguments" in repr(explainer)
    out = explainer(torch.ones(3))
    same = symexec.explain(fn, torch.ones(3))
    assert (out.graph_count, out.graph_break_count) == (same.graph_count, same.graph_break_count) == (2, 1)
    with pytest.raises(TypeError, match="symexec.explain expects a function"):
        symexec.explain(3)


def test_config_patch_as_a_context_manager_and_a_decorator():
    before = symexec.config.cache_size_limit
    with symexec.config.patch(cache_size_limit=2, capture_scalar_outputs=True) as config:
        assert (config.cache_size_limit, config.capture_scalar_outputs) == (2, True)
    assert (symexec.config.cache_size_limit, symexec.config.capture_scalar_outputs) == (before, False)

    @symexec.config.patch({"nested_graph_breaks": True})
    def inside():
        return symexec.config.nested_graph_breaks

    assert inside() is True and symexec.config.nested_graph_breaks is False
    with pytest.raises(ZeroDivisionError), symexec.config.patch(max_inline_depth=3):
        1 / 0
    assert symexec.config.max_inline_depth == 32  # put back on the exception too
    with pytest.raises(AttributeError, match="no option 'cache_limit'"):
        symexec.config.patch(cache_size_limit=1, cache_limit=1)  # refused before anything changes
    with pytest.raises(TypeError, match="must be int"):
        symexec.config.patch(cache_size_limit="2")
    assert symexec.config.cache_size_limit == before


def test_set_logs_with_torchs_keywords():
    try:
        symexec.set_logs(graph_code=True, guards=True, trace=False)
        assert symexec.logs.active() == ["graph_code", "guards"]
        symexec.set_logs("recompiles", guards=True)
        assert symexec.logs.active() == ["guards", "recompiles"]
        with pytest.raises(ValueError, match=r"unknown log artifact\(s\) \['graph_cod'\]"):
            symexec.set_logs(graph_cod=True)
        with pytest.raises(TypeError, match="keywords take True or False: guards"):
            symexec.set_logs(guards=1)
    finally:
        symexec.set_logs(None)
    assert symexec.logs.active() == []


# -- progress of a long compile (issue 23, point 4) -----------------------------------------------

def _slow_backend(gm, example_inputs):
    import time

    time.sleep(1.2)  # past symexec.convert.PROGRESS_AFTER
    return gm.forward


def test_a_compile_past_a_second_says_so(capsys):
    def slow(x):
        return x.sin() + 1

    try:
        symexec.set_logs("progress")
        compiled = symexec.compile(slow, backend=_slow_backend)
        compiled(torch.ones(2))
        compiled(torch.ones(2))  # a hit: nothing more
    finally:
        symexec.set_logs(None)
    err = capsys.readouterr().err
    assert re.findall(r"\[symexec\.progress\] (compil\w+) test_a_compile_past_a_second_says_so\.<locals>\.slow", err) == \
        ["compiling", "compiled"], err
    assert re.search(r"compiled .*slow \(.*test_core\.py:\d+\) in 1\.\d s", err), err


def test_progress_is_on_by_default_and_logs_go_to_symexec_logs_file(tmp_path):
    log = tmp_path / "symexec.log"
    code = ("import torch, time, symexec\n"
            "symexec.compile(lambda x: x + 1, backend=lambda gm, ex: (time.sleep(1.2), gm.forward)[1])(torch.ones(2))\n")
    env = {k: v for k, v in os.environ.items() if k != "SYMEXEC_LOGS"}
    env["SYMEXEC_LOGS_FILE"] = str(log)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "[symexec." not in out.stderr  # (to the file, not stderr)
    text = log.read_text()
    assert "[symexec.progress] compiling <lambda>" in text and "[symexec.progress] compiled <lambda>" in text, text
