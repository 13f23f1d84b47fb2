"""Arithmetic and comparison: every BINARY_OP operator (plain and in-place) on tensors, ints and
floats, COMPARE_OP, IS_OP, CONTAINS_OP and the unary operators."""

import pytest
import torch

from helpers import check


# One function per operator, so that each compiles to its own BINARY_OP oparg.
def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def mul(a, b):
    return a * b


def truediv(a, b):
    return a / b


def floordiv(a, b):
    return a // b


def mod(a, b):
    return a % b


def pow_(a, b):
    return a**b


def matmul(a, b):
    return a @ b


def lshift(a, b):
    return a << b


def rshift(a, b):
    return a >> b


def and_(a, b):
    return a & b


def or_(a, b):
    return a | b


def xor(a, b):
    return a ^ b


def iadd(a, b):
    a += b
    return a


def isub(a, b):
    a -= b
    return a


def imul(a, b):
    a *= b
    return a


def itruediv(a, b):
    a /= b
    return a


def ifloordiv(a, b):
    a //= b
    return a


def imod(a, b):
    a %= b
    return a


def ipow(a, b):
    a **= b
    return a


def imatmul(a, b):
    a @= b
    return a


def ilshift(a, b):
    a <<= b
    return a


def irshift(a, b):
    a >>= b
    return a


def iand(a, b):
    a &= b
    return a


def ior(a, b):
    a |= b
    return a


def ixor(a, b):
    a ^= b
    return a


ARITH = [add, sub, mul, truediv, floordiv, mod, pow_]
BITWISE = [lshift, rshift, and_, or_, xor]
IARITH = [iadd, isub, imul, itruediv, ifloordiv, imod, ipow]
IBITWISE = [ilshift, irshift, iand, ior, ixor]


def _ids(fns):
    return [f.__name__ for f in fns]


def _floats(*shape):
    # Away from zero so that /, //, % and ** stay well defined.
    return torch.rand(*shape) + 0.5


def _ints(*shape):
    return torch.randint(1, 8, shape)


# --- BINARY_OP on tensors ------------------------------------------------------------------------


@pytest.mark.parametrize("op", ARITH, ids=_ids(ARITH))
def test_tensor_tensor(op):
    check(op, _floats(2, 3), _floats(2, 3))


@pytest.mark.parametrize("op", ARITH, ids=_ids(ARITH))
def test_tensor_int_tensor(op):
    check(op, _ints(4), _ints(4))


@pytest.mark.parametrize("op", ARITH, ids=_ids(ARITH))
def test_tensor_scalar(op):
    check(op, _floats(3), 2)


@pytest.mark.parametrize("op", ARITH, ids=_ids(ARITH))
def test_scalar_tensor(op):
    check(op, 1.5, _floats(3))


@pytest.mark.parametrize("op", BITWISE, ids=_ids(BITWISE))
def test_tensor_bitwise(op):
    check(op, _ints(4), torch.tensor([0, 1, 2, 3]))


@pytest.mark.parametrize("op", [and_, or_, xor], ids=["and_", "or_", "xor"])
def test_bool_tensor_logical(op):
    check(op, torch.tensor([True, False, True]), torch.tensor([True, True, False]))


def test_tensor_bitwise_with_int():
    def fn(x):
        return x << 2, x >> 1, x & 6, x | 8, x ^ 5, 3 & x

    check(fn, _ints(4))


def test_matmul_tensors():
    check(matmul, _floats(2, 3), _floats(3, 4))


def test_matmul_vector():
    check(matmul, _floats(3), _floats(3, 2))


def test_broadcasting():
    check(add, _floats(2, 1, 3), _floats(4, 1))


def test_type_promotion_int_tensor_float():
    check(mul, _ints(3), 0.5)


def test_expression_tree():
    def fn(x, y):
        z = (x - y) ** 2
        return z.sum()

    check(fn, _floats(3), _floats(3))


# --- in-place BINARY_OP on tensors (mutates the input) -----------------------------------------


@pytest.mark.parametrize("op", IARITH, ids=_ids(IARITH))
def test_inplace_tensor_tensor(op):
    check(op, _floats(2, 3), _floats(2, 3))


