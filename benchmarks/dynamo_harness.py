"""The worker side of ``dynamo_tests.py``: PyTorch's own Dynamo test cases run eagerly, under
torch.compile and under symexec.

A worker imports each test file once (some register torch libraries at import), with torch's
compiler entry points replaced by functions that look at the mode of the case running (the
three files compile nothing at import): in ``eager`` they return the function itself, in
``dynamo`` they call
torch.compile with the backend wrapped in a counter, in ``symexec`` they call
``symexec.compile`` with the same wrapped backend. Each case runs as a one-test
``unittest.TestSuite`` (class fixtures included), under a per-case alarm. This module imports
torch._dynamo: it is a benchmark, not part of symexec.
"""

from __future__ import annotations

import importlib.util
import json
import linecache
import logging
import operator
import os
import re
import signal
import sys
import traceback
import types
import unittest
import warnings
from typing import Any, Callable

import torch
import torch._dynamo
import torch._dynamo.eval_frame
import torch._dynamo.testing
import torch.fx

import symexec
import symexec.convert
from symexec import logs as symexec_logs

MODES = ("eager", "dynamo", "symexec")
MODE = "eager"  # the mode whose substitutes the patched entry points give

# How a failing assertion about compile counts reads (the test's expectation of torch.compile,
# not a result): a failure on such a line is "counts", not a wrong result.
_COUNT_LINE = re.compile(r"frame_count|op_count|\bcnt[s]?\d*\b|counter|graph_count|len\(.*graph|compile_count|"
                         r"\bgraphs\b|assertExpectedInline|recompile|cache_size|guard|break_reasons|"
                         r"graph_break|num_calls|call_count|\.calls\b")


class HarnessUnsupported(Exception):
    """The case uses a torch.compile API that has no symexec counterpart (explain, export...)."""


class CaseTimeout(BaseException):
    """The per-case alarm went off (a BaseException: a test's ``except Exception`` keeps it)."""


class Stats:
    """What one mode's run of one case compiled."""

    def __init__(self) -> None:
        self.graphs = 0
        self.ops = 0
        self.signatures: list[tuple[str, ...]] = []  # each graph's op targets, in order
        # each graph's input names and op targets: a recompile of one graph repeats it, two
        # graphs with the same ops on different inputs (a callee's and its caller's) do not
        self.keys: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        self.breaks: list[str] = []
        self.fallbacks: list[str] = []
        self.internal: list[str] = []
        self.aten_keys: list[tuple[tuple[str, ...], tuple[str, ...] | None]] = []  # as keys, in core ATen
        self.to_decompose: list[tuple[tuple[str, ...], torch.fx.GraphModule, list]] = []
        self.soft_counts: list[str] = []  # count assertions that failed and were let pass (soft_counts)


STATS = Stats()


# Nodes that compute nothing, left out of both systems' op counts: torch.compile records torch's
# API-usage logging call (``torch._C._log_api_usage_once``, run by a module's or a function's
# Python code) and re-enters a grad or inference mode at the start of each function it resumes
# after a break, where symexec sets the mode in the code around its graphs. Counted, a case
# whose graphs compute the same looked like a capture gap.
# Runtime checks of facts about sizes (``torch._check``'s deferred asserts) are left out too:
# they compute nothing, and symexec may pin the same fact by a guard instead.
BOOKKEEPING = frozenset({torch._C._log_api_usage_once, torch._C._set_grad_enabled,
                         torch.autograd.grad_mode._enter_inference_mode, torch.autograd.grad_mode._exit_inference_mode,
                         torch.ops.aten._assert_scalar.default, torch.ops.aten._assert_scalar})


def op_targets(gm: torch.fx.GraphModule) -> tuple[str, ...]:
    return tuple(node.target if isinstance(node.target, str) else getattr(node.target, "__name__", str(node.target))
                 for node in gm.graph.nodes if node.op in ("call_function", "call_method", "call_module")
                 and not (node.op == "call_function" and _bookkeeping(node.target)) and not _identity(node)
                 and not _number(node))


