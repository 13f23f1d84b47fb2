"""Edges of the public API (issue "soundness", parts 7 and 8): function kinds, backend
results, mark_dynamic arguments, config assignment, threads, deep recursion, memory."""

import asyncio
import gc
import inspect
import threading
import warnings
import weakref

import pytest
import torch
import torch._dynamo

import symexec
from helpers import assert_same


# 1. coroutines, generators, async generators keep their kind and run as eager ----------------

async def _coro(x, y=1):
    await asyncio.sleep(0)
    return x * 2 + y


def _gen(x):
    got = yield x + 1
    yield x + (0 if got is None else got)


async def _agen(x):
    for i in range(3):
        await asyncio.sleep(0)
        yield x + i


def test_async_def_stays_a_coroutine_function():
    compiled = symexec.compile(_coro)
    assert inspect.iscoroutinefunction(compiled)
    x = torch.randn(3)
    result = compiled(x, y=2)
    assert inspect.iscoroutine(result)
    expected = asyncio.run(_coro(x, y=2))
    assert_same(expected, asyncio.run(result))


async def _coro_plain(x):
    return x.cos() + 1


def test_async_def_matches_eager():
    # Compared with eager only: torch.compile on an ``async def`` corrupts memory in torch 2.13
    # (a plain loop of ``asyncio.run(torch.compile(coro_fn)(x))`` segfaults within a few
    # hundred calls, with no symexec loaded), which crashed this suite at random later tests.
    x = torch.randn(3)
    ours = symexec.compile(_coro_plain)(x)
    assert inspect.iscoroutine(ours)
    assert_same(asyncio.run(_coro_plain(x)), asyncio.run(ours))


def test_generator_function_stays_a_generator_function():
    compiled = symexec.compile(_gen)
    assert inspect.isgeneratorfunction(compiled)
    x = torch.randn(3)
    eager, ours, theirs = _gen(x), compiled(x), torch.compile(_gen, backend="eager")(x)
    assert inspect.isgenerator(ours) and inspect.isgenerator(theirs)
    for g in (eager, ours, theirs):
        first = next(g)
        assert_same(x + 1, first)
        assert_same(x + 5, g.send(5))
        with pytest.raises(StopIteration):
            next(g)


def test_async_generator_stays_an_async_generator_function():
    compiled = symexec.compile(_agen)
    assert inspect.isasyncgenfunction(compiled)
    x = torch.randn(2)

    async def collect(agen):
        return [item async for item in agen]

    assert inspect.isasyncgen(compiled(x))
    assert_same(asyncio.run(collect(_agen(x))), asyncio.run(collect(compiled(x))))


# 2. a backend returning a non-callable --------------------------------------------------------

def test_backend_returning_non_callable_raises_backend_compiler_failed():
    def my_bad_backend(gm, example_inputs):
        return 42

    compiled = symexec.compile(lambda x: x + 1, backend=my_bad_backend)
    with pytest.raises(symexec.BackendCompilerFailed) as info:
        compiled(torch.randn(2))
    text = str(info.value)
    assert "my_bad_backend" in text and "non-callable" in text and "int" in text


def test_backend_object_returning_none_is_named():
    class Backend:
        def __call__(self, gm, example_inputs):
            return None

    compiled = symexec.compile(lambda x: x * 2, backend=Backend())
    with pytest.raises(symexec.BackendCompilerFailed, match=r"Backend.*non-callable of type NoneType"):
        compiled(torch.randn(2))


def test_compiler_failures_are_runtime_errors_as_under_torch_compile():
    # AOTAutograd's refusal of a mutation through an as_strided view of a view: the caller
    # catches it as RuntimeError under either compiler (PyTorch's
    # test_as_strided_on_existing_view_banned).
    def foo(a):
        e = a.diagonal()
        f = e.as_strided((2,), (1,), 0)
        f.add_(1.0)
        return a

    for compiled in (symexec.compile(foo, backend="aot_eager"), torch.compile(foo, backend="aot_eager")):
        with pytest.raises(RuntimeError, match="mutation on a view chain of length 2, where view 1 was an as_strided"):
            compiled(torch.randn(2, 4))
    torch._dynamo.reset()

    def breaks(x):
        print("a break")
        return x + 1

    with pytest.raises(RuntimeError) as info:
        symexec.compile(breaks, fullgraph=True)(torch.randn(2))
    assert isinstance(info.value, symexec.Unsupported)


