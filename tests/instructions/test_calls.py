"""Calls: argument passing of every shape, CALL_FUNCTION_EX, inlining of user functions, recursion,
tensor methods, torch and torch.nn.functional functions, builtins."""

import functools
import inspect
import math
import operator

import pytest
import torch
import torch.nn.functional as F

import symexec
from helpers import assert_same_graphs_as_dynamo, check


def _t(*shape):
    return torch.randn(*shape)


# --- user helpers, inlined into the caller's graph -----------------------------------------------------


def scale(t, k=2):
    return t * k


def affine(t, w, b=None, *, transpose=False):
    if transpose:
        w = w.t()
    out = t @ w
    if b is not None:
        out = out + b
    return out


def collect(*args, **kwargs):
    return args, kwargs


def starred_sum(first, *rest):
    out = first
    for r in rest:
        out = out + r
    return out


def kw_only(t, *, alpha, beta=1.0):
    return t * alpha + beta


def level3(t):
    return t.sin() + 1


def level2(t):
    return level3(t) * 2


def level1(t):
    return level2(t) - level3(t)


def depth_sum(t, n):
    if n == 0:
        return t
    return depth_sum(t + n, n - 1)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Acc:
    def __init__(self, k):
        self.k = k

    def apply(self, t):
        return t * self.k

    @staticmethod
    def double(t):
        return t * 2

    @classmethod
    def make(cls, k):
        return cls(k)

    @property
    def twice(self):
        return self.k * 2


# --- argument passing -----------------------------------------------------------------------------


def test_positional_call():
    def fn(x):
        return scale(x, 3)

    check(fn, _t(3))


def test_keyword_call():
    def fn(x):
        return scale(t=x, k=4)

    check(fn, _t(3))


def test_default_argument():
    def fn(x):
        return scale(x)

    check(fn, _t(3))


def test_defaults_and_keyword_only():
    def fn(x, w, b):
        return affine(x, w), affine(x, w, b), affine(x, w, b=b, transpose=True)

    check(fn, _t(2, 2), _t(2, 2), _t(2))


def test_keyword_only_required():
    def fn(x):
        return kw_only(x, alpha=3), kw_only(x, beta=0.5, alpha=2)

    check(fn, _t(2))


def test_var_positional():
    def fn(x, y):
        return starred_sum(x), starred_sum(x, y, 1)

    check(fn, _t(2), _t(2))


def test_var_positional_and_keyword_collected():
    def fn(x):
        return collect(x, 1, a=x + 1, b="s")

    check(fn, _t(2))


def test_call_function_ex_star_args():
    def fn(args):
        return starred_sum(*args)

    check(fn, [_t(2), _t(2), 3])


def test_call_function_ex_star_star_kwargs():
    def fn(x, kw):
        return affine(x, **kw)

    check(fn, _t(2, 2), {"w": _t(2, 2), "b": _t(2)})


def test_call_function_ex_both():
    def fn(args, kw):
        return collect(*args, **kw)

    check(fn, (1, _t(2)), {"z": _t(1)}, captured=False)


def test_call_function_ex_mixed_literal():
    def fn(x, rest):
        return collect(x, *rest, 3, key=x, **{"other": 4})

    check(fn, _t(2), [1, 2], captured=False)


def test_missing_argument_raises_type_error():
    def fn(x):
        return kw_only(x)

    check(fn, _t(2), expect_traced=False)


def test_too_many_arguments_raises_type_error():
    def fn(x):
        return scale(x, 1, 2)

    check(fn, _t(2), expect_traced=False)


def test_compiled_function_called_with_keywords():
    def fn(x, y=1, *, z=2):
        return x * y + z

    check(fn, _t(2), y=3, z=_t(2))


def test_compiled_function_with_varargs_signature():
    def fn(*args, **kwargs):
        return sum(args) + kwargs["k"]

    check(fn, _t(2), _t(2), k=_t(2))


def test_compiled_function_default_used():
    def fn(x, scale=0.5):
        return x * scale

    check(fn, _t(2))


# --- inlining ------------------------------------------------------------------------------------


def test_inline_two_levels():
    def fn(x):
        return level2(x)

    check(fn, _t(3))


