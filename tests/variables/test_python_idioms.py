"""Common Python idioms captured like torch.compile captures them (issue 11): each is compared
with eager (``check``) and with torch.compile's graphs (``assert_same_graphs_as_dynamo``)."""

import collections
import copy
import functools
import inspect
import operator
import os
import pickle
import re
import sys
import types
import typing

import numpy as np
import pytest
import torch
import torch.utils._pytree as pytree

import symexec
from helpers import (CountingBackend, assert_same, assert_same_graphs_as_dynamo, check, check_sequence, dynamo_graphs, lazy_property,
                     symexec_graphs)


def _one_graph(fn, *args):
    """symexec makes the graphs torch.compile makes, and breaks nowhere."""
    assert_same_graphs_as_dynamo(fn, *args)
    assert symexec.explain(fn, *args).graph_break_count == 0


# -- 1. NumPy scalars -------------------------------------------------------------------------
def _np_arith(x, n):
    return x * n + 1


@pytest.mark.parametrize("n", [np.int64(3), np.float32(2.5), np.float64(-1.5), np.int8(2)])
def test_numpy_scalar_in_arithmetic(n):
    check(_np_arith, torch.randn(3), n)
    _one_graph(_np_arith, torch.randn(3), n)


def test_numpy_scalar_as_size():
    def fn(x, n):
        return x.reshape(n, -1) * n
    check(fn, torch.randn(3, 2), np.int64(3))
    _one_graph(fn, torch.randn(3, 2), np.int64(3))


def test_numpy_scalar_guarded_by_type_and_value():
    # A new value, another NumPy type, a Python int, -0.0 and nan each give eager's answer.
    check_sequence(_np_arith, [torch.ones(2), np.int64(3)], [torch.ones(2), np.int64(4)],
                   [torch.ones(2), np.int32(4)], [torch.ones(2), 4], [torch.ones(2), np.float32(0.0)],
                   [torch.ones(2), np.float32(-0.0)], [torch.ones(2), np.float32("nan")],
                   [torch.ones(2), np.float32("nan")])

    def fn(x, n):
        return x * n, str(n), type(n).__name__, n.item()
    check_sequence(fn, [torch.ones(2), np.float32(-0.0)], [torch.ones(2), np.float32(0.0)],
                   [torch.ones(2), np.float64(0.0)])


def test_numpy_bool_scalar_breaks_instead_of_guessing_promotion():
    def fn(x, b):  # torch takes a numpy.bool_ for a float: an int tensor becomes float
        return x * b
    # symexec captures nothing here: x * numpy.bool_ breaks on purpose and runs eagerly
    check(fn, torch.arange(3), np.bool_(True), captured=False)


# -- 4. namedtuple subclasses and namedtuple methods ------------------------------------------
Point = collections.namedtuple("Point", "x y")


class Vec(Point):
    @property
    def norm(self):
        return self.x * self.x + self.y

    def total(self):
        return self.x + self.y


def test_namedtuple_subclass_made_inside():
    def fn(x):
        p = Vec(x, 2)
        q = p._replace(y=3)
        return p.norm + q.total(), q._asdict(), Vec._fields, Point._make([x, 1]).y, q
    check(fn, torch.randn(3))
    _one_graph(fn, torch.randn(3))


def test_namedtuple_subclass_passed_in():
    def fn(x, p):
        return p.norm + p.total() + x, p._replace(x=x)
    check(fn, torch.randn(3), Vec(torch.randn(3), 3))
    _one_graph(fn, torch.randn(3), Vec(torch.randn(3), 3))


def test_namedtuple_method_replaced_on_the_class_retraces():
    class Pair(collections.namedtuple("Pair", "a b")):
        def total(self):
            return self.a + self.b

    def other(self):
        return self.a - self.b
    old = Pair.total

    def fn(p):
        return p.total()
    check_sequence(fn, [Pair(torch.ones(2), 2)], lambda: setattr(Pair, "total", other), [Pair(torch.ones(2), 2)],
                   lambda: setattr(Pair, "total", old), [Pair(torch.ones(2), 2)])


def test_namedtuple_make_with_wrong_length_raises_as_eager():
    def fn(x):
        try:
            Point._make([x])
        except TypeError as e:
            return x + 1, str(e)
        return x
    check(fn, torch.randn(2))


# -- 11. AttributeError inside try/except, hasattr ---------------------------------------------
class Plain:
    a = 1


def test_missing_attribute_caught():
    def fn(x, o):
        try:
            y = getattr(o, "missing")
        except AttributeError as e:
            y = 2
            msg = str(e)
        try:
            z = o.other
        except AttributeError:
            z = 3
        return x * y + z + hasattr(o, "zz") + hasattr(o, "a"), msg
    check(fn, torch.randn(3), Plain())
    _one_graph(fn, torch.randn(3), Plain())


def test_missing_attribute_guarded():
    def fn(x, o):
        try:
            return x + o.late
        except AttributeError:
            return x - 1
    with_late = Plain()
    with_late.late = 5
    check_sequence(fn, [torch.ones(2), Plain()], [torch.ones(2), with_late], [torch.ones(2), Plain()])


