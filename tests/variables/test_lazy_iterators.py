"""map, filter, zip and itertools iterators returned from a compiled function or alive at a graph
break: rebuilt as the real objects over the real iterators, at the positions the trace left them."""

import itertools

import torch

import symexec
from helpers import check, symexec_graphs


def _t(*shape):
    return torch.randn(*shape) if shape else torch.randn(3)


def _drained(result):
    """The result with each iterator in it replaced by its type and remaining items."""
    if isinstance(result, tuple):
        return tuple(_drained(r) for r in result)
    if hasattr(result, "__next__"):
        return type(result), list(result)
    return result


def _check_returned(fn, *args, captured=True):
    check(lambda *a: _drained(fn(*a)), *args, captured=captured)
    assert symexec_graphs(fn, *args)[1].graph_count <= 1
    compiled = symexec.compile(fn, fullgraph=True)
    assert _drained(compiled(*args)) is not None


def test_map_filter_zip_returned():
    _check_returned(lambda a, b: map(lambda x: x + 1, [a, b]), _t(), _t())
    _check_returned(lambda a: (map(lambda x: x[0] + x[1], zip([1, 2, 3], [1, 2, 3])), a + 1), _t())
    _check_returned(lambda a: (filter(lambda x: x[0] + x[1] < 5, zip([1, 2, 3], [1, 2, 3])), a + 1), _t())
    _check_returned(lambda a: (zip([1, 2, 3], map(lambda x: x + 1, [1, 2, 3])), a + 1), _t())


def test_map_over_lists_passed_in():
    def f(a, b):
        return a[0] * b[0] + a[1] * b[1]

    def g(x, y):
        return map(f, x, y)

    _check_returned(g, [_t(2) for _ in range(3)], [_t(2) for _ in range(3)])
    _check_returned(g, [_t(2) for _ in range(3)], [_t(2) for _ in range(5)])


def test_partly_consumed_map_returned_then_its_list_changed():
    def fn(x, lst):
        m = map(lambda v: v * 2, lst)
        first = next(m)
        return first + x, m

    def use(x, lst):
        first, m = fn(x, lst)
        lst.append(x)  # the real map sees the change: it iterates the list itself
        return first, list(m)

    compiled = symexec.compile(fn)
    for x, lst in ([_t(), [_t(), _t()]], [_t(), [_t(), _t(), _t()]]):
        expected = use(x, list(lst))
        first, m = compiled(x, lst)
        lst.append(x)
        torch.testing.assert_close((first, list(m)), expected)


def test_itertools_returned():
    def fn(a):
        it1 = itertools.repeat(1)
        it2 = itertools.count(2)
        it3 = itertools.repeat(a, 5)
        for _ in range(3):
            a = a + next(it1) + next(it2) + next(it3)
        return it1, it2, it3, a

    compiled = symexec.compile(fn, fullgraph=True)
    i1, i2, i3, a = fn(torch.ones(3))
    j1, j2, j3, b = compiled(torch.ones(3))
    assert (type(j1), type(j2), type(j3)) == (itertools.repeat, itertools.count, itertools.repeat)
    assert [next(i1) for _ in range(3)] == [next(j1) for _ in range(3)]
    assert [next(i2) for _ in range(3)] == [next(j2) for _ in range(3)]
    assert len(list(i3)) == len(list(j3)) == 2
    torch.testing.assert_close(a, b)


def test_compress_returned():
    _check_returned(lambda: itertools.compress("ABCDEF", [1, 0, 1, 0, 1, 1]), captured=False)
    _check_returned(lambda x: (itertools.compress([x, x + 1, x + 2], [1, 0, 1]), x * 2), _t())
