"""Generators of inlined generator functions and generator expressions (``variables/generators.py``):
lazy items, ``send``, ``throw``, ``close``, ``yield from``, return values, side effects between
items, early exits of consumers, and the generators that cannot be traced (passed in, escaping
part way). Each case is compared with eager, and the kinds with torch ops also with
torch.compile's graph counts."""

import collections.abc
import contextlib
import functools
import itertools

import pytest
import torch

from helpers import assert_same_graphs_as_dynamo, check, symexec_graphs

_LOG = []


def _t(*values):
    return torch.tensor(values, dtype=torch.float32)


def _ops(fn, *args):
    """The ops of each graph symexec compiles for ``fn(*args)`` (where torch.compile cannot be
    compared with: it captures nothing, or fails, as said where it is used)."""
    return symexec_graphs(fn, *args)[1].op_counts()


def _check_as_dynamo(fn, *args):
    """``check``, and as many graphs with as many ops each as torch.compile makes."""
    check(fn, *args)
    assert_same_graphs_as_dynamo(fn, *args)


def _check_beyond_dynamo(fn, *args, ops, dynamo):
    """``check``, and the ops of each graph symexec makes, where torch.compile 2.13 cannot be
    compared with: ``dynamo`` says what it does there."""
    check(fn, *args)
    assert _ops(fn, *args) == ops, dynamo


def _logged(body):
    """``body`` run with a fresh log, returning its result and what it logged."""
    def fn(*args):
        del _LOG[:]
        result = body(*args)
        return result, list(_LOG)
    return fn


# -- generator functions used below -----------------------------------------------------------

def _count(x, n):
    for i in range(n):
        _LOG.append(("yield", i))
        yield x * i
    _LOG.append("end")


def _echo(x):
    """Yields what was sent in, times x, until it is sent None."""
    total = 0
    received = yield x
    while received is not None:
        total += 1
        received = yield x * received
    return total


def _guarded(x):
    try:
        yield x + 1
        yield x + 2
    except ValueError as e:
        _LOG.append(("caught", str(e)))
        yield x * 10
    finally:
        _LOG.append("finally")


def _returns(x):
    yield x
    return x * 3


def _delegating(x):
    result = yield from _returns(x)
    _LOG.append("inner returned")
    yield result + 1


def _delegating_echo(x):
    total = yield from _echo(x)
    yield total


def _ignores_exit(x):
    while True:
        try:
            yield x
        except GeneratorExit:
            _LOG.append("ignored")


def _tree(depth, x):
    if depth == 0:
        yield x
        return
    yield from _tree(depth - 1, x + 1)
    yield from _tree(depth - 1, x * 2)


# -- laziness and side effects -------------------------------------------------------------------

@pytest.mark.parametrize("consumer", [
    lambda x: sum(_count(x, 4)),
    lambda x: list(_count(x, 3)),
    lambda x: dict(enumerate(_count(x, 3)))[2],
    lambda x: x + any(i > 1 for i, v in enumerate(_count(x, 5))),
    lambda x: x + all(i < 2 for i, v in enumerate(_count(x, 5))),
    lambda x: x + max(i * 2 for i, v in enumerate(_count(x, 3))),
    lambda x: [a + b for a, b in zip(_count(x, 5), range(2))],
    lambda x: [a + b for a, b in zip(range(2), _count(x, 5))],
    lambda x: x + len(tuple(_count(x, 0))),
], ids=["sum", "list", "dict", "any", "all", "max", "zip-first", "zip-second", "empty"])
def test_consumers_take_items_when_eager_does(consumer):
    _check_as_dynamo(_logged(consumer), _t(1, 2))


def test_next_twice_and_break():
    def fn(x):
        g = _count(x, 5)
        a = next(g)
        b = next(g)
        for i, c in enumerate(g):
            if i == 1:
                break
        return a + b + c
    _check_as_dynamo(_logged(fn), _t(1, 2))


def test_side_effects_between_items():
    def gen(x, out):
        out.append(x.clone())
        yield x
        x.add_(1)  # a mutation between items: the consumer sees it after the first item
        out.append(x.clone())
        yield x * 2

    def fn(x):
        out = []
        items = [v + len(out) for v in gen(x, out)]
        return items, out
    _check_as_dynamo(fn, _t(1, 2))