def test_checked_backend_still_compiles_and_hits():
    calls = []

    def counting(gm, example_inputs):
        calls.append(gm)
        return gm.forward

    compiled = symexec.compile(lambda x: x.sin() + 1, backend=counting)
    x = torch.randn(4)
    for _ in range(5):
        assert_same(x.sin() + 1, compiled(x))
    assert len(calls) == 1


# 3. mark_dynamic / mark_static arguments ------------------------------------------------------

@pytest.mark.parametrize("mark", [symexec.mark_dynamic, symexec.mark_static])
def test_mark_rejects_bad_dims(mark):
    t = torch.randn(2, 3)
    with pytest.raises(TypeError, match=r"dim.*float"):
        mark(t, 0.0)
    with pytest.raises(TypeError, match=r"tensor.*str"):
        mark("x", 0)
    with pytest.raises(ValueError, match=r"dimension 5 is out of range for a 2-d tensor"):
        mark(t, 5)
    with pytest.raises(ValueError, match=r"dimension -3"):
        mark(t, [0, -3])
    with pytest.raises(TypeError, match=r"dim.*str"):
        mark(t, "0")
    with pytest.raises(TypeError, match=r"dim.*set"):
        mark(t, {0})
    with pytest.raises(TypeError, match=r"dimension must be an int.*float"):
        mark(t, [0, 1.0])
    # torch's marks refuse non-int indices too
    torch_mark = torch._dynamo.mark_dynamic if mark is symexec.mark_dynamic else torch._dynamo.mark_static
    with pytest.raises(AssertionError):
        torch_mark(torch.randn(2, 3), 0.0)


@pytest.mark.parametrize("mark", [symexec.mark_dynamic, symexec.mark_static])
def test_mark_accepts_ints_lists_tuples_negatives(mark):
    attr = "_symexec_dynamic_dims" if mark is symexec.mark_dynamic else "_symexec_static_dims"
    for dim, expected in [(0, {0}), (-1, {1}), ([0, 1], {0, 1}), ((1,), {1})]:
        t = torch.randn(2, 3)
        mark(t, dim)
        assert getattr(t, attr) == expected


def test_mark_dynamic_still_traces_symbolically():
    def f(x):
        return x * 2

    t = torch.randn(4, 3)
    symexec.mark_dynamic(t, -2)
    compiled = symexec.compile(f)
    assert_same(f(t), compiled(t))
    u = torch.randn(7, 3)
    assert_same(f(u), compiled(u))
    assert len(symexec.cache_entries(compiled)) == 1


# 4. config ------------------------------------------------------------------------------------

def test_config_misspelt_option_raises():
    with pytest.raises(AttributeError, match=r"cache_size_limt.*cache_size_limit"):
        symexec.config.cache_size_limt = 3
    assert not hasattr(symexec.config, "cache_size_limt")


def test_config_wrong_type_and_negative():
    with pytest.raises(TypeError, match=r"cache_size_limit must be int, not str"):
        symexec.config.cache_size_limit = "8"
    with pytest.raises(TypeError, match=r"raise_on_internal_error must be bool"):
        symexec.config.raise_on_internal_error = 1
    with pytest.raises(ValueError, match=r"cache_size_limit must be >= 0"):
        symexec.config.cache_size_limit = -1
    assert symexec.config.cache_size_limit == 8