@pytest.mark.parametrize("op", IARITH, ids=_ids(IARITH))
def test_inplace_tensor_scalar(op):
    check(op, _floats(3), 2.0)


@pytest.mark.parametrize("op", IBITWISE, ids=_ids(IBITWISE))
def test_inplace_tensor_bitwise(op):
    check(op, _ints(4), torch.tensor([0, 1, 2, 3]))


def test_inplace_matmul_tensor():
    check(imatmul, _floats(2, 2), _floats(2, 2))


def test_inplace_on_local_tensor_keeps_input():
    def fn(x):
        y = x.clone()
        y += 1
        y *= x
        return y

    check(fn, _floats(3))


def test_inplace_on_input_seen_through_alias():
    def fn(x):
        y = x
        y += 1
        return x * 2

    check(fn, _floats(3))


def test_inplace_on_input_view():
    def fn(x):
        v = x[0]
        v += 10
        return x.sum()

    check(fn, _floats(2, 3))


# --- BINARY_OP on Python numbers ------------------------------------------------------------------


@pytest.mark.parametrize("op", ARITH + BITWISE, ids=_ids(ARITH + BITWISE))
def test_ints(op):
    check(op, 7, 3, captured=False)


@pytest.mark.parametrize("op", ARITH + BITWISE, ids=_ids(ARITH + BITWISE))
def test_negative_ints(op):
    check(op, -7, 2, captured=False)


@pytest.mark.parametrize("op", ARITH, ids=_ids(ARITH))
def test_floats(op):
    check(op, 7.5, 2.0, captured=False)


@pytest.mark.parametrize("op", ARITH, ids=_ids(ARITH))
def test_int_float_mix(op):
    check(op, 3, 0.5, captured=False)


@pytest.mark.parametrize("op", IARITH + IBITWISE, ids=_ids(IARITH + IBITWISE))
def test_inplace_ints(op):
    check(op, 9, 2, captured=False)


@pytest.mark.parametrize("op", IARITH, ids=_ids(IARITH))
def test_inplace_floats(op):
    check(op, 9.0, 4.0, captured=False)


def test_bools_arithmetic():
    def fn(a, b):
        return a + b, a & b, a | b, a ^ b, a * 3

    check(fn, True, False, captured=False)


def test_python_number_result_scales_tensor():
    def fn(x, n):
        return (n + 1) * x, n * 2 - 1

    check(fn, _floats(3), 2)


def test_int_division_by_zero_raises():
    check(floordiv, 1, 0, expect_traced=False)


def test_float_division_by_zero_raises():
    check(truediv, 1.0, 0.0, expect_traced=False)


def test_unsupported_operand_types_raise():
    check(add, "a", 1, expect_traced=False)


# --- BINARY_OP on sequences and strings ----------------------------------------------------------


def test_str_concat_and_repeat():
    def fn(s, x):
        return s + "!" * 3, x

    check(fn, "hey", _floats(1), captured=False)


def test_str_percent_format():
    def fn(n):
        return "n=%d, f=%.2f" % (n, 1.5)

    check(fn, 4, captured=False)


def test_list_concat_and_repeat():
    def fn(a, x):
        return a + [x] + [1] * 2

    check(fn, [1, 2], _floats(2), captured=False)


def test_tuple_concat_and_repeat():
    def fn(t, x):
        return (x,) + t, t * 2

    check(fn, (1, 2), _floats(2), captured=False)


def test_inplace_add_on_input_list_extends_it():
    def fn(items, x):
        items += [x * 2]
        return len(items)

    check(fn, [1, 2], _floats(2))


def test_inplace_add_on_tuple_rebinds():
    def fn(t, x):
        u = t
        t += (x,)
        return u, t

    check(fn, (1, 2), _floats(2), captured=False)


def test_inplace_or_on_dict():
    def fn(d, x):
        d |= {"x": x}
        return d["x"] + d["a"]

    check(fn, {"a": 1.0}, _floats(2))


# --- COMPARE_OP ----------------------------------------------------------------------------------


