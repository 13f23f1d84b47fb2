"""Loads and stores: locals, constants, globals, cells and free variables, attributes."""

import math

import torch
import torch.nn.functional as F

from helpers import check
from plain_asserts import bare_assert, positive_scale

W = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
SCALE = 3
NAME = "global-name"
G_OUT = None


def _t(*shape):
    return torch.randn(*shape)


class Box:
    """A plain user object, copied per run by the differential helper."""

    def __init__(self, value, n=1):
        self.value = value
        self.n = n


# --- LOAD_FAST / STORE_FAST / DELETE_FAST / LOAD_CONST ---------------------------------------


def test_return_argument():
    check(lambda x: x, _t(3), captured=False)


def test_store_and_reload_local():
    def fn(x):
        y = x + 1
        z = y * 2
        return z

    check(fn, _t(3))


def test_rebind_local_many_times():
    def fn(x):
        y = x
        y = y + 1
        y = y * y
        y = y - x
        return y

    check(fn, _t(2, 2))


def test_constants_of_every_kind():
    def fn(x):
        return x + 1, 2.5, "s", None, True, (1, "a"), b"b", -0.0, 3j

    check(fn, _t(2))


def test_swap_locals():
    def fn(a, b):
        a, b = b, a
        return a - b

    check(fn, _t(2), _t(2))


def test_rotate_three_locals():
    def fn(a, b, c):
        a, b, c = c, a, b
        return a * 100 + b * 10 + c

    check(fn, torch.tensor([1.0]), torch.tensor([2.0]), torch.tensor([3.0]))


def test_chained_assignment():
    def fn(x):
        a = b = x + 1
        return a * b

    check(fn, _t(3))


def test_delete_local():
    def fn(x):
        y = x + 1
        z = y * 2
        del y
        return z

    check(fn, _t(3))


def test_delete_then_rebind_local():
    def fn(x):
        y = x + 1
        del y
        y = x * 3
        return y

    check(fn, _t(3))


def test_unbound_local_raises():
    def fn(x, flag):
        if flag:
            y = x
        return y  # noqa: F821 - UnboundLocalError on purpose

    check(fn, _t(2), False, expect_traced=False)


def test_argument_rebound_before_use():
    def fn(x, n):
        n = n + 1
        x = x * n
        return x

    check(fn, _t(3), 2)


# --- LOAD_GLOBAL / STORE_GLOBAL ---------------------------------------------------------------


def test_load_global_tensor():
    def fn(x):
        return x @ W

    check(fn, _t(3, 2))


def test_load_global_int_and_str():
    def fn(x):
        return x * SCALE, NAME

    check(fn, _t(3))


def test_load_global_module_attribute():
    def fn(x):
        return x * math.pi + math.e

    check(fn, _t(3))


def test_load_global_function_module():
    def fn(x):
        return F.relu(x) + torch.sigmoid(x)

    check(fn, _t(4))


def test_load_builtin():
    def fn(x):
        return x * len([1, 2, 3]), abs(-2)

    check(fn, _t(3))


def test_store_global():
    def fn(x):
        global G_OUT
        G_OUT = x * 2
        return G_OUT + 1

    global G_OUT
    G_OUT = None
    check(fn, torch.ones(2), calls=1)
    assert torch.equal(G_OUT, torch.full((2,), 2.0))


def test_store_global_int_counter():
    def fn(x):
        global SCALE
        SCALE = 7
        return x * SCALE

    global SCALE
    try:
        check(fn, _t(3))
        assert SCALE == 7
    finally:
        SCALE = 3


# --- cells and free variables: MAKE_CELL, LOAD_CLOSURE, LOAD_DEREF, STORE_DEREF -------------------


def test_free_variable_of_compiled_function():
    k = 5
    bias = torch.tensor([1.0, 2.0])

    def fn(x):
        return x * k + bias

    check(fn, _t(2))


def test_cell_read_by_inner_lambda():
    def fn(x):
        y = x + 1
        g = lambda z: z * y  # noqa: E731
        return g(x)

    check(fn, _t(3))


def test_cell_written_after_inner_function_made():
    def fn(x):
        y = x + 1
        g = lambda: y * 2  # noqa: E731
        y = x - 1
        return g()

    check(fn, _t(3))


def test_nonlocal_write_in_inner_function():
    def fn(x):
        total = x

        def add(v):
            nonlocal total
            total = total + v

        add(1)
        add(x)
        return total

    check(fn, _t(3))


def test_nonlocal_counter_int():
    def fn(x):
        count = 0

        def bump():
            nonlocal count
            count += 1

        bump()
        bump()
        return x * count, count

    check(fn, _t(3))


def test_argument_captured_as_cell():
    def fn(x, n):
        def scale(t):
            return t * n

        return scale(x)

    check(fn, _t(3), 4)


def test_closure_over_outer_cell_updated_between_calls():
    state = {"k": 2}

    def fn(x):
        return x * state["k"]

    compiled = check(fn, _t(3))
    state["k"] = 5
    x = _t(3)
    assert torch.equal(compiled(x), x * 5)


# --- LOAD_ATTR / STORE_ATTR / DELETE_ATTR --------------------------------------------------------


def test_load_attr_of_user_object():
    def fn(box, x):
        return x * box.value + box.n

    check(fn, Box(2.0, 3), _t(3))


def test_load_attr_tensor_of_user_object():
    def fn(box):
        return box.value.sin() * box.n

    check(fn, Box(_t(3), 2))


def test_store_attr_on_input_object():
    def fn(box, x):
        box.value = x * 2
        box.n = box.n + 1
        return x + 1

    check(fn, Box(0.0, 1), _t(3))


def test_store_new_attr_on_input_object():
    def fn(box, x):
        box.extra = x.cos()
        return box.value

    check(fn, Box(1.5), _t(3))


def test_store_attr_then_read_back():
    def fn(box, x):
        box.value = x + 1
        return box.value * 2

    check(fn, Box(None), _t(3))


def test_delete_attr_on_input_object():
    def fn(box, x):
        del box.n
        return x * box.value

    check(fn, Box(2.0, 5), _t(3))


def test_attr_of_local_object_created_in_function():
    def fn(x):
        b = Box(x + 1, 2)
        b.n = b.n * 3
        return b.value * b.n

    check(fn, _t(3))


def test_missing_attribute_raises():
    def fn(box, x):
        return x + box.missing

    check(fn, Box(1.0), _t(2), expect_traced=False)


# --- LOAD_ASSERTION_ERROR ----------------------------------------------------------------------


def test_assert_that_passes():
    check(positive_scale, _t(3), 2)


def test_assert_that_fails():
    check(positive_scale, _t(3), -1, expect_traced=False)


def test_bare_assert_fails():
    check(bare_assert, _t(3), False, expect_traced=False)


# pytest rewrites the asserts of test modules into code with locals such as `@py_assert2`, which
# are not identifiers: the tracer must cope with such names too.


def test_pytest_rewritten_assert_that_passes():
    def fn(x, n):
        assert n > 0, "n must be positive"
        assert x.dim() == 1
        return x * n

    check(fn, _t(3), 2)


def test_pytest_rewritten_assert_that_fails():
    def fn(x, n):
        assert n > 0, "n must be positive"
        return x * n

    check(fn, _t(3), -1, expect_traced=False)
