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
