"""Exceptions and with-blocks: try/except/finally inside the traced function, raise, context
managers (torch.no_grad, enable_grad, user context managers)."""

import contextlib

import pytest
import torch

from helpers import check


def _t(*shape):
    return torch.randn(*shape)


class Tracker:
    def __init__(self):
        self.events = []

    def __enter__(self):
        self.events.append("enter")
        return self

    def __exit__(self, *exc):
        self.events.append("exit")
        return False


def test_try_without_exception():
    def fn(x):
        try:
            y = x + 1
        except ValueError:
            y = x - 1
        return y

    check(fn, _t(2))


def test_try_finally_runs():
    def fn(x):
        out = []
        try:
            out.append(x * 2)
        finally:
            out.append(x * 3)
        return out

    check(fn, _t(2))


def test_exception_caught_inside():
    def fn(x, d):
        try:
            v = d["missing"]
        except KeyError:
            v = 10
        return x * v

    check(fn, _t(2), {})


def test_raise_and_catch_user_exception():
    def fn(x, n):
        try:
            if n > 1:
                raise ValueError("too big")
            y = x
        except ValueError as e:
            y = x * len(str(e))
        return y

    check(fn, _t(2), 3)


def test_raise_propagates_to_caller():
    def fn(x, n):
        y = x + 1
        if n < 0:
            raise ValueError(f"negative: {n}")
        return y

    check(fn, _t(2), -1, expect_traced=False)


@pytest.mark.parametrize("n", [0, 1])
def test_try_except_else(n):
    def fn(x, n):
        try:
            r = 1 // n
        except ZeroDivisionError:
            r = -1
        else:
            r = r + 100
        return x * r

    check(fn, _t(2), n)


def test_with_no_grad():
    def fn(x):
        with torch.no_grad():
            y = x * 2
        z = x * 3
        return y.requires_grad, z.requires_grad, y + z

    check(fn, torch.ones(2, requires_grad=True))


def test_with_enable_grad_inside_no_grad():
    def fn(x):
        with torch.no_grad():
            with torch.enable_grad():
                y = x * 2
            z = x * 3
        return y.requires_grad, z.requires_grad

    check(fn, torch.ones(2, requires_grad=True))


def test_no_grad_as_decorator_on_helper():
    @torch.no_grad()
    def helper(t):
        return t * 2

    def fn(x):
        return helper(x).requires_grad, x + 1

    check(fn, torch.ones(2, requires_grad=True))


def test_user_context_manager_object():
    def fn(tr, x):
        with tr:
            y = x + 1
        return y, list(tr.events)

    check(fn, Tracker(), _t(2))


def test_contextlib_contextmanager():
    @contextlib.contextmanager
    def scaled(events):
        events.append("in")
        yield 3
        events.append("out")

    def fn(x):
        events = []
        with scaled(events) as k:
            y = x * k
        return y, events

    check(fn, _t(2))


def test_suppress_exception():
    def fn(x, items):
        with contextlib.suppress(IndexError):
            x = x + items[5]
        return x

    check(fn, _t(2), [1], captured=False)
