"""Differential test helpers: run a function eagerly and through symexec, compare everything.

`check(fn, *args)` is byterun's `assert_ok` for symexec: two independent copies of the
arguments, one eager call and one compiled call per round, and a comparison of return values,
raised exceptions, printed output and the arguments afterwards (mutations included).
"""

from __future__ import annotations

import collections
import contextlib
import copy
import enum
import io
import math
import os
import sys
import traceback
import types

import numpy
import torch

import symexec
import symexec.backends

__all__ = [
    "CountingBackend",
    "check",
    "check_sequence",
    "copy_args",
    "assert_same",
    "dynamo_graphs",
    "run_both",
    "symexec_graphs",
]


# --------------------------------------------------------------------------------------------
# How broad the slowest sweeps are (every optimizer of optim_db, every model, in inference, in
# training and in generate())

# CI runs the suite on three Pythons, two at a time on two cores, in 20 minutes. The sweeps that
# compile a model or AOTAutograd per case run whole on CPython 3.11 (the default) and on a fixed
# slice elsewhere (the same code paths: what differs between Pythons is the bytecode symexec
# reads, which the slice exercises); SYMEXEC_BROAD=1 runs them whole anywhere.
BROAD = sys.version_info[:2] == (3, 11) or os.environ.get("SYMEXEC_BROAD") == "1"


def broad_or(everything, slice_):
    """``everything`` where the sweeps run whole (``BROAD``), else ``slice_``."""
    return list(everything) if BROAD else [item for item in everything if item in slice_]


# --------------------------------------------------------------------------------------------
# Copying inputs


def copy_args(value, memo=None):
    """A deep copy that clones tensors and copies containers recursively, keeping aliasing.

    Two occurrences of the same object among the inputs stay one object in the copy, so a
    test that passes one tensor twice still sees the aliasing in both runs.
    """
    if memo is None:
        memo = {}
    key = id(value)
    if key in memo:
        return memo[key]
    if isinstance(value, torch.nn.Parameter):
        result = torch.nn.Parameter(value.detach().clone(), requires_grad=value.requires_grad)
    elif isinstance(value, torch.Tensor):
        result = value.detach().clone()
        if value.requires_grad:
            result.requires_grad_(True)
    elif type(value) is list:
        result = []
        memo[key] = result
        result.extend(copy_args(item, memo) for item in value)
        return result
    elif type(value) is dict:
        result = {}
        memo[key] = result
        for k, v in value.items():
            result[copy_args(k, memo)] = copy_args(v, memo)
        return result
    elif type(value) is tuple:
        result = tuple(copy_args(item, memo) for item in value)
    elif type(value) is set:
        result = {copy_args(item, memo) for item in value}
    elif isinstance(value, (types.ModuleType, types.FunctionType, type)):
        result = value  # shared, as a program shares them
    else:
        result = copy.deepcopy(value, memo)
    memo[key] = result
    return result


# --------------------------------------------------------------------------------------------
# Comparing results


def _exact(value):
    """A key equal for two values only if they behave alike: the exact type and, for numbers,
    the value with its sign (``True``, ``1`` and ``1.0`` differ, ``0.0`` and ``-0.0`` differ, nans
    by their sign); tuples, frozensets, ranges and slices by their items or fields."""
    cls = type(value)
    if cls is float:
        return cls, repr(value), math.copysign(1.0, value)
    if cls is complex:
        return cls, _exact(value.real), _exact(value.imag)
    if cls in (bool, int, str, bytes, type(None)):
        return cls, value
    if cls is tuple:
        return cls, tuple(_exact(item) for item in value)
    if cls is frozenset:
        return cls, frozenset(_exact(item) for item in value)
    if cls is range:
        return cls, value.start, value.stop, value.step
    if cls is slice:
        return cls, _exact(value.start), _exact(value.stop), _exact(value.step)
    for base, read in ((int, int.__int__), (float, float.__float__), (complex, complex.__complex__),
                       (str, str.__str__), (bytes, bytes.__bytes__)):
        if isinstance(value, base) and not isinstance(value, enum.Enum):  # a subclass: by its value and attributes
            return cls, _exact(read(value)), tuple((k, _exact(v)) for k, v in vars(value).items()) \
                if hasattr(value, "__dict__") else ()
    return cls, value


