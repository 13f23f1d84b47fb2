"""ConstantVariable: methods of str, int, float, bytes, tuples of constants, None, and their use
as specialised values inside tensor code."""

import math

import pytest
import torch

from helpers import check


def _t(*shape):
    return torch.randn(*shape)


def test_str_methods():
    def fn(s, x):
        return (
            s.upper(),
            s.lower(),
            s.strip(),
            s.split(","),
            "-".join(["a", s]),
            s.replace("a", "b"),
            s.startswith(" a"),
            s.endswith("c "),
            s.find("b"),
            s.format(),
            x,
        )

    check(fn, " a,bc ", _t(1), captured=False)


def test_str_selects_function():
    def fn(x, name):
        return getattr(torch, name.lower())(x)

    check(fn, _t(3), "TANH")


def test_str_format_with_values():
    def fn(x, name, n):
        label = "{}_{:03d}".format(name, n)
        return label, x * len(label)

    check(fn, _t(2), "layer", 7)


def test_int_and_float_methods():
    def fn(n, f):
        return n.bit_length(), f.is_integer(), (2.5).as_integer_ratio(), n.to_bytes(2, "big"), f.hex()

    check(fn, 10, 4.0, captured=False)


def test_float_specials():
    def fn(x, f):
        return x * f, math.isinf(f), f == f

    check(fn, _t(2), float("inf"))


def test_float_nan_constant():
    def fn(x, f):
        return x + 1, math.isnan(f), f != f

    check(fn, _t(2), float("nan"))


def test_bytes_constant():
    def fn(b, x):
        return b + b"!", len(b), b.decode(), x

    check(fn, b"abc", _t(1), captured=False)


def test_none_constant():
    def fn(x, v):
        return x if v is None else x * v, v

    check(fn, _t(2), None, captured=False)


def test_tuple_of_constants_as_argument():
    def fn(x, dims):
        return x.permute(*dims), x.sum(dim=dims[:1])

    check(fn, _t(2, 3, 4), (2, 0, 1))


@pytest.mark.parametrize("value", [0, 1, -7, 2**40, 3.25, True, "txt"])
def test_constant_roundtrip(value):
    def fn(x, v):
        return v, x

    check(fn, _t(1), value, captured=False)


def test_int_power_and_big_ints():
    def fn(x, n):
        big = 10**20 + n
        return big, big % 7, x * (big % 5)

    check(fn, _t(2), 3)


def test_constant_folded_into_graph_value():
    def fn(x, n):
        return (n + 1) * x

    check(fn, _t(3), 2)


def test_complex_constant():
    def fn(x, c):
        return x * c.real, c.imag, abs(c)

    check(fn, _t(2), 3 + 4j)


def test_slice_and_ellipsis_constants():
    def fn(x, s):
        return x[s], s.start, s.stop, s.step, ...

    check(fn, _t(5), slice(1, 4, 2))