def test_generator_prints():
    def gen(x):
        print("first")
        yield x
        print("second")
        yield x + 1

    def fn(x):
        g = gen(x)
        a = next(g)
        print("between")
        return a + next(g)
    _check_beyond_dynamo(fn, _t(1, 2), ops=[1],
                         dynamo="captures nothing here")


_STATE = {"n": 0}


def test_generator_writes_a_global():
    def gen(x):
        global _COUNTER
        for i in range(3):
            _COUNTER = i
            yield x + i

    def fn(x):
        g = gen(x)
        first = next(g)
        return first, _COUNTER
    _check_as_dynamo(fn, _t(1))


_COUNTER = 0


def test_generator_expression_lazy():
    def fn(x):
        g = (_LOG.append(i) or x * i for i in range(4))
        first = next(g)
        second = next(g)
        return first + second, list(_LOG)
    _check_as_dynamo(_logged(fn), _t(1, 2))


def test_recursive_generator():
    def fn(x):
        return list(_tree(3, x))
    _check_as_dynamo(fn, _t(1, 2))


def test_generator_yielding_from_a_list():
    # test_misc.py's yield-from cases: a list, a list comprehension, in a loop
    def fn(x, k):
        def gen(items):
            scaled = [t * k for t in items]
            yield from scaled

        def twice():
            for _ in range(2):
                yield from gen([x, x + 1])

        return [t * k for t in twice()]
    _check_as_dynamo(fn, _t(1, 2), 3)


# -- return values --------------------------------------------------------------------------------

def test_stop_iteration_value():
    def fn(x):
        g = _returns(x)
        first = next(g)
        try:
            next(g)
        except StopIteration as e:
            return first, e.value, e.args
        return None
    _check_as_dynamo(fn, _t(1, 2))


def test_yield_from_result():
    def fn(x):
        return list(_delegating(x))
    _check_beyond_dynamo(_logged(fn), _t(1, 2), ops=[2],
                         dynamo="gives up on this function and runs it eagerly: no graph")


def test_next_after_the_end_raises_stop_iteration_without_value():
    def fn(x):
        g = _returns(x)
        list(g)
        try:
            next(g)
        except StopIteration as e:
            return x + 1, e.args
        return None
    _check_as_dynamo(fn, _t(1, 2))


def test_next_with_a_default():
    def fn(x):
        g = _returns(x)
        return next(g, None), next(g, x + 5), next(g, 7)
    _check_as_dynamo(fn, _t(1, 2))


# -- send -----------------------------------------------------------------------------------------


def test_send():
    def fn(x):
        g = _echo(x)
        first = g.send(None)
        second = g.send(2)
        third = g.send(3)
        try:
            g.send(None)
        except StopIteration as e:
            return first, second, third, e.value
        return None
    _check_as_dynamo(fn, _t(1, 2))


def test_send_non_none_to_a_just_started_generator():
    def fn(x):
        g = _echo(x)
        try:
            g.send(1)
        except TypeError as e:
            return x + 1, str(e), next(g)
        return None
    _check_beyond_dynamo(fn, _t(1, 2), ops=[1],
                         dynamo="gives a wrong result here: the TypeError's message is empty")


def test_send_through_yield_from():
    def fn(x):
        g = _delegating_echo(x)
        a = next(g)
        b = g.send(4)
        c = g.send(None)  # ends the inner generator: its result is yielded
        return a, b, c
    _check_beyond_dynamo(fn, _t(1, 2), ops=[1],
                         dynamo="captures nothing here")


def test_send_to_a_subgenerator():
    # test_misc.py test_yield_send_to_subgenerator_graph_break, called from a compiled function
    def subgenerator(tensor):
        multiplier = yield
        yield tensor * multiplier

    def main_generator(t_list):
        for tensor in t_list:
            subgen = subgenerator(tensor)
            next(subgen)
            yield from subgen.send(torch.tensor([10]))

    def fn(t_list):
        return list(main_generator(t_list))
    _check_as_dynamo(fn, [torch.tensor([i]) for i in range(3)])


def test_send_to_an_exhausted_generator():
    def fn(x):
        g = _returns(x)
        list(g)
        try:
            g.send(5)
        except StopIteration as e:
            return x, e.args
        return None
    check(fn, _t(1), captured=False)
    assert_same_graphs_as_dynamo(fn, _t(1))