def test_inline_three_levels():
    def fn(x):
        return level1(x)

    check(fn, _t(3))


def test_inlined_helpers_give_one_graph_like_dynamo():
    def fn(x):
        return level1(x) + scale(x)

    assert_same_graphs_as_dynamo(fn, _t(3))


def test_recursion_on_constant_depth():
    def fn(x):
        return depth_sum(x, 3)

    check(fn, _t(2))


def test_recursion_on_python_ints():
    def fn(x):
        return x * fib(6)

    check(fn, _t(2))


def test_inlined_helper_mutates_caller_list():
    def push(items, v):
        items.append(v)

    def fn(x):
        items = []
        push(items, x)
        push(items, x + 1)
        return items

    check(fn, _t(2))


def test_inlined_helper_mutates_input_list():
    def push(items, v):
        items.append(v * 2)

    def fn(items, x):
        push(items, x)
        return len(items)

    check(fn, [1], _t(2))


def test_functools_partial():
    def fn(x):
        s = functools.partial(scale, k=5)
        return s(x)

    check(fn, _t(2))


def test_function_passed_as_argument():
    def fn(f, x):
        return f(x)

    check(fn, level3, _t(2))


def test_method_of_user_object():
    def fn(acc, x):
        return acc.apply(x) + Acc.double(x) + acc.twice

    check(fn, Acc(3), _t(2))


def test_classmethod_and_new_object():
    def fn(x):
        a = Acc.make(4)
        return a.apply(x)

    check(fn, _t(2))


def test_bound_method_stored_then_called():
    def fn(acc, x):
        m = acc.apply
        return m(x)

    check(fn, Acc(2), _t(2))


def test_operator_module_functions():
    def fn(x, y):
        return operator.add(x, y), operator.mul(x, 2), operator.getitem([x, y], 1)

    check(fn, _t(2), _t(2))


def test_math_functions_on_constants():
    def fn(x, n):
        return x * math.sqrt(n) + math.floor(2.7) + math.log(n)

    check(fn, _t(2), 4)


# --- tensor methods -------------------------------------------------------------------------------


def test_tensor_methods_chain():
    def fn(x):
        return x.relu().sum(dim=1).mean()

    check(fn, _t(3, 4))


def test_tensor_shape_methods():
    def fn(x):
        return x.view(6), x.reshape(3, 2), x.permute(1, 0), x.unsqueeze(0), x.flatten(), x.t()

    check(fn, _t(2, 3))


def test_tensor_methods_with_keywords():
    def fn(x):
        return x.sum(dim=0, keepdim=True), x.softmax(dim=-1), x.clamp(min=-0.5, max=0.5)

    check(fn, _t(2, 3))


def test_tensor_inplace_methods_on_input():
    def fn(x):
        x.add_(1)
        x.mul_(2)
        return x

    check(fn, _t(3))


def test_tensor_conversion_methods():
    def fn(x):
        return x.float(), x.to(torch.float64), x.long(), x.type_as(x.int())

    check(fn, _t(3))


def test_tensor_new_methods():
    def fn(x):
        return x.new_zeros(2), x.new_ones((2, 2)), x.new_full((1,), 7.0), x.clone(), x.detach()

    check(fn, _t(3))


def test_tensor_size_methods():
    def fn(x):
        return x.size(), x.size(1), x.numel(), x.dim(), x.stride(), x.is_contiguous()

    check(fn, _t(2, 3), captured=False)


def test_tensor_method_via_getattr_name():
    def fn(x, name):
        return getattr(x, name)()

    check(fn, _t(3), "cos")


def test_tensor_matmul_family():
    def fn(a, b):
        return a.mm(b), torch.mm(a, b), torch.matmul(a, b), a.matmul(b)

    check(fn, _t(2, 3), _t(3, 2))


# --- torch functions ----------------------------------------------------------------------------


def test_torch_functions():
    def fn(x, y):
        return torch.cat([x, y]), torch.stack((x, y), dim=1), torch.where(x > 0, x, y)

    check(fn, _t(3), _t(3))


def test_torch_factories():
    def fn(x):
        return (
            torch.zeros(2, 3),
            torch.ones_like(x),
            torch.arange(5),
            torch.full((2,), 3.0),
            torch.eye(2),
            torch.tensor([1.0, 2.0]),
            torch.empty(2).fill_(1.0),
        )

    check(fn, _t(3))


