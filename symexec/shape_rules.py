"""Fake results of operations whose metadata follows from their inputs' by a simple rule, made
without running their meta functions.

On a symbolic trace a fake ``a * 2``, ``a @ w`` or ``a.sum(1)`` costs a third to most of a
millisecond: torch's meta function works out broadcasting, type promotion and output strides with
symbolic arithmetic, each step a sympy expression. Where the answer is known from the inputs
alone, the result is made directly, an empty fake tensor of the known sizes and strides (a fifth
of the cost). Three rules, each for inputs that are plain fake tensors of this trace (no
constant, strided, no conj/neg bit, not requiring grad) of one floating dtype (16, 32 or 64
bits) and one device, with standard contiguous strides (each stride the product of the sizes
after it, as expressions; no size 0), checked on every call:

- **pointwise**: an out-of-place pointwise operation below, called with nothing but its operands
  (no keyword arguments), every tensor operand of the same sizes (equal expressions), every
  other operand an ``int``, a ``float`` or a symbolic one (a Python number never changes a
  floating tensor's dtype). Eager's TensorIterator allocates the output of contiguous operands
  of one shape contiguous: the first operand's metadata.
- **matmul** of two 2-d tensors whose inner sizes are equal expressions: ``mm``'s output,
  ``(n, m)`` contiguous.
- **sum / mean** over one ``int`` dim (``keepdim`` as given, no ``dtype``): the reduced shape,
  contiguous, as the structured reduction kernels allocate it.

Anything else (broadcasting, a transposed or strided input, integer or mixed dtypes, ``alpha=``,
several dims) runs the meta function. ``tests/test_shape_rules.py`` compares these rules with
torch's own fake results and compiled results with eager's.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

# Pointwise operations by how they are recorded: call_function targets and call_method names,
# with the number of positional operands they take.
_FUNCTIONS: dict[Any, int] = {
    **dict.fromkeys((operator.add, operator.sub, operator.mul, operator.truediv,
                     torch.add, torch.sub, torch.mul, torch.div, torch.true_divide), 2),
    **dict.fromkeys((operator.neg, torch.neg, torch.relu, torch.tanh, torch.sigmoid, torch.exp,
                     F.relu, F.gelu, F.silu), 1),
}
_METHODS: dict[str, int] = {
    **dict.fromkeys(("add", "sub", "mul", "div", "true_divide"), 2),
    **dict.fromkeys(("neg", "relu", "tanh", "sigmoid", "exp"), 1),
}
_MATMUL = frozenset((operator.matmul, torch.matmul, torch.mm, "matmul", "mm", "__matmul__"))
_REDUCTIONS = frozenset((torch.sum, torch.mean, "sum", "mean"))
_DTYPES = frozenset((torch.float16, torch.bfloat16, torch.float32, torch.float64))
_NUMBERS = frozenset((int, float, torch.SymInt, torch.SymFloat))


def known_result(fake_mode: FakeTensorMode, op: str, target: Any, args: tuple, kwargs: dict) -> Any:
    """The fake result of the call if one of the rules above decides it, else None."""
    try:
        if target in _MATMUL:
            return _matmul(fake_mode, args, kwargs)
        if target in _REDUCTIONS:
            return _reduction(fake_mode, args, kwargs)
        arity = (_METHODS if op == "call_method" else _FUNCTIONS).get(target)
    except TypeError:  # an unhashable target
        return None
    if arity is None or len(args) != arity or kwargs:
        return None
    first = None
    for arg in args:
        kind = type(arg)
        if kind is FakeTensor:
            if not _plain(arg, fake_mode):
                return None
            if first is None:
                first = arg
            elif not (arg.dtype is first.dtype and arg.device == first.device
                      and _equal_all(arg.size(), first.size()) and _equal_all(arg.stride(), first.stride())):
                return None
        elif kind not in _NUMBERS:
            return None
    if first is None:
        return None
    return fresh_fake(fake_mode, first.size(), first.stride(), first.dtype, first.device)


def _matmul(fake_mode: FakeTensorMode, args: tuple, kwargs: dict) -> Any:
    if kwargs or len(args) != 2:
        return None
    a, b = args
    if not (type(a) is FakeTensor and type(b) is FakeTensor and _plain(a, fake_mode) and _plain(b, fake_mode)
            and a.dim() == 2 and b.dim() == 2 and a.dtype is b.dtype and a.device == b.device):
        return None
    (n, k), (k2, m) = a.size(), b.size()
    if not _equal_all((k,), (k2,)):
        return None
    return fresh_fake(fake_mode, (n, m), (m, 1), a.dtype, a.device)


def _reduction(fake_mode: FakeTensorMode, args: tuple, kwargs: dict) -> Any:
    if not args or len(args) > 3 or not set(kwargs) <= {"dim", "keepdim"}:
        return None
    t, *rest = args
    given = dict(zip(("dim", "keepdim"), rest))
    if set(given) & set(kwargs):
        return None
    given.update(kwargs)
    dim, keepdim = given.get("dim"), given.get("keepdim", False)
    if type(t) is not FakeTensor or not _plain(t, fake_mode) or type(dim) is not int or type(keepdim) is not bool:
        return None
    size = list(t.size())
    if not -len(size) <= dim < len(size):
        return None  # (torch's error)
    dim %= len(size)
    if keepdim:
        size[dim] = 1
    else:
        del size[dim]
    return fresh_fake(fake_mode, size, _contiguous_strides(size), t.dtype, t.device)


def fresh_fake(fake_mode: FakeTensorMode, size: Any, stride: Any, dtype: torch.dtype, device: torch.device) -> FakeTensor:
    """A new fake tensor of this metadata, as the fake mode makes a constructor's result (an
    empty meta tensor, wrapped) without the way through its dispatch: half the cost."""
    return FakeTensor(fake_mode, torch.empty_strided(size, stride, dtype=dtype, device="meta"), device)


def _plain(t: FakeTensor, fake_mode: FakeTensorMode) -> bool:
    """A rule's input: see the module's docstring."""
    return (t.fake_mode is fake_mode and t.constant is None and t.layout is torch.strided
            and t.dtype in _DTYPES and not t.requires_grad and not t.is_conj() and not t.is_neg()
            and _contiguous(t.size(), t.stride()))


def _expr(value: Any) -> Any:
    """A size or stride as an int or its sympy expression (reading it adds no guard)."""
    return value if type(value) is int else value.node.expr


def _equal_all(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y or _expr(x) == _expr(y) for x, y in zip(a, b))


def _contiguous(size: tuple, stride: tuple) -> bool:
    """Standard contiguous strides, as expressions: the last 1, each other the product of the
    sizes after it. A size of 0 is refused (torch's strides there are not that product)."""
    expected: Any = 1
    for n, s in zip(reversed(size), reversed(stride)):
        if _expr(s) != expected:
            return False
        n = _expr(n)
        if type(n) is int and n == 0:
            return False
        expected = expected * n
    return True


def _contiguous_strides(size: list) -> list:
    """The standard contiguous strides of ``size`` (no size 0 among them: its input had none)."""
    strides, stride = [], 1
    for n in reversed(size):
        strides.append(stride)
        stride = stride * n
    return strides[::-1]
