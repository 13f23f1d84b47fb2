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