def test_torch_reductions_with_kwargs():
    def fn(x):
        return torch.sum(x, dim=1), torch.mean(x, 0, keepdim=True), torch.amax(x, dim=(0, 1))

    check(fn, _t(2, 3))


def test_torch_math_functions():
    def fn(x):
        return torch.sin(x), torch.exp(x), torch.abs(x), torch.sqrt(x.abs()), torch.clamp(x, 0, 1)

    check(fn, _t(3))


def test_torch_function_with_out_of_graph_dtype_arg():
    def fn(x):
        return torch.zeros(2, dtype=x.dtype), torch.ones(2, dtype=torch.int64)

    check(fn, _t(2))


def test_torch_no_grad_context():
    def fn(x):
        with torch.no_grad():
            y = x * 2
        return y, y.requires_grad

    check(fn, torch.ones(2, requires_grad=True))


def test_requires_grad_flows_through_graph():
    def fn(x, w):
        return (x @ w).tanh().sum()

    check(fn, _t(2, 3), torch.randn(3, 4, requires_grad=True))


def test_backward_on_compiled_output():
    def fn(x, w):
        return (x * w).sum()

    w_e = torch.ones(3, requires_grad=True)
    w_c = torch.ones(3, requires_grad=True)
    x = torch.tensor([1.0, 2.0, 3.0])
    fn(x, w_e).backward()
    symexec.compile(fn)(x, w_c).backward()
    assert torch.equal(w_e.grad, w_c.grad)


# --- torch.nn.functional ----------------------------------------------------------------------------


def test_functional_activations():
    def fn(x):
        return F.relu(x), F.gelu(x), F.silu(x), F.softmax(x, dim=-1), F.log_softmax(x, -1)

    check(fn, _t(2, 4))


def test_functional_linear_and_dropout_eval():
    def fn(x, w, b):
        return F.dropout(F.linear(x, w, b), p=0.5, training=False)

    check(fn, _t(2, 3), _t(4, 3), _t(4))


def test_functional_losses():
    def fn(x, y, target):
        return F.mse_loss(x, y), F.cross_entropy(x, target), F.l1_loss(x, y, reduction="sum")

    check(fn, _t(3, 4), _t(3, 4), torch.tensor([0, 3, 1]))


def test_functional_conv_and_pool():
    def fn(x, w):
        return F.max_pool2d(F.conv2d(x, w, padding=1), 2)

    check(fn, _t(1, 1, 4, 4), _t(2, 1, 3, 3))


def test_functional_normalization():
    def fn(x):
        return F.layer_norm(x, (4,)), F.normalize(x, dim=-1)

    check(fn, _t(2, 4))


def test_functional_pad_and_one_hot():
    def fn(x, idx):
        return F.pad(x, (1, 1)), F.one_hot(idx, num_classes=4)

    check(fn, _t(2, 3), torch.tensor([0, 3]))


# --- builtins ---------------------------------------------------------------------------------------


def test_builtin_len():
    def fn(x, items, d, s):
        return x * len(items), len(d), len(s), len(x), len((1, 2))

    check(fn, _t(3, 2), [1, 2, 3], {"a": 1}, "abcd")


def test_builtin_isinstance():
    def fn(x, n, items):
        return (
            isinstance(x, torch.Tensor),
            isinstance(n, int),
            isinstance(n, (str, float)),
            isinstance(items, list),
            isinstance(x, torch.nn.Parameter),
        )

    check(fn, _t(2), 3, [1], captured=False)


def test_builtin_range_enumerate_zip_objects():
    def fn(items):
        return list(range(3)), list(enumerate(items)), list(zip(items, range(5))), range(2, 6)[1]

    check(fn, ["a", "b"], captured=False)


@pytest.mark.parametrize("builtin", [min, max], ids=["min", "max"])
def test_builtin_min_max(builtin):
    def fn(a, b, items):
        return builtin(a, b), builtin(items), builtin(3, 1, 2), builtin(items, key=lambda v: -v)

    check(fn, 4, 2.5, [5, 1, 3], captured=False)