def _number(node: torch.fx.Node) -> bool:
    """An op node that computes a number or a size (``x.size(0)``, ``n - 1``): a trace may compute
    it as it goes, and symexec runs a graph of nothing else as Python, with no backend. Left out of
    both systems' counts."""
    def number(value: Any) -> bool:
        if isinstance(value, tuple):
            return all(number(v) for v in value)
        return type(value) in (int, float, bool, torch.SymInt, torch.SymFloat, torch.SymBool)
    if node.target is torch.scalar_tensor and node.args and isinstance(node.args[0], torch.fx.Node):
        # (torch.compile's wrapping of a number the graph returns, item()'s, into a tensor)
        return number(node.args[0].meta.get("example_value", node.args[0].meta.get("val")))
    return number(node.meta.get("example_value", node.meta.get("val")))


def _identity(node: torch.fx.Node) -> bool:
    """An op node whose result is its one tensor input, as it was: the input itself from an op that
    changes nothing (``torch.as_tensor(t)``, ``t.contiguous()`` of a contiguous ``t``), or a view with
    the input's dtype, sizes, strides and offset (``x.view_as(x)``, torch.compile's stand-in for
    ``Tensor.numpy()``; ``.real`` of a real array). It computes nothing and is left out of both
    systems' counts. An in-place op (``add_``, ``operator.iadd``, an ``out=``) returns its input too,
    changed: it counts."""
    if node.op not in ("call_function", "call_method") or "out" in node.kwargs:
        return False
    name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
    if name.endswith("_") or (getattr(node.target, "__module__", None) in ("operator", "_operator")
                              and name.startswith("i") and name not in ("index", "is_", "is_not", "inv", "invert")):
        return False
    out = node.meta.get("example_value", node.meta.get("val"))
    inputs = _tensor_inputs(node)
    if not isinstance(out, torch.Tensor) or len(inputs) != 1:
        return False
    given = inputs[0]
    if out is given:
        return True
    try:
        return (out.dtype == given.dtype and out.shape == given.shape and out.stride() == given.stride()
                and out.storage_offset() == given.storage_offset() and torch._C._is_alias_of(out, given))
    except Exception:  # noqa: BLE001 - a tensor without storage (a subclass, sparse): counted
        return False


def _tensor_inputs(node: torch.fx.Node) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []

    def visit(arg: Any) -> Any:
        if isinstance(arg, torch.fx.Node):
            value = arg.meta.get("example_value", arg.meta.get("val"))
            if isinstance(value, torch.Tensor) and not any(value is seen for seen in found):
                found.append(value)
        return arg

    torch.fx.node.map_arg((node.args, node.kwargs), visit)
    return found


def _bookkeeping(target: Any) -> bool:
    # (and torch.compile's own helper that puts a tensor's version counter back after ``x.data = y``,
    # a function it defines inside its handler: known by name)
    if getattr(target, "__name__", None) == "_lower_version_count_by_1":
        return True
    try:
        return target in BOOKKEEPING
    except TypeError:  # (an unhashable target)
        return False


class Counting:
    """The test's backend, wrapped: counts each graph and its op nodes, then compiles as it would."""

    def __init__(self, inner: Callable[..., Any]) -> None:
        self.inner = inner

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> Callable[..., Any]:
        targets = op_targets(gm)
        STATS.graphs += 1
        STATS.ops += len(targets)
        STATS.signatures.append(targets)
        names = tuple(n.name for n in gm.graph.nodes if n.op == "placeholder")
        STATS.keys.append((names, targets))
        # (decomposed after the case: make_fx inside a backend call would take torch.compile's
        # own tracing context and shape environment, and change what it compiles)
        STATS.to_decompose.append((names, gm, list(example_inputs)))
        return self.inner(gm, example_inputs)


def aten_ops(gm: torch.fx.GraphModule, example_inputs: list) -> tuple[str, ...] | None:
    """The graph's op nodes once decomposed to core ATen (``make_fx`` on fake tensors, torch's
    core decompositions), those that compute nothing left out as above: one measure for both
    systems whatever each records a computation as (``addcdiv`` or its ``div``, ``mul``, ``add``;
    ``_foreach_lerp_`` or its pieces). None where the graph cannot be traced so (data-dependent
    sizes): the case is then compared by its graphs' own nodes."""
    from torch._decomp import core_aten_decompositions  # noqa: PLC0415
    from torch.fx.experimental.proxy_tensor import make_fx  # noqa: PLC0415
    if any(isinstance(i, torch._subclasses.FakeTensor) for i in example_inputs):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traced = make_fx(gm, decomposition_table=core_aten_decompositions(), tracing_mode="fake",
                             _allow_non_fake_inputs=True)(*example_inputs)
    except Exception:  # noqa: BLE001 - not decomposable: compared by the graph's own nodes
        return None
    return tuple(str(node.target) for node in traced.graph.nodes
                 if node.op == "call_function" and node.target is not operator.getitem
                 and not _bookkeeping(node.target) and not _identity(node) and not _number(node))


