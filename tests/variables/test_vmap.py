"""torch.vmap traced into the graph (functorch's levels as graph nodes), against eager and
torch.compile; breaks before the vmap where the mapped function cannot be traced."""

import types

import pytest
import torch
from torch._higher_order_ops.associative_scan import associative_scan

import symexec
from symexec.variables import functorch
from tests.helpers import assert_same_graphs_as_dynamo, check, check_sequence, symexec_graphs


def _depth():
    return torch._C._functorch.get_dynamic_layer_stack_depth()


def _scale(x, y):
    return x * y + 1


def vmap_dim0(x, y):
    return torch.vmap(_scale)(x, y)


def vmap_in_dims(x, y):
    return torch.vmap(_scale, in_dims=(1, None))(x, y)


def vmap_out_dims(x):
    return torch.func.vmap(lambda a: (a.sin(), a.sum()), out_dims=(1, 0))(x)


def vmap_nested(x, y):
    return torch.vmap(torch.vmap(torch.outer, in_dims=(0, None)), in_dims=(None, 0))(x, y)


def vmap_lambda_kwargs(x, scale):
    return torch.vmap(lambda a, b, *, k: (a @ b) * k, in_dims=({"w": 0}["w"], None))(x, x[0], k=scale)


def vmap_pytree_input(x, y):
    return torch.vmap(lambda d: d["a"] * d["b"].sum(), in_dims=({"a": 0, "b": None},))({"a": x, "b": y})


def vmap_torch_function(x, y):
    return torch.vmap(torch.dot)(x, y)


def vmap_negative_dim(x):
    return torch.vmap(lambda a: a.cumsum(0), in_dims=-1, out_dims=-2)(x)


