"""Differential guard fuzzer: sequences of calls of one compiled function, compared with eager.

Every template below is a tiny module (source text) exercising one or more fact kinds of the
guard catalogue (/work/shared/GUARDS.md). A *world* is a fresh module namespace made by
exec'ing the template's source: the eager world and the compiled world are two identical
worlds, so globals, classes and modules can be mutated in both identically between calls.
A *sequence* is 3-6 steps: a call (argument specs + an optional enclosing torch global-state
context) or a mutation (a line of Python exec'd in both worlds). Arguments are described by
readable specs (`T(...)`, `Same(0)`, `Ref('torch.sin')`, `Obj('C', ...)`, `Part(...)`) and
built separately in each world, aliasing included.

Each call is compared on: result, exception type and message, printed output, the arguments
after the call (in-place mutation), outputs aliasing inputs, the template's observed world
objects, torch's global state after the call (grad mode, default dtype, deterministic flag,
autocast, no fake mode left active), symexec warnings and internal errors.

Run:  python -m tests.fuzz --minutes N     (or python tests/fuzz.py --minutes N)
"""

from __future__ import annotations

import argparse
import contextlib
import linecache
import os
import logging
import random
import re
import sys
import textwrap
import time
import traceback
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings, seed as hseed  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import symexec  # noqa: E402
import symexec.convert  # noqa: E402
import helpers  # noqa: E402
from helpers import _compare, _run  # noqa: E402

_plain_assert_same = helpers.assert_same


def _world_twin(x, y):
    """x and y are the same object of the two worlds (a function or class of the template)."""
    if x is y:
        return True
    mod = getattr(x, "__module__", None)
    if not (isinstance(mod, str) and mod.startswith("fuzz_") and mod == getattr(y, "__module__", None)):
        return False
    if getattr(x, "__qualname__", None) != getattr(y, "__qualname__", None):
        return False
    cx, cy = getattr(x, "__code__", None), getattr(y, "__code__", None)
    return cx is None or (cx.co_firstlineno == cy.co_firstlineno and cx.co_code == cy.co_code)


def assert_same(expected, actual, where="result"):
    """helpers.assert_same, where an object of the eager world matches its twin in the compiled
    world (same template function, class, or an instance of twin classes with equal state)."""
    te, ta = type(expected), type(actual)
    if te is not ta and _world_twin(te, ta):
        if isinstance(expected, torch.nn.Module):
            _plain_assert_same(expected.state_dict(), actual.state_dict(), f"{where}.state_dict()")
            _plain_assert_same(vars(helpers._plain_attrs(expected)), vars(helpers._plain_attrs(actual)),
                               f"{where}.__dict__")
        else:
            assert_same(vars(expected), vars(actual), f"{where}.__dict__")
        return
    if expected is not actual and callable(expected) and _world_twin(expected, actual):
        return
    _plain_assert_same(expected, actual, where)


@contextlib.contextmanager
def _world_aware_compare():
    helpers.assert_same = assert_same
    try:
        yield
    finally:
        helpers.assert_same = _plain_assert_same

SymexecWarning = getattr(symexec, "SymexecWarning", None)
if SymexecWarning is None:
    try:
        from symexec.exc import SymexecWarning  # type: ignore
    except ImportError:  # pragma: no cover
        SymexecWarning = None


# --------------------------------------------------------------------------------------------
# Argument specs: readable descriptions, built once per world


class Spec:
    def __eq__(self, other):
        return type(self) is type(other) and repr(self) == repr(other)

    def __hash__(self):
        return hash(repr(self))


_DT = {torch.float32: "f32", torch.float64: "f64", torch.int64: "i64", torch.complex64: "c64",
       torch.float16: "f16"}