# -- throw ----------------------------------------------------------------------------------------


def test_throw_caught_inside():
    def fn(x):
        g = _guarded(x)
        a = next(g)
        b = g.throw(ValueError("boom"))
        rest = list(g)
        return a, b, rest
    _check_beyond_dynamo(_logged(fn), _t(1, 2), ops=[2],
                         dynamo="fails here: an IndexError in its generator inliner")


def test_throw_not_caught_propagates_after_finally():
    def fn(x):
        g = _guarded(x)
        a = next(g)
        try:
            g.throw(KeyError("k"))
        except KeyError as e:
            return a, str(e), next(g, "done")
        return None
    _check_beyond_dynamo(_logged(fn), _t(1, 2), ops=[1],
                         dynamo="fails here: an IndexError in its generator inliner")


def test_throw_a_class():
    def fn(x):
        g = _guarded(x)
        next(g)
        return g.throw(ValueError), list(g)
    _check_beyond_dynamo(_logged(fn), _t(1, 2), ops=[2],
                         dynamo="fails here: an IndexError in its generator inliner")


def test_throw_into_a_just_started_generator():
    def fn(x):
        g = _guarded(x)
        try:
            g.throw(ValueError("early"))
        except ValueError as e:
            return x + 1, str(e), list(g)
        return None
    _check_beyond_dynamo(_logged(fn), _t(1, 2), ops=[1],
                         dynamo="one graph as under torch.compile, which also computes items never asked for")


def test_throw_stop_iteration_is_pep_479():
    def fn(x):
        g = _returns(x)
        next(g)
        try:
            g.throw(StopIteration(3))
        except RuntimeError as e:
            return x + 1, str(e)
        return None
    _check_beyond_dynamo(fn, _t(1, 2), ops=[1],
                         dynamo="gives a wrong result here: the RuntimeError's message is empty")


def test_throw_through_yield_from():
    def inner(x):
        try:
            yield x
        except ValueError:
            _LOG.append("inner caught")
            return x * 5
        yield x * 2

    def outer(x):
        result = yield from inner(x)
        yield result + 1

    def fn(x):
        g = outer(x)
        a = next(g)
        b = g.throw(ValueError)
        return a, b, list(g)
    _check_beyond_dynamo(_logged(fn), _t(1, 2), ops=[2],
                         dynamo="captures nothing here")


def test_throw_through_yield_from_uncaught():
    def inner(x):
        try:
            yield x
        finally:
            _LOG.append("inner finally")

    def outer(x):
        try:
            yield from inner(x)
        except KeyError:
            _LOG.append("outer caught")
            yield x * 7

    def fn(x):
        g = outer(x)
        a = next(g)
        return a, g.throw(KeyError("k")), list(g)
    _check_beyond_dynamo(_logged(fn), _t(1, 2), ops=[1],
                         dynamo="fails here: an IndexError in its generator inliner")


def test_throw_into_yield_from_a_list():
    def outer(x):
        try:
            yield from [x, x + 1]
        except ValueError:
            yield x * 3

    def fn(x):
        g = outer(x)
        return next(g), g.throw(ValueError), list(g)
    _check_beyond_dynamo(fn, _t(1, 2), ops=[2],
                         dynamo="fails here: an IndexError in its generator inliner")


# -- close ----------------------------------------------------------------------------------------


def test_close_runs_finally():
    def fn(x):
        g = _guarded(x)
        a = next(g)
        g.close()
        return a, list(g)
    _check_as_dynamo(_logged(fn), _t(1, 2))


def test_close_unstarted_and_exhausted():
    def fn(x):
        g = _guarded(x)
        g.close()
        h = _returns(x)
        list(h)
        h.close()
        return x + 1, list(g)
    _check_as_dynamo(_logged(fn), _t(1, 2))


def test_close_a_generator_that_yields_again():
    def fn(x):
        g = _ignores_exit(x)
        next(g)
        try:
            g.close()
        except RuntimeError as e:
            return x + 1, str(e)
        return None
    # (it stays suspended in a try: CPython would run its handler again when it is collected)
    check(_logged(fn), _t(1, 2), expect_traced=False)