def _tensor_equal(a, b):
    if a.layout != b.layout or a.is_quantized != b.is_quantized:
        return False
    if a.layout != torch.strided:
        return _tensor_equal(a.to_dense(), b.to_dense())  # (sparse: compared by value)
    if a.is_quantized:
        return a.qscheme() == b.qscheme() and torch.equal(a.int_repr(), b.int_repr()) and _tensor_equal(
            a.dequantize(), b.dequantize())
    if a.dtype.is_floating_point or a.dtype.is_complex:
        return torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)
    return torch.equal(a, b)


def assert_same(expected, actual, where="result"):
    """Assert `actual` (from the compiled run) matches `expected` (from the eager run)."""
    assert type(expected) is type(actual), (
        f"{where}: type differs: eager {type(expected).__name__} {expected!r}, "
        f"compiled {type(actual).__name__} {actual!r}"
    )
    if isinstance(expected, torch.Tensor):
        assert expected.dtype == actual.dtype, (
            f"{where}: dtype differs: eager {expected.dtype}, compiled {actual.dtype}"
        )
        assert expected.shape == actual.shape, (
            f"{where}: shape differs: eager {tuple(expected.shape)}, "
            f"compiled {tuple(actual.shape)}"
        )
        assert expected.device == actual.device, f"{where}: device differs"
        assert expected.requires_grad == actual.requires_grad, (
            f"{where}: requires_grad differs: eager {expected.requires_grad}, "
            f"compiled {actual.requires_grad}"
        )
        assert _tensor_equal(expected.detach(), actual.detach()), (
            f"{where}: values differ:\neager    {expected}\ncompiled {actual}"
        )
    elif isinstance(expected, (numpy.ndarray, numpy.generic)):
        # An array or a NumPy scalar: its exact type (numpy.float64, not a 0-d array), dtype,
        # shape and values (floats within rounding: torch's kernels compute them).
        assert expected.dtype == actual.dtype, f"{where}: dtype differs: eager {expected.dtype}, compiled {actual.dtype}"
        assert numpy.shape(expected) == numpy.shape(actual), f"{where}: shape differs: eager {expected!r}, compiled {actual!r}"
        assert _tensor_equal(torch.as_tensor(numpy.array(expected)), torch.as_tensor(numpy.array(actual))), (
            f"{where}: values differ:\neager    {expected!r}\ncompiled {actual!r}")
    elif isinstance(expected, (list, tuple, collections.deque)):
        if isinstance(expected, collections.deque):
            assert type(actual) is type(expected), f"{where}: eager {expected!r}, compiled {actual!r}"
            assert expected.maxlen == actual.maxlen, f"{where}: maxlen differs"
        assert len(expected) == len(actual), (
            f"{where}: length differs: eager {expected!r}, compiled {actual!r}"
        )
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_same(e, a, f"{where}[{i}]")
    elif isinstance(expected, dict):
        assert [_exact(k) for k in expected] == [_exact(k) for k in actual], (
            f"{where}: keys differ: eager {list(expected)}, compiled {list(actual)}"
        )
        for (k, e), (_, a) in zip(expected.items(), actual.items()):  # (a nan key finds no other nan)
            assert_same(e, a, f"{where}[{k!r}]")
    elif type(expected) in (float, complex, int, str, bytes, bool, type(None), frozenset, range, slice):
        assert _exact(expected) == _exact(actual), f"{where}: eager {expected!r}, compiled {actual!r}"
    elif type(expected) is set:
        assert {_exact(e) for e in expected} == {_exact(a) for a in actual}, (
            f"{where}: eager {expected!r}, compiled {actual!r}")
    elif isinstance(expected, (int, str, bytes, float, complex)) and not isinstance(expected, enum.Enum):
        assert _exact(expected) == _exact(actual), f"{where}: eager {expected!r}, compiled {actual!r}"
    elif isinstance(expected, (set, frozenset, torch.dtype, torch.device, torch.Size)):
        assert expected == actual, f"{where}: eager {expected!r}, compiled {actual!r}"
    elif isinstance(expected, torch.nn.Module):
        assert_same(expected.state_dict(), actual.state_dict(), f"{where}.state_dict()")
        assert_same(vars(_plain_attrs(expected)), vars(_plain_attrs(actual)), f"{where}.__dict__")
    elif hasattr(expected, "__dict__") and not isinstance(
            expected, (types.FunctionType, types.MethodType, types.ModuleType, type)):
        assert_same(vars(expected), vars(actual), f"{where}.__dict__")
    elif _slots(type(expected)) and type(expected).__eq__ is object.__eq__:
        for name in _slots(type(expected)):  # an object of a __slots__ class: its slots
            assert hasattr(expected, name) == hasattr(actual, name), f"{where}.{name}: set in one run only"
            if hasattr(expected, name):
                assert_same(getattr(expected, name), getattr(actual, name), f"{where}.{name}")
    else:
        # Functions, classes, modules...: the copy is the same object, or compares equal.
        assert expected is actual or expected == actual, (
            f"{where}: eager {expected!r}, compiled {actual!r}"
        )


