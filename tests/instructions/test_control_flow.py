"""Jumps and loops: constant conditions of every kind, short circuits, while/for loops over every
iterable the tracer models, break/continue, comprehensions, lambdas, closures, nested functions."""

import pytest
import torch
import symexec

from helpers import check


def _t(*shape):
    return torch.randn(*shape)


# --- if/else on constant conditions ------------------------------------------------------------------


@pytest.mark.parametrize("n", [-2, 0, 2])
def test_if_on_int(n):
    def fn(x, n):
        if n >= 0:
            return (n + 1) * x
        return x - n

    check(fn, _t(3), n)


@pytest.mark.parametrize("flag", [True, False])
def test_if_on_bool(flag):
    def fn(x, flag):
        if flag:
            x = x + 1
        else:
            x = x - 1
        return x

    check(fn, _t(3), flag)


@pytest.mark.parametrize("value", [None, 3])
def test_if_is_none(value):
    def fn(x, value):
        if value is None:
            return x
        return x * value

    check(fn, _t(3), value, captured=value is not None)  # None: returns x, no op


@pytest.mark.parametrize("value", [None, _t(3)], ids=["none", "tensor"])
def test_if_is_not_none_optional_tensor(value):
    def fn(x, bias):
        if bias is not None:
            x = x + bias
        return x.relu()

    check(fn, _t(3), value)


@pytest.mark.parametrize("value", [0, 1.5, "", "s", [], [1], (), {}, {"a": 1}])
def test_if_on_truthiness(value):
    def fn(x, value):
        if value:
            return x + 1
        return x - 1

    check(fn, _t(2), value)


@pytest.mark.parametrize("mode", ["add", "mul", "other"])
def test_elif_chain_on_string(mode):
    def fn(x, mode):
        if mode == "add":
            return x + 1
        elif mode == "mul":
            return x * 2
        else:
            return x

    check(fn, _t(2), mode, captured=mode in ("add", "mul"))  # otherwise returns x, no op


def test_if_on_tensor_shape():
    def fn(x):
        if x.shape[0] > 2:
            return x.sum()
        return x.mean()

    check(fn, _t(3, 2))


def test_if_on_tensor_dtype_and_dim():
    def fn(x):
        if x.dtype == torch.float32 and x.dim() == 2:
            return x.t()
        return x

    check(fn, _t(2, 3))


def test_if_on_isinstance():
    def fn(x, y):
        if isinstance(y, torch.Tensor):
            return x + y
        if isinstance(y, (int, float)):
            return x * y
        return x

    check(fn, _t(2), 2.5)


def test_conditional_expression():
    def fn(x, n):
        return x * 2 if n > 1 else x / 2

    check(fn, _t(3), 3)


def test_if_on_requires_grad():
    def fn(x):
        if x.requires_grad:
            return x * 2
        return x * 3

    check(fn, _t(3))


# --- and / or / not (JUMP_IF_FALSE_OR_POP / JUMP_IF_TRUE_OR_POP / UNARY_NOT) -----------------------------


@pytest.mark.parametrize("a,b", [(0, 5), (3, 5), (3, 0), (None, "x"), ("", [])])
def test_and_or_values(a, b):
    def fn(a, b):
        c = a and b
        d = a or b
        e = a and b or 7
        return c, d, e

    check(fn, a, b, captured=False)


def test_or_default_for_optional_tensor():
    def fn(x, scale):
        s = scale or 1.0
        return x * s

    check(fn, _t(2), None)


def test_and_short_circuit_does_not_evaluate_rhs():
    def fn(x, items):
        ok = len(items) > 0 and items[0] > 1
        return x + ok

    check(fn, _t(2), [])


def test_or_short_circuit_does_not_evaluate_rhs():
    def fn(x, d):
        ok = "k" not in d or d["k"] > 0
        return x * ok

    check(fn, _t(2), {})


def test_and_or_in_if():
    def fn(x, a, b):
        if a > 0 and (b is None or b < 3):
            return x + 1
        return x - 1

    check(fn, _t(2), 1, 2)


@pytest.mark.parametrize("value", [0, 1, None, [], [0]])
def test_not(value):
    def fn(x, value):
        if not value:
            return x * 2
        return x

    check(fn, _t(2), value, captured=not value)  # a true value returns x, no op


def test_not_not():
    def fn(a):
        return not not a, not (a and not a)

    check(fn, 3, captured=False)


def test_tensor_logical_with_python_bool():
    def fn(x, flag):
        return (x > 0) & flag, (x < 0) | (not flag)

    check(fn, _t(4), True)


# --- while loops ----------------------------------------------------------------------------------


def test_while_with_int_counter():
    def fn(x):
        i = 0
        while i < 3:
            x = x * 2
            i += 1
        return x, i

    check(fn, _t(2))


def test_while_counting_down_argument():
    def fn(x, n):
        while n:
            x = x + n
            n -= 1
        return x

    check(fn, _t(2), 4)


def test_while_with_break():
    def fn(x):
        i = 0
        while True:
            i += 1
            x = x + 1
            if i == 4:
                break
        return x

    check(fn, _t(2))


