"""The Python real PyTorch code is written in (issue #6): user classes, exceptions, context
managers, more builtins and library functions, autograd. Each case runs in one graph
(``fullgraph=True``) or, where stated, through a graph break, and equals eager."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import math
import operator
import typing

import pytest
import torch
from helpers import assert_same_graphs_as_dynamo, check, symexec_graphs

import symexec
import symexec.exc
from symexec import versions


def _t(*shape):
    return torch.randn(*shape) if shape else torch.randn(3)


def fullgraph(fn, *args):
    """Equal to eager, and traced whole."""
    compiled = symexec.compile(fn, fullgraph=True)
    expected = fn(*args)
    actual = compiled(*args)
    from helpers import assert_same

    assert_same(expected, actual)
    check(fn, *args)


# -- user classes ------------------------------------------------------------------------------
class Scaler:
    factor = 3

    def __init__(self, shift):
        self.shift = shift

    @property
    def doubled(self):
        return self.shift * 2

    def apply(self, x):
        return x * self.factor + self.shift

    @classmethod
    def make(cls, shift):
        return cls(shift)

    @staticmethod
    def helper(x):
        return x - 1

    def __call__(self, x):
        return self.apply(x) + self.doubled

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return i * self.shift

    def __add__(self, other):
        return Scaler(self.shift + other.shift)


class Child(Scaler):
    def apply(self, x):
        return super().apply(x) * 2


def test_methods_properties_class_and_static_methods():
    def fn(x, s):
        return s.apply(x), s.doubled, Scaler.helper(x), s.factor, Scaler.make(2).apply(x), s(x)

    fullgraph(fn, _t(), Scaler(1.5))


def test_dunder_methods_and_super():
    def fn(x, s):
        t = s + Scaler(2.0)
        return len(s), s[3], t.shift, Child(1.0).apply(x), isinstance(t, Scaler), issubclass(Child, Scaler)

    fullgraph(fn, _t(), Scaler(0.5))


@dataclasses.dataclass
class Point:
    x: torch.Tensor
    y: float = 1.0

    def norm(self):
        return (self.x * self.y).abs().sum()


Pair = collections.namedtuple("Pair", ["left", "right"])


def test_objects_created_inside_and_returned():
    def fn(x):
        p = Point(x * 2)
        q = Pair(x, x + 1)
        s = Scaler(4.0)
        s.extra = x.sum()
        return p, p.norm(), q, q.right, q._fields, s.extra, isinstance(p, Point)

    compiled = symexec.compile(fn, fullgraph=True)
    x = _t()
    p, norm, q, right, fields, extra, is_point = compiled(x)
    assert isinstance(p, Point) and torch.equal(p.x, x * 2) and p.y == 1.0
    assert isinstance(q, Pair) and torch.equal(q.right, x + 1) and fields == ("left", "right")
    assert torch.allclose(norm, fn(x)[1]) and torch.equal(extra, x.sum()) and is_point


# -- exceptions --------------------------------------------------------------------------------
class MyError(ValueError):
    pass


def test_raise_and_handle_inside_the_graph():
    def fn(x, d):
        try:
            value = d["missing"]
        except KeyError:
            value = 2
        try:
            raise MyError("inner")
        except ValueError as e:
            message = str(e)
        else:
            message = "none"
        finally:
            value = value + 1
        assert value == 3, "assert passes"
        return x * value, message

    fullgraph(fn, _t(), {"present": 1})


def test_user_exception_propagates_with_type_message_and_user_traceback():
    def fn(x, n):
        y = x * 2
        if n > 2:
            raise MyError(f"n is {n}")
        return y

    compiled = symexec.compile(fn)
    with pytest.raises(MyError, match="n is 5") as info:
        compiled(_t(), 5)
    last = info.traceback[-1]
    assert last.path.name == "test_python_features.py" and "raise MyError" in str(last.statement)
    check(fn, _t(), 5, expect_traced=False)


def test_failing_assert_raises_assertion_error():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parent.parent / "instructions" / "plain_asserts.py"  # asserts pytest leaves alone
    spec = importlib.util.spec_from_file_location("plain_asserts_features", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    positive_scale = module.positive_scale

    check(positive_scale, _t(), -1, expect_traced=False)
    check(positive_scale, _t(), 2)


# -- context managers --------------------------------------------------------------------------
@contextlib.contextmanager
def tagged(log, tag):
    log.append(f"enter {tag}")
    try:
        yield tag
    finally:
        log.append(f"exit {tag}")


class Counter:
    def __init__(self):
        self.entered = 0

    def __enter__(self):
        self.entered += 1
        return self

    def __exit__(self, *exc):
        self.entered += 10
        return False


@pytest.mark.parametrize("mode", ["no_grad", "enable_grad", "set_grad_enabled"])
def test_grad_mode_context_managers(mode):
    def fn(x):
        if mode == "no_grad":
            with torch.no_grad():
                y = x * 2
        elif mode == "enable_grad":
            with torch.no_grad():
                with torch.enable_grad():
                    y = x * 2
        else:
            with torch.set_grad_enabled(False):
                y = x * 2
        return y, torch.is_grad_enabled(), y.requires_grad

    fullgraph(fn, torch.randn(3, requires_grad=True))


def test_grad_mode_switched_back_and_forth_with_nothing_between():
    # switches with no operation between them collapse into the last one, as under
    # torch.compile (the graph held five where torch.compile's holds three)
    def fn(param, y):
        prev = torch.is_grad_enabled()
        try:
            torch.set_grad_enabled(False)
            torch.set_grad_enabled(True)
            torch.set_grad_enabled(False)
            param.add_(y)
            with torch.enable_grad():
                pass
        finally:
            torch.set_grad_enabled(prev)
        return torch.is_grad_enabled(), param * 2

    check(fn, torch.nn.Parameter(torch.randn(4)), torch.randn(4))  # (it changes param: not `fullgraph`)
    ours, _ = assert_same_graphs_as_dynamo(fn, torch.nn.Parameter(torch.randn(4)), torch.randn(4))
    assert ours.op_counts() == [4]


def test_autocast_on_cpu():
    def fn(x, w):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ w
        return y.float(), y.dtype

    fullgraph(fn, _t(4, 4), _t(4, 4))


def test_inference_mode_runs_through_a_graph_break():
    def fn(x):
        with torch.inference_mode():
            y = x * 2
        return y + 1

    check(fn, _t())


def test_python_context_managers_are_inlined():
    def fn(x):
        log = []
        counter = Counter()
        with tagged(log, "a") as tag, counter:
            y = x * len(tag)
        return y, log, counter.entered

    fullgraph(fn, _t())


# -- more Python -------------------------------------------------------------------------------
def test_builtins_and_iteration_helpers():
    def fn(x, items, d):
        squares = (i * i for i in items)
        evens = list(filter(lambda v: v % 2 == 0, map(lambda v: v + 1, items)))
        keys = sorted(d.keys(), reverse=True)
        total = functools.reduce(operator.add, items, 0)
        return (x * sum(squares), evens, keys, list(reversed(items)), any(v > 2 for v in items),
                all(items), total, [k for k, v in d.items() if v], list(d.values()))

    fullgraph(fn, _t(), [1, 2, 3], {"a": 1, "b": 0, "c": 2})


def test_strings_math_operator_partial_collections_typing():
    def fn(x, name):
        label = f"{name.upper()}-{len(name):02d}"
        scale = functools.partial(operator.mul, math.sqrt(4.0))
        counts = collections.OrderedDict()
        counts["a"] = 1
        defaults = collections.defaultdict(int)
        ok = isinstance(name, typing.Hashable) and isinstance([1], typing.Sequence)
        return scale(x), label, label.split("-"), list(counts.items()), math.floor(2.7), ok, len(defaults)

    fullgraph(fn, _t(), "ab")


def test_broad_functional_and_tensor_method_surface():
    def fn(x, w):
        h = torch.nn.functional.gelu(x @ w)
        h = torch.nn.functional.layer_norm(h, (h.shape[-1],))
        h = torch.nn.functional.dropout(h, p=0.5, training=False)
        a = torch.nn.functional.softmax(h, dim=-1).masked_fill(h > 1, 0.0)
        b = h.transpose(0, 1).contiguous().view(-1).unsqueeze(0).expand(2, -1)
        c = torch.cat([h, a], dim=1).chunk(2, dim=1)[0].clamp(min=-1, max=1)
        d = torch.where(h > 0, h, torch.zeros_like(h)).cumsum(0).flip(0).topk(2, dim=1).values
        return a.sum(), b.mean(), c.std(), d, h.argmax(dim=1), x.new_zeros(2).shape

    fullgraph(fn, _t(4, 5), _t(5, 6))


# -- autograd ----------------------------------------------------------------------------------
def test_gradients_match_eager():
    def fn(x, w):
        return torch.tanh(x @ w).pow(2).sum()

    x, w = torch.randn(3, 4, requires_grad=True), torch.randn(4, 2, requires_grad=True)
    x2, w2 = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    fn(x, w).backward()
    symexec.compile(fn, fullgraph=True)(x2, w2).backward()
    assert torch.allclose(x.grad, x2.grad) and torch.allclose(w.grad, w2.grad)


def test_backward_and_autograd_grad_inside_break_the_graph():
    def fn(x):
        y = (x * 3).sum()
        (g,) = torch.autograd.grad(y, x, create_graph=False)
        z = (x * 2).sum()
        z.backward()
        return g, x.grad.clone()

    x = torch.randn(3, requires_grad=True)
    x2 = x.detach().clone().requires_grad_()
    expected = fn(x)
    actual = symexec.compile(fn)(x2)
    assert all(torch.equal(a, b) for a, b in zip(expected, actual))


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


def test_autograd_function_through_a_break():
    def fn(x):
        return Square.apply(x + 1).sum()

    x = torch.randn(3, requires_grad=True)
    x2 = x.detach().clone().requires_grad_()
    fn(x).backward()
    symexec.compile(fn)(x2).backward()
    assert torch.allclose(x.grad, x2.grad)


# -- nn.Module details -------------------------------------------------------------------------
def test_batchnorm_running_stats_update_in_training():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)).train()
    twin = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)).train()
    twin.load_state_dict(model.state_dict())
    compiled = symexec.compile(twin, fullgraph=True)
    x = torch.randn(8, 4)
    for _ in range(2):
        assert torch.allclose(model(x), compiled(x), atol=1e-6)
    assert torch.allclose(model[1].running_mean, twin[1].running_mean)
    assert model[1].num_batches_tracked == twin[1].num_batches_tracked == 2


def test_module_as_global_and_as_argument_and_attribute_guards():
    layer = torch.nn.Linear(3, 3)

    class Wrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = 2
            self.use_bias = True

        def forward(self, x, inner):
            y = inner(x) * self.scale
            return y + 1 if self.use_bias else y

    wrapper = Wrapper()
    compiled = symexec.compile(wrapper, fullgraph=True)
    x = _t(2, 3)
    assert torch.allclose(compiled(x, layer), wrapper(x, layer))
    wrapper.use_bias = False  # a flag that steers control flow is guarded
    assert torch.allclose(compiled(x, layer), wrapper(x, layer))
    assert len(symexec.cache_entries(compiled)) == 2

    def uses_global(x):
        return layer(x).relu()

    check(uses_global, x)


class Config:
    def __init__(self):
        self.layers = 2
        self.name = "base"


def test_a_copy_made_while_tracing_follows_the_original():
    import copy

    def fn(x, config):
        mine = copy.deepcopy(config)
        mine.layers += 1
        return x * mine.layers, config.layers

    config = Config()
    compiled = symexec.compile(fn, fullgraph=True)
    x = _t()
    assert torch.equal(compiled(x, config)[0], x * 3)
    config.layers = 5  # the copy's source changed: the entry must not be reused
    out, layers = compiled(x, config)
    assert torch.equal(out, x * 6) and layers == 5 and config.layers == 5


# --- the operator and typing modules, types as values, C builtins and their corners -------------


def _operators(x):
    d, items = {}, [1, 2]
    operator.setitem(d, "a", x)
    operator.delitem(items, 0)
    return (operator.add(x, 1), operator.index(3), operator.neg(x), operator.not_(0), operator.truth(3),
            operator.is_(x, x), operator.is_not(x, None), operator.contains([1, 2], 2), operator.countOf([1, 1, 2], 1),
            operator.indexOf([1, 2], 2), operator.concat([1], [2]), operator.getitem([1, 2], 1),
            operator.itemgetter(1, 0)([x, 2]), operator.attrgetter("shape")(x), operator.methodcaller("sum")(x),
            operator.iadd([1], [2]), operator.imul(x, 2), operator.ipow(2, 3), operator.abs(-x), operator.inv(5),
            operator.lshift(1, 3), d, items)


def _length_hints(x):
    it = iter([1, 2, 3])
    next(it)
    return (x + 1, operator.length_hint(it), operator.length_hint(iter(range(5)), 7),
            operator.length_hint(map(abs, [1]), 4), operator.length_hint(x), operator.length_hint({1: 2}),
            operator.length_hint(zip([1], [2])), operator.length_hint(reversed([1, 2])))


def _typing(x):
    ok = isinstance([1], typing.Sequence), isinstance({}, typing.Mapping), isinstance(x, typing.Sequence)
    optional = typing.Optional[int]
    return (typing.cast(torch.Tensor, x) + 1, ok, typing.TYPE_CHECKING, optional == typing.Optional[int], list[int],
            list[int] == list[int])


def _types_as_values(x):
    by_type = {int: 1, str: 2, torch.Tensor: 3}
    t = type(x)
    return (x + by_type[t], t in (torch.Tensor, int), isinstance(x, (list, torch.Tensor)), isinstance(3, (int, float)),
            type(3.0) in (int, float), issubclass(bool, int), issubclass(int, (str, float)), {type(1), type(2)} == {int})


def _builtin_corners(x):
    out = []
    for thunk in (lambda: range(1, 2, 0), lambda: divmod(1, 0), lambda: round(1.5, "a"), lambda: format(1, "q"),
                  lambda: hash([]), lambda: range(1.0), lambda: operator.index(1.5), lambda: round(float("inf")),
                  lambda: round(float("nan")), lambda: divmod(7.5, 0.0)):
        try:
            out.append(thunk())
        except (TypeError, ValueError, ZeroDivisionError, OverflowError) as e:
            out.append((type(e).__name__, str(e)))
    return (x + 1, out, round(1234, -2), round(2.675, 2), round(-2.5), divmod(-7, 2), divmod(7.5, 2), format(255, "#x"),
            format("a", ">3"), format(3.14159, ".2f"), hash((1, 2)) == hash((1, 2)), hash(-1), callable(x), callable(3),
            getattr(torch, "nope", 1), pow(2, -1), pow(3, 2, 5),
            min([], default=4), max(1, 2, key=lambda v: -v))


def test_a_builtin_class_method_read_from_the_class():
    # Not modelled yet: reading a method of a builtin class (``str.upper``) and ``dir()`` of a
    # constant break the graph (on 3.12+, after the loop of _builtin_corners, its frame ran as its
    # code). Eager-equal either way.
    def fn(x):
        return x + 1, getattr(str, "upper").__name__, str.upper("a"), "upper" in dir("")
    check(fn, torch.randn(3), expect_traced=False)


def test_str_methods_read_from_the_class_on_constants():
    # einops' parser: ``str.count(expression, "...")``, ``str.isidentifier(name)``: computed
    def fn(x, expression):
        dots = str.count(expression, ".")
        return (x + dots, str.isidentifier("ab"), str.isalnum("a_"), str.split(expression, "."),
                str.replace(expression, ".", "-", 2), str.startswith(expression, ("a", "b")))

    check(fn, torch.randn(3), "a...b")
    assert symexec.explain(fn, torch.randn(3), "a...b").graph_break_count == 0


def test_str_methods_read_from_the_class_on_other_values_break():
    class Loud(str):
        def __format__(self, spec):
            print("formatted")
            return "loud"

    def fn(x, name):
        return x + 1, str.format("{}", Loud("a")), str.upper(name), str.count("ab", 1)

    check(fn, torch.randn(3), Loud("q"), expect_traced=False)


def _range_more(x):
    r = range(-5, 5, 2)
    return (x + 1, r[::-1], r[-2::-2], list(reversed(range(2**70, 2**70 + 3))), range(0) == range(2, 1), r.index(-1),
            range(2**70)[-1], 3 in range(0, 10, 3), 3.0 in range(5), len(range(-3)), range(3) != range(4),
            max(range(4)), sum(range(10, 0, -1)))


def _objects(x):
    class A:
        pass
    a = A()
    a.z = 1
    items = [1]
    alias = items
    return x + 1, vars(a), sorted(dir(a))[-1], id(items) == id(alias), id(items) == id([1])


def _with_traceback(x):
    try:
        try:
            raise KeyError("k")
        except KeyError as e:
            same = e.with_traceback(None) is e
            raise e.with_traceback(None)
    except KeyError as f:
        return x + 2, f.args, same


_LIBRARY = [_operators, _length_hints, _typing, _types_as_values, _builtin_corners, _range_more, _objects,
            _with_traceback]


@pytest.mark.parametrize("fn", _LIBRARY, ids=lambda fn: fn.__name__)
def test_operator_typing_and_builtins(fn):
    check(fn, torch.randn(3))


# (torch.compile makes one more graph for _operators; it returns a wrong ``format(3.14159,
# ".2f")`` in _builtin_corners and a wrong ``3.0 in range(5)`` in _range_more: no count to compare)
@pytest.mark.parametrize("fn", [_length_hints, _typing, _types_as_values, _objects, _with_traceback],
                         ids=lambda fn: fn.__name__)
def test_operator_typing_and_builtins_graphs_as_dynamo(fn):
    assert_same_graphs_as_dynamo(fn, torch.randn(3))


def test_inner_function_over_a_cell_of_the_compiled_function_returned():
    # The inner function the trace makes closes over the compiled function's own cell: the
    # real cell, so a later change of the variable is seen through it.
    x = 0

    def make_get_x():
        def get_x():
            return x
        return get_x

    def root(t):
        get_x = make_get_x()
        return t + x, get_x

    # (3.13 has no instruction that pushes a cell itself (LOAD_CLOSURE is a pseudo-instruction
    # there): symexec breaks the graph cleanly, so fullgraph raises and a plain compile is eager's)
    whole = versions.V.closure_cell_load is not None
    if not whole:
        with pytest.raises(symexec.exc.Unsupported):
            symexec.compile(root, fullgraph=True)(torch.ones(1))
    compiled = symexec.compile(root, fullgraph=whole)
    res, get_x = compiled(torch.ones(1))
    assert torch.equal(res, torch.ones(1)) and get_x() == 0
    x += 1
    assert get_x() == 1

    out = None

    def fn(a, b):
        nonlocal out
        c = a + b

        def fn2(f=7):
            nonlocal out
            out = a + b * 10
            return c * f

        return fn2

    fn2 = symexec.compile(fn, fullgraph=whole)(torch.tensor([100.0]), torch.tensor([200.0]))
    assert fn2(2)[0] == 600 and out[0] == 2100


_IS_KEYWORD = frozenset(["if", "else"]).__contains__
_JOIN = "-".join


def test_builtin_methods_of_constants_on_constants():
    def fn(x, name):
        return x + 1, _IS_KEYWORD(name), _JOIN([name, "b"]), (1, 2, 2).count(2)

    check(fn, torch.randn(3), "if")
    check(fn, torch.randn(3), "mytuple")
    assert symexec_graphs(fn, torch.randn(3), "if")[1].graph_count == 1



_T = typing.TypeVar("_T")


def test_annotations_with_a_typevar_evaluated_while_tracing():
    def fn(x, index):
        def inner(f: typing.Callable[[_T], typing.Any]) -> typing.Optional[_T]:
            return f(x)
        mapped = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t[index], (x, x * 2))
        return inner(lambda v: v + 1), mapped, _T

    check(fn, torch.randn(4, 2), torch.tensor([2]))
    assert symexec_graphs(fn, torch.randn(4, 2), torch.tensor([2]))[1].graph_count == 1


def test_doc_of_a_closure_made_while_tracing():
    def fn(x):
        def inner():
            """inner's doc"""
            return x + 1

        @functools.wraps(inner)
        def wrapper():
            return inner()

        return wrapper(), inner.__doc__, wrapper.__doc__, wrapper.__name__

    check(fn, torch.randn(3))


