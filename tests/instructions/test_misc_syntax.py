"""Less common syntax: match statements (MATCH_*), the walrus operator, classes and imports inside the
traced function, generator functions, unbound tensor methods, global deletion and NameError."""

import pytest
import torch

import symexec
from helpers import check


def _t(*shape):
    return torch.randn(*shape)


class Point:
    __match_args__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y


# --- match statements ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0, 1, 5])
def test_match_literal(mode):
    def fn(x, mode):
        match mode:
            case 0:
                return x + 1
            case 1 | 2:
                return x * 2
            case _:
                return x

    check(fn, _t(2), mode, captured=False)


@pytest.mark.parametrize("spec", [(1,), (1, 2), [3, 4, 5], "s"], ids=["one", "two", "three", "str"])
def test_match_sequence(spec):
    def fn(x, spec):
        match spec:
            case (a,):
                return x * a
            case (a, b):
                return x * a + b
            case [a, *rest]:
                return x - a, rest
            case _:
                return x

    check(fn, _t(2), spec, captured=False)


@pytest.mark.parametrize("cfg", [{"act": "relu"}, {"act": "tanh", "scale": 2}, {}], ids=["a", "b", "c"])
def test_match_mapping(cfg):
    def fn(x, cfg):
        match cfg:
            case {"act": "tanh", "scale": s}:
                return torch.tanh(x) * s
            case {"act": name, **rest}:
                return getattr(torch, name)(x), rest
            case _:
                return x

    check(fn, _t(3), cfg, captured=False)


def test_match_class():
    def fn(x, p):
        match p:
            case Point(x=0, y=yy):
                return x * yy
            case Point(a, b):
                return x * a + b
        return x

    check(fn, _t(2), Point(2, 3))


# --- misc syntax ---------------------------------------------------------------------------------------


def test_walrus():
    def fn(x):
        if (n := x.shape[0]) > 1:
            return x * n, n
        return x, n

    check(fn, _t(3))


def test_walrus_in_comprehension():
    def fn(x):
        return [y for i in range(3) if (y := x * i) is not None]

    check(fn, _t(2))


def test_class_defined_inside():
    def fn(x):
        class Local:
            k = 3

            def scale(self, t):
                return t * self.k

        return Local().scale(x)

    check(fn, _t(2))


def test_import_inside():
    def fn(x):
        import math

        from torch.nn import functional as Fn

        return Fn.relu(x) * math.pi

    check(fn, _t(3))


def test_unbound_tensor_method():
    def fn(x, y):
        return torch.Tensor.add(x, y), getattr(torch.Tensor, "relu")(x)

    check(fn, _t(2), _t(2))


def test_torch_function_with_star_star_kwargs():
    def fn(x, kw):
        return torch.sum(x, **kw)

    check(fn, _t(2, 3), {"dim": 1, "keepdim": True})


def test_delete_global_then_name_error():
    def fn(x):
        global _TEMP_GLOBAL
        _TEMP_GLOBAL = 1
        del _TEMP_GLOBAL
        return x + _TEMP_GLOBAL  # noqa: F821 - NameError on purpose

    check(fn, _t(2), expect_traced=False)


def test_missing_global_name_error():
    def fn(x):
        return x + _NOT_DEFINED_ANYWHERE  # noqa: F821

    check(fn, _t(2), expect_traced=False)


def test_print_star_args():
    def fn(x, items):
        print(*items, sep=", ")
        return x + len(items)

    check(fn, _t(2), ["a", 1, 2.5])


def test_lambda_default_captures_loop_value():
    def fn(x):
        fns = [lambda t, i=i: t * i for i in range(3)]
        return [f(x) for f in fns]

    check(fn, _t(2), captured=False)


def test_conditional_import_of_optional_module():
    def fn(x):
        try:
            import not_a_real_module_xyz  # noqa: F401
        except ImportError:
            return x - 1
        return x + 1

    # symexec captures nothing here: x - 1 in the handler of the failed import
    check(fn, _t(2), captured=False)


def test_string_building_loop():
    def fn(x, names):
        s = ""
        for n in names:
            s += n.upper() + ";"
        return s, x * len(s)

    check(fn, _t(1), ["ab", "c"])


# --- generator functions compiled directly -----------------------------------------------------------------


def test_compiled_generator_function_yields_like_eager():
    def gen(x, n):
        for i in range(n):
            yield x * i

    x = _t(2)
    expected = list(gen(x, 3))
    actual = list(symexec.compile(gen)(x, 3))
    assert len(actual) == len(expected)
    for e, a in zip(expected, actual):
        assert torch.equal(e, a)
