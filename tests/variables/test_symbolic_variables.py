"""Symbolic ints and dynamic shapes (SPEC section 5): automatic dynamic, dynamic=True, and the
results staying equal to eager across the recompiles."""

import torch

import symexec
from helpers import CountingBackend, check, check_sequence, run_both


def _t(*shape):
    return torch.randn(*shape)


def _branchy(x, n):
    if n >= 0:
        return (n + 1) * x
    return x - n


def _placeholders(gm):
    return [n for n in gm.graph.nodes if n.op == "placeholder"]


def test_int_changing_becomes_symbolic_and_is_reused():
    compiled = symexec.compile(_branchy)
    x = _t(3)
    for n in (2, 3, 4):
        assert torch.equal(compiled(x, n), _branchy(x, n))
    entries = symexec.cache_entries(compiled)
    assert len(entries) == 2, [e.fallback_reason for e in entries]
    # the symbolic graph takes n as an input, the first one does not
    assert len(_placeholders(entries[0].graph)) == 2
    assert len(_placeholders(entries[1].graph)) == 1


def test_negative_int_takes_other_branch_with_its_own_graph():
    compiled = symexec.compile(_branchy)
    x = _t(3)
    for n in (2, 3, -2, 4, -5):
        assert torch.equal(compiled(x, n), _branchy(x, n)), n
    assert len(symexec.cache_entries(compiled)) == 3


def test_symbolic_int_guard_mentions_the_branch():
    compiled = symexec.compile(_branchy)
    x = _t(3)
    compiled(x, 2)
    compiled(x, 3)
    texts = [g.text for g in symexec.cache_entries(compiled)[0].guards]
    assert any("L['n']" in t and "0" in t for t in texts), texts


def test_symbolic_int_in_python_arithmetic_and_result():
    def fn(x, n):
        m = n * 2 + 1
        return x * m, m

    compiled = symexec.compile(fn)
    x = _t(2)
    for n in (1, 2, 5):
        out, m = compiled(x, n)
        assert m == 2 * n + 1 and type(m) is int
        assert torch.equal(out, x * m)


def test_symbolic_int_in_range_loop_specialises_safely():
    def fn(x, n):
        for i in range(n):
            x = x + i
        return x

    compiled = symexec.compile(fn)
    x = _t(2)
    for n in (1, 2, 3, 2):
        assert torch.allclose(compiled(x, n), fn(x, n))


def test_dynamic_first_dimension_recompiles_once():
    def fn(a, b):
        return a.shape[0] * a * b

    backend = CountingBackend()
    compiled = symexec.compile(fn, backend=backend)
    for size in (2, 3, 4, 7):
        a, b = _t(size, 3), _t(size, 3)
        assert torch.allclose(compiled(a, b), fn(a, b))
    assert len(symexec.cache_entries(compiled)) == 2
    assert backend.graph_count == 2


def test_size_made_of_symbolic_sizes_stays_dynamic():
    # torch.Size([n, 3]) of a symbolic n is a Size of it, not the value n had (linear_operator)
    def fn(x):
        shape = torch.Size([x.shape[0], 3])
        return x.new_zeros(shape) + x, torch.Size((x.shape[0] * 2,)), x.expand(torch.Size([2, *x.shape]))

    backend = CountingBackend()
    compiled = symexec.compile(fn, backend=backend)
    for size in (2, 3, 4, 7):
        x = _t(size, 3)
        expected, actual = fn(x), compiled(x)
        assert actual[1] == expected[1] and type(actual[1]) is torch.Size
        assert torch.equal(actual[0], expected[0]) and torch.equal(actual[2], expected[2])
    assert backend.graph_count == 2


def test_dynamic_shape_guards():
    def fn(a, b):
        return a.shape[0] * a * b

    compiled = symexec.compile(fn)
    compiled(_t(2, 3), _t(2, 3))
    compiled(_t(3, 3), _t(3, 3))
    texts = [g.text for g in symexec.cache_entries(compiled)[0].guards]
    assert "L['b'].size()[0] == L['a'].size()[0]" in texts, texts
    assert "2 <= L['a'].size()[0]" in texts, texts


def test_size_one_stays_specialised():
    def fn(a):
        return a * 2

    compiled = symexec.compile(fn)
    for size in (2, 3, 1):
        a = _t(size, 2)
        assert torch.equal(compiled(a), a * 2)
    assert len(symexec.cache_entries(compiled)) == 3