def test_weak_reference_passed_in_called():
    import gc
    import weakref

    def fn(x_weak, weight, y):
        if x_weak is not None and x_weak() is not weight:
            return torch.sin(y)
        return torch.cos(y), x_weak() is None

    compiled = symexec.compile(fn, fullgraph=True)
    weight, other = torch.randn(4), torch.randn(4)
    y = torch.randn(4)
    for ref, w in ((weakref.ref(weight), weight), (weakref.ref(weight), other), (weakref.ref(other), other)):
        torch.testing.assert_close(compiled(ref, w, y), fn(ref, w, y))
    ref = weakref.ref(other)
    del other
    gc.collect()
    torch.testing.assert_close(compiled(ref, weight, y), fn(ref, weight, y))


def test_no_grad_as_a_decorator_inside_the_function():
    # (calling no_grad() broke the graph) the decorated function runs in the mode at each call
    def fn(x):
        @torch.no_grad()
        def augment(x):
            return (x + 1) * 2, torch.is_grad_enabled()

        @torch.enable_grad()
        def back(x):
            return x * 3, torch.is_grad_enabled()

        with torch.no_grad():
            b = back(x)
        return augment(x), b, torch.is_grad_enabled(), x * 3

    check(fn, torch.ones(3, requires_grad=True))
    ours, _ = assert_same_graphs_as_dynamo(fn, torch.ones(3, requires_grad=True))
    assert ours.graph_count == 1


