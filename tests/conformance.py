"""Conformance against torch's own test databases: each sample runs eager, under symexec and
under torch.compile, and the three are compared.

The databases ship inside the installed torch (``torch.testing._internal``); they are
imported, never copied:

- ``op_db``: every operator's function form ``op(x, ...)``, its method form ``x.op(...)``,
  its in-place form ``x.op_(...)`` and the unbound form ``torch.Tensor.op(x, ...)``;
- ``module_db``: every ``torch.nn`` module's forward, in eval mode;
- ``autograd_function_db``: custom ``torch.autograd.Function``s, forward and backward;
- ``optim_db``: ``optimizer.step()`` compiled, as real training loops do.

A sample's verdict for one system is ``ok`` (the same result as eager, or the same exception),
``wrong`` (a different result, a different exception, or a raise where eager returned) or, for
symexec, ``fallback`` (an internal error: the function ran uncompiled). The graphs and op nodes
each system captured are counted with a counting backend. symexec conforms on a sample when it
is ``ok`` wherever torch.compile is, and captures no fewer op nodes.

``tests/test_conformance.py`` runs a fixed, deterministic slice in CI;
``python benchmarks/conformance.py`` runs everything and prints a table.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import sys
import warnings
from typing import Any, Callable, Iterator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import symexec  # noqa: E402
from helpers import CountingBackend, assert_same, copy_args  # noqa: E402

FORMS = ("function", "method", "inplace", "unbound")


@dataclasses.dataclass
class Sample:
    """One call to compare: `fn(*args, **kwargs)`, named for the table."""

    suite: str
    name: str  # the op or module, as the database names it
    form: str
    index: int
    fn: Callable
    args: list
    kwargs: dict
    values: bool = True  # False: the result is uninitialised memory; compare its metadata only

    @property
    def key(self) -> str:
        return f"{self.suite}:{self.name}:{self.form}:{self.index}"


@dataclasses.dataclass
class Verdict:
    status: str  # ok, wrong, fallback, incomparable (a result torch cannot compare)
    graphs: int = 0
    ops: int = 0
    detail: str = ""
    breaks: int = 0  # graph breaks (symexec's only)


@dataclasses.dataclass
class Comparison:
    sample: Sample
    dynamic: bool | None
    eager_raised: bool
    symexec: Verdict
    dynamo: Verdict

    @property
    def conforms(self) -> bool:
        if self.symexec.status == "wrong":
            return False  # never, whatever torch.compile does
        if self.dynamo.status != "ok" or self.symexec.status == "incomparable":
            return True
        # Fewer ops are fine only for a whole capture: no break, so nothing ran outside a graph
        # (torch.compile rewrites some ops into several, addcdiv into div, mul and add, and
        # records calls whose results are constants, torch.broadcast_shapes).
        return self.symexec.status == "ok" and (self.symexec.ops >= self.dynamo.ops or not self.symexec.breaks)

    def describe(self) -> str:
        s, d = self.symexec, self.dynamo
        return (f"{self.sample.key} dynamic={self.dynamic}: symexec {s.status} {s.graphs}g/{s.ops}ops/{s.breaks}b "
                f"{s.detail[:300]} | torch.compile {d.status} {d.graphs}g/{d.ops}ops {d.detail[:200]}")


# ---------------------------------------------------------------------------------------------
# op_db


def _dtype_for(op: Any) -> torch.dtype | None:
    dtypes = op.supported_dtypes("cpu")
    for dtype in (torch.float32, torch.float64, torch.int64, torch.bool, torch.complex64):
        if dtype in dtypes:
            return dtype
    return next(iter(dtypes), None)


def _caller(target: Callable) -> Callable:
    def call(*args, **kwargs):
        return target(*args, **kwargs)
    return call


def _method_caller(name: str) -> Callable:
    def call(x, *args, **kwargs):
        return getattr(x, name)(*args, **kwargs)
    return call


def op_samples(ops: list | None = None, per_op: int = 2, forms: tuple = FORMS) -> Iterator[Sample]:
    """Samples of op_db: up to `per_op` sample inputs per op, in each of `forms`."""
    from torch.testing._internal.common_methods_invocations import op_db

    for op in op_db if ops is None else ops:
        dtype = _dtype_for(op)
        if dtype is None:
            continue
        try:
            inputs = []
            for sample in op.sample_inputs("cpu", dtype, requires_grad=False):
                inputs.append(sample)
                if len(inputs) >= per_op:
                    break
        except Exception:  # noqa: BLE001 - a sample generator this torch build cannot run
            continue
        name = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
        for index, sample in enumerate(inputs):
            args = [sample.input, *sample.args]
            for form in forms:
                fn = _form(op, form)
                if fn is not None:
                    yield Sample("op_db", name, form, index, fn, args, dict(sample.kwargs),
                                 values=op.name not in _UNINITIALISED)


# Ops whose results hold whatever memory they were given.
_UNINITIALISED = frozenset({"empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided",
                            "empty_permuted", "resize_", "resize_as_"})


def _form(op: Any, form: str) -> Callable | None:
    if form == "function":
        return _caller(op.op)
    if form == "method" and op.method_variant is not None:
        return _method_caller(op.name)
    if form == "inplace" and op.inplace_variant is not None:
        return _caller(op.inplace_variant)
    if form == "unbound" and op.method_variant is not None and isinstance(getattr(torch.Tensor, op.name, None), Callable):
        return _caller(getattr(torch.Tensor, op.name))
    return None


# ---------------------------------------------------------------------------------------------
# module_db: each module built once per sample, in eval mode, called as a compiled module


def module_samples(modules: list | None = None, per_module: int = 2) -> Iterator[Sample]:
    from torch.testing._internal.common_modules import module_db

    for info in module_db if modules is None else modules:
        try:
            inputs = info.module_inputs_func(info, device="cpu", dtype=torch.float32, requires_grad=False,
                                             training=False)
        except Exception:  # noqa: BLE001 - a sample generator this torch build cannot run
            continue
        inputs = [i for i in inputs if i.forward_input is not None][:per_module]
        for index, sample in enumerate(inputs):
            try:
                torch.manual_seed(0)
                module = info.module_cls(*sample.constructor_input.args, **sample.constructor_input.kwargs).eval()
            except Exception:  # noqa: BLE001 - not constructible on this machine (no CUDA...)
                continue
            yield Sample("module_db", info.name, "forward", index, module, list(sample.forward_input.args),
                         dict(sample.forward_input.kwargs))


# ---------------------------------------------------------------------------------------------
# optim_db: optimizer.step() compiled, on a copy of one optimizer per system


def _stepper() -> Callable:
    def step(optimizer):
        optimizer.step()
        # The parameters and the state of each (state_dict() is an API torch.compile keeps out
        # of its traces: it is no part of what a compiled step is compared on).
        params = [p for group in optimizer.param_groups for p in group["params"]]
        return params, [dict(optimizer.state[p]) for p in params]
    return step


def optim_samples(optimizers: list | None = None) -> Iterator[Sample]:
    from torch.testing._internal.common_optimizers import optim_db

    for info in optim_db if optimizers is None else optimizers:
        for index, optim_input in enumerate(info.optim_inputs_func(device="cpu")):
            torch.manual_seed(0)
            params = [torch.randn(3, 4, requires_grad=True), torch.randn(4, requires_grad=True)]
            for p in params:
                p.grad = torch.randn_like(p)
            try:
                optimizer = info.optim_cls(params, **optim_input.kwargs)
            except Exception:  # noqa: BLE001 - a combination this torch build refuses (fused on cpu...)
                continue
            yield Sample("optim_db", info.optim_cls.__name__, optim_input.desc, index, _stepper(), [optimizer], {})


# ---------------------------------------------------------------------------------------------
# Running one sample on the three systems


def _quiet() -> contextlib.AbstractContextManager:
    stack = contextlib.ExitStack()
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("ignore")
    stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
    stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
    return stack


def _call(fn: Callable, sample: Sample) -> tuple[Any, BaseException | None]:
    args, kwargs = copy_args((sample.args, sample.kwargs))
    torch.manual_seed(0)
    try:
        return fn(*args, **kwargs), None
    except Exception as exc:  # noqa: BLE001 - compared with eager's
        return None, exc


def _verdict(sample: Sample, expected: tuple, actual: tuple, backend: CountingBackend) -> Verdict:
    (want, want_exc), (got, got_exc) = expected, actual
    if not sample.values:
        want, got = _metadata(want), _metadata(got)
    ops = sum(backend.op_counts())
    if want_exc is not None or got_exc is not None:
        if want_exc is not None and got_exc is not None and type(want_exc) is type(got_exc):
            return Verdict("ok", backend.graph_count, ops)
        detail = f"eager {type(want_exc).__name__ if want_exc else 'returned'}, got {type(got_exc).__name__ if got_exc else 'a result'}: {got_exc or ''}"
        return Verdict("wrong", backend.graph_count, ops, detail)
    try:
        assert_same(_dense(want), _dense(got))
    except AssertionError as exc:
        return Verdict("wrong", backend.graph_count, ops, str(exc).splitlines()[0])
    except Exception as exc:  # noqa: BLE001 - a result torch cannot compare (quantized...)
        return Verdict("incomparable", backend.graph_count, ops, f"{type(exc).__name__}: {exc}"[:200])
    return Verdict("ok", backend.graph_count, ops)


def _metadata(value: Any) -> Any:
    from torch.utils._pytree import tree_map

    return tree_map(lambda t: (t.shape, t.dtype, t.stride()) if isinstance(t, torch.Tensor) else t, value)


def _dense(value: Any) -> Any:
    """Sparse results compared by their values (allclose takes strided tensors only)."""
    from torch.utils._pytree import tree_map

    def to_dense(t: Any) -> Any:
        if isinstance(t, torch.Tensor) and t.layout != torch.strided:
            return ("layout", t.layout, t.to_dense())
        return t
    return tree_map(to_dense, value)


def run_symexec(sample: Sample, expected: tuple, dynamic: bool | None) -> Verdict:
    symexec.reset()
    backend = CountingBackend()
    errors: list[str] = []
    hook = lambda fn, error: errors.append(f"{type(error).__name__}: {error}")  # noqa: E731
    symexec.convert.internal_error_hooks.append(hook)
    try:
        compiled = symexec.compile(sample.fn, backend=backend, dynamic=dynamic)
        verdict = _verdict(sample, expected, _call(compiled, sample), backend)
    finally:
        symexec.convert.internal_error_hooks.remove(hook)
    if errors:
        return Verdict("fallback", backend.graph_count, sum(backend.op_counts()), errors[0])
    verdict.breaks = sum(entry.break_reason is not None or entry.fallback_reason is not None
                         for cache in list(symexec.cache.ALL_CACHES) for entry in cache.entries)
    return verdict


def run_dynamo(sample: Sample, expected: tuple, dynamic: bool | None) -> Verdict:
    import torch._dynamo  # the reference; symexec itself never imports it

    torch._dynamo.reset()
    backend = CountingBackend()
    try:
        compiled = torch.compile(sample.fn, backend=backend, dynamic=dynamic)
        return _verdict(sample, expected, _call(compiled, sample), backend)
    finally:
        torch._dynamo.reset()


def compare(sample: Sample, dynamic: bool | None = None) -> Comparison:
    with _quiet():
        expected = _call(sample.fn, sample)
        ours = run_symexec(sample, expected, dynamic)
        theirs = run_dynamo(sample, expected, dynamic)
    return Comparison(sample, dynamic, expected[1] is not None, ours, theirs)
