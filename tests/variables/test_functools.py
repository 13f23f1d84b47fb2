"""functools: ``lru_cache``/``cache`` wrappers, ``wraps``/``update_wrapper`` on functions made in
the frame, ``reduce``, ``partial`` corners, ``cmp_to_key``, ``total_ordering``,
``cached_property`` and ``singledispatch`` (a function made with annotations)."""

import functools
import operator

import pytest
import torch

import symexec
from helpers import assert_same_graphs_as_dynamo, check, check_sequence, symexec_graphs

_LOG = []


@functools.lru_cache(maxsize=None)
def _cached_with_effect(n):
    _LOG.append(n)
    return n * 2


@functools.cache
def _cached(n):
    return n + 1


def _lru_hits_skip_the_body(x):
    # The wrapper's body appends to a global: on a hit eager skips it. Traced only where the body
    # changes nothing: here the graph breaks, and every call goes through the real wrapper.
    return x + _cached_with_effect(3) + _cached_with_effect(3), len(_LOG)


def _lru_pure(x):
    return x + _cached(5), _cached(5) == 6


def _wraps_in_frame(x):
    def inner(a):
        "inner's doc"
        return a + 1
    inner.extra = 5

    def outer(a):
        return inner(a) * 2
    made = functools.update_wrapper(outer, inner)

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs) + 1
        return wrapper

    @deco
    def g(a, b=2):
        "g's doc"
        return a * b
    return (made is outer, outer(x), outer.extra, outer.__wrapped__ is inner, outer.__name__, outer.__module__,
            outer.__doc__, g(x), g(x, b=3), g.__name__, g.__doc__, g.__qualname__.split(".")[-1])


def _reduce(x):
    out = []
    try:
        functools.reduce(operator.add, [])
    except TypeError as e:
        out.append(str(e))
    log = []

    def add(a, b):
        log.append(("add", b))
        return a + b

    def item(v):
        log.append(("item", v))
        return v
    total = functools.reduce(add, map(item, [1, 2, 3]))  # (items taken between the calls)
    return (functools.reduce(lambda a, b: a + b, iter([x, x]), 1), functools.reduce(max, [3, 7, 2]),
            functools.reduce(operator.mul, [], 5), out, total, log)


def _partial_corners(x):
    def f(a, b, *, c=1, d=2):
        return a * b + c - d
    p = functools.partial(f, x, c=5)
    q = functools.partial(p, 2, d=0)
    return (p(3), q(), q(c=1), q.func is f, q.args[1], sorted(q.keywords.items()),
            functools.partial(max, 1)(5, 3))


def _cmp_to_key(x):
    k = functools.cmp_to_key(lambda a, b: (a > b) - (a < b))
    return (x + 1, k(1) < k(2), sorted([(2, "b"), (1, "a")], key=functools.cmp_to_key(lambda a, b: a[0] - b[0])),
            min([3, 1, 2], key=k), sorted([3, 1, 2], key=functools.cmp_to_key(lambda a, b: b - a)))


@functools.total_ordering
class _ByGreater:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return self.v == other.v

    def __gt__(self, other):
        return self.v > other.v


def _total_ordering(x):
    return (x + 1, _ByGreater(1) < _ByGreater(2), _ByGreater(3) <= _ByGreater(2), _ByGreater(2) >= _ByGreater(2),
            sorted([_ByGreater(3), _ByGreater(1)])[0].v, max(_ByGreater(1), _ByGreater(4)).v)


def _cached_property(x):
    class C:
        @functools.cached_property
        def val(self):
            return 3
    c = C()
    return x + c.val + c.val, "val" in c.__dict__


def _singledispatch(x):
    @functools.singledispatch
    def f(a):
        return 0

    @f.register
    def _(a: int):  # (registered by its annotation: the function made here keeps it)
        return 1
    return x + f(1) + f("a")


CASES = [_lru_hits_skip_the_body, _lru_pure, _wraps_in_frame, _reduce, _partial_corners, _cmp_to_key,
         _total_ordering, _cached_property, _singledispatch]


@pytest.mark.parametrize("fn", CASES, ids=lambda fn: fn.__name__)
def test_functools(fn):
    check(fn, torch.randn(3))


# torch.compile: _lru_hits_skip_the_body returns a wrong count (it runs the body on a hit);
# _lru_pure and _cached_property it runs eagerly (0 graphs); _partial_corners it splits in 3;
# _singledispatch it fails; the others as many graphs as symexec.
@pytest.mark.parametrize("fn", [_wraps_in_frame, _cmp_to_key, _total_ordering], ids=lambda fn: fn.__name__)
def test_functools_graphs_as_dynamo(fn):
    assert_same_graphs_as_dynamo(fn, torch.randn(3))


def test_hasattr_of_a_partial_answers_as_cpython():
    names = ("__name__", "__code__", "__doc__", "__module__", "__get__", "__qualname__", "__call__", "__globals__",
             "__defaults__", "__kwdefaults__", "__annotations__", "__builtins__", "__closure__", "func", "keywords")

    def fn(t):
        p = functools.partial(lambda x, y: torch.sin(x) + torch.cos(y), y=t)
        return [hasattr(p, n) for n in names], p(t), p.__doc__ == functools.partial.__doc__, p.__module__

    check(fn, torch.randn(3))
    assert symexec_graphs(fn, torch.randn(3))[1].graph_count == 1  # (no break: as under torch.compile)

    baz = functools.partial(lambda x, y: x + y, y=4)
    named = functools.partial(lambda x, y: x + y, y=4)
    named.__name__ = "named"

    def passed_in(t, p):
        return t + 1, [hasattr(p, n) for n in names], getattr(p, "__name__", None)

    check(passed_in, torch.randn(3), baz)
    check(passed_in, torch.randn(3), named)


def test_name_set_on_a_partial_later_is_seen():
    p = functools.partial(lambda x, y: x + y, y=4)

    def fn(t):
        return t + 1, hasattr(p, "__name__")

    def name_it():
        p.__name__ = "p"

    check_sequence(fn, [torch.randn(3)], name_it, [torch.randn(3)])


def test_methodcaller_of_tensors_made_in_the_trace():
    for name, args, kwargs in (("size", (), {}), ("size", (0,), {}), ("add", (torch.randn(3, 4),), {}),
                               ("add", (torch.randn(3, 4),), {"alpha": 2.0})):
        def fn(x, y, name=name, args=args, kwargs=kwargs):
            caller = operator.methodcaller(name, *args, **kwargs)
            return caller(x), caller(y)

        check(fn, torch.randn(3, 4), torch.randn(3, 4), captured=name == "add")

    def returned(x, y):
        return operator.methodcaller("mul", y), x + 1

    caller, _ = symexec.compile(returned, fullgraph=True)(torch.ones(2), torch.full((2,), 3.0))
    assert torch.equal(caller(torch.ones(2)), torch.full((2,), 3.0))