class _Attrs:
    pass


def _slots(cls):
    """The slot names of a class and its bases."""
    names = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else [n for n in slots if n not in ("__dict__", "__weakref__")]
    return names


def _plain_attrs(module):
    """The non-torch attributes of an nn.Module (parameters and buffers are in state_dict)."""
    attrs = _Attrs()
    for k, v in vars(module).items():
        if not k.startswith("_") and k != "training":
            setattr(attrs, k, v)
    attrs.training = module.training
    return attrs


# --------------------------------------------------------------------------------------------
# Running


class _Outcome:
    def __init__(self, args, kwargs):
        self.args = args
        self.kwargs = kwargs
        self.result = None
        self.exc = None
        self.stdout = ""


def _run(fn, args, kwargs):
    outcome = _Outcome(args, kwargs)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            outcome.result = fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - compared below
            outcome.exc = exc
    outcome.stdout = buf.getvalue()
    return outcome


def _compare(eager, compiled, round_no):
    tag = f"call {round_no}: "
    if eager.exc is not None or compiled.exc is not None:
        if eager.exc is None:
            raise AssertionError(
                f"{tag}compiled raised {type(compiled.exc).__name__}: {compiled.exc}, "
                f"eager returned {eager.result!r}"
            ) from compiled.exc
        if compiled.exc is None:
            raise AssertionError(
                f"{tag}eager raised {type(eager.exc).__name__}: {eager.exc}, "
                f"compiled returned {compiled.result!r}"
            ) from eager.exc
        assert type(eager.exc) is type(compiled.exc), (
            f"{tag}exception type differs: eager {type(eager.exc).__name__}: {eager.exc}, "
            f"compiled {type(compiled.exc).__name__}: {compiled.exc}\n"
            + "".join(traceback.format_exception(compiled.exc))
        )
        assert str(eager.exc) == str(compiled.exc), (
            f"{tag}exception message differs: eager {eager.exc!s}, compiled {compiled.exc!s}"
        )
    else:
        assert_same(eager.result, compiled.result, f"{tag}result")
        _check_aliasing(eager, compiled, tag)
    assert eager.stdout == compiled.stdout, (
        f"{tag}printed output differs:\neager:    {eager.stdout!r}\ncompiled: {compiled.stdout!r}"
    )
    assert_same(list(eager.args), list(compiled.args), f"{tag}args after the call")
    assert_same(eager.kwargs, compiled.kwargs, f"{tag}kwargs after the call")


def _paths(value, path, out):
    """Map id -> access path for every tensor/list/dict reachable from the inputs."""
    for p, v in _walk(value, path):
        if isinstance(v, (torch.Tensor, list, dict)) and id(v) not in out:
            out[id(v)] = p