@pytest.mark.parametrize("fn, args", [
    (vmap_dim0, (torch.randn(3, 4), torch.randn(3, 4))),
    (vmap_in_dims, (torch.randn(4, 3), torch.randn(4))),
    (vmap_out_dims, (torch.randn(3, 5),)),
    (vmap_nested, (torch.randn(2, 3), torch.randn(4, 5))),
    (vmap_pytree_input, (torch.randn(3, 2), torch.randn(4))),
    (vmap_torch_function, (torch.randn(3, 4), torch.randn(3, 4))),
    (vmap_negative_dim, (torch.randn(3, 4, 2),)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_vmap_one_graph_like_torch_compile(fn, args):
    check(fn, *args)
    ours, _ = assert_same_graphs_as_dynamo(fn, *args)
    assert ours.graph_count == 1
    assert _depth() == 0


def test_vmap_of_a_lambda_with_kwargs():
    check(vmap_lambda_kwargs, torch.randn(3, 4, 4), 2.0)


def test_vmap_records_functorch_levels_as_nodes():
    _, backend = symexec_graphs(vmap_in_dims, torch.randn(4, 3), torch.randn(4))
    targets = [getattr(n.target, "__name__", n.target) for n in backend.graphs[0].graph.nodes]
    assert targets.count("_vmap_increment_nesting") == 1 and targets.count("_vmap_decrement_nesting") == 1
    assert targets.count("_add_batch_dim") == 1 and targets.count("_remove_batch_dim") == 1


def test_vmap_new_sizes_retrace():
    check_sequence(vmap_dim0, [torch.randn(3, 4), torch.randn(3, 4)], [torch.randn(5, 4), torch.randn(5, 4)],
                   [torch.randn(7, 2), torch.randn(7, 2)])
    check_sequence(vmap_dim0, [torch.randn(3, 4), torch.randn(3, 4)], [torch.randn(5, 4), torch.randn(5, 4)],
                   [torch.randn(7, 2), torch.randn(7, 2)], dynamic=True)
    assert _depth() == 0


def _breaks(a):
    print("inside", a.shape)
    return a * 2


def vmap_break_inside(x):
    y = x + 1
    return torch.vmap(_breaks)(y) - 1


def test_vmap_with_a_graph_break_inside_breaks_before_it():
    compiled = check(vmap_break_inside, torch.randn(3, 4), expect_traced=False)
    entry = symexec.cache_entries(compiled)[0]
    assert entry.fallback_reason is None and entry.break_reason is not None
    assert "torch.vmap" in str(entry.break_reason)
    assert _depth() == 0


def _raises(a):
    if a.shape[0] == 4:
        raise ValueError("no fours")
    return a


def vmap_raises(x):
    return torch.vmap(_raises)(x)


def vmap_raises_caught(x):
    try:
        return torch.vmap(_raises)(x)
    except ValueError:
        return x - 1


def test_vmap_exception_inside_restores_state():
    check(vmap_raises, torch.randn(3, 4), expect_traced=False)
    assert _depth() == 0
    check(vmap_raises_caught, torch.randn(3, 4), expect_traced=False)
    assert _depth() == 0


def test_vmap_rejected_arguments_raise_as_eager():
    check(lambda x: torch.vmap(torch.sin, in_dims=2)(x), torch.randn(3, 4), expect_traced=False)
    check(lambda x, y: torch.vmap(torch.mul)(x, y), torch.randn(3, 4), torch.randn(2, 4), expect_traced=False)
    check(lambda x: torch.vmap(lambda a: 3, out_dims=0)(x), torch.randn(3), expect_traced=False)
    check(lambda x: torch.vmap(torch.randn_like)(x), torch.randn(3), expect_traced=False)
    assert _depth() == 0


def test_vmap_randomness_and_chunks_break():
    def chunked(x):
        return torch.vmap(torch.sin, chunk_size=2)(x) + 1

    def same(x):
        return torch.vmap(torch.sin, randomness="same")(x) + 1
    check(chunked, torch.randn(5, 3), expect_traced=False)
    check(same, torch.randn(5, 3), expect_traced=False)
    assert _depth() == 0


def test_vmap_storing_a_batched_tensor_outside_breaks():
    seen = []

    def keep(a):
        seen.append(a)
        return a + 1

    def fn(x):
        return torch.vmap(keep)(x)
    compiled = symexec.compile(fn)
    torch.testing.assert_close(compiled(torch.ones(2, 3)), torch.full((2, 3), 2.0))
    assert symexec.cache_entries(compiled)[0].break_reason is not None
    assert _depth() == 0


def test_compiled_function_called_inside_vmap_runs_eagerly():
    compiled = symexec.compile(lambda a: a.cos() * 2)
    x = torch.randn(3, 4)
    torch.testing.assert_close(torch.vmap(compiled)(x), x.cos() * 2)
    torch.testing.assert_close(compiled(x), x.cos() * 2)
    reasons = [e.fallback_reason for e in symexec.cache_entries(compiled)]
    assert any(r and "functorch transform" in r for r in reasons)
    assert any(r is None for r in reasons)  # the call outside the vmap is traced, not the fallback reused
    assert _depth() == 0


@pytest.mark.parametrize("own_pop", [True, False], ids=["tracker", "convert"])
def test_keyboard_interrupt_inside_vmap_pops_its_level(monkeypatch, own_pop):
    """Interrupted while tracing the mapped function, the level is popped: by the vmap tracker,
    and failing that, by the end of the trace."""
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(functorch, "_call_batched", interrupt)
    if not own_pop:
        monkeypatch.setattr(functorch, "_pop_level_now", lambda: None)
    compiled = symexec.compile(lambda x: torch.vmap(lambda a: a.sin())(x))
    with pytest.raises(KeyboardInterrupt):
        compiled(torch.randn(2, 3))
    assert _depth() == 0


def _combine(left, right):
    a_left, b_left = left
    a_right, b_right = right
    return a_left * a_right, a_right * b_left + b_right


def mamba_scan(discrete_a, deltab_u):
    """modeling_mamba.py's scan on the CPU: combine_mode="generic" runs a vmap of combine_fn."""
    _, all_states = associative_scan(_combine, (discrete_a, deltab_u), dim=2, combine_mode="generic")
    return all_states[:, :, -1] + 1


def test_mamba_associative_scan():
    args = (torch.rand(2, 3, 7, 4), torch.randn(2, 3, 7, 4))
    check(mamba_scan, *args)
    ours, _ = assert_same_graphs_as_dynamo(mamba_scan, *args)
    assert ours.graph_count == 1
    assert _depth() == 0


BATCHED_SCALE = torch.vmap(_scale, in_dims=(0, None))


def vmap_made_outside(x, y):
    return BATCHED_SCALE(x, y) * 2


def test_vmapped_function_made_outside():
    """A vmapped function made by eager code (functorch's closure) is traced into too; its
    closure's in_dims are guarded where read: another vmap of the same code retraces."""
    global BATCHED_SCALE
    args = (torch.randn(3, 4), torch.randn(4))
    ours, _ = assert_same_graphs_as_dynamo(vmap_made_outside, *args)
    assert ours.graph_count == 1

    def other_in_dims():
        global BATCHED_SCALE
        BATCHED_SCALE = torch.vmap(_scale, in_dims=(1, None))
    try:
        check_sequence(vmap_made_outside, list(args), other_in_dims, [torch.randn(4, 3), torch.randn(4)])
    finally:
        BATCHED_SCALE = torch.vmap(_scale, in_dims=(0, None))


def _make_adder(n):
    def add(t):
        return t + n + OFFSET  # noqa: F821 - a global of the module the maker lives in
    return add


# The maker as if defined in another module, whose globals hold OFFSET.
_make_adder_elsewhere = types.FunctionType(_make_adder.__code__, {"OFFSET": 10.0, "__builtins__": __builtins__},
                                           "_make_adder")


def closure_across_a_break(x):
    add = _make_adder_elsewhere(2)
    print("break")
    return add(x)


def test_closure_made_in_another_module_rebuilt_at_a_break():
    """(What a break inside a vmap needs: functorch's ``wrapped`` closure, rebuilt by generated
    code, reads its own module's globals, not the compiled function's.)"""
    compiled = check(closure_across_a_break, torch.randn(3), expect_traced=False)
    assert symexec.cache_entries(compiled)[0].break_reason is not None


def vmap_appends_to_a_new_list(x):
    kept = []
    out = torch.vmap(lambda a: kept.append(a) or a + 1)(x)
    return out, len(kept)


def test_vmap_storing_a_batched_tensor_in_a_list_made_inside_breaks():
    compiled = check(vmap_appends_to_a_new_list, torch.randn(2, 3), expect_traced=False)
    assert symexec.cache_entries(compiled)[0].break_reason is not None


def vmap_returns_outer_batched_with_out_dims_none(x, y):
    return torch.vmap(lambda a: torch.vmap(lambda b: a, out_dims=None)(y))(x)


def test_vmap_out_dims_none_with_a_batched_output_raises_as_eager():
    check(vmap_returns_outer_batched_with_out_dims_none, torch.randn(2, 3), torch.randn(4), expect_traced=False)
    assert _depth() == 0


@torch.vmap
def _decorated(a, b):
    return (a * b).sum()


def vmap_decorated(x, y):
    return _decorated(x, y) + 1


def test_vmap_as_a_decorator():
    check(vmap_decorated, torch.randn(3, 4), torch.randn(3, 4))
    ours, _ = assert_same_graphs_as_dynamo(vmap_decorated, torch.randn(3, 4), torch.randn(3, 4))
    assert ours.graph_count == 1


def test_vmap_graph_through_aot_autograd():
    check(vmap_nested, torch.randn(2, 3), torch.randn(4, 5), backend="aot_eager")
    check(mamba_scan, torch.rand(2, 3, 7, 4), torch.randn(2, 3, 7, 4), backend="aot_eager")
