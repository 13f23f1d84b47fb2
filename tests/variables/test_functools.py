"""functools: ``lru_cache``/``cache`` wrappers, ``wraps``/``update_wrapper`` on functions made in
the frame, ``reduce``, ``partial`` corners, ``cmp_to_key``, ``total_ordering``,
``cached_property`` and ``singledispatch`` (a function made with annotations)."""

import enum
import functools
import operator

import pytest
import torch

import symexec
from helpers import assert_same_graphs_as_dynamo, check, check_sequence, run_both, symexec_graphs

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


# -- lru_cache wrappers called with values not known while tracing ----------------------------
# (symbolic sizes, objects hashed by identity, objects the trace made): traced as the wrapped
# function when it changes nothing and returns no tensor, as torch.compile traces __wrapped__.


@functools.lru_cache(maxsize=16)
def _plan(shape, heads):
    """A reshape plan from a shape (einops' _reconstruct_from_shape, in small)."""
    batch, length, width = shape
    return [batch, length, heads, width // heads], list(range(4))


def _split_heads(x):
    target, order = _plan(x.shape, 2)
    return x.reshape(target).permute(order[0], order[2], order[1], order[3])


def _sizes(*lengths):
    return [(torch.randn(2, n, 8),) for n in lengths]


def test_lru_cache_called_with_symbolic_sizes_is_traced_through():
    _plan.cache_clear()
    compiled, ours, theirs = run_both(_split_heads, _sizes(4, 6, 9))
    assert ours.graph_count <= theirs.graph_count == 2  # static, then dynamic and reused
    assert symexec.explain(_split_heads, torch.randn(2, 5, 8)).graph_break_count == 0
    check(_split_heads, torch.randn(2, 7, 8))


def test_lru_cache_under_dynamic_true_keeps_one_graph():
    compiled, ours, theirs = run_both(_split_heads, _sizes(4, 6), dynamic=True)
    assert ours.graph_count == theirs.graph_count == 1


class _Recipe:
    """A plain object: hashed and compared by identity (a cache keyed by it)."""

    def __init__(self, heads):
        self.heads = heads


@functools.lru_cache(maxsize=None)
def _recipe(heads):
    return _Recipe(heads)


@functools.lru_cache(maxsize=None)
def _apply_plan(recipe, shape):
    return shape[0], shape[1] * recipe.heads, shape[2] // recipe.heads


def test_lru_cache_keyed_by_an_object_the_trace_made():
    # _recipe(2) returns an object made by the traced code; _apply_plan is keyed by it and by
    # a symbolic shape: both are traced through, in one graph.
    def fn(x):
        return x.reshape(_apply_plan(_recipe(2), x.shape))
    check(fn, torch.randn(2, 4, 8))
    compiled, ours, theirs = run_both(fn, _sizes(4, 6, 10))
    assert ours.graph_count <= theirs.graph_count


_GLOBAL_RECIPE = _Recipe(4)


def test_lru_cache_keyed_by_an_object_passed_in():
    def fn(x, recipe):
        return x.reshape(_apply_plan(recipe, x.shape))
    check_sequence(fn, [torch.randn(2, 4, 8), _GLOBAL_RECIPE], [torch.randn(2, 6, 8), _GLOBAL_RECIPE],
                   [torch.randn(2, 6, 8), _Recipe(2)])


@functools.lru_cache(maxsize=None)
def _total(values):
    return sum(values)


def test_lru_cache_with_an_unhashable_argument_raises_as_eager():
    # The cache hashes its arguments first: a list raises TypeError (einops catches it and
    # calls the uncached function); torch.compile traces __wrapped__ and does not raise.
    def fn(x):
        try:
            return x * _total([x.shape[0], 1]), "cached"
        except TypeError as e:
            return x * _total.__wrapped__([x.shape[0], 1]), str(e)
    check(fn, torch.randn(3))
    check_sequence(fn, [torch.randn(3)], [torch.randn(5)], [torch.randn(7)])


class _OwnHash:
    """Hashed by value: its __hash__ and __eq__ run when the cache looks it up."""

    def __init__(self, n):
        self.n = n

    def __hash__(self):
        return hash(self.n)

    def __eq__(self, other):
        return isinstance(other, _OwnHash) and other.n == self.n


@functools.lru_cache(maxsize=None)
def _scaled(key, n):
    return key.n * n


def test_lru_cache_with_an_object_of_its_own_hash_breaks():
    def fn(x, key):
        return x * _scaled(key, x.shape[0])
    check_sequence(fn, [torch.randn(3), _OwnHash(2)], [torch.randn(4), _OwnHash(2)], [torch.randn(5), _OwnHash(3)])
    assert symexec.explain(fn, torch.randn(3), _OwnHash(2)).graph_break_count >= 1


_SEEN = []


@functools.lru_cache(maxsize=None)
def _noted(n):
    _SEEN.append(n)
    return n + 1


def test_lru_cache_of_an_impure_function_with_symbolic_sizes_breaks():
    # On a hit eager skips the body (nothing appended): the call cannot be traced through.
    def fn(x):
        return x * _noted(x.shape[0]), len(_SEEN)
    _noted.cache_clear()
    _SEEN.clear()
    compiled = symexec.compile(fn)
    for n in (3, 4, 5, 4, 3):
        expected = x_out = None
        x = torch.randn(n)
        x_out, seen = compiled(x)
        assert torch.equal(x_out, x * (n + 1))
    assert _SEEN == [3, 4, 5]  # each size once, as in eager
    _noted.cache_clear()
    _SEEN.clear()


@functools.lru_cache(maxsize=None)
def _positions(n):
    return torch.arange(n)


def test_lru_cache_returning_a_tensor_breaks():
    # A hit returns the tensor stored at the miss (the same object, whatever was done to it):
    # not traced through.
    def fn(x):
        return x + _positions(x.shape[0])
    check_sequence(fn, [torch.randn(3)], [torch.randn(4)], [torch.randn(5)])
    assert symexec.explain(fn, torch.randn(6)).graph_break_count >= 1


_FACTOR = {"k": 2}


@functools.lru_cache(maxsize=None)
def _factored(n):
    return [n * _FACTOR["k"], n]


def test_lru_cache_stale_at_this_calls_sizes_answers_as_eager():
    # The cache holds answers computed before the global changed: eager returns them. The real
    # wrapper is asked for this call's sizes while tracing: a stale answer breaks the graph.
    def fn(x):
        scale, _ = _factored(x.shape[0])
        return x * scale
    _factored.cache_clear()
    try:
        for n in (3, 4, 5, 6):
            _factored(n)
        _FACTOR["k"] = 3
        check_sequence(fn, [torch.randn(3)], [torch.randn(4)], [torch.randn(5)], [torch.randn(6)])
    finally:
        _FACTOR["k"] = 2
        _factored.cache_clear()


@functools.lru_cache
def _sin_of_product(x, y, _=None):
    return torch.sin(x * y)


_WEIGHT = torch.ones(3)


def test_lru_cache_of_tensors_answers_from_the_cache():
    # Keyed by the tensors' identity: a hit returns the result of the first call, whatever was
    # done to the tensor since (torch.compile traces __wrapped__ and recomputes). The call runs
    # for real.
    def fn(a):
        return a + _sin_of_product(_WEIGHT, 2, None)

    def change_weight():
        _WEIGHT.mul_(3)

    _sin_of_product.cache_clear()
    try:
        check_sequence(fn, [torch.randn(3)], change_weight, [torch.randn(3)], [torch.randn(3)])
    finally:
        _WEIGHT.fill_(1)
        _sin_of_product.cache_clear()


class _Color(enum.Enum):
    RED = 1


@functools.lru_cache
def _element_size(dtype, device, color):
    return {torch.float32: 4, torch.float16: 2}[dtype] * color.value


def test_lru_cache_called_with_dtypes_devices_and_enum_members():
    def fn(x):
        return x * _element_size(x.dtype, x.device, _Color.RED)
    check(fn, torch.randn(3))
    _, ours = symexec_graphs(fn, torch.randn(3))
    assert ours.graph_count == 1 and symexec.explain(fn, torch.randn(3)).graph_break_count == 0


def test_partial_made_inside_has_its_own_dict():
    # (reading a new partial's __dict__ broke the graph) an empty dict, one object, whose items
    # are the partial's attributes
    def fn(t):
        f = lambda x, y: torch.sin(x) + torch.cos(y)  # noqa: E731
        p = functools.partial(f, y=t)
        if hasattr(p, "__dict__"):
            return p(t), p.__dict__, p.__dict__ is p.__dict__
        return torch.zeros_like(t)

    def written(t):
        p = functools.partial(torch.add, t)
        d = p.__dict__
        d["k"] = 3
        return p(t), p.k, hasattr(p, "j")

    for f in (fn, written):
        check(f, torch.randn(3, 4))
        assert symexec.explain(f, torch.randn(3, 4)).graph_break_count == 0


def test_lru_cache_of_no_argument_already_filled_answers_without_running():
    # A hit runs no code: torch's is_fx_tracing logs its warning once through one (its logging
    # broke the graph). Once the cache is cleared, the code runs again, as in eager.
    calls = []

    @functools.lru_cache
    def warn_once():
        print("warned")
        calls.append(1)
        return 7

    def fn(x):
        return x + warn_once()

    warn_once()
    check(fn, torch.randn(3))
    assert symexec.explain(fn, torch.randn(3)).graph_break_count == 0
    compiled = symexec.compile(fn)
    x = torch.randn(3)
    assert torch.equal(compiled(x), x + 7) and len(calls) == 1
    warn_once.cache_clear()  # (the eager and compiled calls share the cache: compiled alone here)
    assert torch.equal(compiled(x), x + 7) and len(calls) == 2  # its code ran again
    assert torch.equal(compiled(x), x + 7) and len(calls) == 2

    def flag(x, y):
        if torch.fx._symbolic_trace.is_fx_tracing():
            return x - 1
        return y + 1

    torch.fx._symbolic_trace.is_fx_tracing()  # (its warning logged once, as a first call would)
    check(flag, torch.randn(2), torch.randn(2))
    assert symexec.explain(flag, torch.randn(2), torch.randn(2)).graph_break_count == 0


# -- partial subclasses the trace makes (pyro's handlers) -------------------------------------
class _BoundPartial(functools.partial):
    # pyro.poutine.messenger._bound_partial: a slot named func shadows partial's own, set by
    # its __init__; partial's __new__ has flattened the partial it is given.
    __slots__ = "func"

    def __init__(self, func):
        self.func = func

    def __get__(self, instance, owner=None):
        return self if instance is None else functools.partial(self.func, instance)


def _context_wrap(scale, fn, *args, **kwargs):
    return fn(*args, **kwargs) * scale


def _sine(t):
    """The sine."""
    return torch.sin(t)


def test_a_partial_subclass_with_a_slot_is_made_called_and_wrapped():
    def fn(x):
        inner = functools.partial(_context_wrap, 3, _sine)
        wrapper = _BoundPartial(inner)
        functools.update_wrapper(wrapper, _sine, updated=())
        return wrapper(x), wrapper.func is inner, wrapper.args, wrapper.keywords, wrapper.__name__, wrapper.__doc__

    check(fn, torch.randn(4))
    _, ours = symexec_graphs(fn, torch.randn(4))
    assert ours.graph_count == 1 and ours.op_counts()[0] >= 2  # (sin and mul: the call is traced)


def test_a_partial_made_by_the_trace_is_one_object_across_a_break():
    # (it was rebuilt once per place holding it: the attributes update_wrapper set at the break,
    # on one copy, were missing from the other)
    def wrapped(x):
        wrapper = _BoundPartial(functools.partial(_context_wrap, 3, torch.sin))
        functools.update_wrapper(wrapper, torch.sin, updated=())  # (a torch function's __module__: a break)
        return wrapper(x), wrapper.__name__

    def plain(x):
        p = functools.partial(torch.add, x)
        q = p
        symexec.graph_break()
        return p is q, p(1)

    check(wrapped, torch.randn(4), expect_traced=False)
    check(plain, torch.randn(4), expect_traced=False)


def test_a_partial_subclass_made_by_the_trace_is_returned_whole():
    def fn(x):
        wrapper = _BoundPartial(functools.partial(_context_wrap, 2, torch.cos))
        wrapper.note = "kept"
        return wrapper, x + 1

    compiled = check(fn, torch.randn(3))
    wrapper, _ = compiled(torch.randn(3))
    assert type(wrapper) is _BoundPartial and wrapper.note == "kept"
    assert wrapper.func.args == (2, torch.cos) and functools.partial.func.__get__(wrapper) is _context_wrap
    assert torch.equal(wrapper(torch.ones(2)), torch.cos(torch.ones(2)) * 2)


def test_a_partial_of_a_partial_flattens_only_where_cpython_does():
    # A partial whose __dict__ was made is not flattened; one passed in may or may not be
    # (its __dict__ cannot be read): its fields break the graph, its calls do not.
    def made_dict(x):
        p = functools.partial(torch.add, x)
        p.__dict__
        q = functools.partial(p, 1)
        return q.func is p, q.args, q(), x * 2

    def passed_in(x, p):
        q = functools.partial(p, 1)
        return q(), q.func, q.args

    check(made_dict, torch.randn(3))
    check(passed_in, torch.randn(3), functools.partial(torch.add, torch.ones(3)), expect_traced=False)
    with_dict = functools.partial(torch.add, torch.ones(3))
    with_dict.__dict__
    check(passed_in, torch.randn(3), with_dict, expect_traced=False)


def test_a_new_object_is_not_in_a_list_of_others():
    # pyro's `if self not in _PYRO_STACK` with a new handler: identity, then each __eq__ (the
    # default one: identity), without the graph breaking.
    class Handler:
        pass

    stack = [Handler(), Handler()]

    def fn(x):
        handler = Handler()
        before = handler in stack
        stack.append(handler)
        return x + 1, before, handler in stack, stack.pop() is handler

    check(fn, torch.randn(3))
    _, ours = symexec_graphs(fn, torch.randn(3))
    assert ours.graph_count == 1