def test_close_returns_the_return_value():
    def gen(x):
        try:
            yield x
        except GeneratorExit:
            return 9
        yield x

    def fn(x):
        g = gen(x)
        next(g)
        return x + 1, g.close()
    _check_beyond_dynamo(fn, _t(1, 2), ops=[1],
                         dynamo="gives a wrong result here before 3.13: close() returns the value returned")


def test_close_through_yield_from():
    def fn(x):
        g = _delegating(x)
        next(g)
        g.close()
        return x + 1, list(g)

    def inner_with_finally(x):
        try:
            yield x
        finally:
            _LOG.append("inner finally")

    def outer(x):
        try:
            yield from inner_with_finally(x)
        finally:
            _LOG.append("outer finally")

    def fn2(x):
        g = outer(x)
        a = next(g)
        g.close()
        return a + 1
    _check_as_dynamo(_logged(fn), _t(1, 2))
    _check_beyond_dynamo(_logged(fn2), _t(1, 2), ops=[1],
                         dynamo="gives a wrong result here: the inner generator's finally does not run")


# -- PEP 479 and errors -----------------------------------------------------------------------------

def test_error_inside_a_generator_propagates_and_exhausts():
    def gen(x):
        yield x
        raise ValueError("inside")

    def fn(x):
        g = gen(x)
        a = next(g)
        try:
            next(g)
        except ValueError as e:
            return a + 1, str(e), list(g)
        return None
    _check_as_dynamo(fn, _t(1, 2))


def test_generator_already_running():
    def fn(x):
        def gen():
            yield next(g)
        g = gen()
        try:
            next(g)
        except ValueError as e:
            return x + 1, str(e)
        return None
    check(fn, _t(1, 2), expect_traced=False)


# -- contextlib.contextmanager ------------------------------------------------------------------

@contextlib.contextmanager
def _scaled(x):
    _LOG.append("enter")
    try:
        yield x * 2
    finally:
        _LOG.append("exit")


def test_contextmanager_generator():
    def fn(x):
        with _scaled(x) as y:
            z = y + 1
        return z
    _check_as_dynamo(_logged(fn), _t(1, 2))


# -- generators that cannot be traced ---------------------------------------------------------------


def test_generator_passed_in_is_not_consumed_at_trace_time():
    def fn(g, x):
        return x + sum(g)

    def make():
        return (i * 2 for i in range(3))

    compiled = __import__("symexec").compile(fn)
    expected = fn(make(), _t(1, 2))
    assert torch.equal(compiled(make(), _t(1, 2)), expected)
    assert torch.equal(compiled(make(), _t(1, 2)), expected)


def test_generator_returned_part_way():
    def fn(x):
        g = _count(x, 3)
        first = next(g)
        return first, g

    compiled = __import__("symexec").compile(fn)
    del _LOG[:]
    first, g = fn(_t(1, 2))
    expected = (first, list(g), list(_LOG))
    del _LOG[:]
    first, g = compiled(_t(1, 2))
    actual = (first, list(g), list(_LOG))
    assert repr(expected) == repr(actual)


def test_generator_returned_unstarted():
    def fn(x):
        return x + 1, _count(x, 2)

    compiled = __import__("symexec").compile(fn)
    del _LOG[:]
    y, g = compiled(_t(1, 2))
    assert _LOG == []
    assert [v.tolist() for v in g] == [[0.0, 0.0], [1.0, 2.0]]


# -- more consumers and shapes ----------------------------------------------------------------------

@pytest.mark.parametrize("consumer", [
    lambda x: torch.cat(list(_count(x, 3))),
    lambda x: torch.stack(tuple(_count(x, 3))),
    lambda x: sorted(_count(x, 3), key=lambda v: -len(_LOG)),
    lambda x: [v + 1 for v in map(lambda v: v * 2, _count(x, 3))],
    lambda x: set(i for i, _ in enumerate(_count(x, 3))) | {x.shape[0]},
    lambda x: dict((i, v) for i, v in enumerate(_count(x, 3))),
    lambda x: min(i for i, _ in zip(range(5), _count(x, 3))) + x,
    lambda x: [*_count(x, 2), *_count(x + 1, 2)],
    lambda x: (lambda a, b, c: a + b + c)(*_count(x, 3)),
], ids=["cat", "stack", "sorted", "map", "set", "dict-pairs", "min-zip", "star-list", "star-call"])
def test_more_consumers(consumer):
    _check_as_dynamo(_logged(consumer), _t(1, 2))