def test_no_grad_decorated_function_that_breaks():
    # (the decorated function is rebuilt by the generated code at the break: torch's wrapper)
    def fn(x):
        @torch.no_grad()
        def inner(x):
            y = x * 2
            print("inside", torch.is_grad_enabled())
            return y

        r = inner(x)
        return r, torch.is_grad_enabled(), x + 1

    check(fn, torch.ones(3, requires_grad=True))


def test_no_grad_decorated_function_that_raises():
    def fn(x, fail):
        @torch.no_grad()
        def inner(x):
            if fail:
                raise ValueError("no")
            return x * 2

        try:
            r = inner(x)
        except ValueError:
            r = x - 1
        return r, torch.is_grad_enabled(), x + 1

    check(fn, torch.ones(3, requires_grad=True), False)
    check(fn, torch.ones(3, requires_grad=True), True)


# -- attributes builtin values cannot have, lengths of opaque builtin containers ----------------------
class _Annotated:
    foo: int = 1


def test_getattr_with_a_default_on_builtin_types_and_values():
    # getattr(type(0), "foo", 0) and hasattr(a_dict, "to") broke the graph ("reading attribute 'foo'
    # of builtin int"): an immutable builtin type, or an exact builtin value, has no such attribute
    def fn(x, m):
        if getattr(type(m), "foo", 0):
            x = x + _Annotated.foo
        return x + getattr(int, "bits", 2) + hasattr(m, "to") + hasattr(str, "upper")

    for m in (_Annotated(), 0, {"a": 1}, [1], (2,), "s", 1.5):
        check(fn, torch.zeros(()), m)
        assert symexec.explain(fn, torch.zeros(()), m).graph_break_count == 0