class T(Spec):
    """A tensor: dtype, shape, variant (c contiguous, t strided, off storage_offset, wide2/wide3
    the leading columns of a tensor 2 or 3 times wider, conj, neg, nonleaf, scale = a Python
    attribute .scale), requires_grad."""

    def __init__(self, dtype=torch.float32, shape=(4,), variant="c", rg=False, seed=0):
        self.dtype, self.shape, self.variant, self.rg, self.seed = dtype, tuple(shape), variant, rg, seed

    def __repr__(self):
        extra = "" if self.variant == "c" else f", {self.variant!r}"
        rg = ", rg=True" if self.rg else ""
        seed = f", seed={self.seed}" if self.seed else ""
        return f"T({_DT.get(self.dtype, self.dtype)}, {self.shape}{extra}{rg}{seed})"

    def build(self, ns, built):
        n = 1
        for s in self.shape:
            n *= s
        vals = ((torch.arange(n, dtype=torch.float64) * 0.37 + self.seed * 0.91).sin() * 3)
        if self.dtype.is_complex:
            base = torch.complex(vals.float(), (vals * 0.5).cos().float()).to(self.dtype)
        elif self.dtype.is_floating_point:
            base = vals.to(self.dtype)
        else:
            base = (torch.arange(n) - n // 2 + self.seed).to(self.dtype)
        v = self.variant
        if v == "t":
            if len(self.shape) == 2:
                x = base.reshape(self.shape[::-1]).t()
            else:
                big = torch.zeros(2 * n, dtype=self.dtype)
                big[::2] = base
                x = big[::2].reshape(self.shape)
        elif v == "off":
            big = torch.zeros(n + 2, dtype=self.dtype)
            big[2:] = base
            x = big[2:].reshape(self.shape)
        elif v in ("wide2", "wide3"):  # the leading columns of a wider tensor: strides of its width
            last = self.shape[-1] if self.shape else 1
            big = torch.zeros(*self.shape[:-1], last * int(v[-1]), dtype=self.dtype)
            big[..., :last] = base.reshape(self.shape)
            x = big[..., :last]
        else:
            x = base.reshape(self.shape).clone()
        if v == "conj":
            x = x.conj()
        elif v == "neg":
            x = torch._neg_view(x)
        can_grad = self.dtype.is_floating_point or self.dtype.is_complex
        if v == "nonleaf" and can_grad:
            x = x.requires_grad_(True) * 1
        elif self.rg and can_grad:
            x.requires_grad_(True)
        if v == "scale":
            x.scale = 2.5
        return x


class A(Spec):
    """A NumPy array: dtype name, shape, variant (c contiguous, t transposed, off a view at an
    offset, ro read-only), seed."""

    def __init__(self, dtype="float64", shape=(2, 3), variant="c", seed=0):
        self.dtype, self.shape, self.variant, self.seed = dtype, tuple(shape), variant, seed

    def __repr__(self):
        extra = "" if self.variant == "c" else f", {self.variant!r}"
        return f"A({self.dtype!r}, {self.shape}{extra}{f', seed={self.seed}' if self.seed else ''})"

    def build(self, ns, built):
        import numpy
        n = int(numpy.prod(self.shape))
        values = numpy.sin(numpy.arange(n + 1) * 0.37 + self.seed) * 3
        if self.variant == "t":
            x = values[:n].reshape(self.shape[::-1]).T
        elif self.variant == "off":
            x = values[1:].reshape(self.shape)
        else:
            x = values[:n].reshape(self.shape).copy()
        x = x.astype(self.dtype) if self.variant != "t" else x.astype(self.dtype).T.copy().T
        if self.variant == "ro":
            x.flags.writeable = False
        return x


class Same(Spec):
    """The very object built for argument i (aliasing)."""

    def __init__(self, i):
        self.i = i

    def __repr__(self):
        return f"Same({self.i})"

    def build(self, ns, built):
        return built[self.i]


class Ref(Spec):
    """A named object of the world: eval(name) in the world's namespace."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"Ref({self.name!r})"

    def build(self, ns, built):
        return eval(self.name, ns)


class Obj(Spec):
    """An instance of the world's class `cls` with instance attributes set."""

    def __init__(self, cls, **attrs):
        self.cls, self.attrs = cls, attrs

    def __repr__(self):
        inner = "".join(f", {k}={v!r}" for k, v in self.attrs.items())
        return f"Obj({self.cls!r}{inner})"

    def build(self, ns, built):
        o = ns[self.cls]()
        for k, v in self.attrs.items():
            setattr(o, k, build(v, ns, built))
        return o


class Part(Spec):
    """functools.partial(func, *args, **kwargs)."""

    def __init__(self, func, *args, **kwargs):
        self.func, self.args, self.kwargs = func, args, kwargs

    def __repr__(self):
        inner = "".join(f", {a!r}" for a in self.args) + "".join(
            f", {k}={v!r}" for k, v in self.kwargs.items())
        return f"partial({self.func}{inner})"

    def build(self, ns, built):
        import functools
        return functools.partial(eval(self.func, ns), *[build(a, ns, built) for a in self.args],
                                 **{k: build(v, ns, built) for k, v in self.kwargs.items()})


def build(spec, ns, built):
    if isinstance(spec, Spec):
        return spec.build(ns, built)
    if type(spec) is list:
        return [build(s, ns, built) for s in spec]
    if type(spec) is tuple:
        return tuple(build(s, ns, built) for s in spec)
    if type(spec) is dict:
        return {k: build(v, ns, built) for k, v in spec.items()}
    return spec


def build_args(specs, ns):
    built = []
    for s in specs:
        built.append(build(s, ns, built))
    return built


# --------------------------------------------------------------------------------------------
# Steps


CONTEXTS = (None, "no_grad", "default_dtype_f64", "deterministic", "autocast_bf16")


@contextlib.contextmanager
def call_context(name):
    if name is None:
        yield
    elif name == "no_grad":
        with torch.no_grad():
            yield
    elif name == "default_dtype_f64":
        old = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            yield
        finally:
            torch.set_default_dtype(old)
    elif name == "deterministic":
        old = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(True)
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(old)
    elif name == "autocast_bf16":
        with torch.autocast("cpu", dtype=torch.bfloat16):
            yield
    else:  # pragma: no cover
        raise ValueError(name)


class Call:
    def __init__(self, args, ctx=None):
        self.args, self.ctx = list(args), ctx

    def __repr__(self):
        text = f"fn({', '.join(map(repr, self.args))})"
        return f"with {self.ctx}: {text}" if self.ctx else text


class Mut:
    def __init__(self, code):
        self.code = code

    def __repr__(self):
        return f"mutate: {self.code}"


# --------------------------------------------------------------------------------------------
# Templates


PRELUDE = '''\
import functools, math, types
import torch
from torch import nn

lam = lambda t: t + 1

def mk_linear(i, o, seed):
    lin = nn.Linear(i, o)
    with torch.no_grad():
        w = (torch.arange(i * o, dtype=torch.float32) * 0.13 + seed).sin().reshape(o, i)
        lin.weight.copy_(w)
        lin.bias.copy_(torch.arange(o, dtype=torch.float32) * 0.1 - seed)
    return lin
'''


class Template:
    def __init__(self, name, dims, src, args, muts=(), observe=(), ctx=True, cleanup=None, config=None):
        self.name, self.dims = name, dims
        self.config = dict(config or {})  # symexec.config options set while the sequence runs
        self.cleanup = cleanup  # run in each world after a sequence: what its mutations shared with others
        self.src = textwrap.dedent(src)
        self.args = args  # a strategy of argument spec lists
        self.muts = list(muts)
        self.observe = list(observe)
        self.ctx = ctx

    def world(self):
        filename = f"<fuzz-{self.name}>"
        text = PRELUDE + self.src
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        ns = {"__name__": f"fuzz_{self.name}", "__builtins__": __builtins__}
        exec(compile(text, filename, "exec"), ns)
        return ns


def tensors(dtypes=(torch.float32,), shapes=((4,), (2, 3)), variants=("c",), rg=(False,),
            seeds=(0, 1)):
    return st.builds(T, st.sampled_from(dtypes), st.sampled_from(shapes),
                     st.sampled_from(variants), st.sampled_from(rg), st.sampled_from(seeds))


X = tensors()
X_RG = tensors(rg=(False, True))


def refs(*names):
    return st.sampled_from([Ref(n) for n in names])


def args(*parts):
    return st.tuples(*parts).map(list)


# Failing fake-tensor meta calls (a broadcast error eager raises too) log tracebacks: silence.
logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)