def test_tensor_comparisons():
    def fn(a, b):
        return a < b, a <= b, a == b, a != b, a > b, a >= b

    check(fn, torch.tensor([1.0, 2.0, 3.0]), torch.tensor([2.0, 2.0, 2.0]))


def test_tensor_scalar_comparisons():
    def fn(a):
        return a < 2, a <= 2, a == 2, a != 2, a > 2, a >= 2, 2 < a

    check(fn, torch.tensor([1.0, 2.0, 3.0]))


@pytest.mark.parametrize("a,b", [(1, 2), (2, 2), (3.5, 2), ("a", "b"), ((1, 2), (1, 3))])
def test_constant_comparisons(a, b):
    def fn(a, b):
        return a < b, a <= b, a == b, a != b, a > b, a >= b

    check(fn, a, b, captured=False)


def test_chained_comparison():
    def fn(x, a, b, c):
        if a < b < c:
            return x + 1
        return x - 1

    check(fn, _floats(2), 1, 2, 3)


def test_chained_comparison_false():
    def fn(x, a, b, c):
        return x * (a < b > c), a <= b == c

    check(fn, _floats(2), 1, 2, 3)


def test_comparison_masks_tensor():
    def fn(x):
        return x * (x > 1.0)

    check(fn, _floats(4) * 2)


def test_compare_none_equality():
    def fn(a, b):
        return a == None, b != None  # noqa: E711 - COMPARE_OP on None, on purpose

    check(fn, None, 3, captured=False)


# --- IS_OP and CONTAINS_OP ------------------------------------------------------------------------


def test_is_and_is_not():
    def fn(x, a, b):
        return a is None, b is not None, x is x, a is b

    check(fn, _floats(2), None, 1, captured=False)


def test_is_on_same_tensor():
    def fn(x, y):
        z = x
        return z is x, y is x, x is not y

    check(fn, _floats(2), _floats(2), captured=False)


def test_is_on_aliased_inputs():
    def fn(x, y):
        return x is y, x + y

    t = _floats(2)
    check(fn, t, t)


@pytest.mark.parametrize(
    "container",
    [[1, 2, 3], (1, 2, 3), {1: "a", 2: "b"}, {1, 2}, range(0, 3), "123"],
    ids=["list", "tuple", "dict", "set", "range", "str"],
)
def test_in_and_not_in(container):
    def fn(c, x):
        probe, miss = ("1", "9") if isinstance(c, str) else (1, 9)
        return probe in c, miss not in c, x + (probe in c)

    check(fn, container, _floats(2))


def test_in_with_tensor_items_by_identity():
    def fn(x, y):
        return x in [x, 1], y is [x][0]

    check(fn, _floats(2), _floats(2), captured=False)


def test_str_in_str():
    def fn(s):
        return "ell" in s, "z" not in s

    check(fn, "hello", captured=False)


def test_key_in_input_dict():
    def fn(d, x):
        if "scale" in d:
            return x * d["scale"]
        return x

    check(fn, {"scale": 2.0}, _floats(2))


# --- unary operators ------------------------------------------------------------------------------


def test_unary_on_tensor():
    def fn(x):
        return -x, +x, abs(-x)

    check(fn, _floats(3))


def test_invert_int_tensor():
    def fn(x):
        return ~x

    check(fn, _ints(3))


def test_invert_bool_tensor():
    def fn(x):
        return ~x

    check(fn, torch.tensor([True, False]))


@pytest.mark.parametrize("v", [0, 5, -3, 2.5, True])
def test_unary_on_numbers(v):
    def fn(a):
        return -a, +a, not a

    check(fn, v, captured=False)


def test_invert_on_int():
    def fn(a):
        return ~a

    check(fn, 6, captured=False)


@pytest.mark.parametrize("v", [None, [], [1], "", "x", (), {}, {"a": 1}])
def test_not_on_constants(v):
    def fn(a, x):
        return x + 1 if not a else x - 1

    check(fn, v, _floats(2))


def test_not_on_tensor_shape_value():
    def fn(x):
        return not x.shape[0], not x.dim()

    check(fn, _floats(3), captured=False)