def test_dynamic_true_from_first_call():
    def fn(a):
        if a.shape[0] * 2 < 16:
            return a + 1
        return a - 1

    compiled = symexec.compile(fn, dynamic=True)
    for size in (8, 9, 12):
        a = _t(size)
        assert torch.equal(compiled(a), a - 1)
    assert len(symexec.cache_entries(compiled)) == 1
    a = _t(3)
    assert torch.equal(compiled(a), a + 1)
    assert len(symexec.cache_entries(compiled)) == 2


def test_view_with_symbolic_size():
    def fn(x):
        n = x.shape[0]
        return x.view(n, -1).sum(1), x.reshape(-1)[: n * 2]

    compiled = symexec.compile(fn)
    for size in (2, 3, 5):
        x = _t(size, 4)
        e, c = fn(x), compiled(x)
        assert torch.allclose(e[0], c[0]) and torch.equal(e[1], c[1])


def test_shape_returned_as_python_ints_after_dynamic():
    def fn(x):
        return x.shape[0], tuple(x.shape), x.size(1)

    compiled = symexec.compile(fn)
    for size in (2, 3, 4):
        x = _t(size, 5)
        out = compiled(x)
        assert out == (size, (size, 5), 5)
        assert type(out[0]) is int


def test_new_int_after_check_adds_one_entry():
    compiled = check(_branchy, _t(3), 2)
    x = _t(3)
    assert torch.equal(compiled(x, 3), _branchy(x, 3))
    assert len(symexec.cache_entries(compiled)) == 2


def test_value_methods_of_dynamic_numbers():
    for method, kind in (("as_integer_ratio", int), ("bit_length", int), ("conjugate", int), ("as_integer_ratio", float),
                         ("conjugate", float), ("hex", float), ("is_integer", float)):
        def forward(t, m, method=method):
            value = getattr(m, method)()
            return (2 * t if value else t), value

        check_sequence(forward, *[[torch.tensor([1]), kind(i)] for i in (0, 1, 2.5, 3)], dynamic=True)


def test_an_ints_ratio_reads_no_value():
    # (m, 1): a dynamic int's as_integer_ratio() specialised it, one graph per value
    # (PyTorch's test_number_method); as many graphs as torch.compile.
    def forward(t, m):
        return 2 * t if m.as_integer_ratio() else t, m.as_integer_ratio()

    calls = [(torch.tensor([1]), m) for m in (0, 1, 2, 5)]
    _, ours, theirs = run_both(forward, calls)
    assert ours.graph_count == theirs.graph_count == 2


def _pack(x):
    shapes = [x.shape[1:]]

    def unpack(y):
        return y.reshape(y.shape[0], *shapes[0])
    return x.flatten(1), unpack


def _packed_around_a_break(x):
    flat, unpack = _pack(x)
    torch._dynamo.graph_break()  # the continuation gets `unpack`, its closure holding sizes
    return unpack(flat * 2)


def test_sizes_in_the_closure_of_a_function_passed_on_become_symbolic():
    # A continuation's input made before the break (einops' pack/unpack): the ints in its
    # closure cells change with the input's size and turn dynamic as the input's do; the
    # third size reuses the second's entries (torch.compile's count).
    from helpers import run_both
    backend = CountingBackend()
    compiled = symexec.compile(_packed_around_a_break, backend=backend)
    counts = []
    for n in (4, 6, 9):
        before = backend.graph_count
        x = _t(2, n, 3)
        assert torch.equal(compiled(x), _packed_around_a_break(x))
        counts.append(backend.graph_count - before)
    assert counts[2] == 0
    _, ours, theirs = run_both(_packed_around_a_break, [(_t(2, n, 3),) for n in (4, 6, 9)])
    assert ours.graph_count <= theirs.graph_count


def test_membership_of_a_symbolic_size_in_a_list_does_not_specialise():
    # `-1 in shape` (einops' unpack) compares: a condition on the size, not its value.
    def fn(x, n):
        shape = [x.shape[0], n]
        return x * (2 if -1 in shape else 3) + (x.shape[0] in [5, 7])
    compiled = check_sequence(fn, [_t(4), 2], [_t(6), 3], [_t(8), 4])
    assert len(symexec.cache_entries(compiled)) == 2  # static, then dynamic: no size kept as a value
    check_sequence(fn, [_t(4), 2], [_t(6), 3], [_t(5), -1], [_t(7), 4], [_t(8), -1])


def test_membership_of_symbolic_sizes_among_other_types():
    def fn(x, n):
        m = x.shape[0]
        return x + ("a" in [m]) + (None in [n, m]) + (1.5 in [m]) + (m in [None, "x", 3]) + (n in (m, 2)) + (m in [n])
    check_sequence(fn, [_t(4), 2], [_t(5), 3], [_t(6), 6], [_t(3), 7])
