"""SPEC §5: symbolic ints and dynamic shapes, against eager and torch.compile's trace count."""

from __future__ import annotations

import operator
import time
import warnings

import pytest
import torch
import torch._dynamo
from helpers import CountingBackend, assert_same, check_sequence, run_both

import symexec


def branch_on_n(x, n):
    y = x ** 2
    if n >= 0:
        return (n + 1) * y
    return y / n


def test_int_becomes_symbolic_on_change_and_is_reused():
    x = torch.randn(3)
    compiled, ours, theirs = run_both(branch_on_n, [(x, 2), (x, 3), (x, -2), (x, 4)])
    assert ours.graph_count == theirs.graph_count == 3
    entries = symexec.cache_entries(compiled)
    assert len(entries) == 3
    second = ours.graphs[1]
    placeholders = [n for n in second.graph.nodes if n.op == "placeholder"]
    assert [n.name for n in placeholders] == ["l_x_", "l_n_"]
    assert isinstance(placeholders[1].meta["example_value"], torch.SymInt)
    calls = [n for n in second.graph.nodes if n.op == "call_function"]
    assert [n.target for n in calls] == [operator.pow, operator.add, operator.mul]
    add, mul = calls[1], calls[2]
    assert add.args == (placeholders[1], 1) and mul.args[0] is add
    assert "Sym(" in second.print_readable(print_output=False)
    texts = [g.text for g in entries[1].guards]
    assert "0 <= L['n']" in texts and "type(L['n']) is int" in texts
    assert "L['n'] <= -1" in [g.text for g in entries[0].guards]


def scaled_by_rows(a, b):
    return a.shape[0] * a * b


def test_first_dimension_becomes_dynamic_on_change():
    calls = [(torch.randn(s, 3), torch.randn(s, 3)) for s in (4, 8, 16)]
    compiled, ours, theirs = run_both(scaled_by_rows, calls)
    assert ours.graph_count == theirs.graph_count == 2
    gm = ours.graphs[1]
    code = gm.code
    assert "l_a_.size()" in code and "getitem" in code
    sizes = [n.target for n in gm.graph.nodes if n.op == "call_method"]
    assert sizes == ["size"]
    texts = [g.text for g in symexec.cache_entries(compiled)[0].guards]
    assert "L['b'].size()[0] == L['a'].size()[0]" in texts
    assert "2 <= L['a'].size()[0]" in texts


def _column(width):
    x = torch.randn(4, width)
    return x if width == 1 else x[:, 0:1]  # a (4, 1) view whose row stride is the width


def test_a_stride_seen_changing_becomes_symbolic():
    # As torch.compile's automatic dynamic: a column sliced from ever wider tensors compiled a
    # graph per width (PyTorch's test_changing_stride); the second trace's stride is a symbol.
    def fn(x, y):
        return x * y

    calls = [(_column(w), torch.randn(4, 1)) for w in (1, 2, 3, 5)]
    compiled, ours, theirs = run_both(fn, calls)
    assert ours.graph_count == theirs.graph_count == 2
    texts = [g.text for g in symexec.cache_entries(compiled)[0].guards]
    assert "2 <= L['x'].stride()[0]" in texts and "L['x'].size()[1] == 1" in texts
    # (a transposed and a contiguous input of the same sizes still run their own entries)
    check_sequence(fn, [_column(3), torch.randn(4, 1)], [_column(2), torch.randn(4, 1)],
                   [torch.randn(1, 4).t(), torch.randn(4, 1)], [torch.randn(4, 1), torch.randn(4, 1)])


def rows_branch(a):
    if a.shape[0] * 2 < 16:
        return a + 1
    return a - 1


def test_dynamic_true_guards_the_symbolic_condition():
    compiled, ours, theirs = run_both(rows_branch, [(torch.randn(8, 3),)], dynamic=True)
    assert ours.graph_count == theirs.graph_count == 1
    placeholder = next(n for n in ours.graphs[0].graph.nodes if n.op == "placeholder")
    assert all(isinstance(d, torch.SymInt) for d in placeholder.meta["example_value"].shape)
    assert "8 <= L['a'].size()[0]" in [g.text for g in symexec.cache_entries(compiled)[0].guards]
    for size, retrace in ((16, False), (9, False), (4, True), (7, False), (3, False)):
        before = len(symexec.cache_entries(compiled))
        a = torch.randn(size, 3)
        assert torch.equal(compiled(a), rows_branch(a))
        assert len(symexec.cache_entries(compiled)) == before + retrace