TEMPLATES: dict[str, Template] = {}


def template(*a, **k):
    t = Template(*a, **k)
    TEMPLATES[t.name] = t
    return t


# callables -----------------------------------------------------------------------------------
template("callable_arg", "callable via argument (torch fn / lambda)", """
def fn(x, f):
    return f(x)
""", args(X, refs("torch.sin", "torch.cos", "lam", "torch.Tensor.neg")))

template("builtin_arg", "builtins max/min, abs/int, math.sqrt/exp passed in", """
def fn(x, f, a, b):
    if f in (max, min):
        return x * f(a, b)
    return x * f(a)
""", args(X, refs("max", "min", "abs", "int", "math.sqrt", "math.exp"),
          st.sampled_from([2.0, 3.5, 0.25]), st.sampled_from([1.0, 4.0])))

template("tuple_item_callable", "callable as a tuple item", """
def fn(x, t):
    return t[0](x) * t[1]
""", args(X, st.tuples(refs("torch.sin", "torch.cos", "lam", "abs"), st.sampled_from([1, 2]))))

template("partial_callable", "functools.partial: func, number of args, keyword names", """
def fn(x, p):
    return p(x)
""", args(X, st.sampled_from([
    Part("torch.add", other=1), Part("torch.add", other=2), Part("torch.mul", other=2),
    Part("torch.add", other=1, alpha=3), Part("torch.clamp", min=0.0), Part("torch.clamp", max=0.0),
    Part("torch.sub", T()), Part("torch.sub", 1.0),
])))

template("module_attr_callable", "callable reached as a module attribute", """
ops = types.ModuleType("ops")
ops.f = torch.sin
def fn(x):
    return ops.f(x)
""", args(X), muts=["ops.f = torch.cos", "ops.f = lam", "ops.f = torch.sin"])

template("closure_cell_callable", "callable in a closure cell, rebound via nonlocal", """
def outer():
    g = torch.sin
    k = 2
    def fn(x):
        return g(x) * k
    def set_g(h):
        nonlocal g
        g = h
    def set_k(v):
        nonlocal k
        k = v
    return fn, set_g, set_k
fn, set_g, set_k = outer()
""", args(X), muts=["set_g(torch.cos)", "set_g(lam)", "set_k(3)", "set_k(2.5)"])

# types ---------------------------------------------------------------------------------------
_VALUES = st.sampled_from([None, T(), 0, 1, 2, 2.0, 0.5, True, False, "ab", "abc", b"xy", b""])

template("isinstance_dispatch", "isinstance on None/tensor/int/float/bool/str/bytes", """
def fn(x, v):
    if v is None:
        return x
    if isinstance(v, torch.Tensor):
        return x + v
    if isinstance(v, bool):
        return x * 2 if v else x - 2
    if isinstance(v, int):
        return x + v
    if isinstance(v, float):
        return x - v
    if isinstance(v, str):
        return x * len(v)
    return x * (len(v) + 7)
""", args(X, _VALUES))

template("type_dispatch", "type(v) is T / type(v).__name__", """
def fn(x, v):
    if type(v) is int:
        return x + 1, type(v).__name__
    if type(v) is bool:
        return x + 2, type(v).__name__
    if type(v) is float:
        return x + 3, type(v).__name__
    return x + 4, type(v).__name__
""", args(X, _VALUES))

# aliasing ------------------------------------------------------------------------------------
template("alias_tensor", "same tensor twice vs distinct; a is b; in-place through alias", """
def fn(a, b):
    a.add_(1)
    return a + b, a is b
""", args(X, st.one_of(st.just(Same(0)), X)))

template("alias_list_dict", "same list/dict twice vs distinct; mutation seen through alias", """
def fn(x, l1, l2):
    l1.append(1)
    return x * len(l2), l1 is l2
""", st.one_of(args(X, st.just([1, 2]), st.sampled_from([Same(1), [1, 2], [3]])),
               args(X, st.just({"a": 1}), st.sampled_from([Same(1), {"a": 1}]))
               ))

template("alias_dict_objects", "dicts/objects passed twice, attribute mutation", """
class C:
    v = 1
def fn(x, o1, o2):
    o1.v = o1.v + 1
    return x * o2.v, o1 is o2
""", args(X, st.just(Obj("C", v=1)), st.sampled_from([Same(1), Obj("C", v=1), Obj("C")])))

