"""A frame symexec runs as its original code still compiles what it calls (``call_sites.py``).

Dynamo's frame hook compiles every Python frame a frame it does not compile calls; symexec
runs a copy of such a frame whose call sites map the callable to its compiled stand-in. The
copy must run exactly as the original: first on its own (any code, with a mapping that only
records), then under symexec, past the cache limit and at a break that cannot be resumed.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import enum
import inspect
import io
import json
import json.decoder
import json.encoder
import sys
import textwrap
import warnings

import pytest
import torch
from helpers import CountingBackend, assert_same

import symexec
from symexec.call_sites import with_mapped_callables


class _Base:
    def hello(self, x):
        return ("base", x)


class _Child(_Base):
    def hello(self, x):
        return ("child", super().hello(x))  # zero-argument super() reads its caller's frame


def _helper(a, b=1, *rest, k=0, **kw):
    return (a, b, rest, k, sorted(kw.items()))


def _decorate(f):
    return f


def call_forms(x, obj):
    out = [_helper(x), _helper(x, 2, 3, k=4, z=5)]
    args, kw = (x, 2), {"k": 1}
    out += [_helper(*args, **kw), _helper(*args), _helper(**{"a": x})]
    out += [obj.hello(x), _Child().hello(x), [_helper(i) for i in range(2)]]
    out.append(sorted(locals()))  # locals() of this frame, not of a trampoline's
    with contextlib.nullcontext(x) as value:
        out.append(_helper(value))
    try:
        _helper()
    except TypeError as e:
        out.append(str(e))

    @_decorate
    def inner(v):
        return v + 1

    out += [inner(x), (lambda v: v * 2)(x), _helper(_helper(x), b=_helper(x, k=2))]
    chosen = _helper if x else len
    out.append(chosen(x))
    for i in range(3):
        out.append(obj.hello(i) if i % 2 else _helper(i))
    out.append(sys._getframe().f_code.co_name)
    out.append(inspect.currentframe().f_lineno > call_forms.__code__.co_firstlineno)
    try:
        try:
            raise ValueError("inner")
        finally:
            out.append(_helper("finally"))
    except ValueError as e:
        out.append(_helper(str(e)))
    return out


def _copy(fn, mapping):
    copy = type(fn)(with_mapped_callables(fn.__code__, mapping), fn.__globals__, fn.__name__, fn.__defaults__,
                    fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    return copy


def test_every_call_form_runs_as_in_eager_and_passes_its_callable():
    seen = []

    def mapping(callee):
        seen.append(callee)
        return callee

    obj = _Base()
    assert_same(call_forms(3, obj), _copy(call_forms, mapping)(3, obj))
    assert _copy(_Child.hello, mapping)(_Child(), 1) == _Child().hello(1)  # super() in the copy
    assert _helper in seen and contextlib.nullcontext in seen
    assert any(getattr(c, "__func__", None) is _Base.hello and isinstance(c.__self__, _Child) for c in seen)
    assert any(getattr(c, "__func__", None) is _Base.hello and c.__self__ is obj for c in seen)  # obj.hello
    assert any(getattr(c, "__func__", None) is _Child.hello for c in seen)
    assert any(getattr(c, "__name__", "") == "<lambda>" for c in seen)


def test_the_mapped_callable_is_what_is_called():
    def doubled(*args, **kwargs):
        return ("mapped", _helper(*args, **kwargs))

    def mapping(callee):
        return doubled if callee is _helper else callee

    def fn(x):
        return _helper(x, k=1), _helper(*[x]), _helper(x, **{"z": 2}), len([x])

    assert _copy(fn, mapping)(5) == (("mapped", (5, 1, (), 1, [])), ("mapped", (5, 1, (), 0, [])),
                                     ("mapped", (5, 1, (), 0, [("z", 2)])), 1)


def _standard_library_workload():
    out = []
    data = {"a": [1, 2.5, None, True, {"x": "y\u1234"}], "b": "q" * 50}
    out += [json.dumps(data, indent=2, sort_keys=True), json.loads(json.dumps(data))]
    out += [textwrap.fill("hello world " * 30, width=33), textwrap.dedent("   a\n   b\n")]
    parser = argparse.ArgumentParser(prog="x")
    parser.add_argument("--n", type=int, default=3)
    parser.add_argument("pos", nargs="*")
    out += [vars(parser.parse_args(["--n", "5", "a"])), parser.format_help()]
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            parser.parse_args(["--n", "z"])
        except SystemExit as e:
            out.append(("exit", e.code))

    @dataclasses.dataclass
    class Point:
        x: int = 1
        y: list = dataclasses.field(default_factory=list)

    class Color(enum.Enum):
        RED = 1
        GREEN = 2

    out += [repr(Point(2)), dataclasses.asdict(Point(3, [1])), [c.name for c in Color], Color(2)]
    return repr(out)


def test_the_standard_librarys_own_code_runs_as_before():
    """Every function of seven standard modules (generators, with, try, super(), class
    bodies, decorators...) rewritten at once, then a workload over them."""
    expected = _standard_library_workload()
    swapped = []
    try:
        for module in (json, json.decoder, json.encoder, textwrap, argparse, dataclasses, enum):
            for value in list(vars(module).values()):
                functions = [value] if inspect.isfunction(value) else \
                    [v for v in vars(value).values() if inspect.isfunction(v)] if inspect.isclass(value) else []
                for fn in functions:
                    # (once per function: a class reached under two names, enum.EnumMeta and
                    # EnumType, swapped twice would be restored to the swapped code)
                    if fn.__module__ == module.__name__ and all(fn is not done for done, _ in swapped):
                        code = with_mapped_callables(fn.__code__, lambda callee: callee)
                        if code is not fn.__code__:
                            swapped.append((fn, fn.__code__))
                            fn.__code__ = code
        assert len(swapped) > 200
        assert _standard_library_workload() == expected
    finally:
        for fn, code in reversed(swapped):
            fn.__code__ = code


# -- under symexec ----------------------------------------------------------------------------
class _Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 3)

    def forward(self, x):
        return self.linear(x).relu() * 2


class _Holder:
    def method(self, x):
        return x.cos() + 1


def _function(x, k=1):
    return x.sin() * k


@contextlib.contextmanager
def _cache_size_limit(limit):
    old = symexec.config.cache_size_limit
    symexec.config.cache_size_limit = limit
    try:
        yield
    finally:
        symexec.config.cache_size_limit = old


def test_past_the_cache_limit_the_calls_of_a_frame_still_compile():
    net, holder = _Scaled(), _Holder()

    def fn(x, tag):  # a string is specialised: each new one would recompile
        return net(x) + _function(x, k=2) + holder.method(x) + len(tag), torch.relu(x).sum()

    backend = CountingBackend()
    compiled = symexec.compile(fn, backend=backend)
    x = torch.randn(2, 3)
    with _cache_size_limit(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the cache-limit warning)
        for n in range(4):
            assert_same(fn(x, "a" * n), compiled(x, "a" * n))
    assert len(symexec.cache_entries(compiled)) == 1
    # fn's own graph, then one graph each for net's forward, _function and holder.method; torch.relu
    # (torch's own) and len run as they are. Each callee compiled once: found again on each call.
    assert backend.graph_count == 4, [gm.code for gm in backend.graphs]
    assert sorted(backend.op_counts()[1:]) == [2, 2, 3]


def helper_of_unresumable(x):
    return x.sin()


def test_a_frame_run_as_its_code_keeps_the_functions_it_reads():
    """Regression: the copy loaded each global function as its compiled wrapper, so
    ``g is helper`` was False in the copy (a silent wrong branch)."""
    def fn(x, g):
        with torch.autocast("cpu"):  # a break inside an autocast block: the frame cannot resume
            print("break")
        return g is helper_of_unresumable, helper_of_unresumable.__name__, helper_of_unresumable(x)

    backend = CountingBackend()
    compiled = symexec.compile(fn, backend=backend)
    x = torch.randn(3)
    with contextlib.redirect_stdout(io.StringIO()):
        assert_same(fn(x, helper_of_unresumable), compiled(x, helper_of_unresumable))
    assert symexec.cache_entries(compiled)[0].fallback_reason is not None
    assert backend.graph_count == 1  # helper_of_unresumable's sin, still compiled


def _warns(x):
    warnings.warn("from the callee")
    return x + 1


def test_calls_that_read_their_callers_frame_see_the_users_frame():
    def fn(x, tag):
        warnings.warn("from the frame")  # attributed to this line, as in eager
        return _warns(x) + len(tag)

    compiled = symexec.compile(fn)
    x = torch.randn(2)
    with _cache_size_limit(1):
        compiled(x, "")
        for tag in ("a", "bb"):
            with warnings.catch_warnings(record=True) as eager:
                warnings.simplefilter("always")
                expected = fn(x, tag)
            with warnings.catch_warnings(record=True) as ours:
                warnings.simplefilter("always")
                actual = compiled(x, tag)
            assert_same(expected, actual)
            ours = [w for w in ours if "cache size limit" not in str(w.message)]
            assert [(str(w.message), w.filename, w.lineno) for w in ours] == \
                [(str(w.message), w.filename, w.lineno) for w in eager]


def test_a_maml_like_loop_that_breaks_compiles_the_model():
    """TorchBench's maml: a break in a loop that indexes a list by the loop's index. Its
    continuation retraced each turn until the cache limit; now the frame runs as its code (as
    torch.compile skips it), and the model it calls is compiled, one graph for every turn."""
    net = _Scaled()

    def fn(x):
        corrects = [0] * 16
        for k in range(14):
            y = net(x)
            correct = int((y > 0).sum().item())  # a break in the loop
            corrects[k + 1] = corrects[k + 1] + correct
        return corrects

    backend = CountingBackend()
    compiled = symexec.compile(fn, backend=backend)
    x = torch.randn(4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no cache-limit warning)
        assert_same(fn(x), compiled(x))
        assert_same(fn(x), compiled(x))
    ops = [[getattr(n.target, "__name__", n.target) for n in gm.graph.nodes if n.op in ("call_function", "call_method")]
           for gm in backend.graphs]
    assert ops == [["linear", "relu", "mul"]], ops  # net's forward, compiled once for all turns


@pytest.mark.parametrize("backend", ["aot_eager"])
def test_past_the_cache_limit_with_a_real_backend(backend):
    net = _Scaled()

    def fn(x, tag):
        return net(x) * len(tag)

    compiled = symexec.compile(fn, backend=backend)
    x = torch.randn(2, 3, requires_grad=True)
    with _cache_size_limit(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in range(1, 4):
            expected = fn(x, "a" * n)
            actual = compiled(x, "a" * n)
            assert_same(expected, actual)
            (g_expected,) = torch.autograd.grad(expected.sum(), x)
            (g_actual,) = torch.autograd.grad(actual.sum(), x)
            assert_same(g_expected, g_actual)


def test_what_a_call_site_compiles():
    """A user's function, method, partial and module; not torch's, the standard library's or
    a testing library's functions, builtins, classes or torch's own modules."""
    from functools import partial

    from symexec.callees import _users_code

    assert _users_code(_function) and _users_code(_Holder().method) and _users_code(partial(_function, k=2))
    assert _users_code(_Scaled()) and _users_code(lambda: None)
    assert not any(_users_code(c) for c in (torch.nn.functional.relu, json.dumps, textwrap.fill, pytest.approx, len,
                                             _Holder, torch.nn.Linear(2, 2), torch.relu, print,
                                             torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())))
    # torch's own container holding the user's layers: its loop calls them from torch's code
    assert _users_code(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Sequential(_Scaled())))


def test_a_torch_sequential_of_the_users_layers_is_compiled_from_a_frame_run_as_its_code():
    # (torch's own modules were called as they are there: nothing the Sequential held was compiled)
    seq = torch.nn.Sequential(_Scaled(), _Scaled())

    def fn(x):
        for _ in range(2):
            x = seq(x)
            print("turn")  # a break in the loop: fn runs as its code
        return x

    backend = CountingBackend()
    compiled = symexec.compile(fn, backend=backend)
    x = torch.randn(4, 3)
    with torch.no_grad():  # (the second turn's input is then like the first's: no recompile)
        assert_same(fn(x), compiled(x))
    ops = [[getattr(n.target, "__name__", n.target) for n in gm.graph.nodes if n.op in ("call_function", "call_method")]
           for gm in backend.graphs]
    assert ops == [["linear", "relu", "mul"] * 2], ops
