"""Guards, sources, the cache and recompilation (SPEC sections 2 and 3), checked on real calls."""

import gc
import operator
import warnings
import weakref

import pytest
import torch

import symexec
from helpers import CountingBackend, check


def _t(*shape):
    return torch.randn(*shape)


def _guard_texts(compiled, index=0):
    return [g.text for g in symexec.cache_entries(compiled)[index].guards]


def test_decorating_compiles_nothing():
    def fn(x):
        return x + 1

    compiled = symexec.compile(fn)
    assert symexec.cache_entries(compiled) == []
    check(fn, _t(2))


def test_string_constant_guard_text():
    def fn(a, b):
        if b == "Hello":
            return a + 1
        return a - 1

    compiled = check(fn, _t(2), "Hello")
    assert "L['b'] == 'Hello'" in _guard_texts(compiled)


def test_list_length_and_item_guards():
    def fn(x, l):
        return x * len(l) if l[0] == "Hi" else x

    compiled = check(fn, _t(2), ["Hi", 3])
    texts = _guard_texts(compiled)
    assert "len(L['l']) == 2" in texts
    assert "L['l'][0] == 'Hi'" in texts


def test_changed_string_recompiles_and_names_guard():
    def fn(a, b):
        if b == "Hello":
            return a + 1
        return a - 1

    compiled = symexec.compile(fn)
    x = _t(2)
    assert torch.equal(compiled(x, "Hello"), x + 1)
    assert torch.equal(compiled(x, "Hi"), x - 1)
    assert len(symexec.cache_entries(compiled)) == 2
    reasons = symexec.recompile_reasons(compiled)
    assert any("L['b'] == 'Hello'" in r for r in reasons), reasons


def test_equal_inputs_reuse_the_entry():
    backend = CountingBackend()

    def fn(x, s):
        return x * len(s)

    compiled = symexec.compile(fn, backend=backend)
    for _ in range(3):
        compiled(_t(3), "abc")
    assert len(symexec.cache_entries(compiled)) == 1
    assert backend.graph_count == 1


def test_tensor_dtype_change_recompiles():
    def fn(x):
        return x * 2

    compiled = symexec.compile(fn)
    compiled(_t(2))
    y = torch.tensor([1, 2])
    assert torch.equal(compiled(y), y * 2)
    assert len(symexec.cache_entries(compiled)) == 2
    assert symexec.cache_entries(compiled)[0].graph is not None


def test_requires_grad_change_recompiles():
    def fn(x):
        return x * 2

    compiled = symexec.compile(fn)
    compiled(_t(2))
    out = compiled(torch.ones(2, requires_grad=True))
    assert out.requires_grad
    assert len(symexec.cache_entries(compiled)) == 2


def test_newest_entry_first():
    def fn(x, flag):
        return x + 1 if flag else x - 1

    compiled = symexec.compile(fn)
    compiled(_t(2), True)
    compiled(_t(2), False)
    newest, oldest = symexec.cache_entries(compiled)

    def targets(entry):
        return [n.target for n in entry.graph.graph.nodes if n.op == "call_function"]

    assert operator.sub in targets(newest)
    assert operator.add in targets(oldest)


def test_global_value_is_guarded():
    def fn(x):
        return x * _FACTOR

    global _FACTOR
    _FACTOR = 2
    compiled = symexec.compile(fn)
    x = _t(2)
    assert torch.equal(compiled(x), x * 2)
    _FACTOR = 5
    assert torch.equal(compiled(x), x * 5)


_FACTOR = 2


def test_entry_without_torch_ops_has_no_graph():
    def fn(n, s):
        return n + 1, s.upper()

    compiled = check(fn, 2, "ab", captured=False)
    assert symexec.cache_entries(compiled)[0].graph is None


def test_entry_graph_is_graph_module():
    def fn(x, y):
        z = (x - y) ** 2
        return z.sum()

    compiled = check(fn, _t(3), _t(3))
    gm = symexec.cache_entries(compiled)[0].graph
    assert isinstance(gm, torch.fx.GraphModule)
    ops = [n for n in gm.graph.nodes if n.op in ("call_function", "call_method")]
    assert len(ops) == 3