# tensor facts --------------------------------------------------------------------------------
template("tensor_meta", "dtype, shape, stride/contiguity, requires_grad, is_leaf, storage_offset", """
def fn(x):
    r = x * 2
    if x.is_contiguous():
        r = r + 1
    if x.requires_grad:
        r = r * 3
    if x.is_leaf:
        r = r - 1
    if x.storage_offset() > 0:
        r = r + 10
    if x.dtype == torch.float64:
        r = r * 5
    return r, x.shape, x.stride(), x.dtype
""", args(tensors(dtypes=(torch.float32, torch.float64), shapes=((4,), (2, 3), (3, 2), (1, 4)),
                  variants=("c", "t", "off", "wide2", "wide3", "nonleaf"), rg=(False, True))))

template("tensor_conj_neg", "is_conj via .conj(), is_neg", """
def fn(x):
    return x.is_conj(), x.is_neg(), x * 2
""", args(tensors(dtypes=(torch.complex64,), variants=("c", "conj", "neg"))))

template("tensor_py_attr", "Python attribute on a tensor read with getattr(x, 'scale', 1)", """
def fn(x):
    return x * getattr(x, "scale", 1)
""", args(tensors(variants=("c", "scale"))))

# numbers, strings, containers ----------------------------------------------------------------
template("floats", "0.0/-0.0, inf, nan, dynamic floats", """
def fn(x, f):
    s = math.copysign(1.0, f)
    return x * s + (0 if f != f else 1), str(f), f == 0.0
""", args(X, st.sampled_from([0.0, -0.0, 1.5, 2.5, float("inf"), float("-inf"), float("nan")])))

template("ints", "ints automatic dynamic: 2, 3, -2, 0, 1", """
def fn(x, n):
    if n > 0:
        y = x * n
    else:
        y = x - n
    return y, n + 1, x[:n]
""", args(X, st.sampled_from([2, 3, -2, 0, 1])))

template("str_dict", "strings as dict keys / values", """
def fn(x, d, k):
    if d.get("mode") == "add":
        return x + d[k]
    return x * d[k]
""", args(X, st.sampled_from([{"a": 1, "b": 2, "mode": "add"}, {"a": 1, "b": 2, "mode": "mul"},
                               {"b": 3, "a": 4}]), st.sampled_from(["a", "b"])))

template("containers", "list length, dict key order, dict values, nesting", """
def fn(x, l, d):
    r = x
    for v in l:
        r = r + v
    for k, v in d.items():
        r = r * v if k.startswith("m") else r + v
    return r, len(l), list(d)
""", args(X, st.lists(st.sampled_from([1, 2.0, T(), 3]), max_size=3),
    st.sampled_from([{"m": 2, "a": 1}, {"a": 1, "m": 2}, {"a": 1}, {"m": 3, "a": 1}])))

template("nested", "nested containers", """
def fn(x, c):
    return x * c["a"][0] + c["b"][1]["z"], len(c["a"])
""", args(X, st.sampled_from([{"a": [1, 2], "b": (0, {"z": 3})}, {"a": [2], "b": (0, {"z": 3})},
                              {"a": [1, 2], "b": (0, {"z": 4.0})}, {"b": (0, {"z": 3}), "a": [1]}])))

template("cut_then_edited", "an object written to after the way to it was cut (pop, del, rebinding)", """
def fn(x, c, k):
    inner = c.pop(k, None)
    if inner is None:
        c[k] = inner = [0]
    inner.append(len(inner))
    if "b" in c:
        keep = c["b"]
        del c["b"]
        keep.append(5)
        c["b" if k == "a" else "c"] = keep
    return x * len(inner) + sum(inner), inner
""", args(X, st.sampled_from([{"a": [1, 2], "b": [0]}, {"b": [3], "a": [4]}, {"a": [1]}, {}]),
    st.sampled_from(["a", "b"])))

# torch global state --------------------------------------------------------------------------
template("global_state", "grad mode, default dtype, deterministic, autocast", """
def fn(x):
    y = x @ x.t() if x.dim() == 2 else x * 2
    z = torch.ones(2) * 2
    return (y, z, torch.is_grad_enabled(), torch.get_default_dtype(),
            torch.are_deterministic_algorithms_enabled())
""", args(tensors(shapes=((2, 3),), rg=(False, True))))

# user classes --------------------------------------------------------------------------------
template("class_method_replaced", "method/class attribute replaced on the class; instance shadows", """
class C:
    scale = 2
    def m(self, x):
        return x + 1
def fn(x, o):
    return o.m(x) * o.scale
""", args(X, st.sampled_from([Obj("C"), Obj("C", scale=5), Obj("C", m=Ref("lam"))])),
    muts=["C.m = lambda self, x: x - 1", "C.scale = 3", "del C.scale",
          "C.m = property(lambda self: (lambda x: x * 7))"])

template("class_claims", "isinstance of an object whose class answers __class__ itself", """
class D:
    pass
class C:
    claims = None
    __class__ = property(lambda self: type(self).claims or type(self))
def fn(x, o):
    return x + isinstance(o, int) + 2 * isinstance(o, D) + 4 * isinstance(o, C)
""", args(X, st.sampled_from([Obj("C"), Obj("D")])),
    muts=["C.claims = int", "C.claims = D", "C.claims = None", "D.__class__ = property(lambda self: int)"])

template("getattr_default", "attribute deleted then getattr with default", """
class C:
    w = 3
def fn(x, o):
    return x * getattr(o, "w", 1), hasattr(o, "w")
""", args(X, st.sampled_from([Obj("C"), Obj("C", w=5)])),
    muts=["del C.w", "C.w = 4"])