def _check_aliasing(eager, compiled, tag):
    """A result that *is* an input object in eager must be the same input in compiled."""
    eager_paths, compiled_paths = {}, {}
    _paths((list(eager.args), eager.kwargs), "inputs", eager_paths)
    _paths((list(compiled.args), compiled.kwargs), "inputs", compiled_paths)
    results = {}
    _paths(eager.result, "result", results)
    compiled_results = {}
    _paths(compiled.result, "result", compiled_results)
    by_path = {p: i for i, p in compiled_results.items()}
    first_path_of = {}
    for obj_id, rpath in results.items():
        if obj_id in eager_paths:
            actual = by_path.get(rpath)
            assert actual is not None and compiled_paths.get(actual) == eager_paths[obj_id], (
                f"{tag}{rpath} is the input {eager_paths[obj_id]} in eager, "
                f"but not in compiled (it is {compiled_paths.get(actual, 'a new object')})"
            )
    # Outputs that are one object in eager (`return y, y`) are one object in compiled too.
    eager_ids = _all_paths(eager.result, "result")
    compiled_ids = _all_paths(compiled.result, "result")
    for rpath, obj_id in eager_ids.items():
        first = first_path_of.setdefault(obj_id, rpath)
        if first != rpath and rpath in compiled_ids and first in compiled_ids:
            assert compiled_ids[rpath] == compiled_ids[first], (
                f"{tag}{rpath} and {first} are the same object in eager, not in compiled"
            )
    _check_storage_sharing(eager, compiled, tag)


def _walk(value, path):
    """(path, value) for every value inside a nest of lists, tuples and dicts, the nest included."""
    yield path, value
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _walk(item, f"{path}[{i}]")
    elif isinstance(value, dict):
        for k, item in value.items():
            yield from _walk(item, f"{path}[{k!r}]")


def _all_paths(value, path):
    """path -> id for every tensor/list/dict in a result (each occurrence, not just the first)."""
    return {p: id(v) for p, v in _walk(value, path) if isinstance(v, (torch.Tensor, list, dict))}


def _tensors(value, path):
    return {p: v for p, v in _walk(value, path) if isinstance(v, torch.Tensor)}


def _storage(t):
    try:
        return t.untyped_storage().data_ptr()
    except RuntimeError:
        return None


def _check_storage_sharing(eager, compiled, tag):
    """A result that is a view of an input in eager (`x.view(-1)`, `x[0]`) must be a view of the
    same input in compiled: writing into it later must write through to the input."""
    eager_in = _tensors((list(eager.args), eager.kwargs), "inputs")
    compiled_in = _tensors((list(compiled.args), compiled.kwargs), "inputs")
    eager_out = _tensors(eager.result, "result")
    compiled_out = _tensors(compiled.result, "result")
    for rpath, out in eager_out.items():
        ptr = _storage(out)
        if ptr is None or not out.numel() or rpath not in compiled_out:
            continue
        for ipath, inp in eager_in.items():
            if _storage(inp) == ptr and inp.numel() and ipath in compiled_in:
                assert _storage(compiled_out[rpath]) == _storage(compiled_in[ipath]), (
                    f"{tag}{rpath} shares storage with {ipath} in eager (a view or the input "
                    f"itself), but not in compiled"
                )


def _describe_entries(compiled):
    lines = []
    for i, entry in enumerate(symexec.cache_entries(compiled)):
        guards = [g.text for g in entry.guards]
        lines.append(f"  entry {i}: fallback_reason={entry.fallback_reason!r}, guards={guards}")
    return "\n".join(lines) or "  (no cache entries)"


def _entry_report(compiled, limit=6000):
    """The newest cache entry as a failing test shows it: its guards, its readable code and its
    graph (what symexec ran instead of the function)."""
    entries = symexec.cache_entries(compiled)
    if not entries:
        return "(symexec made no cache entry)"
    entry = entries[0]
    parts = [f"newest of {len(entries)} entries; fallback_reason={entry.fallback_reason!r}",
             "guards:", *(f"  {g.text}" for g in entry.guards),
             "code:", entry.readable_code or "  (runs the original function)",
             "graph:", entry.graph.code.strip() if entry.graph is not None else "  (none)"]
    text = "\n".join(parts)
    return text if len(text) <= limit else text[:limit] + "\n  ..."