def test_cache_size_limit_warns_once_and_runs_eager(monkeypatch):
    monkeypatch.setattr(symexec.config, "cache_size_limit", 2)

    def fn(x, s):
        return x * len(s)

    compiled = symexec.compile(fn)
    x = _t(2)
    compiled(x, "a")
    compiled(x, "bb")
    with pytest.warns(symexec.CacheLimitWarning, match="hit the cache size limit"):  # (a SymexecWarning)
        out = compiled(x, "ccc")
    assert torch.equal(out, x * 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.equal(compiled(x, "dddd"), x * 4)
    assert len(symexec.cache_entries(compiled)) == 2


def test_reset_empties_the_cache():
    def fn(x):
        return x + 1

    compiled = symexec.compile(fn)
    compiled(_t(2))
    assert len(symexec.cache_entries(compiled)) == 1
    symexec.reset()
    assert symexec.cache_entries(compiled) == []
    check(fn, _t(2))


def test_wrapper_keeps_name_and_doc():
    def my_function(x):
        """Some docs."""
        return x

    compiled = symexec.compile(my_function)
    assert compiled.__name__ == "my_function"
    assert compiled.__doc__ == "Some docs."


def test_decorator_forms():
    @symexec.compile
    def f(x):
        return x + 1

    @symexec.compile(backend="eager")
    def g(x):
        return x + 2

    x = _t(2)
    assert torch.equal(f(x), x + 1)
    assert torch.equal(g(x), x + 2)


def test_unknown_backend_and_non_callable():
    with pytest.raises(ValueError, match="eager"):
        symexec.compile(lambda x: x, backend="no-such-backend")
    with pytest.raises(TypeError):
        symexec.compile(42)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_string_backends(backend):
    def fn(x, y):
        return torch.relu(x @ y) + 1

    check(fn, _t(2, 3), _t(3, 2), backend=backend)


def test_callable_backend_receives_graph_and_example_inputs():
    backend = CountingBackend()

    def fn(x, y):
        return x * y + 1

    compiled = symexec.compile(fn, backend=backend)
    x, y = _t(3), _t(3)
    assert torch.equal(compiled(x, y), x * y + 1)
    assert backend.graph_count == 1
    assert len(backend.example_inputs[0]) == 2
    assert all(isinstance(t, torch.Tensor) for t in backend.example_inputs[0])


def test_cache_does_not_keep_inputs_alive():
    def fn(x, items):
        return x * 2 + items[0]

    compiled = symexec.compile(fn)
    x, y = _t(2), _t(2)
    refs = [weakref.ref(x), weakref.ref(y)]
    compiled(x, [y])
    del x, y
    gc.collect()
    assert [r() for r in refs] == [None, None]


def test_a_module_of_a_local_class_is_freed_by_one_collection():
    # (an entry's guards spliced into its code held the class's __mro__ as a code constant, which
    # the collector does not see into: the module outlived one gc.collect(); PyTorch's
    # test_outside_linear_module_free)
    def run():
        fc = torch.nn.Linear(8, 8)

        class Mod(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc_ref = fc

            def forward(self, x):
                return self.fc_ref(x)

        mod = Mod()
        compiled = symexec.compile(mod)
        assert torch.equal(compiled(torch.ones(2, 8)), mod(torch.ones(2, 8)))
        return weakref.ref(fc), weakref.ref(Mod)

    refs = run()
    gc.collect()
    assert [r() for r in refs] == [None, None]


def test_entries_of_module_level_code_keep_their_guards_spliced():
    compiled = symexec.compile(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()))
    compiled(torch.ones(2, 4))
    entries = symexec.cache_entries(compiled)
    assert entries and all(entry.merged is not None for entry in entries)  # (one call per hit)


def test_user_globals_left_untouched():
    def fn(x):
        y = x + 1
        return y * 2

    before = set(globals())
    check(fn, _t(2))
    assert set(globals()) == before
