"""How users hold symexec: decorated methods, modules, lambdas, nested compiled functions, keyword
calls, aliasing of outputs, and values that change between calls."""

import functools

import torch

import symexec
from helpers import check


def _t(*shape):
    return torch.randn(*shape)


def _helper(x):
    return x.sin() * 2


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)

    def forward(self, x):
        return torch.relu(self.lin(x))


class WithCompiledMethod:
    def __init__(self, k):
        self.k = k

    @symexec.compile
    def apply(self, x):
        return x * self.k + 1


# --- what can be compiled ------------------------------------------------------------------------


def test_compiled_method_binds_self():
    obj = WithCompiledMethod(3)
    x = _t(2)
    assert torch.equal(obj.apply(x), x * 3 + 1)
    assert torch.equal(WithCompiledMethod(5).apply(x), x * 5 + 1)


def test_compile_lambda():
    check(lambda x, y: (x + y).relu(), _t(3), _t(3))


def test_compile_nn_module_instance():
    torch.manual_seed(0)
    model = Model()
    x = _t(4, 3)
    compiled = symexec.compile(model)
    assert torch.allclose(compiled(x), model(x))


def test_compiled_module_training_is_the_modules():
    # `training` was the wrapper's own flag: after mod.eval() the compiled module still said True
    # (torch.compile's module reads and sets the original's)
    mod = torch.nn.Linear(3, 3).eval()
    compiled = symexec.compile(mod)
    assert compiled.training is False
    compiled.train()
    assert compiled.training is True and mod.training is True
    mod.eval()
    assert compiled.training is False
    compiled.training = True
    assert mod.training is True
    x = _t(2, 3)
    assert torch.equal(compiled(x), mod(x))


def test_compile_bound_method():
    torch.manual_seed(0)
    model = Model()
    x = _t(4, 3)
    compiled = symexec.compile(model.forward)
    assert torch.allclose(compiled(x), model(x))


def test_compile_functools_partial():
    def fn(x, k):
        return x * k

    compiled = symexec.compile(functools.partial(fn, k=4))
    x = _t(2)
    assert torch.equal(compiled(x), x * 4)


def test_compiled_function_calls_another_compiled_function():
    inner = symexec.compile(_helper)

    def fn(x):
        return inner(x) + 1

    check(fn, _t(3))


def test_same_function_compiled_twice_independently():
    a = symexec.compile(_helper)
    b = symexec.compile(_helper)
    x = _t(3)
    assert torch.equal(a(x), b(x))
    assert torch.equal(a(x), _helper(x))


# --- calling conventions ---------------------------------------------------------------------------


def test_keyword_order_does_not_matter():
    def fn(x, *, a, b):
        return x * a - b

    compiled = check(fn, _t(2), a=2, b=3)
    x = _t(2)
    assert torch.equal(compiled(x, b=3, a=2), x * 2 - 3)


def test_positional_and_keyword_forms_of_one_call():
    def fn(x, scale=1.0):
        return x * scale

    compiled = symexec.compile(fn)
    x = _t(2)
    assert torch.equal(compiled(x, 2.0), x * 2.0)
    assert torch.equal(compiled(x, scale=2.0), x * 2.0)
    assert torch.equal(compiled(x=x, scale=3.0), x * 3.0)
    assert torch.equal(compiled(x), x)


def test_wrong_call_raises_like_eager():
    def fn(x, y):
        return x + y

    check(fn, _t(2), expect_traced=False)


# --- aliasing of outputs -----------------------------------------------------------------------------


def test_same_tensor_returned_twice():
    def fn(x):
        y = x + 1
        return y, y

    check(fn, _t(2))


def test_input_returned_as_is():
    def fn(x, y):
        return x, y * 2

    check(fn, _t(2), _t(2))


def test_view_of_input_returned():
    def fn(x):
        return x.view(-1), x[0], x.t(), x.detach()

    check(fn, _t(2, 3))


def test_write_through_returned_view():
    def fn(x):
        return x[0]

    compiled = symexec.compile(fn)
    x = torch.zeros(2, 2)
    row = compiled(x)
    row.fill_(5.0)
    assert torch.equal(x[0], torch.full((2,), 5.0))


def test_list_returned_twice_is_one_list():
    def fn(x):
        items = [x + 1]
        return items, items

    check(fn, _t(2))


# --- values that change between calls ---------------------------------------------------------------


def test_redefined_global_function_is_seen():
    global _helper
    original = _helper

    def fn(x):
        return _helper(x)

    compiled = symexec.compile(fn)
    x = _t(2)
    try:
        assert torch.equal(compiled(x), x.sin() * 2)
        _helper = lambda t: t - 100  # noqa: E731
        assert torch.equal(compiled(x), x - 100)
    finally:
        _helper = original


def test_mutated_closure_cell_is_seen():
    k = 2

    def fn(x):
        return x * k

    compiled = symexec.compile(fn)
    x = _t(2)
    assert torch.equal(compiled(x), x * 2)
    k = 7  # noqa: F841 - read through the closure
    assert torch.equal(compiled(x), x * 7)


def test_mutated_input_list_content_is_seen():
    def fn(x, items):
        return x * items[0]

    compiled = symexec.compile(fn)
    x = _t(2)
    items = [2]
    assert torch.equal(compiled(x, items), x * 2)
    items[0] = 3
    assert torch.equal(compiled(x, items), x * 3)


def test_float_changing_every_call_stays_correct():
    def fn(x, f):
        return x * f

    compiled = symexec.compile(fn)
    x = _t(2)
    for i in range(12):
        f = 0.5 + i
        assert torch.equal(compiled(x, f), x * f)


def test_module_weight_updated_in_place_is_seen():
    torch.manual_seed(0)
    model = Model()

    def fn(x):
        return model(x)

    compiled = symexec.compile(fn)
    x = _t(1, 3)
    assert torch.allclose(compiled(x), model(x))
    with torch.no_grad():
        model.lin.weight.add_(1.0)
    assert torch.allclose(compiled(x), model(x))


def test_module_weight_replaced_is_seen():
    torch.manual_seed(0)
    model = Model()

    def fn(x):
        return model(x)

    compiled = symexec.compile(fn)
    x = _t(1, 3)
    compiled(x)
    model.lin.weight = torch.nn.Parameter(torch.ones(2, 3))
    assert torch.allclose(compiled(x), model(x))


def test_shape_loop_bound_across_sizes():
    def fn(x):
        out = x[0]
        for i in range(x.shape[0]):
            out = out + x[i]
        return out

    compiled = symexec.compile(fn)
    for n in (2, 3, 4, 5):
        x = _t(n, 2)
        assert torch.allclose(compiled(x), fn(x))


def test_int_used_as_size_across_values():
    def fn(x, n):
        return torch.zeros(n) + x.sum(), torch.arange(n) * 2

    compiled = symexec.compile(fn)
    x = _t(2)
    for n in (2, 3, 4, 6):
        e, c = fn(x, n), compiled(x, n)
        assert torch.allclose(e[0], c[0]) and torch.equal(e[1], c[1])