def _compare_reporting(compiled, expected, actual, number):
    try:
        _compare(expected, actual, number)
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- what symexec ran ---\n{_entry_report(compiled)}") from None


class _Capturing:
    """Wraps a backend (a name or a callable) and keeps the graphs it is given, so a helper can
    tell whether a call captured anything (at least one graph with at least one op)."""

    def __init__(self, backend):
        self.backend = symexec.backends.lookup(backend)
        self.__name__ = backend if isinstance(backend, str) else getattr(backend, "__name__", type(backend).__name__)
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return self.backend(gm, example_inputs)

    def ops(self):
        return sum(node.op in ("call_function", "call_method", "call_module")
                   for gm in self.graphs for node in gm.graph.nodes)


def _assert_captured(compiled, capturing, what):
    assert capturing.ops() > 0, (
        f"symexec captured nothing for {what}: {len(capturing.graphs)} graph(s), no op in any (pass "
        f"captured=False if the function has no torch op to capture)\n--- what symexec ran ---\n"
        f"{_entry_report(compiled)}")


def check(fn, *args, backend="eager", expect_traced=True, calls=2, expect_reuse=True,
          captured=None, **kwargs):
    """Run `fn(*args, **kwargs)` eagerly and compiled by symexec; assert they behave the same.

    Each of `calls` rounds runs both on fresh, independent copies of the arguments and
    compares return values, exceptions (type and message), printed output and the arguments
    afterwards. With `expect_traced` the newest cache entry must have been traced (no
    fallback to the original function); with `expect_reuse` the later rounds must reuse the
    first round's cache entry. With `captured` (by default, whenever `expect_traced`) the first
    round must have compiled at least one graph with at least one op; `captured=False` says the
    function has nothing to capture (pure Python). Returns the compiled function.
    """
    if captured is None:
        captured = expect_traced
    capturing = _Capturing(backend)
    compiled = symexec.compile(fn, backend=capturing)
    entries_after_first = None
    for round_no in range(1, calls + 1):
        eager_args, eager_kwargs = copy_args((list(args), kwargs))
        compiled_args, compiled_kwargs = copy_args((list(args), kwargs))
        eager = _run(fn, eager_args, eager_kwargs)
        actual = _run(compiled, compiled_args, compiled_kwargs)
        _compare_reporting(compiled, eager, actual, round_no)
        if round_no == 1:
            entries = symexec.cache_entries(compiled)
            entries_after_first = len(entries)
            if expect_traced:
                assert entries, "symexec made no cache entry for the call"
                assert entries[0].fallback_reason is None, (
                    f"symexec fell back to the original function: {entries[0].fallback_reason}"
                )
            if captured:
                _assert_captured(compiled, capturing, "the first call")
        elif expect_reuse:
            assert len(symexec.cache_entries(compiled)) == entries_after_first, (
                f"call {round_no} with equal inputs recompiled: "
                f"{symexec.recompile_reasons(compiled)}\n{_describe_entries(compiled)}"
            )
    return compiled


# --------------------------------------------------------------------------------------------
# Counting graphs, against torch.compile


class CountingBackend:
    """A backend (Dynamo's contract) that records every graph it is given and runs it as is."""

    def __init__(self):
        self.graphs = []
        self.example_inputs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        self.example_inputs.append(list(example_inputs))
        return gm.forward

    @property
    def graph_count(self):
        return len(self.graphs)

    def op_counts(self):
        """Number of call_function/call_method/call_module nodes of each graph."""
        ops = ("call_function", "call_method", "call_module")
        return [sum(node.op in ops for node in gm.graph.nodes) for gm in self.graphs]

    def tensor_op_counts(self):
        """``op_counts`` without the nodes that compute a number or a size (``size``, its
        arithmetic) and those with no value that nothing uses (torch.compile's
        ``broadcast_shapes`` of constant sizes): a trace may compute those as it goes."""
        ops = ("call_function", "call_method", "call_module")
        return [sum(node.op in ops and not _number_or_size(node.meta.get("example_value"))
                    and ("example_value" in node.meta or bool(node.users)) for node in gm.graph.nodes)
                for gm in self.graphs]