# nn.Module -----------------------------------------------------------------------------------
template("nn_module", "training flag, submodule swapped, parameter replaced, forward hook, ModuleList", """
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = mk_linear(3, 3, 0)
        self.layers = nn.ModuleList([mk_linear(3, 3, 1)])
    def forward(self, x):
        y = self.lin(x)
        if self.training:
            y = y * 2
        for l in self.layers:
            y = l(y)
        return y
model = M()
def hook(mod, inp, out):
    return out * 10
def fn(x, m):
    return m(x)
""", args(tensors(shapes=((2, 3),)), st.just(Ref("model"))),
    muts=["model.eval()", "model.train()", "model.lin = mk_linear(3, 3, 5)",
          "model.lin.weight = nn.Parameter(torch.ones(3, 3))",
          "model.register_forward_hook(hook)", "model.layers.append(mk_linear(3, 3, 2))"],
    observe=["model"])

template("module_members", "members read from a module's dicts: shadowed, registered, reordered; absent names", """
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = mk_linear(3, 3, 0)
        self.register_buffer("scale", torch.full((3,), 2.0))
        self.seq = nn.Sequential(nn.Tanh(), nn.Sigmoid())
        self.factor = 2.0
    def forward(self, x):
        y = self.seq[1](self.lin(x)) * self.scale * self.factor + self.seq[0](x)
        if hasattr(self, "extra"):
            y = y + 1
        return y
model = M()
""" + """
def fn(x, m):
    return m(x)
""", args(tensors(shapes=((2, 3),)), st.just(Ref("model"))),
    muts=["model.lin.__dict__['weight'] = torch.zeros(3, 3)", "model.lin.__dict__.pop('weight', None)",
          "model._parameters['scale'] = nn.Parameter(torch.full((3,), 3.0))",
          "model.register_buffer('extra', torch.ones(1))", "model.extra = 1", "M.extra = 2",
          "model.seq._modules['0'] = model.seq._modules.pop('0')", "model.lin = mk_linear(3, 3, 4)",
          "M.factor = property(lambda self: 3.0)", "M.factor = 5.0", "model.factor = 0.5"],
    observe=["model"])

template("mapped_config", "a class whose Python __getattribute__ maps names (a config)", """
class Base:
    attribute_map = {"hidden": "n_embd"}
    def __getattribute__(self, key):
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)
class Cfg(Base):
    def __init__(self):
        self.n_embd = 3
        self.flag = True
cfg = Cfg()
def fn(x, c):
    return x * c.hidden + getattr(c, "missing", 5) + hasattr(c, "other") + (1 if c.flag else 0)
""", args(X, st.just(Ref("cfg"))),
    muts=["cfg.n_embd = 4", "Base.attribute_map = {'hidden': 'flag'}", "cfg.missing = 7", "Cfg.other = 1",
          "del cfg.flag; Cfg.flag = False", "Cfg.__getattribute__ = lambda self, k: object.__getattribute__(self, k)"],
    observe=["cfg"])

template("copied_object", "an object deep-copied while tracing, edited, returned or dropped", """
import copy
class Holder:
    def __init__(self):
        self.settings = {"a": 1}
        self.slot = 2
holder = Holder()
def fn(x, h):
    mine = copy.deepcopy(h)
    mine.settings["b"] = mine.slot
    mine.slot = 3
    return x + len(mine.settings) + h.slot, mine.settings
""", args(X, st.just(Ref("holder"))),
    muts=["holder.slot = 5", "holder.settings['c'] = 1", "holder.settings = {'z': True}", "holder.extra = 1"],
    observe=["holder"])

# functions and globals -----------------------------------------------------------------------
template("defaults_changed", "a function's __defaults__/__kwdefaults__ changed (a call fitting only the new ones)", """
def g(x, k=2, *, j=1):
    return x * k + j
def fn(x, n=3):
    return g(x) + n
""", args(X), muts=["g.__defaults__ = (5,)", "g.__kwdefaults__ = {'j': 4}",
                    "fn.__defaults__ = (7,)", "g.__defaults__ = (2,)", "fn.__defaults__ = None",
                    "fn.__defaults__ = (3,)"])

template("global_rebound", "global rebound; a global shadowing a builtin", """
W = 2.0
F = torch.sin
def fn(x):
    return F(x) * W + abs(-1)
""", args(X), muts=["W = 3.0", "W = 2", "F = torch.cos", "abs = lambda v: 100", "del abs"])

template("inplace_through_view_alias", "in-place mutation of one input seen through the other", """
def fn(a, b, lst):
    b.mul_(2)
    lst.append(a.sum())
    return a + 1, len(lst)
""", args(X, st.sampled_from([Same(0), T()]), st.just([])))

template("module_instance_shadowing", "forward or a method set on the module instance; class attribute, class name", """
class M(nn.Module):
    factor = 2
    def __init__(self):
        super().__init__()
        self.lin = mk_linear(3, 3, 0)
    def scale(self):
        return self.factor
    def forward(self, x):
        return self.lin(x) * self.scale() + len(type(self).__name__)
model = M()
def fn(x, m):
    return m(x)
""", args(tensors(shapes=((2, 3),)), st.just(Ref("model"))),
    muts=["model.forward = lambda x: x * 100", "del model.forward", "model.scale = lambda: 7",
          "del model.scale", "M.factor = 3", "M.__name__ = 'LongerName'",
          "model.lin.forward = lambda x: x - 1", "del model.lin.forward"],
    observe=["model"])

template("torch_namespace", "a torch function or flag replaced in torch's namespace", """
import torch.nn.functional as F
ORIGINAL_GELU = F.gelu
ORIGINAL_SIN = torch.sin
def fn(x):
    return F.gelu(x) + torch.sin(x) * torch.nn.functional.relu(x)
""", args(X), muts=["F.gelu = lambda t: t * 7", "F.gelu = ORIGINAL_GELU", "torch.sin = torch.cos",
                    "torch.sin = ORIGINAL_SIN"],
    cleanup="F.gelu = ORIGINAL_GELU; torch.sin = ORIGINAL_SIN")

