"""symexec never fails silently, and never leaves torch in a changed state.

* ``fullgraph=True`` raises wherever it would run the original function;
* otherwise an internal error warns once (``SymexecWarning``) and runs eagerly, logged
  (``SYMEXEC_LOGS=fallbacks``) and listed by ``symexec.explain``;
* faults injected at each point of the compiler (``symexec.faults``) give eager's answer and
  leave torch and the caches intact; a ``KeyboardInterrupt`` reaches the user, state restored;
* a graph break's stored reason keeps no frame, so no tensor, of the first call alive.
"""

import _thread
import gc
import signal
import threading
import time
import warnings
import weakref

import pytest
import torch
import torch._guards
from torch._subclasses.fake_tensor import FakeTensor
from torch.overrides import TorchFunctionMode

import symexec
import faults
from symexec.exc import InternalError

POINTS = list(faults.POINTS)


@pytest.fixture
def fall_back(monkeypatch):
    """Internal errors run eagerly (the suite otherwise makes them raise)."""
    monkeypatch.setattr(symexec.config, "raise_on_internal_error", False)


def assert_torch_state_intact(grad=True):
    assert torch.is_grad_enabled() is grad
    assert torch._C._len_torch_function_stack() == 0
    assert torch._C._len_torch_dispatch_stack() == 0
    assert torch._guards.detect_fake_mode() is None
    assert torch._guards.TracingContext.try_get() is None
    assert not isinstance(torch.randn(2), FakeTensor)
    assert not torch.is_autocast_enabled("cpu")
    assert torch.get_autocast_dtype("cpu") == torch.bfloat16
    assert not torch._C._is_any_autocast_enabled()
    assert gc.isenabled()  # (off while tracing, on again however the trace ended)


def assert_compiles_cleanly():
    """A fresh function still compiles to one graph: no state of the failed trace is left."""
    def other(a):
        return torch.relu(a) * 3

    compiled = symexec.compile(other)
    a = torch.randn(4)
    assert torch.equal(compiled(a), other(a))
    (entry,) = symexec.cache_entries(compiled)
    assert entry.fallback_reason is None and entry.graph is not None


def work(x, y):
    z = torch.sin(x) + y
    with torch.no_grad():
        w = z * 2
    return (w + x).sum(), [z.cos()]


def symexec_warnings(record):
    return [w for w in record if issubclass(w.category, symexec.SymexecWarning)]


# -- faults, falling back ---------------------------------------------------------------------------
@pytest.mark.expect_internal_error
@pytest.mark.parametrize("point, after", [(p, 0) for p in POINTS] + [("handler", 5), ("tracker", 5)])
def test_injected_fault_runs_eagerly_and_warns(point, after, fall_back):
    compiled = symexec.compile(work)
    x, y = torch.randn(3), torch.randn(3)
    expected = work(x, y)
    with warnings.catch_warnings(record=True) as record, faults.inject(point, after=after) as injection:
        warnings.simplefilter("always")
        got = compiled(x, y)
    assert injection.fired
    assert torch.equal(got[0], expected[0]) and torch.equal(got[1][0], expected[1][0])
    (warning,) = symexec_warnings(record)
    text = str(warning.message)
    assert "internal error" in text and "RuntimeError" in text and "symexec fault injected" in text
    assert __file__ in text  # the user's location
    assert warning.filename == __file__  # and the warning points at the call
    assert_torch_state_intact()
    (entry,) = symexec.cache_entries(compiled)
    assert "internal error" in entry.fallback_reason
    # caches intact: the same call hits the entry (the guards met before the fault: a later
    # call either hits it or compiles anew), and other functions compile as ever
    again = compiled(x, y)
    assert torch.equal(again[0], expected[0])
    assert len(symexec.cache_entries(compiled)) == 1
    x2, y2 = torch.randn(3, dtype=torch.float64), torch.randn(3, dtype=torch.float64)
    assert torch.equal(compiled(x2, y2)[0], work(x2, y2)[0])
    assert_compiles_cleanly()


@pytest.mark.expect_internal_error
def test_internal_error_warns_once_per_function(fall_back):
    compiled = symexec.compile(work)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for dtype in (torch.float32, torch.float64, torch.float16):
            x = torch.randn(3, dtype=dtype)
            with faults.inject("codegen"):
                compiled(x, x)
    assert len(symexec_warnings(record)) == 1
    entries = symexec.cache_entries(compiled)
    assert len(entries) == 3 and all("internal error" in e.fallback_reason for e in entries)


@pytest.mark.expect_internal_error
def test_raise_on_internal_error_raises_the_error_itself():
    compiled = symexec.compile(work)
    x = torch.randn(3)
    with faults.inject("handler"), pytest.raises(InternalError) as info:
        compiled(x, x)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert_torch_state_intact()
    assert torch.equal(compiled(x, x)[0], work(x, x)[0])