def _number_or_size(value):
    if isinstance(value, tuple):
        return all(_number_or_size(v) for v in value)
    return type(value) in (int, float, bool, torch.SymInt, torch.SymFloat, torch.SymBool)


def symexec_graphs(fn, *args, **kwargs):
    """Run `fn` under symexec with a fresh CountingBackend; return (result, backend)."""
    backend = CountingBackend()
    compiled = symexec.compile(fn, backend=backend)
    result = compiled(*copy_args(list(args)), **copy_args(kwargs))
    return result, backend


def dynamo_graphs(fn, *args, **kwargs):
    """Run `fn` under torch.compile with a fresh CountingBackend; return (result, backend)."""
    import torch._dynamo  # tests may use Dynamo as the reference; symexec itself must not

    torch._dynamo.reset()
    backend = CountingBackend()
    compiled = torch.compile(fn, backend=backend)
    result = compiled(*copy_args(list(args)), **copy_args(kwargs))
    torch._dynamo.reset()
    return result, backend


def assert_same_graphs_as_dynamo(fn, *args, **kwargs):
    """symexec produces as many graphs, with as many ops each, as torch.compile does."""
    expected, dynamo = dynamo_graphs(fn, *args, **kwargs)
    actual, ours = symexec_graphs(fn, *args, **kwargs)
    assert_same(expected, actual)
    assert ours.graph_count == dynamo.graph_count, (
        f"symexec made {ours.graph_count} graphs, torch.compile {dynamo.graph_count}:\n"
        + "\n".join(gm.code for gm in ours.graphs)
    )
    assert ours.op_counts() == dynamo.op_counts(), (
        f"ops per graph: symexec {ours.op_counts()}, torch.compile {dynamo.op_counts()}\n"
        + "\n".join(gm.code for gm in ours.graphs)
        + "\n--- torch.compile ---\n"
        + "\n".join(gm.code for gm in dynamo.graphs)
    )
    return ours, dynamo


def check_sequence(fn, *steps, dynamic=None, backend="eager", captured=True):
    """One compiled function called once per step, each call compared with eager on fresh
    copies (as `check` does). A step is a list of positional arguments, or a callable run
    between calls (it changes the world both see: a global, a class, a function's defaults).
    This is how a missing guard shows: a later call reuses an entry it should not. With
    `captured` the sequence must have compiled at least one graph with at least one op
    (`captured=False`: the function has nothing to capture)."""
    capturing = _Capturing(backend)
    compiled = symexec.compile(fn, backend=capturing, dynamic=dynamic)
    for number, step in enumerate(steps, 1):
        if callable(step):
            step()
            continue
        eager_args, _ = copy_args((list(step), {}))
        compiled_args, _ = copy_args((list(step), {}))
        _compare_reporting(compiled, _run(fn, eager_args, {}), _run(compiled, compiled_args, {}), number)
    if captured:
        _assert_captured(compiled, capturing, "the sequence")
    return compiled


class lazy_property:
    """A non-data descriptor written in Python that caches into the instance's ``__dict__``
    (as libraries' ``lazy_property``/``cached_property`` do)."""

    def __init__(self, fn):
        self.fn = fn
        self.name = fn.__name__

    def __get__(self, obj, cls):
        if obj is None:
            return self
        value = self.fn(obj)
        obj.__dict__[self.name] = value
        return value


def run_both(fn, calls, *, dynamic=None):
    """Call ``fn`` compiled by symexec and by torch.compile on each argument tuple of
    ``calls``; compare every result with eager; return (symexec's compiled function, both
    graph counters)."""
    import torch._dynamo

    ours, theirs = CountingBackend(), CountingBackend()
    compiled = symexec.compile(fn, backend=ours, dynamic=dynamic)
    torch._dynamo.reset()
    reference = torch.compile(fn, backend=theirs, dynamic=dynamic)
    for args in calls:
        expected = fn(*args)
        assert_same(expected, compiled(*args))
        assert_same(expected, reference(*args))
    torch._dynamo.reset()
    return compiled, ours, theirs