def _counted(backend: Any, mode: Any = None, options: Any = None, dynamic: Any = None) -> Counting:
    """The test's backend in a counter (once: torch.compile calls the patched ``optimize`` with
    its own wrapper of the counter)."""
    inner = backend
    while inner is not None and not isinstance(inner, Counting):
        inner = getattr(inner, "compiler_fn", None)
    return backend if inner is not None else Counting(_resolve(backend, mode, options, dynamic))


def _resolve(backend: Any, mode: Any = None, options: Any = None, dynamic: Any = None) -> Callable[..., Any]:
    """A backend name or callable as the callable torch.compile would use."""
    if backend is None:
        backend = "inductor"
    if isinstance(backend, str):
        if backend == "inductor":
            return torch._TorchCompileInductorWrapper(mode, options, dynamic)
        from torch._dynamo.backends.registry import lookup_backend  # noqa: PLC0415
        return lookup_backend(backend)
    return backend


_ORIGINAL = {
    "compile": torch.compile,
    "optimize": torch._dynamo.optimize,
    "optimize_assert": torch._dynamo.optimize_assert,
    "run": torch._dynamo.run,
    "reset": torch._dynamo.reset,
    "explain": torch._dynamo.explain,
    "export": torch._dynamo.export,
    "graph_break": torch._dynamo.graph_break,
    "allow_in_graph": torch._dynamo.allow_in_graph,
    "mark_dynamic": torch._dynamo.mark_dynamic,
    "mark_static": torch._dynamo.mark_static,
}


class _Decorator:
    """What ``optimize(...)`` gives outside torch.compile: a decorator (not a context manager)."""

    def __init__(self, wrap: Callable[[Any], Any], what: str) -> None:
        self.wrap, self.what = wrap, what

    def __call__(self, fn: Any) -> Any:
        return self.wrap(fn)

    def __enter__(self) -> None:
        if MODE == "symexec":
            raise HarnessUnsupported(f"{self.what} as a context manager")

    def __exit__(self, *exc: Any) -> None:
        return None


def _compile(model: Any = None, *, fullgraph: bool = False, dynamic: Any = None, backend: Any = "inductor",
             mode: Any = None, options: Any = None, disable: bool = False, **extra: Any) -> Any:
    if model is None:
        return lambda fn: _compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                   options=options, disable=disable, **extra)
    if MODE == "eager" or disable:
        return model
    counted = _counted(backend, mode, options, dynamic)
    if MODE == "dynamo":
        return _ORIGINAL["compile"](model, fullgraph=fullgraph, dynamic=dynamic, backend=counted, **extra)
    return symexec.compile(model, backend=counted, fullgraph=fullgraph, dynamic=dynamic)


def _optimize(*args: Any, **kwargs: Any) -> Any:
    backend = args[0] if args else kwargs.pop("backend", "inductor")
    if MODE == "eager" or kwargs.get("disable"):
        return _Decorator(lambda fn: fn, "torch._dynamo.optimize")
    counted = _counted(backend, dynamic=kwargs.get("dynamic"))
    if MODE == "dynamo":
        return _ORIGINAL["optimize"](counted, *args[1:], **kwargs)
    return _Decorator(lambda fn: symexec.compile(fn, backend=counted, fullgraph=bool(kwargs.get("nopython")),
                                                 dynamic=kwargs.get("dynamic")), "torch._dynamo.optimize")


def _optimize_assert(*args: Any, **kwargs: Any) -> Any:
    backend = args[0] if args else kwargs.pop("backend", "inductor")
    if MODE == "eager":
        return _Decorator(lambda fn: fn, "torch._dynamo.optimize_assert")
    counted = _counted(backend, dynamic=kwargs.get("dynamic"))
    if MODE == "dynamo":
        return _ORIGINAL["optimize_assert"](counted, *args[1:], **kwargs)
    if kwargs.get("export"):
        raise HarnessUnsupported("optimize_assert(export=True)")
    return _Decorator(lambda fn: symexec.compile(fn, backend=counted, fullgraph=True, dynamic=kwargs.get("dynamic")),
                      "torch._dynamo.optimize_assert")