def test_while_with_continue():
    def fn(x):
        i = 0
        while i < 6:
            i += 1
            if i % 2:
                continue
            x = x * i
        return x

    check(fn, _t(2))


def test_while_else():
    def fn(x, n):
        while n > 0:
            n -= 1
            if n == 10:
                break
        else:
            x = x + 100
        return x

    check(fn, _t(2), 3)


def test_while_popping_a_list():
    def fn(items):
        total = 0
        while items:
            total = total + items.pop()
        return total

    check(fn, [_t(2), _t(2), 3])


# --- for loops ------------------------------------------------------------------------------------


def test_for_range():
    def fn(x):
        for i in range(4):
            x = x + i
        return x

    check(fn, _t(2))


def test_for_range_start_stop_step():
    def fn(x, n):
        acc = []
        for i in range(n, 1, -2):
            acc.append(x * i)
        return acc

    check(fn, _t(2), 7)


def test_for_list_of_tensors():
    def fn(items):
        total = torch.zeros(2)
        for t in items:
            total = total + t
        return total

    check(fn, [_t(2), _t(2), _t(2)])


def test_for_tuple_mixed():
    def fn(x, t):
        for v in t:
            x = x * v
        return x

    check(fn, _t(2), (2, 0.5, True))


def test_for_dict_keys_values_items():
    def fn(d):
        keys = [k for k in d]
        vals = [v * 2 for v in d.values()]
        pairs = [(k, v + 1) for k, v in d.items()]
        return keys, vals, pairs

    check(fn, {"a": _t(2), "b": _t(2)})


def test_for_enumerate():
    def fn(items):
        out = 0
        for i, t in enumerate(items):
            out = out + i * t
        return out

    check(fn, [_t(2), _t(2), _t(2)])


def test_for_enumerate_start():
    def fn(items):
        return [(i, v) for i, v in enumerate(items, start=10)]

    check(fn, ["a", "b"], captured=False)


def test_for_zip():
    def fn(xs, ys):
        return [x * y for x, y in zip(xs, ys)]

    check(fn, [_t(2), _t(2)], [1, 2, 3])


def test_for_over_tensor_rows():
    def fn(x):
        acc = 0
        for row in x:
            acc = acc + row.sum()
        return acc

    check(fn, _t(3, 2))


def test_for_over_string():
    def fn(s):
        out = []
        for ch in s:
            out.append(ch.upper())
        return "".join(out)

    check(fn, "abc", captured=False)


def test_for_reversed_and_sorted():
    def fn(items):
        return [v for v in reversed(items)], sorted(items)

    check(fn, [3, 1, 2], captured=False)


def test_nested_loops():
    def fn(x):
        for i in range(2):
            for j in range(3):
                x = x + i * j
        return x

    check(fn, _t(2))


def test_for_break_and_continue():
    def fn(x):
        for i in range(10):
            if i == 1:
                continue
            if i == 4:
                break
            x = x * 2 + i
        return x

    check(fn, _t(2))


def test_for_else():
    def fn(x, items):
        for v in items:
            if v < 0:
                break
        else:
            x = x + 1
        return x

    check(fn, _t(2), [1, 2])


def test_break_out_of_inner_loop_only():
    def fn(x):
        hits = []
        for i in range(3):
            for j in range(3):
                if j > i:
                    break
                hits.append((i, j))
        return x * len(hits), hits

    check(fn, _t(2))


def test_loop_variable_survives_loop():
    def fn(x):
        for i in range(3):
            pass
        return x * i  # noqa: B007

    check(fn, _t(2))


def test_empty_loop_body_never_runs():
    def fn(x, items):
        for v in items:
            x = x * v
        return x

    check(fn, _t(2), [], captured=False)


def test_return_inside_loop():
    def fn(x):
        for i in range(5):
            if i == 2:
                return x + i
        return x

    check(fn, _t(2))


def test_module_list_like_loop_over_weights():
    def fn(x, weights):
        for w in weights:
            x = torch.tanh(x @ w)
        return x

    check(fn, _t(1, 3), [_t(3, 3), _t(3, 3)])


# --- comprehensions and lambdas --------------------------------------------------------------------


def test_list_comprehension_with_condition():
    def fn(x):
        return [x * i for i in range(6) if i % 2 == 0]

    check(fn, _t(2))


def test_nested_comprehension():
    def fn(x):
        return [[x * i + j for j in range(2)] for i in range(2)]

    check(fn, _t(2))


def test_dict_comprehension():
    def fn(x, names):
        return {n: x * len(n) for n in names}

    check(fn, _t(2), ["a", "bb"])


def test_set_comprehension():
    def fn(x):
        return {i * i for i in range(-2, 3)}, x

    check(fn, _t(1), captured=False)


def test_comprehension_captures_local():
    def fn(x, k):
        scale = k * 2
        return [x * scale + i for i in range(2)]

    check(fn, _t(2), 3)


def test_generator_expression_in_sum():
    def fn(x):
        return sum(x * i for i in range(4))

    check(fn, _t(2))