def test_missing_attribute_of_an_object_made_inside():
    class Box:
        def __init__(self, v):
            self.v = v

    def fn(x):
        b = Box(x)
        try:
            return b.w
        except AttributeError as e:
            return b.v + 1, str(e)
    check(fn, torch.randn(2))
    _one_graph(fn, torch.randn(2))


def _no_break(fn, *args):
    """One graph, no break (torch.compile breaks or skips the frame here: symexec does better)."""
    out = symexec.explain(fn, *args)
    assert out.graph_count == 1 and out.graph_break_count == 0, out


# -- 2. dict.fromkeys, types.SimpleNamespace ------------------------------------------------------
def test_dict_fromkeys():
    def fn(x):
        d = dict.fromkeys(["a", "b"], 2)
        e = collections.OrderedDict.fromkeys("xy")
        shared = dict.fromkeys((1, 2), [])
        shared[1].append(x)
        return x * d["a"] + d["b"], e, shared, len(shared[2])
    check(fn, torch.randn(3))
    _no_break(fn, torch.randn(3))  # (torch.compile runs this frame eagerly)

    def simple(x):
        d = dict.fromkeys(["a", "b"], 2)
        return x * d["a"] + d["b"]
    _one_graph(simple, torch.randn(3))


def test_simple_namespace_made_inside():
    def fn(x):
        ns = types.SimpleNamespace(a=1, b=x)
        ns.c = ns.b * 2
        try:
            ns.missing
        except AttributeError as e:
            ns.msg = str(e)
        return ns.c + ns.a, ns
    check(fn, torch.randn(3))
    _no_break(fn, torch.randn(3))


def test_simple_namespace_passed_in():
    def fn(x, ns):
        ns.c = ns.a * x
        return ns.c + ns.b, hasattr(ns, "d")
    check(fn, torch.randn(3), types.SimpleNamespace(a=2, b=3))
    _no_break(fn, torch.randn(3), types.SimpleNamespace(a=2, b=3))
    check_sequence(fn, [torch.ones(2), types.SimpleNamespace(a=2, b=3)],
                   [torch.ones(2), types.SimpleNamespace(a=5, b=3, d=1)])


# -- 11. __slots__ ---------------------------------------------------------------------------------
class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a):
        self.a = a

    class Nested:  # 3.13 names it in an unset slot's message by module and qualified name
        __slots__ = ("a", "b")

        def __init__(self, a):
            self.a = a


@pytest.mark.parametrize("cls", [Slotted, Slotted.Nested], ids=["top", "nested"])
def test_slots_object_made_inside(cls):
    def fn(x):
        s = cls(x)
        try:
            s.b
        except AttributeError as e:
            msg = str(e)
        s.b = 2
        return s.a * s.b, msg, s
    check(fn, torch.randn(3))
    # (torch.compile on 3.13 words the message as 3.12 does: its graphs are compared without it)
    _one_graph(lambda x: fn(x)[0], torch.randn(3))


def test_slots_object_passed_in():
    def fn(x, s):
        s.b = x + 1
        return s.a * s.b
    check(fn, torch.randn(3), Slotted(torch.randn(3)))
    _one_graph(fn, torch.randn(3), Slotted(torch.randn(3)))


# -- 6. operator.itemgetter/attrgetter/methodcaller made outside; in-place operators ---------------
def test_operator_callables_passed_in():
    def fn(x, get, attr, call):
        return get([x, 1, x * 2]), attr(x), call(x)
    args = (operator.itemgetter(0, 2), operator.attrgetter("shape"), operator.methodcaller("sum", 0))
    _same_calls(fn, [torch.randn(3, 2), *args], [torch.randn(3, 2), *args])
    _no_break(fn, torch.randn(3, 2), *args)
    kw = operator.methodcaller("sum", dim=1, keepdim=True)
    _same_calls(fn, [torch.randn(3, 2), operator.itemgetter(1), operator.attrgetter("T.shape", "dtype"), kw])

    def getters_only(x, get, attr):
        return get([x, 1, x * 2]), attr(x)
    _one_graph(getters_only, torch.randn(3, 2), operator.itemgetter(0, 2), operator.attrgetter("shape"))


def test_operator_callable_passed_in_is_pinned():
    def fn(x, get):
        return get([x, x * 2, x * 3])
    _same_calls(fn, [torch.ones(2), operator.itemgetter(0)], [torch.ones(2), operator.itemgetter(2)],
                [torch.ones(2), operator.itemgetter(0, 1)])


def _same_calls(fn, *calls):
    """Eager and compiled on the same arguments, call after call (``check`` deep-copies its
    arguments, and copies of an itemgetter compare unequal)."""
    compiled = symexec.compile(fn)
    for args in calls:
        assert_same(fn(*args), compiled(*args))
    return compiled


def test_inplace_operators_on_tensors_and_lists():
    def fn(x, lst):
        y = x.clone()
        y = operator.iadd(y, x)
        y = operator.imul(y, 2)
        x = operator.isub(x, 1)
        lst = operator.iadd(lst, [3])
        lst = operator.imul(lst, 2)
        return y, x, lst
    check(fn, torch.randn(3), [1])
    _one_graph(fn, torch.randn(3), [1])


# -- 3. functools.lru_cache / functools.cache, functools.wraps chains ---------------------------
@functools.lru_cache(maxsize=None)
def _doubled(n):
    return n * 2


@functools.cache
def _plus_one(n):
    return n + 1


