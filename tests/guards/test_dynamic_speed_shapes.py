"""The savings of issue 12 on dynamic traces, each against eager (and torch.compile's count of
graphs where it decides): ``dynamic=True`` sizes share a symbol per value (duck sizing, as
torch.compile), an input's metadata is re-checked without fake ops, and the fake tensor
dispatch cache is off on symbolic traces. Speed itself is never asserted."""

from __future__ import annotations

import torch
import torch._dynamo
from helpers import assert_same, check_sequence, run_both

import symexec


def branch_on_equal_sizes(a, b):
    if a.shape[0] == b.shape[0]:
        return a + b
    return a.sum() + b.sum()


def test_sizes_sharing_a_symbol_are_guarded_equal():
    """Equal sizes share one symbol under dynamic=True: the branch on their equality is decided
    without a guard of its own, so the sharing itself must be guarded (a later call with
    different sizes retraces and takes the other branch)."""
    calls = [[torch.randn(5, 3), torch.randn(5, 3)], [torch.randn(6, 3), torch.randn(5, 3)],
             [torch.randn(7, 3), torch.randn(7, 3)], [torch.randn(4, 3), torch.randn(9, 3)]]
    check_sequence(branch_on_equal_sizes, *calls, dynamic=True)


def test_equal_sizes_of_different_dims_share_a_symbol_soundly():
    """A row count equal to another tensor's column count: one symbol, guarded equal."""
    def fn(a, w):
        if a.shape[0] == w.shape[1]:
            return a @ w @ a
        return (a @ w).sum(0)

    calls = [[torch.randn(4, 6), torch.randn(6, 4)], [torch.randn(5, 6), torch.randn(6, 4)],
             [torch.randn(5, 6), torch.randn(6, 5)], [torch.randn(3, 6), torch.randn(6, 7)]]
    check_sequence(fn, *calls, dynamic=True)


def test_duck_sizing_recompiles_as_torch_compile_does():
    def fn(a, b):
        return a.sum() * b.sum()

    calls = [(torch.randn(5, 3), torch.randn(5, 2)), (torch.randn(6, 3), torch.randn(6, 2)),
             (torch.randn(6, 3), torch.randn(7, 2)), (torch.randn(8, 3), torch.randn(9, 2))]
    _, ours, theirs = run_both(fn, calls, dynamic=True)
    assert ours.graph_count == theirs.graph_count


def test_automatic_dynamic_sizes_keep_symbols_of_their_own():
    """A size that changed between calls is a symbol of its own (not shared with an equal
    one), as under torch.compile: no recompile when the two then differ."""
    def fn(a, b):
        return a.sum(0) + b.sum(0)

    calls = [(torch.randn(4, 3), torch.randn(4, 3)), (torch.randn(5, 3), torch.randn(5, 3)),
             (torch.randn(6, 3), torch.randn(7, 3)), (torch.randn(2, 3), torch.randn(9, 3))]
    _, ours, theirs = run_both(fn, calls)
    assert ours.graph_count <= theirs.graph_count


def run_marked(fn, calls, mark):
    """``fn`` compiled with dynamic=True, called on each argument list after ``mark`` (marks
    do not survive the copies check_sequence makes), each result compared with eager."""
    compiled = symexec.compile(fn, backend="eager", dynamic=True)
    for args in calls:
        mark(*args)
        assert_same(fn(*args), compiled(*args))
    return compiled


def test_marked_dynamic_dims_keep_symbols_of_their_own():
    """Equal sizes marked dynamic are two symbols (as torch.compile): no recompile when they
    then differ."""
    def fn(a, b):
        return a.sum(0) + b.sum(0)

    def mark(a, b):
        symexec.mark_dynamic(a, 0)
        symexec.mark_dynamic(b, 0)

    calls = [(torch.randn(5, 3), torch.randn(5, 3)), (torch.randn(6, 3), torch.randn(8, 3))]
    compiled = run_marked(fn, calls, mark)
    assert len(symexec.cache_entries(compiled)) == 1


def test_mark_static_wins_over_dynamic_true():
    def fn(a):
        return a * a.shape[1]

    calls = [(torch.randn(5, 3),), (torch.randn(6, 3),), (torch.randn(6, 4),)]
    compiled = run_marked(fn, calls, lambda a: symexec.mark_static(a, 1))
    assert len(symexec.cache_entries(compiled)) == 2


def test_input_unchanged_in_place_keeps_its_own_metadata_for_guards():
    """Guards are made on the input itself when its metadata did not change (a size read
    twice is two SymInt objects around one node); the entry is reused for other sizes and a
    change of rank retraces."""
    def fn(x):
        return x.reshape(x.shape[0], -1).sum(1) / x.shape[1]

    compiled = check_sequence(fn, *[[torch.randn(n, 3, 5)] for n in (2, 4, 6)], [torch.randn(4, 3)],
                              dynamic=True)
    assert len(symexec.cache_entries(compiled)) == 2


def test_repeated_ops_on_symbolic_sizes_without_the_dispatch_cache():
    """The same op on the same symbolic sizes many times (what the fake tensor cache would
    have served): the right shapes every time, one graph for every size."""
    layer = torch.nn.Sequential(*[torch.nn.Linear(8, 8) for _ in range(4)])

    def fn(x):
        for module in layer:
            x = torch.relu(module(x)) + x
        return x.reshape(-1, 4).mean(0)

    with torch.no_grad():
        compiled = check_sequence(fn, *[[torch.randn(n, 8)] for n in (3, 5, 7, 9)])
    assert len(symexec.cache_entries(compiled)) == 2


def test_a_static_trace_after_a_symbolic_one_still_uses_the_dispatch_cache():
    """Turning the cache off is per trace (per fake mode): a static trace of another function
    afterwards computes the same results."""
    def dyn(x):
        return (x * 2).sum(0)

    def static(x):
        return (x * 2).sum(0)

    check_sequence(dyn, [torch.randn(3, 4)], [torch.randn(5, 4)], dynamic=True)
    check_sequence(static, [torch.randn(3, 4)], [torch.randn(3, 4)], dynamic=False)