# -- fullgraph=True never runs eagerly in silence -----------------------------------------------
@pytest.mark.expect_internal_error
@pytest.mark.parametrize("point", POINTS)
def test_fullgraph_internal_error_raises(point, fall_back):
    compiled = symexec.compile(work, fullgraph=True)
    x = torch.randn(3)
    with warnings.catch_warnings(record=True) as record, faults.inject(point), pytest.raises(InternalError) as info:
        warnings.simplefilter("always")
        compiled(x, x)
    assert not symexec_warnings(record)
    error = info.value
    chain = [error]
    while chain[-1].__cause__ is not None:
        chain.append(chain[-1].__cause__)
    assert isinstance(chain[-1], RuntimeError) and "symexec fault injected" in str(chain[-1])
    assert __file__ in str(error)
    assert not symexec.cache_entries(compiled)
    assert_torch_state_intact()
    assert torch.equal(compiled(x, x)[0], work(x, x)[0])  # and then it compiles
    assert symexec.cache_entries(compiled)[0].graph is not None


def _fullgraph_unsupported(fn, *args):
    with pytest.raises(symexec.Unsupported) as info:
        fn(*args)
    text = str(info.value)
    assert f"{__file__}:" in text and info.value.lineno is not None
    return text


def test_fullgraph_under_inference_mode_compiles():
    # (it ran the original function, said only in the fallbacks log; torch.compile captures it)
    compiled = symexec.compile(work, fullgraph=True)
    x = torch.randn(3)
    with torch.inference_mode():
        result = compiled(x, x)
        assert torch.equal(result[0], work(x, x)[0]) and result[0].is_inference()
    assert symexec.cache_entries(compiled)[0].graph is not None


def test_fullgraph_of_a_disabled_function_raises():
    compiled = symexec.compile(symexec.disable(work), fullgraph=True)
    text = _fullgraph_unsupported(compiled, torch.randn(3), torch.randn(3))
    assert "symexec.disable" in text


def test_fullgraph_under_a_torch_function_mode_raises():
    compiled = symexec.compile(work, fullgraph=True)
    x = torch.randn(3)
    with PassThrough():
        text = _fullgraph_unsupported(compiled, x, x)
    assert "mode" in text
    assert_torch_state_intact()