def test_unpacking_a_generator():
    def fn(x):
        a, b, c = _count(x, 3)
        first, *rest = _count(x + 1, 3)
        return a + b + c + first, rest
    _check_as_dynamo(_logged(fn), _t(1, 2))


def test_extend_with_a_generator():
    def fn(x):
        out = [x]
        out.extend(_count(x, 3))
        out += (v * 2 for v in _count(x, 2))
        return out
    _check_as_dynamo(_logged(fn), _t(1, 2))


def test_send_in_a_loop_accumulates():
    def averager():
        total, count, average = 0.0, 0, None
        while True:
            value = yield average
            total = total + value
            count += 1
            average = total / count

    def fn(x):
        g = averager()
        next(g)
        for i in range(3):
            out = g.send(x * i)
        g.close()
        return out
    _check_as_dynamo(fn, _t(1, 2))


def test_generator_expression_close_and_throw():
    def fn(x):
        g = (x * i for i in range(3))
        a = next(g)
        g.close()
        h = (x + i for i in range(3))
        try:
            h.throw(ValueError("v"))
        except ValueError:
            pass
        return a + 1, list(g), list(h)
    _check_beyond_dynamo(fn, _t(1, 2), ops=[2],
                         dynamo="one graph as under torch.compile, which also computes items never asked for")


def test_gi_running_inside_and_outside():
    def fn(x):
        def gen():
            yield g.gi_running
            yield g.gi_suspended
        g = gen()
        before = g.gi_running
        return x + 1, before, list(g), g.gi_running
    _check_beyond_dynamo(fn, _t(1, 2), ops=[1],
                         dynamo="fails here (an internal error)")


def test_next_of_an_exhausted_inner_generator_is_pep_479():
    def gen(x):
        inner = iter([x])
        yield next(inner)
        yield next(inner)  # StopIteration inside a generator: RuntimeError

    def fn(x):
        try:
            return list(gen(x))
        except RuntimeError as e:
            return x + 1, str(e)
    _check_beyond_dynamo(fn, _t(1, 2), ops=[1],
                         dynamo="captures nothing here")


def test_return_inside_finally_on_close():
    def gen(x):
        try:
            yield x
        finally:
            _LOG.append("cleanup")

    def fn(x):
        g = gen(x)
        a = next(g)
        result = g.close()
        again = g.close()
        return a + 1, result, again, g.gi_suspended
    _check_beyond_dynamo(_logged(fn), _t(1, 2), ops=[1],
                         dynamo="fails here (an internal error)")


def test_contextmanager_with_an_exception_inside():
    @contextlib.contextmanager
    def suppressing():
        try:
            yield
        except ValueError:
            _LOG.append("suppressed")

    def fn(x):
        with suppressing():
            y = x + 1
            raise ValueError("inside")
        return y * 2
    _check_as_dynamo(_logged(fn), _t(1, 2))


def test_contextmanager_generator_reraises():
    @contextlib.contextmanager
    def cleanup():
        try:
            yield
        finally:
            _LOG.append("cleanup")

    def fn(x):
        try:
            with cleanup():
                raise KeyError("k")
        except KeyError:
            return x + 1
    # (contextlib's __exit__ sets the exception's __traceback__, which symexec does not model: the
    # call runs as it is)
    check(_logged(fn), _t(1, 2), expect_traced=False)


def _started_then_break(x):
    g = _count(x, 3)
    a = next(g)
    print("break")  # (a graph break, under symexec and torch.compile)
    return a + next(g)


def _unstarted_then_break(x):
    g = _count(x, 3)
    y = x + 1
    print("break")
    return y + sum(g)


def test_generator_alive_across_a_graph_break():
    # Suspended part way, its frame cannot be made again as a real generator: the graph break
    # cannot be made there, and the function runs as it is.
    check(_logged(_started_then_break), _t(1, 2), expect_traced=False)
    assert_same_graphs_as_dynamo(_logged(_started_then_break), _t(1, 2))  # (no graph under either)


def test_generator_not_started_across_a_graph_break():
    # Nothing of it has run: the continuation gets the same call made anew.
    check(_logged(_unstarted_then_break), _t(1, 2))  # (and the log of what ran when)
    _check_beyond_dynamo(_unstarted_then_break, _t(1, 2), ops=[1, 1],
                         dynamo="captures nothing here: it gives up on a generator alive at a break")