template("environment", "environment variables read by name (get, getenv, [], in), set and removed between calls", """
import os
def fn(x):
    flag = os.environ.get("SYMEXEC_FUZZ_FLAG", "0")
    scale = os.getenv("SYMEXEC_FUZZ_SCALE")
    try:
        mode = os.environ["SYMEXEC_FUZZ_MODE"]
    except KeyError:
        mode = None
    return x * (2 if flag == "1" else 3) + (len(scale) if scale is not None else -1), mode, "SYMEXEC_FUZZ_OTHER" in os.environ
""", args(X), muts=["os.environ['SYMEXEC_FUZZ_FLAG'] = '1'", "os.environ['SYMEXEC_FUZZ_FLAG'] = ''",
                    "os.environ.pop('SYMEXEC_FUZZ_FLAG', None)", "os.environ['SYMEXEC_FUZZ_SCALE'] = 'abc'",
                    "os.environ.pop('SYMEXEC_FUZZ_SCALE', None)", "os.environ['SYMEXEC_FUZZ_MODE'] = 'm'",
                    "os.environ.pop('SYMEXEC_FUZZ_MODE', None)", "os.environ['SYMEXEC_FUZZ_OTHER'] = 'x'",
                    "os.environ.pop('SYMEXEC_FUZZ_OTHER', None)", "os.environ['SYMEXEC_FUZZ_UNREAD'] = 'y'"],
    cleanup="[os.environ.pop(k, None) for k in list(os.environ) if k.startswith('SYMEXEC_FUZZ_')]")

template("model_output", "a ModelOutput built, its fields set as attributes or items, views", """
from transformers.modeling_outputs import BaseModelOutput
def fn(x, how):
    o = BaseModelOutput(last_hidden_state=x + 1)
    keys = o.keys()
    if how == 1:
        o.hidden_states = (x,)
    elif how == 2:
        o["attentions"] = (x * 2,)
    elif how == 3:
        o.attentions = (x,)
        o.hidden_states = (x * 3,)
    elif how == 4:
        o.last_hidden_state = None
    return list(keys), o.to_tuple(), len(o), o[-1]
""", args(X, st.sampled_from([0, 1, 2, 3, 4])))

template("torch_module_container", "a dict of torch's namespace read and mutated between calls", """
torch.fx._symexec_fuzz_registry = {"scale": 2}
def fn(x):
    return x * torch.fx._symexec_fuzz_registry["scale"] + len(torch.fx._symexec_fuzz_registry)
""", args(X), muts=["torch.fx._symexec_fuzz_registry['scale'] = 3", "torch.fx._symexec_fuzz_registry['extra'] = 1",
                    "torch.fx._symexec_fuzz_registry = {'scale': 5}"],
    cleanup="del torch.fx._symexec_fuzz_registry")

template("object_identity", "id() of inputs; tensors as dict keys and set members", """
def fn(a, b):
    seen = {a: 1}
    same = id(a) == id(b)
    return a * (2 if same else 3) + seen.get(b, 0), b in {a}
""", args(X, st.sampled_from([Same(0), T()])))

template("set_history", "a set's order from its history: adds, discards, pops of colliding ints", """
def fn(x, ops):
    s = {0, 8}
    for op, v in ops:
        if op == "add":
            s.add(v)
        elif op == "discard":
            s.discard(v)
        elif s:
            s.pop()
    order = list(s)
    return x * (order[0] if order else -1), order, (s.pop() if s else None), tuple(s)
""", args(X, st.lists(st.tuples(st.sampled_from(["add", "discard", "pop"]), st.sampled_from([0, 8, 16, 24, 1, 9])),
                      max_size=5)))

template("size_argument", "a torch.Size argument: its ints, its length", """
def fn(x, size):
    return x.new_ones(size) * len(size) + size[0]
""", args(X, st.sampled_from([torch.Size([2]), torch.Size([3]), torch.Size([2, 3]), torch.Size([3, 2])])))

template("tensor_in_a_container", "a tensor in a dict or list, read on some calls only (lazy inputs)", """
def fn(x, box, mode):
    t = box["m"] if type(box) is dict else box[0]
    if mode == 1:
        return x + t.sum()
    if mode == 2:
        return x * t.shape[0] + t.stride()[0]
    if mode == 3:
        return x + (t.dtype is torch.float32) + t.requires_grad
    if mode == 4:
        t.mul_(2)
        return box
    return x * 2, box
""", args(X, st.one_of(st.fixed_dictionaries({"m": tensors(dtypes=(torch.float32, torch.float64),
                                                            shapes=((3,), (5,), (2, 3)), variants=("c", "t"))}),
                       st.tuples(tensors(shapes=((3,), (4,)))).map(list)),
          st.sampled_from([0, 1, 2, 3, 4])))

template("tensor_int_index", "a tensor indexed by an int argument (symbolic once it changes), read and written", """
def fn(x, i, mode):
    if mode == 0:
        return x[i] * 2
    if mode == 1:
        return x[..., i] + x[-1]
    y = x.clone()
    if mode == 2:
        y[..., i] = 5.0
    else:
        y[i] = y[i] * 2
    return y
""", args(tensors(shapes=((4,), (2, 3), (3, 2, 2))), st.sampled_from([-4, -3, -1, 0, 1, 2, 3, 5]),
          st.sampled_from([0, 1, 2, 3])))