def test_hasattr_of_a_dict_input_picks_the_dict_branch():
    def fn(x):
        if hasattr(x, "to"):
            return x.to("cpu")
        if hasattr(x, "items"):
            return torch.cos(x["a"])
        return x

    for arg in ({"a": torch.randn(3)}, torch.randn(4)):
        check(fn, arg)
        assert symexec.explain(fn, arg).graph_break_count == 0


_TABLE_OF_OPS = {torch.ops.aten.add.Tensor: 1, torch.ops.aten.mul.Tensor: 2}  # (keys not modelled)


def test_len_of_a_dict_keyed_by_torch_operators():
    # len() of a builtin container held as an object broke ("dict has no Python __len__"): its
    # length, guarded (a key added between calls retraces)
    def fn(x):
        return x * len(_TABLE_OF_OPS)

    check(fn, torch.randn(3))
    assert symexec.explain(fn, torch.randn(3)).graph_break_count == 0
    compiled, x = symexec.compile(fn), torch.randn(3)
    assert torch.equal(compiled(x), x * 2)
    _TABLE_OF_OPS[torch.ops.aten.sub.Tensor] = 3
    try:
        assert torch.equal(compiled(x), x * 3)
    finally:
        del _TABLE_OF_OPS[torch.ops.aten.sub.Tensor]


def test_weak_reference_made_inside_to_an_argument():
    # (constructing weakref.ref broke the graph) a reference to an argument, called while the
    # argument is held: the argument itself; returned, it is the real reference to it
    import weakref

    def fn(x, y):
        x_weak = weakref.ref(x)
        return x_weak() * y, x_weak() is x

    check(fn, torch.randn(4), torch.randn(4))
    assert symexec.explain(fn, torch.randn(4), torch.randn(4)).graph_break_count == 0

    def escapes(x):
        ref = weakref.ref(x)
        return x + 1, ref

    compiled = symexec.compile(escapes, fullgraph=True)
    x = torch.randn(3)
    out, ref = compiled(x)
    assert ref is weakref.ref(x) and ref() is x
    torch.testing.assert_close(out, x + 1)