class _CountingIterator:
    """test_misc.py's MyIter: an iterator of its own, ending with StopIteration(its count)."""

    def __init__(self, seq):
        self.seq = seq
        self.index = 0

    def __iter__(self):
        return self

    def __next__(self):
        self.index += 1
        _LOG.append(self.index)
        if self.index <= len(self.seq):
            return self.seq[self.index - 1]
        raise StopIteration(self.index)


def test_yield_from_a_user_iterator():
    # Its __next__ is not traced item by item: the graph breaks (it was an internal error).
    def gen(seq):
        result = yield from _CountingIterator(seq)
        yield result

    def fn(x):
        g = gen([x, x + 1])
        a = next(g)
        return a * 2, len(_LOG), list(g)
    check(_logged(fn), _t(1, 2))


def _accumulate(iterable, func=lambda x, y: x + y):
    # test_misc.py's test_pure_python_accumulate
    it = iter(iterable)
    try:
        accumulator = next(it)
    except StopIteration:
        return
    yield accumulator
    for element in it:
        accumulator = func(accumulator, element)
        yield accumulator


def test_pure_python_accumulate():
    def fn(items):
        return list(_accumulate(items)), list(_accumulate([]))
    _check_as_dynamo(fn, [torch.tensor([i]) for i in range(4)])


def test_returned_unstarted_generator_runs_when_consumed():
    def fn(items):
        return _accumulate(items)
    compiled = __import__("symexec").compile(fn)
    items = [torch.tensor([i]) for i in range(4)]
    assert [t.tolist() for t in compiled(items)] == [t.tolist() for t in fn(items)]


def _printing():
    for i in range(3):
        print("item", i)
        yield i


def test_global_generator_runs_at_run_time(capsys):
    # A real generator (a global here) cannot be traced: the graph breaks where it is iterated,
    # and CPython takes its items then, once.
    global _GLOBAL_GENERATOR

    def fn(x):
        for v in _GLOBAL_GENERATOR:
            x = x + v
        return x * 2

    _GLOBAL_GENERATOR = _printing()
    expected = fn(_t(1, 2))
    eager_out = capsys.readouterr().out
    compiled = __import__("symexec").compile(fn)
    for _ in range(2):
        _GLOBAL_GENERATOR = _printing()
        assert torch.equal(compiled(_t(1, 2)), expected)
        assert capsys.readouterr().out == eager_out


_GLOBAL_GENERATOR = None


class _Holder:
    """An object a generator is stored on."""


def test_generator_stored_on_an_object_part_way():
    # It escapes suspended part way: the call runs as it is, and the holder gets the real one.
    def fn(holder, x):
        g = _count(x, 3)
        first = next(g)
        holder.g = g
        return first + 1

    compiled = __import__("symexec").compile(fn)
    for _ in range(2):
        eager_holder, compiled_holder = _Holder(), _Holder()
        del _LOG[:]
        expected = fn(eager_holder, _t(1, 2)), [v.tolist() for v in eager_holder.g], list(_LOG)
        del _LOG[:]
        actual = compiled(compiled_holder, _t(1, 2)), [v.tolist() for v in compiled_holder.g], list(_LOG)
        assert repr(expected) == repr(actual)


def _logged_add(a, b):
    _LOG.append("add")
    return a + b


def _chain_interleaved(x):
    out = []
    for v in itertools.chain(_count(x, 2), [x * 10], _count(x + 1, 2)):
        _LOG.append("body")
        out.append(v)
    return out


@pytest.mark.parametrize("consumer", [
    lambda x: list(itertools.islice(_count(x, 10), 2)),  # (was: all ten items taken)
    lambda x: list(itertools.islice(_count(x, 10), 1, 6, 2)),
    lambda x: next(itertools.islice(_count(x, 10), 3, None)),
    _chain_interleaved,
    lambda x: list(zip(range(3), itertools.chain(_count(x, 2), _count(x, 5)))),
    lambda x: [a + b for a, b in itertools.pairwise(_count(x, 3))],  # (was: a graph break)
    lambda x: list(itertools.product(_count(x, 2), repeat=2))[-1],  # (CPython takes them all at once)
    lambda x: list(zip(range(2), itertools.zip_longest(_count(x, 3), [x], fillvalue=0))),
    lambda x: [v for v in itertools.accumulate(_count(x, 3), _logged_add, initial=x)],
    lambda x: next(itertools.filterfalse(lambda v: _LOG.append("test") or v.dim() > 1, _count(x, 3))),
], ids=["islice-stop", "islice-step", "islice-next", "chain-interleaved", "zip-chain", "pairwise", "product",
        "zip-longest", "accumulate", "filterfalse"])