template("enum_member", "an enum member passed in: which member (its value, its name), its class", """
import enum
class Color(enum.Enum):
    RED = 1
    GREEN = 2
    def double(self):
        return self.value * 2
class Bits(enum.IntFlag):
    A = 1
    B = 2
def fn(x, c):
    if isinstance(c, Color):
        return x * c.double(), c.name
    return x * c.value - c, c.name, c is Bits.A
""", args(X, refs("Color.RED", "Color.GREEN", "Bits.A", "Bits.B")))

template("class_attr_write", "a class attribute set and restored by a context manager, read in between: which "
         "class (its own attribute or its base's), the value set, the value before", """
class Flag:
    state = None
    def __init__(self, value):
        self.value = value
    def __enter__(self):
        self.prev = type(self).state
        type(self).state = self.value
    def __exit__(self, *exc):
        type(self).state = self.prev
class OwnFlag(Flag):
    state = 2
class InheritedFlag(Flag):
    pass
def fn(x, cls, v):
    with cls(v):
        if cls.state:
            x = x * cls.state
        inner = cls.state
    return x + (cls.state or 0), inner, cls.state
""", args(X, refs("Flag", "OwnFlag", "InheritedFlag"), st.sampled_from([0, 1, 3, None])))

_ARRAYS = st.builds(A, st.sampled_from(["float64", "float32", "int64", "int32"]), st.sampled_from([(2, 3), (3, 2), (4,)]),
                    st.sampled_from(["c", "t", "off", "ro"]), st.sampled_from([0, 1]))

template("ndarray_input", "NumPy arrays passed in: dtype, shape, strides, writeable, aliasing (one array twice)", """
import numpy as np
def fn(x, a, b):
    c = a * 2 + (b.sum(axis=0) if b.ndim == a.ndim else 1)
    d = np.float32(c.mean()) * x
    a += 1
    return d, c, a.T, a is b, c.dtype, a.strides
""", args(X, _ARRAYS, st.one_of(st.just(Same(1)), _ARRAYS)))


template("nested_break", "breaks inside called functions, nested (config.nested_graph_breaks): a function "
         "over a global, a method of a global object, a branch on a tensor, a list appended to", """
LOG = []
SCALE = 2.0


def helper(t, k):
    t = t * SCALE
    LOG.append(t.shape[0])
    if t.sum() > 0:
        t = t + k
    print("helper", k)
    return t - 1


class Box:
    def __init__(self, v):
        self.v = v

    def apply(self, t):
        t = t + self.v
        print("box", self.v)
        return t * 2


BOX = Box(1.5)


def fn(x, k):
    y = x.cos()
    z = helper(y, k) + BOX.apply(x)
    return z, len(LOG)
""", args(X, st.sampled_from([1, 2, 3.5])),
         muts=["SCALE = 3.0", "BOX.v = -2.0", "helper = lambda t, k: t * k", "LOG.clear()", "BOX = Box(0.5)"],
         observe=["LOG"], config={"nested_graph_breaks": True})

TEMPLATE_NAMES = sorted(TEMPLATES)


# --------------------------------------------------------------------------------------------
# Sequences


def sequences(name):
    """Strategy of (dynamic, steps) for template `name`."""
    tpl = TEMPLATES[name]
    ctx = st.sampled_from(CONTEXTS) if tpl.ctx else st.just(None)
    ctx = st.one_of(st.just(None), ctx)  # mostly no context
    call = st.builds(Call, tpl.args, ctx)
    step = st.one_of(call, st.sampled_from([Mut(m) for m in tpl.muts])) if tpl.muts else call
    steps = st.lists(step, min_size=3, max_size=6).filter(
        lambda s: sum(isinstance(x, Call) for x in s) >= 2)
    return st.tuples(st.sampled_from([None, True]), steps)


class Finding(AssertionError):
    def __init__(self, template, kind, message, step_no):
        super().__init__(f"[{template}] {kind} at step {step_no}: {message}")
        self.template, self.kind, self.message, self.step_no = template, kind, message, step_no

    @property
    def key(self):
        first = self.message.strip().splitlines()[0] if self.message.strip() else ""
        first = re.sub(r"^call \d+: ", "", first)
        first = re.sub(r" at 0x[0-9a-f]+", "", first)
        return (self.template, self.kind, first[:160])


def _kind(msg):
    if "raised" in msg or "exception" in msg:
        return "exception"
    if "args after the call" in msg or "kwargs after" in msg:
        return "input-mutation"
    if "is the input" in msg or "shares storage" in msg or "same object in eager" in msg:
        return "aliasing"
    if "printed output" in msg:
        return "stdout"
    return "result"


def _global_state():
    return (torch.is_grad_enabled(), torch.get_default_dtype(),
            torch.are_deterministic_algorithms_enabled(),
            torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"),
            torch._guards.detect_fake_mode() is None, torch.is_inference_mode_enabled())