def _run(fn: Any = None) -> Any:
    if MODE == "dynamo":
        return _ORIGINAL["run"](fn)
    return symexec.run(fn) if fn is not None else _Decorator(symexec.run, "torch._dynamo.run")


def _reset() -> None:
    _ORIGINAL["reset"]()
    symexec.reset()


def _only_dynamo(name: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        if MODE == "symexec":
            raise HarnessUnsupported(f"torch._dynamo.{name}")
        return _ORIGINAL[name](*args, **kwargs)
    return call


def _either(name: str, ours: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        return ours(*args, **kwargs) if MODE == "symexec" else _ORIGINAL[name](*args, **kwargs)
    return call


def _graph_break(*args: Any, **kwargs: Any) -> None:
    """torch._dynamo.graph_break; under symexec, ``symexec.graph_break`` is looked up instead."""


SUBSTITUTES = {
    "compile": _compile,
    "optimize": _optimize,
    "optimize_assert": _optimize_assert,
    "run": _run,
    "reset": _reset,
    "explain": _only_dynamo("explain"),
    "export": _only_dynamo("export"),
    "allow_in_graph": _either("allow_in_graph", symexec.allow_in_graph),
    "mark_dynamic": _either("mark_dynamic", symexec.mark_dynamic),
    "mark_static": _either("mark_static", symexec.mark_static),
}


def _set_graph_break() -> None:
    # symexec recognises its own graph_break by a mark, so the substitute is symexec's under symexec
    fn = symexec.graph_break if MODE == "symexec" else _ORIGINAL["graph_break"]
    torch._dynamo.graph_break = fn
    torch._dynamo.decorators.graph_break = fn


# torch._dynamo.config options that have a symexec.config counterpart of the same meaning: in the
# symexec run symexec reads them from torch._dynamo.config, so a test's
# ``torch._dynamo.config.patch(capture_scalar_outputs=True)`` applies to symexec too.
MIRRORED_OPTIONS = ("capture_scalar_outputs", "cache_size_limit", "nested_graph_breaks")


def _mirrored(name: str) -> property:
    own = getattr(symexec.config, name)

    def read(self: Any) -> Any:
        return getattr(torch._dynamo.config, name) if MODE == "symexec" else own

    return property(read)


def _mirror_config() -> None:
    """symexec.config reads the mirrored options from torch._dynamo.config (in the symexec run)."""
    mirrored = type("MirroredConfig", (type(symexec.config),), {name: _mirrored(name) for name in MIRRORED_OPTIONS})
    object.__setattr__(symexec.config, "__class__", mirrored)


def install() -> None:
    """Replace torch's compiler entry points wherever the tests reach them."""
    _mirror_config()
    torch.compile = SUBSTITUTES["compile"]
    for module in (torch._dynamo, torch._dynamo.eval_frame, torch._dynamo.testing, torch._dynamo.decorators):
        for name, fn in SUBSTITUTES.items():
            if name != "compile" and hasattr(module, name):
                setattr(module, name, fn)


def patch_globals(module: types.ModuleType) -> None:
    """A test module's own names of the originals (``from torch._dynamo import allow_in_graph``)."""
    by_identity = {id(_ORIGINAL[name]): fn for name, fn in SUBSTITUTES.items()}
    for name, value in list(vars(module).items()):
        if id(value) in by_identity:
            setattr(module, name, by_identity[id(value)])


# ---------------------------------------------------------------------------------------------
# Loading the test files: PyTorch 2.6's tests on a newer torch


class _Stub:
    """A name a 2.6 test file imports that this torch no longer has: a do-nothing decorator
    (``@stub`` or ``@stub(...)``), false as a flag."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return self

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"<stub {self.name}>"


STUBBED: list[str] = []
_MISSING = re.compile(r"cannot import name '(\w+)' from '([\w.]+)'")


def load(directory: str, file: str) -> types.ModuleType:
    """Import ``directory/file.py``, stubbing the names torch lost since 2.6."""
    if directory not in sys.path:
        sys.path.insert(0, directory)
        sys.path.insert(0, os.path.dirname(directory))
    path = os.path.join(directory, file + ".py")
    for _ in range(50):
        name = file
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except ImportError as e:
            match = _MISSING.search(str(e))
            if not match:
                raise
            setattr(sys.modules[match.group(2)], match.group(1), _Stub(match.group(1)))
            STUBBED.append(f"{match.group(2)}.{match.group(1)}")
            continue
        patch_globals(module)
        for cls in test_classes(module):
            if "guard_manager_clone_hook_fn" in vars(cls):
                # a self-check of Dynamo's guard managers, written for 2.6's hook signature
                cls.guard_manager_clone_hook_fn = lambda self, *args: None
        return module
    raise ImportError(f"{path}: too many missing names")


def test_classes(module: types.ModuleType) -> list[type]:
    return [value for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, unittest.TestCase) and value.__module__ == module.__name__]


def list_cases(module: types.ModuleType) -> list[str]:
    loader = unittest.TestLoader()
    return [f"{cls.__name__}.{name}" for cls in test_classes(module) for name in loader.getTestCaseNames(cls)]


# ---------------------------------------------------------------------------------------------
# Running one case


class _Collect(logging.Handler):
    """symexec's graph_breaks and fallbacks log records, kept for the case."""

    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.INFO)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(record.getMessage())


def _on_internal_error(fn: types.FunctionType, error: BaseException) -> None:
    STATS.internal.append(f"{getattr(fn, '__qualname__', fn)}: {type(error).__name__}: {error}"[:1000])


def _alarm(signum: int, frame: Any) -> None:
    raise CaseTimeout("time limit")


def _failure_line(tb: types.TracebackType | None) -> str:
    """The innermost line of the test (or of torch's standard_test), not of unittest."""
    line = ""
    for frame, lineno in traceback.walk_tb(tb):
        filename = frame.f_code.co_filename
        if "unittest" in filename or "common_utils.py" in filename or "_comparison.py" in filename:
            continue
        if "/dynamo/test_" in filename or filename.endswith("_dynamo/testing.py"):
            line = linecache.getline(filename, lineno).strip()
    return line


def _outcome(result: unittest.TestResult) -> tuple[str, str, str, str]:
    """(status, kind, message, line) of a one-case run."""
    if result.skipped:
        return "skip", "", str(result.skipped[0][1])[:300], ""
    if result.expectedFailures:
        return "xfail", "", "", ""
    if result.unexpectedSuccesses:
        return "xpass", "", "", ""
    problems = result.failures + result.errors
    if not problems:
        return "pass", "", "", ""
    error = getattr(result, "_last_exc", None)
    text = problems[0][1]
    last = text.strip().splitlines()[-1] if text.strip() else ""
    if error is not None:
        exc_type, exc, tb = error
        line = _failure_line(tb)
        message = f"{exc_type.__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:500]
        if isinstance(exc, HarnessUnsupported):
            return "n/a", "harness", message, line
        if isinstance(exc, CaseTimeout):
            return "timeout", "timeout", message, line
        if isinstance(exc, AssertionError):
            kind = "counts" if _COUNT_LINE.search(line) else "assertion"
            return "fail", kind, message, line
        return "error", "error", message, line
    return "error", "error", last[:500], ""


class _Result(unittest.TestResult):
    """Keeps the exception (with its traceback) of the first failure."""

    def addFailure(self, test: Any, err: Any) -> None:  # noqa: N802
        self._last_exc = getattr(self, "_last_exc", None) or err
        super().addFailure(test, err)

    def addError(self, test: Any, err: Any) -> None:  # noqa: N802
        self._last_exc = getattr(self, "_last_exc", None) or err
        super().addError(test, err)

    def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:  # noqa: N802
        if err is not None:
            self._last_exc = getattr(self, "_last_exc", None) or err
        super().addSubTest(test, subtest, err)


# A test's assertions about how torch.compile compiled (its counter's frame_count, op_count, the
# graph's text) are its expectation of Dynamo's breaks and recompiles, not of results. Under
# symexec (and eagerly) such an assertion that fails is recorded and lets the test go on, so its
# later assertions about values still judge symexec; the graphs and ops each system compiled are
# compared by the report instead (more graphs, fewer ops). Only an assertion whose line reads as a
# count and whose arguments are plain numbers, strings or None is soft: one about a tensor is
# about a value.
_SOFT_ASSERTS = ("assertEqual", "assertEquals", "assertNotEqual", "assertTrue", "assertFalse", "assertGreater",
                 "assertGreaterEqual", "assertLess", "assertLessEqual", "assertExpectedInline", "assertIs",
                 "assertIsNot", "assertIn", "assertNotIn")
_COUNT_VALUE = (int, float, str, type(None))


def _soften(test: unittest.TestCase) -> None:
    for name in _SOFT_ASSERTS:
        bound = getattr(test, name, None)
        if bound is not None:
            setattr(test, name, _soft(bound))


def _soft(bound: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return bound(*args, **kwargs)
        except AssertionError:
            caller = sys._getframe(1)
            filename = caller.f_code.co_filename
            line = linecache.getline(filename, caller.f_lineno).strip()
            in_test = "/dynamo/test_" in filename or filename.endswith("_dynamo/testing.py")
            if in_test and _COUNT_LINE.search(line) and all(isinstance(a, _COUNT_VALUE) for a in args):
                STATS.soft_counts.append(line[:200])
                return None
            raise
    return call


def run_case(module: types.ModuleType, case: str, mode: str, seconds: int) -> dict:
    global MODE, STATS
    MODE = mode
    _set_graph_break()
    STATS = Stats()
    class_name, method = case.split(".", 1)
    cls = getattr(module, class_name)
    _ORIGINAL["reset"]()
    symexec.reset()
    handlers = []
    for name, into in (("graph_breaks", STATS.breaks), ("fallbacks", STATS.fallbacks)):
        logger = symexec_logs.get_logger(name)
        handler = _Collect(into)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        handlers.append((logger, handler))
    symexec.convert.internal_error_hooks.append(_on_internal_error)
    result = _Result()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            test = cls(method)
            if mode != "dynamo":
                _soften(test)
            unittest.TestSuite([test]).run(result)
    except CaseTimeout as e:  # in a fixture, outside the test's own handling
        result._last_exc = (type(e), e, e.__traceback__)
        result.errors.append((None, "CaseTimeout"))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        symexec.convert.internal_error_hooks.remove(_on_internal_error)
        for logger, handler in handlers:
            logger.removeHandler(handler)
            logger.setLevel(logging.WARNING)
    status, kind, message, line = _outcome(result)
    return {"status": status, "kind": kind, "message": message, "line": line, "graphs": STATS.graphs,
            "ops": STATS.ops,
            "distinct_ops": sum(len(targets) for _, targets in set(STATS.keys)), "graph_ops": [list(t[:40]) for t in STATS.signatures[:10]],
            "breaks": STATS.breaks[:20], "fallbacks": STATS.fallbacks[:20],
            "internal": STATS.internal[:10], "soft_counts": STATS.soft_counts[:10], **_aten_counts()}


def _aten_counts() -> dict[str, int | None]:
    """The case's op counts in core ATen (None where a graph could not be decomposed)."""
    STATS.aten_keys = [(names, aten_ops(gm, inputs)) for names, gm, inputs in STATS.to_decompose]
    STATS.to_decompose.clear()
    if any(ops is None for _, ops in STATS.aten_keys):
        return {"aten_ops": None, "aten_distinct_ops": None}
    return {"aten_ops": sum(len(ops) for _, ops in STATS.aten_keys),
            "aten_distinct_ops": sum(len(ops) for _, ops in set(STATS.aten_keys))}


def worker(directory: str, seconds: int) -> None:
    """Serve JSON lines on the original stdout: {"list": file} or {"file", "case", "modes"}."""
    out = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the tests' printing goes nowhere
    install()
    modules: dict[str, types.ModuleType] = {}

    def module_for(file: str) -> types.ModuleType:
        if file not in modules:
            modules[file] = load(directory, file)
        return modules[file]

    for line in sys.stdin:
        request = json.loads(line)
        try:
            if "list" in request:
                reply: dict = {"cases": list_cases(module_for(request["list"])), "stubbed": STUBBED}
            else:
                reply = {"file": request["file"], "case": request["case"]}
                for mode in request["modes"]:
                    try:
                        reply[mode] = run_case(module_for(request["file"]), request["case"], mode, seconds)
                    except Exception as e:  # noqa: BLE001 - the harness: reported, the worker goes on
                        reply[mode] = {"status": "error", "kind": "harness", "message":
                                       f"harness: {type(e).__name__}: {e}"[:500], "line": "", "graphs": 0,
                                       "ops": 0, "distinct_ops": 0, "graph_ops": [], "breaks": [], "fallbacks": [],
                                       "internal": []}
        except Exception as e:  # noqa: BLE001
            reply = {"error": f"{type(e).__name__}: {e}"[:2000]}
        out.write(json.dumps(reply) + "\n")
        out.flush()