def test_itertools_take_generator_items_when_eager_does(consumer):
    _check_as_dynamo(_logged(consumer), _t(1, 2))


@pytest.mark.parametrize("consumer", [
    lambda x: functools.reduce(_logged_add, _count(x, 3)),  # (was: every item taken before the first call)
    lambda x: functools.reduce(_logged_add, _count(x, 3), x),
    lambda x: (x + 1, functools.reduce(_logged_add, _count(x, 0), 5)),
], ids=["reduce", "reduce-initial", "reduce-empty-initial"])
def test_reduce_takes_generator_items_between_calls(consumer):
    _check_as_dynamo(_logged(consumer), _t(1, 2))


def test_reduce_of_nothing_raises_type_error():  # (was: an internal error)
    def fn(x):
        try:
            return functools.reduce(_logged_add, _count(x, 0))
        except TypeError as e:
            return x + 1, str(e)
    check(_logged(fn), _t(1, 2))


class _Bag:
    """A container whose ``__iter__`` is a generator function (datasets, custom containers)."""

    def __init__(self, items):
        self.items = items

    def __iter__(self):
        for v in self.items:
            _LOG.append(("item", v))
            yield v


def _loop_over_bag(x):
    for v in _Bag([1, 2, 3]):
        _LOG.append("body")
        x = x + v
    return x


@pytest.mark.parametrize("consumer", [
    _loop_over_bag,  # (was: every item taken before the loop's body ran)
    lambda x: x + next(iter(_Bag([1, 2, 3]))),  # (was: every item taken by iter())
    lambda x: [x + v for v in _Bag([1, 2])],
    lambda x: x + sum(_Bag([1, 2])),
    lambda x: [x * a for a, b in zip(_Bag([1, 2, 3]), range(1))],
], ids=["loop", "iter-next", "comprehension", "sum", "zip"])
def test_a_class_whose_iter_is_a_generator(consumer):
    _check_as_dynamo(_logged(consumer), _t(1, 2))


def test_enumerate_and_map_over_a_class_whose_iter_is_a_generator():
    def fn(x):
        pairs = enumerate(_Bag([1, 2, 3]))
        first = next(pairs)
        doubled = map(lambda v: v * 2, _Bag([4, 5]))
        return x + first[1], next(doubled), list(_LOG)
    _check_as_dynamo(_logged(fn), _t(1, 2))


class _Seq(collections.abc.Sequence):
    """A Sequence: its ``__iter__`` (collections.abc's) is a generator in ``try/except IndexError``."""

    def __init__(self, items):
        self.items = items

    def __getitem__(self, i):
        _LOG.append(("get", i))
        return self.items[i]

    def __len__(self):
        return len(self.items)


def _except_value_error(x):
    try:
        yield x
        yield x + 1
    except ValueError:
        _LOG.append("caught")


def _except_base_exception(x):
    try:
        yield x
        yield x + 1
    except BaseException:
        _LOG.append("caught")


@pytest.mark.parametrize("consumer, traced", [
    (lambda x: [x * a for a, b in zip(_Seq([1, 2, 3]), range(1))], True),
    (lambda x: x + next(iter(_Seq([1, 2, 3]))), True),
    (lambda x: next(_except_value_error(x)) + 1, True),  # (GeneratorExit passes through `except ValueError`)
    (lambda x: next(_except_base_exception(x)) + 1, False),  # (CPython runs the handler when it is collected)
    (lambda x: next(_guarded(x)) + 1, False),  # (and a finally)
], ids=["sequence-zip", "sequence-next", "except-other", "except-base", "finally"])
def test_generator_left_suspended(consumer, traced):
    check(_logged(consumer), _t(1, 2), expect_traced=traced, captured=traced)