def run_sequence(name, dynamic, steps):
    """Run one sequence in two worlds; raise Finding on the first difference."""
    tpl = TEMPLATES[name]
    world_e, world_c = tpl.world(), tpl.world()
    eager_fn = world_e["fn"]
    compiled = symexec.compile(world_c["fn"], dynamic=dynamic)
    errors = []

    def hook(fn, error):
        errors.append(f"{type(error).__name__}: {error}")

    old_raise = symexec.config.raise_on_internal_error
    symexec.config.raise_on_internal_error = True
    old_config = {option: getattr(symexec.config, option) for option in tpl.config}
    for option, value in tpl.config.items():
        setattr(symexec.config, option, value)
    symexec.convert.internal_error_hooks.append(hook)
    outer_state = _global_state()
    try:
        for no, step in enumerate(steps, 1):
            if isinstance(step, Mut):
                outcomes = []
                for world in (world_e, world_c):
                    try:
                        exec(step.code, world)
                        outcomes.append(None)
                    except Exception as e:  # noqa: BLE001 - the same in both worlds
                        outcomes.append(type(e))
                assert outcomes[0] == outcomes[1], outcomes
                continue
            try:
                args_e = build_args(step.args, world_e)
            except Exception:  # noqa: BLE001 - e.g. an instance attribute a property forbids
                continue
            args_c = build_args(step.args, world_c)
            with call_context(step.ctx):
                eager = _run(eager_fn, args_e, {})
                state_e = _global_state()
            with call_context(step.ctx):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    actual = _run(compiled, args_c, {})
                state_c = _global_state()
            if errors:
                raise Finding(name, "internal-error", errors[0], no)
            if _global_state() != outer_state:
                raise Finding(name, "global-state", f"state after leaving the context "
                              f"{_global_state()} != before {outer_state}", no)
            sym_warnings = [w for w in caught if (SymexecWarning is not None and issubclass(
                w.category, SymexecWarning)) or "symexec" in str(w.message)]
            if sym_warnings:
                raise Finding(name, "warning", str(sym_warnings[0].message), no)
            if state_e != state_c:
                raise Finding(name, "global-state", f"(grad, default dtype, deterministic, "
                              f"autocast, autocast dtype, no fake mode, inference) eager "
                              f"{state_e}, compiled {state_c}", no)
            if actual.exc is not None and eager.exc is None and isinstance(
                    actual.exc, getattr(symexec, "SymexecError", ())):
                raise Finding(name, "internal-error",
                              f"{type(actual.exc).__name__}: {actual.exc}", no)
            try:
                with _world_aware_compare():
                    _compare(eager, actual, no)
                    for obs in tpl.observe:
                        assert_same(world_e[obs], world_c[obs], f"call {no}: world {obs}")
            except AssertionError as e:
                msg = str(e)
                raise Finding(name, _kind(msg), msg, no) from None
    finally:
        symexec.convert.internal_error_hooks.remove(hook)
        symexec.config.raise_on_internal_error = old_raise
        for option, value in old_config.items():
            setattr(symexec.config, option, value)
        if tpl.cleanup:
            exec(tpl.cleanup, world_e)


def describe(name, dynamic, steps, finding=None):
    tpl = TEMPLATES[name]
    lines = [f"template {name!r} ({tpl.dims}), symexec.compile(fn, dynamic={dynamic})",
             textwrap.indent(tpl.src.strip(), "    | ")]
    for i, s in enumerate(steps, 1):
        lines.append(f"  {i}. {s!r}")
    if finding is not None:
        lines.append(f"  => {finding.kind} at step {finding.step_no}:")
        lines.append(textwrap.indent(finding.message.strip()[:1500], "     "))
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Long mode


def fuzz(minutes, examples_per_run=25, only=None, seed_value=None, verbose=False):
    rng = random.Random(seed_value)
    deadline = time.monotonic() + minutes * 60
    known: dict[tuple, str] = {}
    names = [only] if only else TEMPLATE_NAMES
    runs = 0
    sequences_run = {None: 0, True: 0}  # sequences run to the end or to a finding, by `dynamic`
    while time.monotonic() < deadline:
        name = rng.choice(names)
        last = {}

        @settings(database=None, max_examples=examples_per_run, deadline=None,
                  derandomize=False, report_multiple_bugs=False, print_blob=False,
                  suppress_health_check=list(HealthCheck),
                  phases=[Phase.generate, Phase.shrink])
        @hseed(rng.getrandbits(64))
        @given(st.data())
        def probe(data):
            if time.monotonic() > deadline + 60:  # stop generating well past the deadline
                return
            dynamic, steps = data.draw(sequences(name))
            symexec.reset()
            sequences_run[dynamic] += 1
            try:
                run_sequence(name, dynamic, steps)
            except Finding as f:
                if f.key in known:
                    return  # known: keep searching for new ones
                last["repro"] = (dynamic, steps, f)
                raise
            except Exception as e:  # the fuzzer's own failure: report it too
                f = Finding(name, "fuzzer-crash", f"{type(e).__name__}: {e}\n"
                            + traceback.format_exc(), 0)
                if f.key in known:
                    return
                last["repro"] = (dynamic, steps, f)
                raise f from None

        runs += 1
        try:
            probe()
        except Exception:  # noqa: BLE001
            if "repro" in last:
                dynamic, steps, f = last["repro"]
                text = describe(name, dynamic, steps, f)
                known[f.key] = text
                print(f"\n=== finding {len(known)}: {f.key[0]} / {f.key[1]}\n{text}\n", flush=True)
            else:
                traceback.print_exc()
        if verbose:
            print(f"run {runs}: {name} done", flush=True)
    print(f"\n{runs} hypothesis runs, {sum(sequences_run.values())} sequences "
          f"({sequences_run[None]} with dynamic=None, {sequences_run[True]} with dynamic=True), "
          f"{len(known)} distinct finding(s).")
    for i, (key, text) in enumerate(known.items(), 1):
        print(f"\n--- {i}. {key[0]} / {key[1]}: {key[2]}")
    return known


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=1.0)
    p.add_argument("--template", choices=TEMPLATE_NAMES)
    p.add_argument("--examples", type=int, default=25, help="examples per hypothesis run")
    p.add_argument("--seed", type=int)
    p.add_argument("--verbose", action="store_true")
    a = p.parse_args(argv)
    warnings.simplefilter("default")
    known = fuzz(a.minutes, a.examples, a.template, a.seed, a.verbose)
    return 1 if known else 0


if __name__ == "__main__":
    sys.exit(main())
