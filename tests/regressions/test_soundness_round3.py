"""Issue 20 (soundness round 3): facts the trace reads from real objects answered as CPython
answers them, and guarded. Each test compares with eager, over call sequences where the world
changes between calls."""

import torch

from helpers import check, check_sequence


class _Plain:
    pass


class _WithCall:
    def __call__(self):
        return 1


def _callables(a, b, x):
    return x + callable(a), callable(b), callable(_Plain), callable(len)


def test_callable_of_a_user_object_asks_its_class():
    # (callable() was True for any user object: its tracker can be called)
    check(_callables, _Plain(), _WithCall(), torch.ones(2))


def test_callable_ignores_an_instance_call_attribute():
    def f(a, x):
        return x + callable(a)
    a = _Plain()
    a.__call__ = lambda: 1  # (CPython asks the type, not the instance)
    check(f, a, torch.ones(2))


def test_callable_retraces_when_the_class_gains_a_call():
    class Local:
        pass

    def f(a, x):
        return x + callable(a)

    check_sequence(f, [Local(), torch.ones(2)], lambda: setattr(Local, "__call__", lambda self: 0),
                   [Local(), torch.ones(2)])


# -- 6. crash: a graph break inside an exception handler ---------------------------------------
# (the code written for a break ran the handler's instructions with no exception being handled:
# WITH_EXCEPT_START of a @contextmanager that caught its body's exception read a NULL, SIGSEGV)

import contextlib  # noqa: E402
import functools  # noqa: E402
import types  # noqa: E402
import typing  # noqa: E402

import symexec  # noqa: E402


@contextlib.contextmanager
def _swallow(kind):
    try:
        yield
    except kind:
        pass


def _swallowed(x):
    with _swallow(ValueError):
        x = x + 1
        raise ValueError("boom")
    return x * 2


def _not_swallowed(x):
    with _swallow(KeyError):
        x = x + 1
        raise ValueError("boom")
    return x * 2


def test_a_contextmanager_that_catches_its_body_exception():
    check(_swallowed, torch.ones(2), expect_traced=False)
    check(_not_swallowed, torch.ones(2), expect_traced=False)


class _Exits:
    def __init__(self, suppress):
        self.suppress = suppress

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        symexec.graph_break()
        return self.suppress


def _with_exit_that_breaks(x, manager):
    with manager:
        x = x.sin()
        raise KeyError("k")
    return x.cos()


def test_a_graph_break_in_exit_while_an_exception_unwinds():
    check(_with_exit_that_breaks, torch.ones(2), _Exits(True), expect_traced=False)
    check(_with_exit_that_breaks, torch.ones(2), _Exits(False), expect_traced=False)


def _break_in_except(x):
    try:
        x = x + 1
        raise ValueError("v")
    except ValueError as e:
        symexec.graph_break()
        x = x * len(str(e))
        try:
            raise
        except ValueError:
            x = x - 1
    finally:
        x = x + 10
    return x


def _break_in_finally_while_raising(x):
    try:
        x = x + 1
        raise ValueError("v")
    finally:
        symexec.graph_break()
        print("finally", x)


def test_a_graph_break_in_except_and_finally_blocks():
    check(_break_in_except, torch.ones(2), expect_traced=False)
    check(_break_in_finally_while_raising, torch.ones(2), expect_traced=False)


# -- 1. value guards as exact as the facts the trace used -----------------------------------
# (a guard `x == v` let through values equal to v that behave otherwise: True for 1 and 1.0,
# -0.0 for 0.0, a nan of the other sign, ranges and slices equal with other fields, an int or
# str subclass's own __eq__; `a is b` was folded from the traced call)

import collections  # noqa: E402
import enum  # noqa: E402
import math  # noqa: E402

import pytest  # noqa: E402


def _key_dict(k, x):
    return {k: 1}, str(k), x + 1


def _signs(k, x):
    return x * k, str(k), math.copysign(1.0, k) if isinstance(k, float) else k


def _keys_of(d, x):
    return list(d), str(d), x + 1


def _set_text(s, x):
    return str(s), sorted(map(repr, s)), x + len(s)


def _range_fields(r, x):
    return r.start, r.stop, r.step, str(r), x + len(r)


def _slice_fields(s, x):
    return str(s), x[s]