def test_lambda_called_immediately():
    def fn(x):
        return (lambda a, b=2: a * b)(x)

    check(fn, _t(2), captured=False)


def test_lambda_stored_and_called():
    def fn(x):
        sq = lambda t: t * t  # noqa: E731
        return sq(x) + sq(x + 1)

    check(fn, _t(2))


def test_lambda_as_sort_key():
    def fn(x, items):
        items = sorted(items, key=lambda p: p[1])
        return [x * p[0] for p in items]

    check(fn, _t(2), [(1, "c"), (2, "a"), (3, "b")])


def test_map_and_filter_with_lambda():
    def fn(x):
        evens = list(filter(lambda i: i % 2 == 0, range(5)))
        return list(map(lambda i: x * i, evens))

    check(fn, _t(2))


# --- closures and inner functions ----------------------------------------------------------------------


def test_inner_function_defined_and_called():
    def fn(x):
        def helper(t, k=3):
            return t * k

        return helper(x) + helper(x, k=1)

    check(fn, _t(2))


def test_inner_function_reads_enclosing_local():
    def fn(x, bias):
        def helper(t):
            return t + bias

        return helper(x)

    check(fn, _t(2), 1.5)


def test_inner_function_reads_enclosing_tensor():
    def fn(x):
        y = x.cos()

        def helper(t):
            return t * y

        return helper(x)

    check(fn, _t(2))


def test_inner_function_nested_two_levels():
    def fn(x):
        a = 2

        def outer(t):
            b = 3

            def inner(u):
                return u * a + b

            return inner(t) + a

        return outer(x)

    check(fn, _t(2))


def test_nonlocal_read_after_reassignment_in_loop():
    def fn(x):
        k = 0
        get = lambda: k  # noqa: E731
        out = []
        for i in range(3):
            k = i
            out.append(x * get())
        return out

    check(fn, _t(2))


def test_returned_closure_works():
    def fn(x):
        def make(k):
            return lambda t: t * k

        times3 = make(3)
        return times3(x), times3(1)

    check(fn, _t(2))


def test_recursive_inner_function():
    def fn(x):
        def fact(n):
            return 1 if n <= 1 else n * fact(n - 1)

        return x * fact(4)

    check(fn, _t(2))


def test_decorator_defined_inside():
    def fn(x):
        def twice(f):
            def wrapper(t):
                return f(f(t))

            return wrapper

        @twice
        def inc(t):
            return t + 1

        return inc(x)

    check(fn, _t(2))


# --- data-dependent control flow (a graph break in Dynamo; the answer must still be right) ------------


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_if_on_tensor_value(sign):
    def fn(x):
        y = x * 2
        if y.sum() > 0:
            return y + 1
        return y - 1

    check(fn, torch.ones(3) * sign)


def test_while_on_tensor_value():
    def fn(x):
        n = 0
        while x.sum() < 10:
            x = x * 2
            n += 1
        return x, n

    # Dynamo skips a frame whose loop holds a graph break: running it eagerly is fine too.
    check(fn, torch.ones(2), expect_traced=False)


def test_item_in_python_arithmetic():
    def fn(x):
        v = x.sum().item()
        return x * 2, v + 1

    check(fn, torch.ones(2))


# -- assert on a tensor's value: a check in the graph -------------------------------------------
_POSITIVE, _NEGATIVE = torch.tensor([3.0, 4.0, 5.0]), torch.tensor([-2.0, 4.0, 5.0])


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("name, one_graph", [
    ("tensor_assert", True), ("tensor_assert_bare", True), ("tensor_assert_other_message", True),
    ("tensor_assert_in_callee", True),
    # what eager would do besides raising: the graph breaks at the assert, CPython takes it
    ("tensor_assert_after_in_place", False), ("tensor_assert_caught", False),
    ("tensor_assert_in_callee_caught_by_caller", False), ("tensor_assert_many_values", None),
    ("tensor_assert_formatted_message", False),
])
def test_an_assert_on_a_tensor_is_checked_in_the_graph(name, one_graph, backend):
    # `assert x[0] == 3, "msg"` broke the graph; as under torch.compile (PyTorch's
    # test_rewrite_assert_with_msg) it is one graph, where failing raises eager's AssertionError
    # with its message before anything after it runs.
    import plain_asserts

    fn = getattr(plain_asserts, name)
    for x in (_POSITIVE, _NEGATIVE, torch.tensor([3.0, float("nan")]), torch.tensor([0.0, 1.0])):
        check(fn, x.clone(), backend=backend)
    if one_graph is not None:  # (None: eager raises RuntimeError for every value)
        assert (symexec.explain(fn, _POSITIVE.clone()).graph_break_count == 0) is one_graph


def test_an_assert_after_a_pending_side_effect_breaks_the_graph():
    import plain_asserts

    check(plain_asserts.tensor_assert_after_list_append, _NEGATIVE.clone(), [])
    check(plain_asserts.tensor_assert_after_list_append, _POSITIVE.clone(), [])
    assert symexec.explain(plain_asserts.tensor_assert_after_list_append, _POSITIVE.clone(), []).graph_break_count == 1