def test_cache_size_limit_zero_runs_eagerly(monkeypatch):
    """As torch.compile with recompile_limit=0: nothing is compiled, the result is eager's."""
    monkeypatch.setattr(symexec.config, "cache_size_limit", 0)
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    compiled = symexec.compile(lambda x: x + 1, backend=backend)
    x = torch.randn(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert_same(x + 1, compiled(x))
        assert_same(x + 1, compiled(x))
    assert graphs == [] and symexec.cache_entries(compiled) == []
    assert sum("cache size limit" in str(w.message) for w in caught) == 1

    old = torch._dynamo.config.recompile_limit
    torch._dynamo.config.recompile_limit = 0
    try:
        theirs = []
        torch._dynamo.reset()
        ref = torch.compile(lambda x: x + 1, backend=lambda gm, ex: theirs.append(gm) or gm.forward)
        assert_same(x + 1, ref(x))
        assert theirs == []
    finally:
        torch._dynamo.config.recompile_limit = old


# 5. threads -----------------------------------------------------------------------------------

def test_threads_first_calls_at_once():
    def f(x, n):
        return (x * n).sum() + x.shape[0]

    compiled = symexec.compile(f)
    count = 12
    barrier = threading.Barrier(count)
    inputs = [(torch.randn(2 + i % 5, 3), i % 4) for i in range(count)]
    results, errors = [None] * count, []

    def worker(i):
        try:
            barrier.wait()
            results[i] = compiled(*inputs[i])
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i in range(count):
        assert_same(f(*inputs[i]), results[i])
    assert len(symexec.cache_entries(compiled)) <= symexec.config.cache_size_limit


def test_resume_depth_is_per_thread():
    """The continuation depth counter must not be shared by threads (it was one list per
    wrapper): each thread's loop gets the same treatment and the right result."""
    def f(x, n):
        for i in range(n):
            x = x + i
            print_ = str(i)  # noqa: F841
            symexec.graph_break()
        return x

    compiled = symexec.compile(f)
    count = 6
    barrier = threading.Barrier(count)
    results, errors = [None] * count, []

    def worker(i):
        try:
            barrier.wait()
            results[i] = compiled(torch.zeros(2), 20 + i)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i in range(count):
        assert_same(f(torch.zeros(2), 20 + i), results[i])


# 6. recursion ---------------------------------------------------------------------------------

def _r(x, n):
    return x if n == 0 else _r(x + 1, n - 1)


def test_deep_recursion_in_callee_works_like_eager():
    def f(x):
        return _r(x, 500)

    compiled = symexec.compile(f)
    x = torch.zeros(2)
    assert_same(f(x), compiled(x))
    assert_same(f(x), compiled(x))


# 7. memory ------------------------------------------------------------------------------------

class _Mod(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.lin(x)


def _call(m, x):
    return m(x)


def test_reset_frees_a_module_passed_in():
    compiled = symexec.compile(_call)
    m = _Mod()
    ref = weakref.ref(m)
    compiled(m, torch.randn(2))
    compiled(m, torch.randn(2))
    del m
    symexec.reset()
    gc.collect()
    assert ref() is None
    assert symexec.cache_entries(compiled) == []


def _freed_without_the_cycle_collector(fn, *args_but_first):
    """Call ``symexec.compile(fn)(m, *args_but_first)`` with a fresh module ``m`` and the
    cycle collector off: once the call returns and the cache is reset, ``m`` is gone."""
    compiled = symexec.compile(fn)
    gc.collect()
    gc.disable()
    try:
        m = _Mod()
        ref = weakref.ref(m)
        compiled(m, *args_but_first)
        del m
        symexec.reset()
        return ref() is None
    finally:
        gc.enable()


def _lazy_map_over_module(m, x):
    pairs = map(lambda mod: mod(x), [m, m])  # a tracker that keeps its translator
    y = next(pairs)
    print("break")  # a graph break with the map half consumed
    return y + next(pairs)


def test_module_freed_without_the_cycle_collector():
    # Failed before: an inlined frame's translator and its builder formed a cycle holding
    # the frame's locals, so the module lived until the cycle collector ran.
    assert _freed_without_the_cycle_collector(_call, torch.randn(2))


def test_module_in_a_lazy_map_freed_without_the_cycle_collector(capsys):
    assert _freed_without_the_cycle_collector(_lazy_map_over_module, torch.randn(2))