def test_dynamic_false_never_goes_symbolic():
    x = torch.randn(3)
    compiled, ours, theirs = run_both(branch_on_n, [(x, n) for n in (2, 3, 5)], dynamic=False)
    assert ours.graph_count == theirs.graph_count == 3
    assert all(not any(isinstance(n.meta.get("example_value"), torch.SymInt) for n in gm.graph.nodes)
               for gm in ours.graphs)


@pytest.mark.parametrize("dynamic", [None, True])
def test_size_sweep_equals_eager_and_never_runs_a_wrong_graph(dynamic):
    def fn(a, k):
        rows = a.shape[0]
        out = a.reshape(rows, a.shape[1]).sum(1)
        if rows > 5:
            out = out * k
        return out[: rows // 2] + torch.ones(rows // 2), a.size(1) * 2

    compiled = symexec.compile(fn, dynamic=dynamic)
    for rows in (1, 2, 3, 4, 6, 7, 10, 6, 2, 0, 1, 13):
        for k in (1, 2, 3, -1):
            a = torch.randn(rows, 4)
            assert_same(fn(a, k), compiled(a, k))


def test_int_sweep_equals_eager():
    def fn(x, n, m):
        y = x.repeat(max(n, 1))
        total = x.sum() * n + m
        return y, total, n * m, n // 3, -n

    compiled = symexec.compile(fn)
    x = torch.randn(2)
    for n in (0, 1, 2, 5, 7, 2, -3, 11):
        for m in (1, 4, 9):
            assert_same(fn(x, n, m), compiled(x, n, m))


@pytest.mark.parametrize("sizes", [(0, 3, 5), (1, 3, 5), (3, 1, 5)])
def test_sizes_zero_and_one_specialise_like_torch_compile(sizes):
    calls = [(torch.randn(s, 2),) for s in sizes]
    _, ours, theirs = run_both(lambda a: a * 2 + a.shape[0], calls)
    assert ours.graph_count == theirs.graph_count


@pytest.mark.parametrize("ints", [(0, 5, 6), (1, 5, 6), (5, 0, 1, 6)])
def test_ints_zero_and_one_specialise_like_torch_compile(ints):
    x = torch.randn(2)
    _, ours, theirs = run_both(lambda x, n: x * n, [(x, n) for n in ints])
    assert ours.graph_count == theirs.graph_count


def test_symbolic_sizes_in_torch_calls_slices_and_range():
    def fn(a, n):
        rows = a.size(0)
        out = torch.zeros(rows, n) + a[:, :1]
        out = out.view(rows * n).expand(2, rows * n)
        acc = torch.arange(rows)
        for i in range(n):
            acc = acc + i
        return out[:, : rows - 1], acc, torch.full((rows,), 3.0), a.numel(), len(a), a.dim()

    compiled = symexec.compile(fn)
    for rows, n in ((4, 2), (6, 3), (9, 3), (9, 4)):
        a = torch.randn(rows, 3)
        assert_same(fn(a, n), compiled(a, n))


def test_mark_dynamic_and_mark_static():
    backend = CountingBackend()
    compiled = symexec.compile(lambda a: a.sum(0) * a.shape[0], backend=backend)
    a = torch.randn(5, 3)
    symexec.mark_dynamic(a, 0)
    compiled(a)
    example = next(n for n in backend.graphs[0].graph.nodes if n.op == "placeholder").meta["example_value"]
    assert isinstance(example.shape[0], torch.SymInt) and example.shape[1] == 3
    b = torch.randn(7, 3)
    assert torch.allclose(compiled(b), b.sum(0) * 7)
    assert backend.graph_count == 1

    symexec.reset()
    static = CountingBackend()
    compiled = symexec.compile(lambda a: a + 1, backend=static, dynamic=True)
    c = torch.randn(5, 3)
    symexec.mark_static(c, 0)
    compiled(c)
    example = next(n for n in static.graphs[0].graph.nodes if n.op == "placeholder").meta["example_value"]
    assert example.shape[0] == 5 and isinstance(example.shape[1], torch.SymInt)

    with pytest.raises(ValueError, match="out of range"):
        symexec.mark_dynamic(torch.randn(2), 3)
    with pytest.raises(TypeError, match="takes a tensor"):
        symexec.mark_static([1, 2], 0)


def test_dynamic_shapes_through_aot_eager():
    compiled = symexec.compile(scaled_by_rows, backend="aot_eager")
    for s in (4, 8, 16, 5):
        a, b = torch.randn(s, 3), torch.randn(s, 3)
        assert torch.allclose(compiled(a, b), scaled_by_rows(a, b))
    assert len(symexec.cache_entries(compiled)) == 2


def test_graph_sizes_log(capfd):
    symexec.set_logs("graph_sizes")
    try:
        compiled = symexec.compile(scaled_by_rows)
        for s in (4, 8):
            compiled(torch.randn(s, 3), torch.randn(s, 3))
    finally:
        symexec.set_logs(None)
    err = capfd.readouterr().err
    assert "l_a_: (4, 3)" in err
    assert "l_a_ (concrete): (8, 3)" in err
    assert "l_a_: (s" in err


def test_recompile_reason_names_the_shape_guard():
    compiled = symexec.compile(rows_branch, dynamic=True)
    compiled(torch.randn(8, 3))
    compiled(torch.randn(4, 3))
    assert symexec.recompile_reasons(compiled) == ["0: 8 <= L['a'].size()[0]"]


# -- sizes that must stay symbolic (issue 11): min/max of sizes, a Size across a break ------------
def min_of_sizes(x):
    n = min(x.shape[0], x.shape[1])
    return x[:n, :n] * 2 + max(x.shape[0], 3)


def size_across_a_break(x):
    s = x.shape
    time.time()  # a graph break in both: the Size is live across it
    return x.reshape(s[0] * s[1]) + s[1]


def sqrt_of_a_size(x):
    k = int(x.shape[1] ** 0.5)
    return x[:, :k] + k


SQUARES = [(4, 9), (5, 16), (6, 25), (7, 36)]


@pytest.mark.parametrize("fn", [min_of_sizes, size_across_a_break, sqrt_of_a_size])
@pytest.mark.parametrize("dynamic", [None, True], ids=["automatic", "dynamic"])
def test_sizes_stay_symbolic_like_torch_compile(fn, dynamic):
    calls = [(torch.randn(*shape),) for shape in SQUARES]
    _, ours, theirs = run_both(fn, calls, dynamic=dynamic)
    assert ours.graph_count <= theirs.graph_count


def test_a_size_argument_is_ints_of_the_inputs():
    def fn(x, size):
        return x.new_zeros(size) + size[0]

    calls = [(torch.randn(2), torch.Size([n, 3])) for n in (2, 3, 4, 5)]
    _, ours, theirs = run_both(fn, calls)
    assert ours.graph_count <= theirs.graph_count


def numel_of_a_size(x):
    return x.flatten()[: x.shape.numel() - 1] * x.shape[1:].numel()


def test_numel_of_a_symbolic_size_stays_symbolic():
    calls = [(torch.randn(n, 3),) for n in (2, 3, 4, 5)]
    _, ours, theirs = run_both(numel_of_a_size, calls, dynamic=True)
    assert ours.graph_count <= theirs.graph_count == 1


@pytest.mark.parametrize("change", [lambda x: x.resize_(x.shape[0] * x.shape[1], 1), lambda x: x.transpose_(0, 1),
                                    lambda x: x.unsqueeze_(0)], ids=["resize_", "transpose_", "unsqueeze_"])
def test_input_metadata_changed_in_place_keeps_its_guards(change):
    """The shape guards are on the input as it came in, not as the function left it (an
    internal error on resize_ of a dynamic input)."""
    def fn(x):
        change(x)
        return x * 2

    compiled = check_sequence(fn, *[[torch.randn(n, 3)] for n in (2, 3, 4)], dynamic=True)
    assert len(symexec.cache_entries(compiled)) == 1


# -- found by HF generate() compiled whole (issue 19): sizes specialised where torch.compile's stay symbolic


def _shapes_compared(x, m):
    if x.shape[:2] != m.shape[:2]:
        return x - 1
    if list(x.shape) == [2, x.shape[1]]:
        return x + 1
    return x * 2


def test_comparing_shapes_keeps_them_symbolic():
    # `==` of two tuples or lists of sizes specialised every size to its value (asking whether
    # a list was a constant made its symbolic items constants, and the fold compared values):
    # each new length retraced. Now item by item, guarded on the relation (s0 == s1).
    calls = [(torch.ones(2, n), torch.ones(2, n)) for n in (8, 12, 5, 7)] + [(torch.ones(2, 6), torch.ones(2, 7))]
    _, ours, theirs = run_both(_shapes_compared, calls)
    assert ours.graph_count <= theirs.graph_count, (ours.graph_count, theirs.graph_count)


class _Config:
    def __init__(self, n):
        self.n = n


def _sliced_by_an_attribute(x, config):
    return x[:, : config.n] * 2


def test_an_int_attribute_of_an_object_becomes_symbolic_when_it_changes():
    # (a generation config's max_length: a new value retraced every time; torch.compile's
    # automatic dynamic makes an object's int attribute symbolic once it changes, as symexec
    # does for arguments; a module's stay specialised)
    calls = [(torch.ones(2, 8), _Config(n)) for n in (3, 4, 5, 2, 6)]
    _, ours, theirs = run_both(_sliced_by_an_attribute, calls)
    assert ours.graph_count <= theirs.graph_count == 2, (ours.graph_count, theirs.graph_count)


class _Shaped:
    def __init__(self, n):
        self.batch_shape = (n, 3)  # (pyro's Distribution._batch_shape, a torch.Size)


def _sliced_by_a_tuple_attribute(x, shaped):
    return x[:, : shaped.batch_shape[0]] * shaped.batch_shape[1]


def test_an_int_in_a_tuple_attribute_of_an_object_becomes_symbolic_when_it_changes():
    # (pyro's third call retraced Distribution._validate_sample on _batch_shape[0]: an item of a
    # tuple attribute stayed specialised where the attribute itself turned symbolic)
    calls = [(torch.ones(2, 8), _Shaped(n)) for n in (3, 4, 5, 2, 6)]
    _, ours, theirs = run_both(_sliced_by_a_tuple_attribute, calls)
    assert ours.graph_count <= theirs.graph_count == 2, (ours.graph_count, theirs.graph_count)


# -- found by TorchBench (issue 19): a loop's index specialised, its continuation retraced every turn


def _set_number(t, i):
    t[i] = 7.0
    return t * 1


def _set_row(t, i):
    t[:, i] = torch.ones(t.shape[-1])
    return t * 1


def _set_block(t, i):
    t[i, None, 1] = torch.full((1, t.shape[-1]), 2.0)
    return t * 1


def _set_column(t, i):
    t[..., i] = torch.zeros(t.shape[0], 1)
    return t * 1


INDEXINGS = {
    "t[i]": lambda t, i: t[i] * 2,
    "t[:, i]": lambda t, i: t[:, i] * 2,
    "t[i, 1:]": lambda t, i: t[i, 1:] + 1,
    "t[..., i]": lambda t, i: t[..., i] - 1,
    "t[None, i, ..., 2]": lambda t, i: t[None, i, ..., 2] * 3,
    "t[-i, :, i]": lambda t, i: t[-i, :, i] * 2,
    "t[i] = 7.0": _set_number,
    "t[:, i] = row": _set_row,
    "t[i, None, 1] = block": _set_block,
    "t[..., i] = column": _set_column,
}


@pytest.mark.parametrize("index", list(INDEXINGS))
def test_a_tensor_indexed_by_a_symbolic_int_keeps_it_symbolic(index):
    # torch's own indexing reads a symbolic int in an int position with __index__: the index
    # specialised, and every new value retraced (Dynamo too, but for a bare `t[i]`). Now the
    # chain of select, slicing and unsqueeze that basic indexing is.
    fn = INDEXINGS[index]
    calls = [(torch.arange(512.).reshape(8, 8, 8), i) for i in (2, 3, 4, 5, 6, 3)]
    _, ours, theirs = run_both(fn, calls)
    assert ours.graph_count <= min(theirs.graph_count, 2), (ours.graph_count, theirs.graph_count)


def test_a_symbolic_index_out_of_range_raises_as_eager():
    fn = INDEXINGS["t[:, i] = row"]
    compiled = check_sequence(fn, *[[torch.zeros(3, 4, 8), i] for i in (2, 3)])
    for i in (4, -5):
        with pytest.raises(IndexError):
            fn(torch.zeros(3, 4, 8), i)
        with pytest.raises(IndexError):
            compiled(torch.zeros(3, 4, 8), i)


def _sum_of_indexed_items(f, ti, tv):
    # (TorchBench's microbench_unbacked_tolist_sum: a break in the loop body; the continuation
    # gets the loop's iterator and reads its next index)
    total = 0
    for i in ti.tolist():
        torch._check(i < tv.size(0))
        total += tv[i].item()
    return f * total


def test_a_loop_continuation_takes_its_index_symbolic():
    # The continuation's next item was guarded by value (peek(L['___stack0'], 0) == 8): it
    # retraced on every turn until the cache limit, then ran uncompiled.
    backend = CountingBackend()
    compiled = symexec.compile(_sum_of_indexed_items, backend=backend)
    args = (torch.randn(1), torch.arange(12, dtype=torch.int32), torch.arange(12, dtype=torch.int32))
    with warnings.catch_warnings():
        warnings.simplefilter("error", symexec.SymexecWarning)  # no cache-limit fallback
        assert_same(_sum_of_indexed_items(*args), compiled(*args))
    assert backend.graph_count <= 6, backend.graph_count


# -- found by HF generate() compiled whole (issue 19): a tensor the trace only passes along


def _passes_a_mask_along(x, kwargs):
    kwargs["out"] = x * 2
    return kwargs


def test_a_tensor_only_passed_along_is_not_guarded_by_its_size():
    # Each tensor reached through a container was a graph input with its tensor guard, used or
    # not: a new prompt length retraced every continuation that held `model_kwargs`. It is now
    # made an input when first read (torch.compile, which mutates the dict too, takes 2).
    calls = [(torch.ones(2), {"mask": torch.ones(n, dtype=torch.int64)}) for n in (8, 12, 5, 7)]
    _, ours, theirs = run_both(_passes_a_mask_along, calls)
    assert ours.graph_count == 1 <= theirs.graph_count, (ours.graph_count, theirs.graph_count)


def _reads_it_sometimes(x, kwargs, use):
    if use == 1:
        return x + kwargs["mask"].sum()
    if use == 2:
        return x * kwargs["mask"].shape[0]
    if use == 3:
        kwargs["mask"].add_(1)
    return x - 1


def test_a_tensor_read_only_on_some_calls_is_guarded_when_read():
    steps = [[torch.ones(2), {"mask": torch.ones(n)}, use] for n, use in
             [(3, 0), (4, 0), (3, 1), (5, 1), (6, 2), (7, 2), (7, 0), (2, 3), (9, 3), (9, 1)]]
    check_sequence(_reads_it_sometimes, *steps)


_RESHAPE_THEN_SLICE = {
    "flat": lambda x: x.reshape(x.shape[0] // 2, 2, -1).flatten()[: x.numel() // 2],
    "outer": lambda x: x.reshape(x.shape[0] // 2, 2, -1)[: x.numel() // 2],
    "inner": lambda x: x.reshape(x.shape[0] // 2, 2, -1)[:, :, : x.numel() // 2],
    "transposed": lambda x: x.reshape(x.shape[0] // 2, 2, -1).transpose(0, 1).flatten()[: x.numel() // 2],
}


@pytest.mark.parametrize("name", list(_RESHAPE_THEN_SLICE))
@pytest.mark.parametrize("shapes", [[(4, 3), (6, 3), (8, 3), (10, 3)], [(4, 3), (6, 5), (8, 7), (10, 9)], [(4,), (6,), (8,)]],
                         ids=["rows", "both", "flat"])
def test_reshape_by_a_size_then_slice_by_numel_recompiles_as_torch_compile(name, shapes):
    # the sizes stay symbolic from the second trace on: no more traces than torch.compile's
    _, ours, theirs = run_both(_RESHAPE_THEN_SLICE[name], [[torch.randn(*s)] for s in shapes])
    assert ours.graph_count == theirs.graph_count


def _formatted_unused(x):
    f"{x.shape[0]}"
    return x.sin()


def _formatted_returned(x):
    return x.sin(), f"{x.shape[0]}", f"{x.shape[1]:>4}", f"{x.shape[0]!r}", f"rows={x.shape[0]}"


def _formatted_compared(x):
    return x + 1 if f"{x.shape[0]}" == "10" else x - 1


def _formatted_printed(x):
    y = x * 2
    print(f"rows={x.shape[0]}, cols={x.shape[1]:>3}")  # (a break: the text is made there)
    return y + 1


@pytest.mark.parametrize("fn, entries", [(_formatted_unused, 1), (_formatted_returned, 1), (_formatted_compared, 3),
                                         (_formatted_printed, 1)])
def test_the_text_of_a_size_is_made_at_run_time(fn, entries):
    # f"{x.shape[0]}" specialised the size even where the text is never used (PyTorch's
    # test_no_guard_for_unused_sym_node_fstring); the text is made from the number when the
    # code runs, and a use while tracing (joined with other text, compared) specialises it then.
    compiled = check_sequence(fn, *[[torch.randn(n, 11)] for n in (10, 9, 11, 10)], dynamic=True)
    assert len(symexec.cache_entries(compiled)) == entries