def test_lru_cache_called_with_constants():
    def fn(x):
        return x * _doubled(3) + _plus_one(4) + _doubled(n=5)
    check(fn, torch.randn(3))
    _one_graph(fn, torch.randn(3))


_SCALE = {"k": 2}


@functools.lru_cache(maxsize=None)
def _scale_of(name):
    return _SCALE[name]


def test_lru_cache_with_a_stale_entry_answers_as_eager():
    # The cache keeps the value computed before the global changed: eager returns it.
    def fn(x):
        return x * _scale_of("k")
    _scale_of.cache_clear()
    _SCALE["k"] = 2
    assert _scale_of("k") == 2
    _SCALE["k"] = 3
    try:
        check(fn, torch.ones(2), expect_traced=False)
    finally:
        _SCALE["k"] = 2
        _scale_of.cache_clear()


_LOG = []


@functools.lru_cache(maxsize=None)
def _logged(n):
    _LOG.append(n)
    return n


def test_lru_cache_of_an_impure_function_breaks():
    def fn(x):
        return x * _logged(2)
    _logged.cache_clear()
    _LOG.clear()
    compiled = symexec.compile(fn)
    for _ in range(3):
        assert torch.equal(compiled(torch.ones(2)), torch.ones(2) * 2)
    assert _LOG == [2]  # called once for real, then cached, as in eager
    assert symexec.explain(fn, torch.ones(2)).graph_break_count == 1


def _plus(k):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs) + k
        return wrapper
    return deco


@_plus(1)
@_plus(2)
@_plus(3)
def _wrapped_three_deep(x):
    """doc"""
    return x * 2


def test_functools_wraps_chain():
    def fn(x):
        return _wrapped_three_deep(x), _wrapped_three_deep.__name__, _wrapped_three_deep.__doc__
    check(fn, torch.randn(3))
    _one_graph(fn, torch.randn(3))


def _identity(t):
    """returns its argument"""
    return t


_identity.tag = "kept"  # a __dict__ entry functools.wraps copies


def _maybe(fn=None):
    """x-transformers' ``maybe``: a wrapper made per call with functools.wraps, called at once."""
    fn = fn or _identity

    @functools.wraps(fn)
    def inner(x, *args, **kwargs):
        return x if x is None else fn(x, *args, **kwargs)
    return inner


def test_functools_wraps_on_a_function_made_while_tracing():
    """Setting __module__ (then __name__, __doc__, __wrapped__, the __dict__ entries) of a
    function made in the trace broke the graph: x-transformers' decoder kept 8 of 80 ops."""
    def fn(x):
        w = _maybe(None)
        return (w(x) * 2, w.__name__, w.__qualname__, w.__doc__, w.__module__, w.__wrapped__ is _identity,
                w.tag, sorted(w.__dict__))

    def calls_it(x):
        return _maybe(None)(x) * 2, _maybe(lambda t: t + 1)(x)
    check(fn, torch.randn(3))
    check(calls_it, torch.randn(3))
    # (torch.compile's w.__dict__ also lists the slots functools.wraps set: not compared)
    _one_graph(calls_it, torch.randn(3))


def test_a_wrapper_made_while_tracing_escapes_with_its_attributes():
    """Returned (or stored), the function generated code makes again carries what was set."""
    def fn(x):
        w = _maybe(lambda t: t + 1)
        w.extra = x.shape[0]
        return w(x), w

    compiled = symexec.compile(fn)
    for _ in range(2):
        x = torch.randn(3)
        (out, w), (expected, e) = compiled(x), fn(x)
        assert torch.equal(out, expected) and torch.equal(w(x), e(x))
        for name in ("__name__", "__qualname__", "__doc__", "__module__", "__annotations__", "extra"):
            assert getattr(w, name) == getattr(e, name), name
        assert w.__wrapped__.__code__ is e.__wrapped__.__code__ and sorted(vars(w)) == sorted(vars(e))


class _Scaler:
    def scaled(self, t):
        """scales"""
        return t * 3


def test_functools_wraps_over_a_bound_method():
    """A bound method's __module__ (and the other names it reads from its function) broke the
    graph: pyro wraps its handlers' bound methods with functools.wraps."""
    scaler = _Scaler()

    def fn(x):
        m = scaler.scaled
        w = functools.wraps(m)(lambda t: m(t) + 1)
        return (w(x), w.__name__, w.__qualname__, w.__doc__, w.__module__, w.__wrapped__.__func__ is _Scaler.scaled,
                m.__self__ is scaler, m.__name__, m.__doc__)
    check(fn, torch.randn(3))
    _one_graph(fn, torch.randn(3))


def test_a_function_made_while_tracing_keeps_its_annotations():
    """Generated code made the escaping function again without its annotations ({})."""
    def fn(x):
        def inner(t: torch.Tensor, k: int = 2) -> torch.Tensor:
            return t * k

        def bare(t):
            return t
        return inner(x), inner, bare.__annotations__, bare

    compiled = symexec.compile(fn)
    for _ in range(2):
        x = torch.randn(3)
        (out, f, annotations, bare), (expected, e, _, _) = compiled(x), fn(x)
        assert torch.equal(out, expected) and f.__annotations__ == e.__annotations__
        assert annotations == {} and bare.__annotations__ is annotations  # (the dict made on first read)