@pytest.mark.parametrize("fn, values", [
    (_key_dict, [True, 1, 1.0, 1 + 0j]),
    (_signs, [0.0, -0.0, float("nan"), -float("nan"), float("inf"), -float("inf")]),
    (_signs, [complex(1, 0.0), complex(1, -0.0), complex(-0.0, 0.0), complex(0.0, -0.0)]),
    (_keys_of, [{True: 1}, {1: 1}, {1.0: 1}, {0.0: 1}, {-0.0: 1}, {(1, 0.0): 1}, {(True, -0.0): 1}]),
    (_set_text, [{True}, {1}, {1.0}, {0.0}, {-0.0}, frozenset({0.0}), {(1, 2)}, {(True, 2)}]),
    (_range_fields, [range(0), range(5, 5), range(0, 6, 2), range(0, 5, 2), range(0, 3, 1)]),
    (_slice_fields, [slice(1), slice(True), slice(0, None), slice(0, 2), slice(None, 1, None)]),
], ids=["dict-keys", "float-signs", "complex-parts", "dict-arg-keys", "set-elements", "ranges", "slices"])
def test_constants_are_guarded_by_type_value_and_sign(fn, values):
    x = torch.ones(4)
    check_sequence(fn, *[[v, x] for v in values])


class _EqAll(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


class _EqNone(int):
    def __eq__(self, other):
        return False

    __hash__ = int.__hash__


def test_a_subclass_constant_is_compared_by_its_builtin_value():
    # (its own __eq__ let "a" through for "bb", and made 1 never equal to 1: a retrace per call)
    check_sequence(lambda k, x: (k.upper(), x * len(k)), ["a", torch.ones(1)], [_EqAll("bb"), torch.ones(1)],
                   [_EqAll("a"), torch.ones(1)])
    compiled = check_sequence(lambda k, x: x * k, [1, torch.ones(1)], [_EqNone(1), torch.ones(1)],
                              [_EqNone(1), torch.ones(1)], [_EqNone(2), torch.ones(1)])
    assert len(symexec.cache_entries(compiled)) == 3


def _is(a, b, x):
    return a is b, x + 1


def test_identity_of_two_immutable_arguments_is_guarded():
    t = (1, 2)
    check_sequence(_is, [1000, 1000, torch.ones(1)], [10 ** 3, int("1000"), torch.ones(1)])
    check_sequence(_is, ["ab", "ab", torch.ones(1)], ["ab", "".join(["a", "b"]), torch.ones(1)])
    check_sequence(_is, [t, t, torch.ones(1)], [(1, 2), (1, 2), torch.ones(1)], [t, t, torch.ones(1)])


def test_identity_of_an_argument_and_a_constant_is_guarded():
    big = 10 ** 20

    def f(a, x):
        return a is big, x + 1

    check_sequence(f, [big, torch.ones(1)], [int("1" + "0" * 20), torch.ones(1)], [big, torch.ones(1)])


class _Scaled(int):
    pass


class _Doubling(float):
    factor = 2.0

    @property
    def doubled(self):
        return float(self) * type(self).factor


class _Color(enum.Enum):
    RED = 1
    BLUE = 2


class _Tagged(str):
    tag = "t"


def test_attributes_of_builtin_subclass_instances_and_enum_members_are_read_through_sources():
    scaled = _Scaled(3)
    scaled.scale = 2
    check_sequence(lambda k, x: x * k.scale, [scaled, torch.ones(1)], lambda: setattr(scaled, "scale", 5),
                   [scaled, torch.ones(1)])
    value = _Doubling(1.5)
    check_sequence(lambda k, x: x * k.doubled, [value, torch.ones(1)], lambda: setattr(_Doubling, "factor", 3.0),
                   [value, torch.ones(1)])
    _Color.RED.weight = 1.0
    check_sequence(lambda c, x: (x * c.weight, c.value, c.name), [_Color.RED, torch.ones(1)],
                   lambda: setattr(_Color.RED, "weight", 4.0), [_Color.RED, torch.ones(1)])
    check_sequence(lambda x: x * _Color.RED.weight, [torch.ones(1)], lambda: setattr(_Color.RED, "weight", 7.0),
                   [torch.ones(1)])
    check_sequence(lambda s, x: (s.tag, x + 1), [_Tagged("a"), torch.ones(1)], lambda: setattr(_Tagged, "tag", "u"),
                   [_Tagged("a"), torch.ones(1)])


# -- 2. laziness: iterators run as CPython runs them --------------------------------------------
# (a generator ran to its end when it was called; zip pulled every item of a map; any/all did
# not stop; list.extend(map(...)) computed every item before appending)

_LOG = []


def _logged(v):
    _LOG.append(v)
    return v


def _with_log(body):
    def f(x):
        del _LOG[:]
        result = body(x)
        return result, list(_LOG)
    return f


def _chatty():
    _LOG.append("start")
    yield 1
    _LOG.append("mid")
    yield 2
    _LOG.append("end")


def _extend_watched(x):
    out = []

    def item(v):
        _LOG.append(len(out))
        return v

    out.extend(map(item, range(3)))
    return x + len(out)


def _first_of_genexpr(x):
    g = (_logged(i) for i in range(5))
    return x + next(g)


def _loop_break(x):
    for v in (_logged(i) for i in range(5)):
        if v == 2:
            break
    return x + v


def _zip_then_rest(x):
    g = map(_logged, range(4))
    pairs = dict(zip("ab", g))
    return x + len(pairs), list(g)


@pytest.mark.parametrize("body", [
    _first_of_genexpr,
    lambda x: x + any(_logged(i) > 1 for i in range(5)),
    lambda x: x + all(_logged(i) < 1 for i in range(5)),
    lambda x: x + (2 in (_logged(i) for i in range(5))),
    lambda x: x + len(list(zip([1, 2], map(_logged, range(5))))),
    lambda x: x + len(list(zip(map(_logged, range(5)), [1, 2]))),
    lambda x: x + len(list(zip(range(1), _chatty()))),
    lambda x: x + next(_chatty()),
    lambda x: x + [i for i, _ in zip(range(2), enumerate(map(_logged, range(5))))][-1],
    _loop_break,
    _zip_then_rest,
    _extend_watched,
], ids=["genexpr-next", "any", "all", "in", "zip-map-second", "zip-map-first", "zip-generator", "generator-next",
        "enumerate-map", "loop-break", "zip-then-rest", "extend-map"])
def test_iterators_give_items_only_when_asked(body):
    check(_with_log(body), torch.ones(2))


def _infinite():
    i = 0
    while True:
        yield i
        i += 1


def test_zip_with_an_infinite_generator_returns():
    check(lambda x: x + len(list(zip(range(3), _infinite()))), torch.ones(2))
    check(lambda x: x + len(list(zip(_infinite(), range(3)))), torch.ones(2))


def _raises_stop():
    yield 1
    raise StopIteration


def test_stop_iteration_in_a_generator_is_a_runtime_error():  # PEP 479
    def f(x):
        try:
            return list(_raises_stop())
        except RuntimeError as e:
            return str(e), x + 1
    check(f, torch.ones(2))


def _closes_with_cleanup():
    try:
        yield 1
        yield 2
    finally:
        _LOG.append("cleanup")


def test_a_generator_left_suspended_in_a_try_block_is_not_folded():
    # CPython runs its finally when the generator is collected, which the trace cannot place
    check(_with_log(lambda x: x + next(_closes_with_cleanup())), torch.ones(2), expect_traced=False)


# -- 3. protocol queries answered from the object's type, traced ----------------------------------

class _TimesTen(functools.partial):
    def __call__(self, *args, **kwargs):
        return super().__call__(*args, **kwargs) * 10


def _add(a, b):
    return a + b


def test_a_partial_subclass_runs_its_own_call():
    check(lambda p, x: p(x), _TimesTen(_add, 1), torch.ones(2), expect_traced=False)
    check(lambda x: _TimesTen(_add, 2)(x), torch.ones(2), expect_traced=False)


class _Counting:
    def __init__(self):
        self.reads = 0

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        self.__dict__["reads"] = self.__dict__["reads"] + 1
        return name * 2


def test_a_python_getattr_runs_once_per_read():
    check(lambda o, x: (o.ab, o.cd, getattr(o, "ef", None), x + 1), _Counting(), torch.ones(2))


def test_a_module_getattr_runs_once_per_read():
    module = types.ModuleType("lazy_module")
    calls = []

    def module_getattr(name):
        if name.startswith("__"):
            raise AttributeError(name)
        calls.append(name)
        return len(name)

    module.__getattr__ = module_getattr

    def f(x):
        return x + module.abc, module.defg, hasattr(module, "__nothing__")

    eager = f(torch.ones(2))
    eager_calls, calls[:] = list(calls), []
    compiled = symexec.compile(f)
    for _ in range(3):
        result = compiled(torch.ones(2))
        assert torch.equal(result[0], eager[0]) and result[1:] == eager[1:]
        assert calls == eager_calls, calls
        calls[:] = []


class _Switch(type):
    on = True

    def __instancecheck__(cls, obj):
        return _Switch.on


class _Checked(metaclass=_Switch):
    pass


def test_a_metaclass_instancecheck_is_traced():
    check_sequence(lambda o, x: x + isinstance(o, _Checked), [1, torch.ones(1)],
                   lambda: setattr(_Switch, "on", False), [1, torch.ones(1)])


def test_ordered_dict_order_after_move_to_end():
    def f(d, x):
        d.move_to_end("a")
        d.move_to_end("c", last=False)
        first = d.popitem(last=False)
        return list(d), first, d.popitem(), x + 1
    check(f, collections.OrderedDict(a=1, b=2, c=3, d=4), torch.ones(1))
    od = collections.OrderedDict(a=1, b=2)
    check_sequence(lambda d, x: (list(d), x + 1), [od, torch.ones(1)], lambda: od.move_to_end("a"), [od, torch.ones(1)])


class _Seqish:
    def __len__(self):
        return 2

    def __getitem__(self, i):
        if i >= 2:
            raise IndexError(i)
        return i


def test_match_reads_the_sequence_flag_an_abc_registration_sets():
    import collections.abc as abc_collections

    class Local(_Seqish):
        pass

    def f(o, x):
        match o:
            case [a, b]:
                return x + a + b
            case _:
                return x
    check_sequence(f, [Local(), torch.ones(1)], lambda: abc_collections.Sequence.register(Local),
                   [Local(), torch.ones(1)])


class _LongerThanItsLen(_Seqish):
    def __len__(self):
        return 1


def test_iterating_an_object_uses_getitem_until_index_error():
    check(lambda o, x: (list(o), x + 1), _LongerThanItsLen(), torch.ones(1))


# -- 4. a value returned from a source --------------------------------------------------------

class _Holder:
    pass


def test_getattr_default_returned_after_the_attribute_is_deleted():
    holder = _Holder()
    holder.k = 3
    check_sequence(lambda o, x: (getattr(o, "k", 7), x + 1), [holder, torch.ones(1)], lambda: delattr(holder, "k"),
                   [holder, torch.ones(1)])


# -- 5. objects built inside the function --------------------------------------------------------

class _MySequential(torch.nn.Sequential):
    pass


def test_a_sequential_subclass_built_inside_has_its_layers():
    check(lambda x: (_MySequential(torch.nn.ReLU(), torch.nn.Tanh())(x), len(_MySequential(torch.nn.ReLU()))),
          torch.randn(2, 4))


@pytest.mark.parametrize("cls", [torch.nn.Sequential, _MySequential])
def test_a_slice_of_a_sequential_is_a_sequential(cls):
    def f(x):
        s = cls(torch.nn.ReLU(), torch.nn.Tanh(), torch.nn.Sigmoid())
        t = s[1:]
        return type(t).__name__, t(x), len(t), type(t[1:]).__name__

    check(f, torch.randn(2, 4))
    model = cls(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    check(lambda m, x: (m[1:](x), type(m[:2]).__name__, len(m[::2])), model, torch.randn(2, 4))


class _Pair(typing.NamedTuple):
    a: int
    b: int


class _PairWithDict(_Pair):
    pass


def test_an_attribute_set_on_a_named_tuple_subclass_instance():
    def f(x):
        n = _PairWithDict(1, 2)
        n.extra = 5
        return x + n.extra + n.a
    check(f, torch.ones(2), expect_traced=False)


def test_set_then_delete_an_attribute_of_an_argument():
    def f(o, x):
        o.tmp = 3
        y = x + o.tmp
        del o.tmp
        return y, hasattr(o, "tmp")
    check(f, _Holder(), torch.ones(2))


def test_tensor_new_with_a_size():
    check(lambda x: (x.new(torch.Size([5, 8])).shape, x.new((3, 4)), x.new(3, 4).shape, x.new().shape),
          torch.ones(2, 8))


def test_vmap_of_an_in_place_method_returns_its_input():
    check(lambda x: torch.vmap(torch.Tensor.sin_)(x) is x, torch.ones(3))
    check(lambda x: torch.vmap(lambda t: t)(x) is x, torch.ones(3))


# -- found by the second fuzzer (tests/datamodel_fuzz.py) ---------------------------------------

_ORDER = collections.OrderedDict(a=1, b=2, c=3)


def test_ordered_dict_order_changed_before_the_call_through_a_global():
    check_sequence(lambda x: (list(_ORDER), next(iter(_ORDER.values())), x + 1), [torch.ones(1)],
                   lambda: _ORDER.move_to_end("c", last=False), [torch.ones(1)],
                   lambda: _ORDER.move_to_end("c"), [torch.ones(1)])


def _identity_after_a_break(a, b, x):
    y = x + 1
    symexec.graph_break()
    return a is b, a == b, y


def test_identity_of_two_arguments_survives_a_graph_break():
    check_sequence(_identity_after_a_break, ["ab", "ab", torch.ones(1)], ["ab", "".join(["a", "b"]), torch.ones(1)])
    check_sequence(_identity_after_a_break, [1000, 1000, torch.ones(1)], [1000, int("1000"), torch.ones(1)])
    t = (1, "x")
    check_sequence(_identity_after_a_break, [t, t, torch.ones(1)], [t, (1, "x"), torch.ones(1)])


def test_one_set_passed_twice_is_one_object():
    def f(a, b, x):
        a.add(3)
        return len(b), a is b, sorted(b), x + 1
    s = {1, 2}
    check(f, s, s, torch.ones(1))
    check(f, s, set(s), torch.ones(1))


@pytest.mark.parametrize("dynamic", [None, True])
def test_an_int_beside_a_symbolic_int_keeps_its_type(dynamic):
    # (an int subclass's own __eq__, complex, bool and big ints next to an int the trace made symbolic)
    check_sequence(lambda n, x: (n == _EqNone(1), _EqNone(1) == n, x + n), [1, torch.ones(1)], [2, torch.ones(1)],
                   [1, torch.ones(1)], dynamic=dynamic)
    check_sequence(lambda n, x: (n == 0j, n + 1j, x + n), [0, torch.ones(1)], [2, torch.ones(1)],
                   [3, torch.ones(1)], dynamic=dynamic)
    check_sequence(lambda n, x: (n == True, [n, 2] == [True, 2], x + n),  # noqa: E712
                   [1, torch.ones(1)], [2, torch.ones(1)], [1, torch.ones(1)], dynamic=dynamic)
    check_sequence(lambda n, x: (n * 2, n // 3, x + 1), [2, torch.ones(1)], [3, torch.ones(1)],
                   [10 ** 20, torch.ones(1)], [2 ** 63, torch.ones(1)], [-2 ** 63 - 1, torch.ones(1)],
                   [-2 ** 63, torch.ones(1)], dynamic=dynamic)


def test_a_list_of_ints_compared_with_bools_under_dynamic_shapes():
    check_sequence(lambda a, x: (a == [1, True], a[1] == True, x + a[0]),  # noqa: E712
                   [[1, 2], torch.ones(1)], [[1, 1], torch.ones(1)], [[2, 1], torch.ones(1)], dynamic=True)


def test_a_range_compared_with_a_tensor():
    check(lambda x: (range(3) == x, x == range(3), range(3) != x), torch.arange(3), captured=False)


def test_subscripting_what_has_no_such_item_raises_as_in_eager():
    def f(a, x):
        try:
            return a[5]
        except (TypeError, IndexError, KeyError) as e:
            return type(e).__name__, str(e), x + 1
    for a in (torch.nn.Linear(1, 1), torch.nn.Sequential(torch.nn.ReLU()), torch.nn.ModuleList(),
              torch.nn.ModuleDict({"a": torch.nn.ReLU()}), range(0), range(2)):
        check(f, a, torch.ones(1))


class _Indexed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(2, 2)

    def __getitem__(self, i):
        _LOG.append(i)
        return self.inner


def test_a_modules_own_getitem_runs_once_per_subscript():
    def f(m, x):
        del _LOG[:]
        return m[0](x) + m[1](x), list(_LOG)
    check(f, _Indexed(), torch.ones(2))


def test_a_function_argument_is_not_kept_alive_by_the_cache():
    import gc
    import weakref

    def live_after_call(compiler, graph_break, breaks):
        compiled = compiler(lambda fn, x: fn(x))
        # (inlined into the caller's graph, or, where it breaks, compiled as a callee of its own)
        fn = (lambda t: (graph_break(), t + 1)[1]) if breaks else (lambda t: t + 1)
        ref = weakref.ref(fn)
        compiled(fn, torch.ones(1))
        del fn
        gc.collect()
        again = lambda t: t * 5  # noqa: E731 (may well get the dead one's id)
        assert torch.equal(compiled(again, torch.ones(1)), torch.full((1,), 5.0))
        return ref() is not None

    for breaks in (False, True):
        assert live_after_call(lambda f: symexec.compile(f, backend="eager"), symexec.graph_break, breaks) is False
        assert live_after_call(lambda f: torch.compile(f, backend="eager"), torch._dynamo.graph_break,
                               breaks) is False  # as torch.compile


def test_a_user_object_argument_is_not_kept_alive_by_the_cache():
    import gc
    import weakref
    compiled = symexec.compile(lambda o, x: x + o.v, backend="eager")
    box = _Holder()
    box.v = 2
    ref = weakref.ref(box)
    compiled(box, torch.ones(1))
    del box
    gc.collect()
    assert ref() is None


class _Tup(tuple):
    pass


class _Lst(list):
    pass


class _Dct(dict):
    pass


def test_a_builtin_and_its_subclass_compare_by_value():
    def f(a, b, x):
        return a == b, a != b, b == a, x + 1
    for a, b in [((1, 2), _Tup((1, 2))), ((1, 2), _Tup((1, 3))), ([1], _Lst([1])), ({1: 2}, _Dct({1: 2})),
                 ({1: 2}, _Dct({1: 3})), ({1: 2}, collections.OrderedDict({1: 2})), (1, _Tup((1,)))]:
        check(f, a, b, torch.ones(1), expect_traced=False)  # (it may break where the base's == runs)


def test_the_fields_of_a_range_argument():
    check_sequence(lambda r, x: (r.start, r.stop, r.step, x + r.step), [range(0, 5, 2), torch.ones(1)],
                   [range(0, 5, 3), torch.ones(1)], [range(1, 5, 2), torch.ones(1)], [range(0, 6, 2), torch.ones(1)])
    check(lambda x: (range(3).step, x + 1), torch.ones(1))


# -- 7. global state and hooks under call sequences ---------------------------------------------

def _autocast_matmul(x, w):
    return (x @ w).dtype, x @ w


def test_autocast_entered_outside_with_different_dtypes_in_sequence():
    w = torch.ones(3, 3)
    compiled = symexec.compile(_autocast_matmul, backend="eager")
    for dtype in (torch.bfloat16, torch.float16, None, torch.bfloat16, torch.float16):
        x = torch.ones(2, 3)
        if dtype is None:
            expected, actual = _autocast_matmul(x, w), compiled(x, w)
        else:
            with torch.autocast("cpu", dtype=dtype):
                expected = _autocast_matmul(x, w)
            with torch.autocast("cpu", dtype=dtype):
                actual = compiled(x, w)
        assert expected[0] == actual[0] and torch.equal(expected[1], actual[1]), dtype


def test_a_global_module_forward_hook_registered_and_removed_between_calls():
    lin = torch.nn.Linear(2, 2)
    handles = []
    check_sequence(lambda x: lin(x), [torch.ones(2)],
                   lambda: handles.append(torch.nn.modules.module.register_module_forward_hook(
                       lambda m, i, o: o * 10)),
                   [torch.ones(2)], lambda: handles.pop().remove(), [torch.ones(2)])


class _Plainish:
    def __init__(self):
        self.a = 1


def test_attributes_added_and_deleted_between_calls():
    o, m = _Plainish(), torch.nn.Linear(2, 2)
    f = lambda o, m, x: (getattr(o, "b", 0), hasattr(m, "extra"), m(x) * getattr(m, "extra", 1))  # noqa: E731
    check_sequence(f, [o, m, torch.ones(2)], lambda: setattr(o, "b", 2), [o, m, torch.ones(2)],
                   lambda: setattr(m, "extra", 3.0), [o, m, torch.ones(2)], lambda: delattr(o, "b"),
                   [o, m, torch.ones(2)], lambda: delattr(m, "extra"), [o, m, torch.ones(2)])


def test_a_parameter_dict_key_added_after_a_missing_subscript_retraces():
    # (the KeyError's entry is guarded on the dict's _parameters keys, where it keeps them)
    pd = torch.nn.ParameterDict({"a": torch.nn.Parameter(torch.ones(1))})

    def f(d, x):
        try:
            return x * d["b"]
        except (KeyError, AttributeError) as e:  # (torch's ParameterDict raises the second)
            return str(e), x + 1
    check_sequence(f, [pd, torch.ones(1)], lambda: pd.__setitem__("b", torch.nn.Parameter(torch.full((1,), 3.0))),
                   [pd, torch.ones(1)])
