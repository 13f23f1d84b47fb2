"""itertools' iterators (itertools_objects.py): their items, the order in which they take items
and call the callables they are given (lazy, as CPython's), the errors of a wrong call, and
graph counts against torch.compile."""

import itertools
import operator

import pytest
import torch

from helpers import assert_same_graphs_as_dynamo, check, symexec_graphs


def _t(*shape):
    return torch.randn(*shape)


def _logged(log):
    def f(v):
        log.append(v)
        return v * 2
    return f


CASES = {
    "repeat": lambda x: ([x * v for v in itertools.repeat(2, 3)], list(zip("ab", itertools.repeat(x))),
                         list(itertools.repeat(x, -1))),
    "count": lambda x: (list(zip("abc", itertools.count())), list(zip("ab", itertools.count(2.5, -1))), x + 1),
    "cycle": lambda x: [x * v for _, v in zip(range(5), itertools.cycle([1, 2]))] + list(itertools.cycle([])),
    "chain": lambda x: (list(itertools.chain([x, 1], (2, 3), "ab")), list(itertools.chain.from_iterable([[x], [2, 3]])),
                        x + 1),
    "product": lambda x: ([a * b * x for a, b in itertools.product([1, 2], [3, 4])],
                          list(itertools.product("ab", repeat=2))),
    "accumulate": lambda x: (list(itertools.accumulate([x, x, x])),
                             list(itertools.accumulate([1, 2, 3], operator.mul, initial=2)),
                             list(itertools.accumulate([], initial=x))),
    "islice": lambda x: (list(itertools.islice([x, 1, 2, 3, 4], 1, 4, 2)), list(itertools.islice(itertools.count(), 3)),
                         list(itertools.islice("abcdef", 2, None)), list(itertools.islice("abc", None)), x + 1),
    "zip_longest": lambda x: (list(itertools.zip_longest([x, 1], [2], fillvalue=0)), list(itertools.zip_longest()),
                              list(itertools.zip_longest("a", "bcd")), x + 1),
    "combinatorics": lambda x: (list(itertools.permutations([x, 1, 2], 2)), list(itertools.combinations([x, 1, 2], 2)),
                                list(itertools.combinations_with_replacement([1, 2], 2)),
                                list(itertools.permutations("abc")), list(itertools.combinations("ab", 3)), x + 1),
    "groupby": lambda x: ([(k, list(g)) for k, g in itertools.groupby([1, 1, 2, 3, 3], key=lambda v: v % 2)],
                          [k for k, _ in itertools.groupby("aabbbc")], x + 1),
    "groupby_groups_end": lambda x: (x + 1, [list(g) for _, g in list(itertools.groupby("aabbc"))]),
    "tee": lambda x: tuple(map(list, itertools.tee([x + 1, 1, 2]))) + tuple(map(list, itertools.tee("ab", 3))),
    "starmap": lambda x: list(itertools.starmap(operator.mul, [(x, 2), (3, 4)])),
    "takewhile_dropwhile": lambda x: (list(itertools.takewhile(lambda v: v < 3, [1, 2, 3, 1])),
                                      list(itertools.dropwhile(lambda v: v < 3, [1, 2, 3, 1])), x + 1),
    "pairwise_compress_filterfalse": lambda x: (list(itertools.pairwise([x + 1, 1, 2])), list(itertools.pairwise([1])),
                                                list(itertools.compress([x, 1, 2], [1, 0, 1])),
                                                list(itertools.filterfalse(None, [0, 1, 2, ()])),
                                                list(itertools.filterfalse(lambda v: v > 1, [0, 1, 2]))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_itertools(name):
    check(CASES[name], _t(3))


# (torch.compile returns a groupby's groups read after the groupby moved on with their items, where
# CPython's are empty: its result differs from eager's, so no graph count to compare)
@pytest.mark.parametrize("name", sorted(set(CASES) - {"groupby_groups_end"}))
def test_itertools_graphs_as_dynamo(name):
    assert_same_graphs_as_dynamo(CASES[name], _t(3))


def test_callables_run_when_items_are_asked_for():
    def fn(x):
        log = []
        acc = itertools.accumulate(map(_logged(log), [1, 2, 3]))
        first = next(acc)
        seen = list(log)
        taken = list(itertools.takewhile(lambda v: v < 4, map(_logged(log), [1, 2, 3, 4])))
        return x + first, seen, taken, list(log)

    check(fn, _t(3))


def test_groupby_group_read_after_the_next_group():
    def fn(x):
        groups = itertools.groupby([1, 1, 2])
        _, first = next(groups)
        head = next(first)
        _, second = next(groups)
        return x + head, list(first), list(second)  # (the first group ended when the second was asked for)

    check(fn, _t(3))


def test_islice_and_zip_longest_take_as_cpython_does():
    def fn(x):
        source = iter([1, 2, 3, 4, 5, 6])
        part = list(itertools.islice(source, 1, 3))
        rest = list(source)  # islice took no item past its stop
        a, b = iter([1]), iter([2, 3])
        rows = list(itertools.zip_longest(a, b))
        return x + 1, part, rest, rows

    check(fn, _t(3))


def test_itertools_of_a_user_iterator_loop_stopping_early():
    class Counter:
        def __init__(self):
            self.i = 0

        def __iter__(self):
            return self

        def __next__(self):
            self.i += 1
            return self.i

    def fn(x):
        c = Counter()
        for v in itertools.chain([0], c):
            if v == 3:
                break
        return x + v, c.i

    check(fn, _t(3))


def test_wrong_calls_raise_as_eager():
    def fn(x):
        out = []
        for thunk in (lambda: itertools.islice([1], -1), lambda: itertools.repeat(),
                      lambda: itertools.permutations([1], -1), lambda: itertools.combinations([1]),
                      lambda: itertools.count("a"), lambda: itertools.tee([1], -1),
                      lambda: itertools.islice([1], 0, 1, 0)):
            try:
                thunk()
            except (TypeError, ValueError) as e:
                out.append((type(e).__name__, str(e)))
        return x + 1, out

    check(fn, _t(3))


def _islice_at_break(x):
    it = itertools.islice(x, 2, 5, 2)
    print("break")
    return type(it), list(it), x + 1


def _zip_longest_at_break(x):
    it = itertools.zip_longest((x, 1), "abc")
    next(it)
    print("break")
    return type(it), list(it), x + 1


def _chain_at_break(x):
    it = itertools.chain((x,), (1, 2), "ab")
    next(it)
    print("break")
    return type(it), list(it), x + 1


def _chain_of_a_list_changed_after_the_break(x):
    items = [1]
    it = itertools.chain((x,), items)
    next(it)
    print("break")
    items.append(2)
    return list(it), x + 1


def _pairwise_at_break(x):
    it = itertools.pairwise((x, 1, 2))
    print("break")
    return type(it), list(it), x + 1


@pytest.mark.parametrize("fn", [_islice_at_break, _zip_longest_at_break, _chain_at_break, _pairwise_at_break],
                         ids=lambda fn: fn.__name__)
def test_rearranging_iterators_rebuilt_with_their_type_at_a_graph_break(fn):
    # Taking their items runs nothing: taken at the break, the iterator is rebuilt over those
    # still to come, with its own type (torch.compile runs these frames eagerly).
    check(fn, torch.randn(6))


def test_chain_of_a_list_changed_after_the_break():
    # The list is iterated when the chain reaches it, after the break: the items cannot be taken
    # at the break; the frame runs as its code (exact).
    check(_chain_of_a_list_changed_after_the_break, torch.randn(6), expect_traced=False)


def test_chain_from_iterable_read_from_the_class():
    def fn(a, b):
        v = a
        for x in itertools.chain.from_iterable([[a, b], [1, 2]]):
            v = v + x
        return v

    check(fn, torch.randn(3), torch.randn(3))
    assert symexec_graphs(fn, torch.randn(3), torch.randn(3))[1].graph_count == 1