def test_attributes_of_a_function_made_while_tracing_that_are_not_modelled():
    """__name__ set to a non-string raises TypeError in eager; __defaults__ changes binding:
    both break the graph and run as eager."""
    def bad_name(x):
        def inner(t):
            return t + 1
        x = x * 2
        try:
            inner.__name__ = 3
        except TypeError as e:
            return inner(x), str(e)
        return inner(x), None

    def new_defaults(x):
        def inner(t, k=1):
            return t + k
        x = x * 2
        inner.__defaults__ = (5,)
        return inner(x)

    check(bad_name, torch.randn(3))
    check(new_defaults, torch.randn(3))


# -- 7. cls.__subclasses__(), relative imports inside functions, copy.deepcopy(module) -------------
class Shape:
    pass


class Square(Shape):
    pass


def test_subclasses():
    def fn(x):
        return x + len(Shape.__subclasses__()), [c.__name__ for c in Shape.__subclasses__()]
    check(fn, torch.randn(2))
    _one_graph(fn, torch.randn(2))


def test_subclasses_guarded_on_a_new_subclass():
    made = []

    def fn(x):
        return x + len(Shape.__subclasses__())
    check_sequence(fn, [torch.ones(2)], lambda: made.append(type("Circle", (Shape,), {})), [torch.ones(2)])


def test_metaclass_attributes_of_a_class():
    def fn(x):
        return x + hasattr(Shape, "mro") + hasattr(Shape, "nope")
    check(fn, torch.randn(2))

    def missing(x):
        try:
            return Shape.nope
        except AttributeError as e:
            return x + 1, str(e)
    check(missing, torch.randn(2))
    _one_graph(missing, torch.randn(2))