class PassThrough(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def test_without_fullgraph_a_mode_runs_eagerly_and_says_so_once():
    compiled = symexec.compile(work)
    x = torch.randn(3)
    with pytest.warns(symexec.SymexecWarning, match="work was called under a torch function or dispatch mode"):
        with PassThrough():
            assert torch.equal(compiled(x, x)[0], work(x, x)[0])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with PassThrough():
            assert torch.equal(compiled(x, x)[0], work(x, x)[0])
    assert not symexec_warnings(record)


# -- seeing every fallback --------------------------------------------------------------------------
@pytest.mark.expect_internal_error
def test_fallbacks_log_artifact(fall_back, capsys):
    symexec.set_logs("fallbacks")
    try:
        compiled = symexec.compile(work)
        x = torch.randn(3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with faults.inject("guards"):
                compiled(x, x)
            with PassThrough():
                compiled(x, x)
    finally:
        symexec.set_logs(None)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("[symexec.fallbacks]")]
    assert len(lines) == 2, err
    assert "internal error" in lines[0] and "symexec fault injected" in lines[0]
    assert "mode" in lines[1] and "work" in lines[1]


@pytest.mark.expect_internal_error
def test_explain_lists_every_fallback(fall_back):
    def breaks(x):
        y = x + 1
        print("hi")
        return helper(y)

    x = torch.randn(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with faults.inject("handler", after=12):  # in the continuation's trace
            out = symexec.explain(breaks, x)
    assert torch.equal(out.result, breaks(x))
    assert len(out.fallbacks) == 1
    name, kind, reason = out.fallbacks[0]
    assert "internal error" in reason
    text = str(out)
    assert "Fallbacks (1)" in text and "symexec fault injected" in text
    html = out._repr_html_()
    assert "Fallbacks (1)" in html and "symexec fault injected" in html
    clean = symexec.explain(work, x, x)
    assert clean.fallbacks == [] and "Fallbacks" not in str(clean)
    assert "Fallbacks" not in clean._repr_html_()  # (no section where there is none)


def helper(y):
    z = y * 2
    for _ in range(3):
        z = z + 1
    return z


# -- the test-session hook -------------------------------------------------------------------------
@pytest.mark.expect_internal_error
def test_internal_errors_reach_the_session_hook(_no_unexpected_internal_errors, fall_back):
    compiled = symexec.compile(work)
    x = torch.randn(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with faults.inject("tracker"):
            compiled(x, x)
    assert len(_no_unexpected_internal_errors) == 1
    assert "work" in _no_unexpected_internal_errors[0] and "fault injected" in _no_unexpected_internal_errors[0]


def test_unmarked_internal_error_is_recorded(_no_unexpected_internal_errors):
    """The fixture records it (and would fail this test; it is cleared here on purpose)."""
    compiled = symexec.compile(work)
    x = torch.randn(3)
    with faults.inject("codegen"), pytest.raises(RuntimeError, match="fault injected"):
        compiled(x, x)
    assert len(_no_unexpected_internal_errors) == 1
    _no_unexpected_internal_errors.clear()


def test_faults_cost_nothing_when_inactive():
    assert faults.active() is None
    faults.hit("handler")  # a no-op
    with pytest.raises(ValueError):
        with faults.inject("nowhere"):
            pass


# -- interrupts --------------------------------------------------------------------------------------
def traced_with_state(x):
    y = x * 2
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with torch.no_grad():
            for _ in range(6):
                y = torch.mm(y, y.t()).relu() + y.mean()
    return y.float().sum()


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("after", [0, 40])
def test_keyboard_interrupt_propagates_and_restores_state(point, after):
    compiled = symexec.compile(traced_with_state)
    x = torch.randn(4, 4)
    caught = False
    with faults.inject(point, after=after, exc=KeyboardInterrupt) as injection:
        try:
            compiled(x)
        except KeyboardInterrupt:
            caught = True
    assert caught is injection.fired  # never swallowed
    if not injection.fired:  # (fewer hits than `after` at this point)
        assert injection.hits <= after
        return
    assert_torch_state_intact()
    assert not symexec.cache_entries(compiled)
    assert torch.allclose(compiled(x), traced_with_state(x))  # then it compiles
    assert symexec.cache_entries(compiled)[0].fallback_reason is None
    assert_compiles_cleanly()


def test_keyboard_interrupt_keeps_the_callers_grad_mode():
    compiled = symexec.compile(traced_with_state)
    x = torch.randn(4, 4)
    with torch.no_grad():
        with faults.inject("handler", after=30, exc=KeyboardInterrupt), pytest.raises(KeyboardInterrupt):
            compiled(x)
        assert not torch.is_grad_enabled()
    assert_torch_state_intact()


def slow(x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with torch.no_grad():
            for _ in range(20000):  # seconds of tracing, even warm (3000 took 0.3 s late in the suite)
                x = torch.mm(x, x) + 1
    return x


def _interrupt_until(stop, first=0.1, every=0.1):
    """Ctrl-C, again and again until ``stop`` is set: CPython swallows one that lands in a
    weakref callback or a ``__del__`` (as it would in eager code), the next one is delivered."""
    if not stop.wait(first):
        _thread.interrupt_main()
        while not stop.wait(every):
            _thread.interrupt_main()


def _stop_interrupting(stop, sender):
    """Stop the sender; a Ctrl-C it sent as the call ended arrives here, not in the next test."""
    while True:
        try:
            stop.set()
            sender.join()
            time.sleep(0.05)
            return
        except KeyboardInterrupt:
            continue


def test_real_keyboard_interrupt_during_a_slow_trace():
    compiled = symexec.compile(slow)
    x = torch.randn(2, 2)
    stop = threading.Event()
    sender = threading.Thread(target=_interrupt_until, args=(stop,))
    # (Ctrl-C as Python's own handler raises it, whatever a library or the runner installed)
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    began = time.perf_counter()
    sender.start()
    interrupted = False
    try:
        compiled(x)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        _stop_interrupting(stop, sender)
        signal.signal(signal.SIGINT, handler)
    took = time.perf_counter() - began
    assert interrupted, (f"the call returned after {took:.2f} s, not interrupted (SIGINT handler {handler!r}; "
                         f"entries: {[(e.fallback_reason, str(e.break_reason)[:200]) for e in symexec.cache_entries(compiled)]})")
    assert took < 30
    assert_torch_state_intact()
    assert not symexec.cache_entries(compiled)
    assert_compiles_cleanly()


# -- leaks -------------------------------------------------------------------------------------------
def _explicit_break(x):
    y = x * 2
    symexec.graph_break()
    return y + 1


def _print_break(x):
    y = x * 2
    print("graph_break by print")
    return y + 1


def _branch_break(x):
    y = x * 2
    if y.sum() > 0:  # graph_break on a tensor's value
        return y + 1
    return y - 1


@pytest.mark.parametrize("fn", [_explicit_break, _print_break, _branch_break])
def test_a_graph_break_keeps_no_tensor_of_the_first_call_alive(fn):

    compiled = symexec.compile(fn)
    gc.collect()
    gc.disable()  # by reference counts alone
    try:
        x = torch.randn(3)
        ref = weakref.ref(x)
        out = compiled(x)
        assert torch.equal(out, fn(x))
        (entry,) = [e for e in symexec.cache_entries(compiled) if e.break_reason is not None]
        assert entry.break_reason.lineno is not None and entry.break_reason.__traceback__ is None
        del x, out
        assert ref() is None
    finally:
        gc.enable()