def test_builtin_max_of_tensors_is_elementwise():
    def fn(x, y):
        return torch.maximum(x, y), max(x.shape[0], 1)

    check(fn, _t(3), _t(3))


def test_builtin_abs_sum():
    def fn(x, items):
        return abs(x), abs(-3), abs(-2.5), sum(items), sum(items, 10), sum([x, x])

    check(fn, _t(3), [1, 2, 3])


def test_builtin_sum_of_tensor_list():
    def fn(items):
        return sum(items)

    check(fn, [_t(2), _t(2), _t(2)])


def test_builtin_getattr_hasattr():
    def fn(acc, x):
        return (
            getattr(acc, "k"),
            getattr(acc, "missing", None),
            hasattr(acc, "k"),
            hasattr(acc, "nope"),
            hasattr(x, "shape"),
            getattr(x, "ndim"),
        )

    check(fn, Acc(2), _t(2), captured=False)


def test_builtin_type():
    def fn(x, n, s):
        return type(n), type(s) is str, type(x) is torch.Tensor, type(n)(7)

    check(fn, _t(2), 3, "s", captured=False)


def test_builtin_constructors():
    def fn(x, items):
        return (
            list(items),
            tuple(items),
            dict(a=1, b=x),
            dict([("k", 2)]),
            set(items),
            list(x.shape),
            tuple(range(3)),
        )

    check(fn, _t(2, 3), [3, 1, 3], captured=False)


def test_builtin_scalar_conversions():
    def fn(x, n, f, s):
        return bool(n), int(f), float(n), str(n), int(s), float("1.5"), bool([]), x.shape[0] * int(f)

    check(fn, _t(2), 3, 2.7, "12", captured=False)


def test_builtin_str_of_shape_and_dtype():
    def fn(x):
        return str(x.dtype), str(tuple(x.shape))

    check(fn, _t(2), captured=False)


def test_builtin_any_all():
    def fn(items):
        return any(items), all(items), any(v > 2 for v in items)

    check(fn, [1, 0, 3], captured=False)


def test_builtin_round_divmod_pow():
    def fn(a, b):
        return round(2.567, 2), divmod(a, b), pow(a, 2), pow(a, 2, 5)

    check(fn, 7, 3, captured=False)


def test_builtin_callable():
    def fn(x, items):
        return callable(scale), callable(x), callable(len), callable(items), len(items)

    check(fn, _t(2), [1], captured=False)


def test_builtin_print_graph_break():
    def fn(x):
        y = x + 2
        print("Hi")
        return y + x

    check(fn, _t(3))


def test_print_of_python_values():
    def fn(x, n):
        print("n is", n, sep="=", end="!\n")
        return x * n

    check(fn, _t(3), 4)


def test_print_gives_two_graphs_like_dynamo():
    def fn(x):
        y = x + 2
        print("Hi")
        return y + x

    ours, _ = assert_same_graphs_as_dynamo(fn, _t(3))
    assert ours.graph_count == 2


def _with_out(fn):
    """A wrapper that states another signature (``__signature__``), as torch's out= wrappers do."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        out = kwargs.pop("out", None)
        result = fn(*args, **kwargs)
        return result if out is None else out.copy_(result)

    wrapper.__signature__ = inspect.signature(fn)
    return wrapper


@_with_out
def _doubled(a):
    return a * 2


def test_compiled_function_with_a_stated_signature_binds_its_code_parameters():
    # (PyTorch's test_repros test_primtorch: torch._refs.abs) the arguments were bound by the
    # stated signature (`a`), leaving the code's `args`/`kwargs` unbound
    check(_doubled, torch.ones(3))
    check(lambda x: _doubled(x, out=torch.zeros(3)), torch.ones(3))


def test_default_of_a_function_made_in_the_frame_through_star_args():
    # A default of a function made while tracing is a tracker already: bound through
    # ``*args`` it was wrapped a second time and the op failed on fake tensors (a break).
    def fn(x):
        def wrapper(*args, **kwargs):
            return inner(*args, **kwargs) + 1

        def inner(a, b=2, *, c=3):
            return a * b + c
        return wrapper(x), wrapper(x, 4, c=5)
    check(fn, torch.randn(3))