@pytest.fixture
def package(tmp_path, monkeypatch):
    root = tmp_path / "idiom_pkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "helper.py").write_text("def scale(x):\n    return x * 3\n")
    (root / "lazy.py").write_text("VALUE = 5\n")
    (root / "main.py").write_text(
        "def fn(x):\n"
        "    from . import helper\n"
        "    from .helper import scale\n"
        "    return helper.scale(x) + scale(x)\n"
        "def lazy(x):\n"
        "    from . import lazy\n"
        "    return x + lazy.VALUE\n"
        "def absolute(x):\n"
        "    from idiom_pkg import lazy\n"
        "    return x + lazy.VALUE\n"
        "def _scaled(x):\n"
        "    from . import lazy\n"
        "    return x * lazy.VALUE\n"
        "def looped(x):\n"
        "    y = x.sin()\n"
        "    for i in range(2):\n"
        "        y = _scaled(y) + i\n"
        "    return y.cos()\n"
        "def dotted(x):\n"
        "    import idiom_pkg.helper\n"
        "    return idiom_pkg.helper.scale(x)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib
    yield importlib.import_module("idiom_pkg.main")
    for name in [n for n in sys.modules if n.startswith("idiom_pkg")]:
        del sys.modules[name]


def test_relative_import_inside_a_function(package):
    import idiom_pkg.helper  # noqa: F401 - imported, as the module would have done
    check(package.fn, torch.randn(2))
    _one_graph(package.fn, torch.randn(2))


def test_relative_import_of_a_submodule_not_imported_yet(package):
    # `from . import lazy` imports the submodule (runs its code): CPython does it, at a break.
    assert "idiom_pkg.lazy" not in sys.modules
    compiled = symexec.compile(package.lazy)
    assert torch.equal(compiled(torch.ones(2)), torch.ones(2) + 5)
    assert "idiom_pkg.lazy" in sys.modules
    check(package.lazy, torch.randn(2))


def test_absolute_import_of_a_submodule_not_imported_yet(package):
    compiled = symexec.compile(package.absolute)
    assert torch.equal(compiled(torch.ones(2)), torch.ones(2) + 5)


def test_first_import_in_a_callee_inside_a_loop_is_traced_from_the_next_call(package):
    # The import breaks the graph (CPython runs the module's code at the break); the frame
    # whose loop holds the break runs as its code, but only while the module is not imported:
    # the next call traces it whole, in one graph, and the call after reuses it.
    backend = CountingBackend()
    compiled = symexec.compile(package.looped, backend=backend)
    counts = []
    for _ in range(3):
        before = backend.graph_count
        x = torch.randn(3)
        assert torch.equal(compiled(x), package.looped(x))
        counts.append(backend.graph_count - before)
    assert counts[1:] == [1, 0]  # (torch.compile imports while tracing: one graph from the first call)
    check(package.looped, torch.randn(3))
    assert symexec.explain(package.looped, torch.randn(3)).graph_break_count == 0


def test_an_imported_module_replaced_in_sys_modules_is_seen(package):
    # `from .helper import scale` of an imported module reads sys.modules (guarded): a module
    # put in its place is the one the next call uses, as in eager (`from . import helper` reads
    # the package's attribute, the module as it was).
    import idiom_pkg.helper as helper
    replacement = types.ModuleType("idiom_pkg.helper")
    replacement.scale = lambda x: x * 10

    def swap():
        sys.modules["idiom_pkg.helper"] = replacement

    def restore():
        sys.modules["idiom_pkg.helper"] = helper

    try:
        check_sequence(package.fn, [torch.randn(2)], swap, [torch.randn(2)], restore, [torch.randn(2)])
        check_sequence(package.dotted, [torch.randn(2)], swap, [torch.randn(2)], restore, [torch.randn(2)])
    finally:
        restore()


def test_imports_inside_as_torch_compiles_tests_write_them():
    def top_package(x):
        import torch.fx
        assert not isinstance(x, torch.fx.Proxy)
        return torch.sin(x)

    def from_torch(x, y):
        import torch
        from torch import sub
        return sub(torch.add(x, y), y)

    def missing_caught(x):
        try:
            import symexec_surely_no_such_module  # noqa: F401
            return None
        except ImportError:
            pass
        return x.sin()

    def missing(x):
        import symexec_surely_no_such_module  # noqa: F401
        return x + 1

    check(top_package, torch.randn(3))
    _one_graph(top_package, torch.randn(3))
    check(from_torch, torch.randn(3), torch.randn(3))
    _one_graph(from_torch, torch.randn(3), torch.randn(3))
    # symexec captures nothing here: the import fails at the break inside the try block on
    # every call (a finder may find the module later: not guardable), as under torch.compile
    check(missing_caught, torch.randn(3), expect_traced=False, captured=False)
    check(missing, torch.randn(3), expect_traced=False, captured=False)


def test_deepcopy_of_a_module_does_not_retrace():
    def fn(x, m):
        m2 = copy.deepcopy(m)
        return m2(x)
    check(fn, torch.randn(2, 2), torch.nn.Linear(2, 2), calls=3)
    _one_graph(fn, torch.randn(2, 2), torch.nn.Linear(2, 2))


def test_deepcopy_of_a_module_sees_new_weights():
    def fn(x, m):
        m2 = copy.deepcopy(m)
        return m2(x), m.weight.sum()
    torch.manual_seed(0)
    first, second = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    compiled = check_sequence(fn, [torch.ones(2, 2), first], [torch.ones(2, 2), first], [torch.ones(2, 2), second])
    assert len(symexec.cache_entries(compiled)) == 2  # the same weights reuse the entry; new ones retrace


# -- 8. Tensor.type(), is_mps/is_cuda, torch.is_tensor ----------------------------------------------
_BOOKKEEPING = ("_log_api_usage_once", "getattr")  # torch.compile's nodes that compute nothing used


def _captures_what_dynamo_does(fn, *args):
    """As many graphs as torch.compile, no break, and every op torch.compile records that
    computes something (it also records API-usage logging and unused attribute reads)."""
    _, dynamo = dynamo_graphs(fn, *args)
    _, ours = symexec_graphs(fn, *args)
    assert ours.graph_count == dynamo.graph_count
    for mine, theirs in zip(ours.graphs, dynamo.graphs):
        real = [n for n in theirs.graph.nodes if n.op.startswith("call_") and not any(
            b in str(n.target) for b in _BOOKKEEPING)]
        assert len(real) == sum(n.op.startswith("call_") for n in mine.graph.nodes), (mine.code, theirs.code)
    assert symexec.explain(fn, *args).graph_break_count == 0


def test_tensor_type_and_device_flags():
    def fn(x, m):
        return (x.type(torch.float64), x.type(), x.type("torch.DoubleTensor"), x.type(dtype=torch.int32),
                x.is_mps, x.is_cuda, torch.is_tensor(m), torch.is_tensor(x))
    check(fn, torch.randn(3), torch.nn.ReLU())
    _captures_what_dynamo_does(fn, torch.randn(3), torch.nn.ReLU())


# -- 9. torch.nn modules constructed inside ---------------------------------------------------------
def test_parameterless_modules_made_inside():
    def fn(x):
        return torch.nn.Softmax(dim=-1)(x) + torch.nn.ReLU()(x) + torch.nn.Identity()(x)
    check(fn, torch.randn(2, 3))
    _captures_what_dynamo_does(fn, torch.randn(2, 3))


def test_module_made_inside_and_returned_is_a_new_object_per_call():
    def fn(x):
        act = torch.nn.LeakyReLU(0.2)
        return act(x), act
    compiled = check(fn, torch.randn(3))
    assert compiled(torch.ones(1))[1] is not compiled(torch.ones(1))[1]


def test_linear_made_inside_draws_from_the_rng_as_eager():
    def fn(x):
        return torch.nn.Linear(2, 2)(x)
    x = torch.ones(1, 2)
    torch.manual_seed(0)
    eager = [fn(x), fn(x), torch.rand(1)]
    compiled = symexec.compile(fn)
    torch.manual_seed(0)
    got = [compiled(x), compiled(x), torch.rand(1)]
    for e, g in zip(eager, got):
        assert torch.equal(e, g)
    assert len(symexec.cache_entries(compiled)) == 1
    out = symexec.explain(fn, x)
    assert out.graph_count == 1 and out.graph_break_count == 1  # torch.compile: one graph, linear


# -- 11. descriptors written in Python (a lazy property), obj.__dict__ ------------------------------
class Lazy:
    def __init__(self, x):
        self.x = x

    @lazy_property
    def double(self):
        return self.x * 2


def test_lazy_property_on_an_object_made_inside():
    def fn(x):
        obj = Lazy(x)
        first = obj.double
        return first + obj.double, "double" in obj.__dict__, obj.__dict__.get("nope", 0), obj
    check(fn, torch.randn(3))
    _one_graph(fn, torch.randn(3))


def test_lazy_property_on_an_object_passed_in():
    def fn(obj):
        return obj.double + obj.double, "double" in obj.__dict__, Lazy.double is Lazy.double
    check(fn, Lazy(torch.randn(3)))
    _one_graph(fn, Lazy(torch.randn(3)))
    computed = Lazy(torch.ones(2))
    computed.double  # noqa: B018 - stored in its __dict__ now
    check_sequence(fn, [Lazy(torch.ones(2))], [computed], [Lazy(torch.ones(2))])


def test_setattr_of_a_module():
    def fn(x, m, name):
        setattr(m, name, x * 2)
        return getattr(m, name) + 1
    check(fn, torch.randn(3), torch.nn.Module(), "buf")
    _one_graph(fn, torch.randn(3), torch.nn.Module(), "buf")


def _target(a, b=2, *, c=3):
    return a


def test_inspect_signature_parameters():
    def fn(x):
        params = inspect.signature(_target).parameters
        return x + len(params) + params["b"].default, list(params), [p.kind.name for p in params.values()], "c" in params
    check(fn, torch.randn(2))
    _one_graph(fn, torch.randn(2))


def test_inspect_signature_sees_new_defaults():
    def fn(x):
        return x + inspect.signature(_target).parameters["b"].default
    old = _target.__defaults__
    try:
        check_sequence(fn, [torch.ones(2)], lambda: setattr(_target, "__defaults__", (7,)), [torch.ones(2)])
    finally:
        _target.__defaults__ = old



def _decorated(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


_wrapped_target = _decorated(_decorated(_target))  # (transformers' forward methods: @can_return_tuple)


def _default_of_b(x):
    return x + inspect.signature(_wrapped_target).parameters["b"].default


def test_inspect_signature_follows_wrapped_and_guards_the_chain():
    # A function with __wrapped__ (functools.wraps) broke the graph: HF generate() asks the
    # signature of the model's forward 5 times per call. inspect.signature follows the chain;
    # the trace guards every link of it and the defaults at its end.
    _one_graph(_default_of_b, torch.ones(2))
    inner = _wrapped_target.__wrapped__
    old = inner.__wrapped__

    def other(a, b=11):
        return a

    def restore():
        inner.__wrapped__ = old
        _target.__defaults__ = (2,)

    try:
        check_sequence(_default_of_b, [torch.ones(2)], lambda: setattr(_target, "__defaults__", (7,)),
                       [torch.ones(2)], lambda: setattr(inner, "__wrapped__", other), [torch.ones(2)],
                       lambda: setattr(other, "__signature__", inspect.signature(lambda a, b=5: a)), [torch.ones(2)],
                       restore, [torch.ones(2)])
    finally:
        restore()



def _plain_target(a, b=2, c=3):
    return a


def _parameter_names(x):
    return x * len(inspect.signature(_plain_target).parameters), list(inspect.signature(_plain_target).parameters)


def _partialmethod_mark_set_between_calls(fn, target, method):
    """``fn`` called before, while and after ``target`` carries a partialmethod mark (both
    spellings: _partialmethod; 3.13: __partialmethod__), each call compared with eager."""
    def mark():
        target._partialmethod = target.__partialmethod__ = functools.partialmethod(method, 5)

    def unmark():
        for name in ("_partialmethod", "__partialmethod__"):
            target.__dict__.pop(name, None)

    try:
        check_sequence(fn, [torch.ones(2)], [torch.ones(2)], mark, [torch.ones(2)], unmark, [torch.ones(2)])
    finally:
        unmark()


def test_inspect_signature_sees_a_partialmethod_mark_set_later():
    # inspect.signature reads a function's partialmethod mark: set between calls, it changes
    # the answer, and it was not guarded.
    def other(self, p, q, r=1):
        return p

    _partialmethod_mark_set_between_calls(_parameter_names, _plain_target, other)


def _unfollowed_signatures(x):
    spec = inspect.getfullargspec(_wrapped_target)
    own = inspect.signature(_wrapped_target, follow_wrapped=False)
    return x * len(spec.args), spec.varargs, list(own.parameters)


def test_signatures_that_do_not_follow_wrapped_read_the_wrapper():
    # getfullargspec and signature(follow_wrapped=False) read the wrapper itself: its own
    # partialmethod mark, not the one at the end of the chain.
    _partialmethod_mark_set_between_calls(_unfollowed_signatures, _wrapped_target, _target)


# -- 10. torch.utils._pytree ----------------------------------------------------------------------
def test_pytree_tree_map():
    def fn(x):
        return pytree.tree_map(lambda t: t * 2, {"a": x, "b": [x, (x + 1, "s")], "c": Point(x, 3)})
    check(fn, torch.randn(3))
    _one_graph(fn, torch.randn(3))


def test_pytree_flatten_and_unflatten():
    def fn(x):
        leaves, spec = pytree.tree_flatten({"a": x, "b": [x, 1], "c": collections.OrderedDict(k=x)})
        doubled = [leaf * 2 if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]
        return pytree.tree_unflatten(doubled, spec), len(pytree.tree_leaves([x, (x, x)])), spec.num_leaves
    check(fn, torch.randn(3))
    _one_graph(fn, torch.randn(3))


def test_pytree_structure_follows_the_inputs():
    def fn(tree):
        return pytree.tree_map(lambda t: t + 1, tree)
    check_sequence(fn, [[torch.ones(2), torch.ones(2)]], [(torch.ones(2), torch.ones(2))],
                   [{"a": torch.ones(2)}], [{"b": torch.ones(2), "a": torch.ones(2)}])


def test_pytree_of_a_type_registered_later():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    def fn(x, p):
        return pytree.tree_leaves(p), x

    def register():
        pytree.register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda leaves, _: Pair(*leaves))
    try:
        compiled = symexec.compile(fn)
        p = Pair(torch.ones(1), torch.zeros(1))
        assert compiled(torch.ones(1), p)[0][0] is p  # a leaf
        register()
        assert_same(fn(torch.ones(1), p), compiled(torch.ones(1), p))  # now a node: two leaves
    finally:
        pytree.SUPPORTED_NODES.pop(Pair, None)
        pytree.SUPPORTED_SERIALIZED_TYPES.pop(Pair, None) if hasattr(pytree, "SUPPORTED_SERIALIZED_TYPES") else None


# -- 5. frozenset, typing at run time ------------------------------------------------------------------
_NAMES = frozenset({"a", "b"})


def test_frozenset_literals_and_membership():
    def fn(x, key):
        s = frozenset([1, 2])
        t = frozenset({3}) | s
        return x + (1 if 2 in s else 0) + (1 if key in _NAMES else 3), t, len(t & {1, 9}), s <= t
    check(fn, torch.randn(2), "a")
    _one_graph(fn, torch.randn(2), "a")
    check_sequence(fn, [torch.ones(2), "a"], [torch.ones(2), "z"])


def test_typing_objects_at_run_time():
    def fn(x, seq, o: typing.Optional[int] = None):
        y = typing.cast(torch.Tensor, x)
        if isinstance(seq, typing.Sequence):
            y = y + 1
        if isinstance(seq, collections.abc.Mapping):
            y = y * 3
        if o is not None:
            y = y + o
        return y
    check(fn, torch.randn(2), [1])
    _one_graph(fn, torch.randn(2), [1])
    check_sequence(fn, [torch.ones(2), [1]], [torch.ones(2), {"a": 1}], [torch.ones(2), (1,)])


# -- user nn.Module subclasses made inside; functions marked assume_constant_result ---------------
class _Act(torch.nn.Module):  # no __init__ of its own: nn.Module's runs (an activation registry's kind)
    def forward(self, x):
        return torch.nn.functional.silu(x)


class _Scaled(torch.nn.Module):
    def __init__(self, scale, early=False):
        if early:
            self.training = False  # set before nn.Module.__init__, which sets it to True again
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x * self.scale


def test_user_module_made_inside_is_traced_into():
    def fn(x):
        return _Act()(x) + _Scaled(3.0)(x)

    check(fn, torch.randn(4))
    # One graph, as torch.compile's (whose also holds the two _log_api_usage_once calls it
    # traces in nn.Module.__init__, which runs here for real).
    assert symexec_graphs(fn, torch.randn(4))[1].op_counts() == [3]
    assert dynamo_graphs(fn, torch.randn(4))[1].graph_count == 1


def test_user_module_made_inside_keeps_eager_order_of_writes():
    def fn(x, early):
        m = _Scaled(2.0, early)
        return m(x), m.training, sorted(vars(m))

    check(fn, torch.randn(3), True)
    check(fn, torch.randn(3), False)
    assert symexec.explain(fn, torch.randn(3), True).graph_break_count == 0


def test_user_module_made_inside_and_returned_is_a_fresh_one_per_call():
    def fn(x):
        m = _Scaled(2.0)
        m.offset = x + 1  # a graph value: written on the copy handed out
        return m, m(x)

    compiled = check(fn, torch.randn(3))
    x = torch.randn(3)
    first, second = compiled(x)[0], compiled(x)[0]
    assert first is not second and first.scale == 2.0 and torch.equal(first.offset, x + 1)
    assert symexec.explain(fn, x).graph_break_count == 0


def _marked_constant(fn):
    fn._dynamo_marked_constant = True  # what torch._dynamo.assume_constant_result sets
    return fn


_probe_calls = []


@_marked_constant
def _probe(name):
    _probe_calls.append(name)
    import importlib.util  # noqa: PLC0415 - what a library's install probe does
    return importlib.util.find_spec(name) is not None


@functools.lru_cache
@_marked_constant
def _cached_probe(name):
    import importlib.util  # noqa: PLC0415
    return importlib.util.find_spec(name) is not None


@_marked_constant
def _marked_list():
    return [1, 2]


def test_assume_constant_result_is_called_while_tracing():
    def fn(x):
        if _probe("torch") and _cached_probe("json"):
            return x + 1
        return x - 1

    check(fn, torch.randn(3))
    assert_same_graphs_as_dynamo(fn, torch.randn(3))  # one graph: the probe is not traced into
    _probe_calls.clear()
    compiled = symexec.compile(fn)
    for _ in range(3):
        compiled(torch.randn(3))
    assert _probe_calls == ["torch"]  # once, while tracing, as torch.compile does


def test_assume_constant_result_needs_constant_arguments_and_result():
    def fn(x, name):
        return x + len(_marked_list()), _probe(name)

    check(fn, torch.randn(3), "json")  # a list result is not taken as a constant: the graph breaks
    assert symexec.explain(fn, torch.randn(3), "json").graph_break_count == 1


# -- annotations evaluated while tracing: classes subscripted, unions --------------------------
class _Boxed:
    def __class_getitem__(cls, item):
        return (cls.__name__, item)


def test_class_subscription_and_unions_in_annotations():
    from collections.abc import Callable, Sequence

    def fn(x):
        def inner(a: Callable[[int], bool] | None = None, b: list[int] | None = None) -> dict[str, int]:
            return a

        inner()
        return x + 1, list[int], Sequence[float], _Boxed[3], typing.Optional[int] | str

    check(fn, torch.randn(3))
    _one_graph(fn, torch.randn(3))


def test_the_views_of_a_signatures_parameters():
    # HF generate() asks `"inputs_tensor" in inspect.signature(method).parameters.keys()`: the
    # view of the mappingproxy was "not dict's", the break at it could not be made, and the
    # whole decoding loop ran uncompiled.
    def method(self, input_ids, logits_processor=None):
        pass

    def fn(x):
        params = inspect.signature(method).parameters
        keys, values, items = params.keys(), params.values(), params.items()
        if "input_ids" in keys and "absent" not in keys:
            x = x + 1
        return x * len(values), type(keys).__name__, type(items).__name__, list(keys), [v.name for v in values]

    check(fn, torch.randn(3))
    assert symexec.explain(fn, torch.randn(3)).graph_break_count == 0


# -- pickle.dumps of plain data (gpytorch's memoize keys its cache by the pickled kwargs) ---------
def test_pickle_dumps_of_plain_data_is_computed():
    def fn(x, **kwargs):
        key = pickle.dumps(kwargs)
        return x + len(key), key, pickle.dumps((1, "a", [2.5, None], {"k": b"v"}), protocol=2)

    check(fn, torch.randn(3), a=1, b="s")
    assert symexec.explain(fn, torch.randn(3), a=1, b="s").graph_break_count == 0


def test_pickle_dumps_of_other_values_breaks():
    class Level(int):
        def __reduce__(self):
            return (int, (7,))

    def fn(x, value):
        return x + 1, pickle.dumps(value), pickle.dumps({1}), pickle.dumps(1, protocol=99)

    check(fn, torch.randn(3), Level(3), expect_traced=False)


def test_os_fspath_of_a_str_or_bytes_is_that_value():
    def fn(x, name):
        return torch.sin(x), os.fspath("."), os.fspath(b"a/b"), os.fspath(name)

    _one_graph(fn, torch.randn(4), "dir")
    check(fn, torch.randn(4), "dir")


def test_os_fspath_of_a_path_like_runs_its_fspath():
    class Where:
        def __fspath__(self):
            return "here"

    def fn(x, where):
        return x + 1, os.fspath(where)

    check(fn, torch.randn(3), Where())


# -- re: patterns and matches on constant text ----------------------------------------------------
_LAYER = re.compile(r"layers\.(?P<index>\d+)\.(?P<kind>\w+)")


def test_regex_on_constant_text_is_answered_while_tracing():
    # Pattern.fullmatch / Match.group broke the graph (PyTorch's test_packaging_version_parse).
    def fn(x, name):
        m = _LAYER.fullmatch(name)
        if m is None:
            return x
        scale = int(m.group("index")) + len(m.groups()) + m.span()[1]
        parts = re.split(r"\.", name)
        return x * scale + len(parts), re.sub(r"\d", "#", name), m.groupdict(), _LAYER.pattern

    for name in ("layers.3.attn", "layers.12.mlp", "head"):
        check(fn, torch.randn(3), name, captured=name != "head")
        assert symexec.explain(fn, torch.randn(3), name).graph_break_count == 0


def test_regex_passed_in_is_guarded_by_its_text_and_flags():
    def fn(x, pattern):
        return x + (1 if pattern.search("Abc") else 2)

    check_sequence(fn, [torch.randn(2), re.compile("a")], [torch.randn(2), re.compile("a", re.I)],
                   [torch.randn(2), re.compile("b")], [torch.randn(2), re.compile("a")])


def test_regex_errors_and_functions_behave_as_eager():
    def bad(x):
        return x + len(re.findall("(", "abc"))  # re.error, raised where eager raises it

    def with_function(x):
        return x + len(re.sub("a", lambda m: m.group(0) * 2, "banana"))  # its code: a break

    def match_returned(x):
        return x * 2, re.match(r"(\d+)", "42abc")

    check(bad, torch.randn(2), captured=False)
    check(with_function, torch.randn(2))
    compiled = symexec.compile(match_returned)
    out = compiled(torch.randn(2))[1]
    assert isinstance(out, re.Match) and out.group(1) == "42" and out.span() == (0, 2)


def test_packaging_version_comparison_is_one_graph():
    version = pytest.importorskip("packaging.version")

    def fn(x):
        if version.parse(torch.__version__) >= version.parse("2.0.0"):
            return x + 1
        return x

    check(fn, torch.zeros(1))
    assert symexec.explain(fn, torch.zeros(1)).graph_break_count == 0
