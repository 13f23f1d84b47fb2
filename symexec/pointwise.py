"""Fake results of pointwise operations whose metadata is their input's, made without running
their meta functions.

On a symbolic trace a fake ``a * 2`` or ``a + b`` costs most of a millisecond: torch's meta
function works out broadcasting, type promotion and output strides with symbolic arithmetic,
each step a sympy expression. Where the answer is known from the inputs alone, the result is
made directly, an empty fake tensor of the input's sizes and strides (a fifth of the cost).
That holds in exactly this case, checked on every call:

- the operation is one of the out-of-place pointwise operations below, called with nothing but
  its tensor and number operands (no keyword arguments);
- every tensor operand is a plain fake tensor of this trace (no constant, strided, no conj/neg
  bit, not requiring grad) of one floating dtype (16, 32 or 64 bits) and one device, with the
  same sizes (equal expressions) and standard contiguous strides (each stride the product of
  the sizes after it, as expressions; no size 0);
- every other operand is an ``int``, a ``float`` or a symbolic one (a Python number never
  changes a floating tensor's dtype).

The result is then what eager makes: TensorIterator allocates the output of contiguous
operands of one shape contiguous, in their dtype, on their device, not requiring grad.
Anything else (broadcasting, a transposed or strided input, integer or mixed dtypes, ``alpha=``)
runs the meta function. ``tests/test_pointwise.py`` compares this rule with torch's own fake
results and compiled results with eager's.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

# Operations by how they are recorded: call_function targets and call_method names, with the
# number of positional operands they take.
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
_DTYPES = frozenset((torch.float16, torch.bfloat16, torch.float32, torch.float64))
_NUMBERS = frozenset((int, float, torch.SymInt, torch.SymFloat))


def pointwise_result(fake_mode: FakeTensorMode, op: str, target: Any, args: tuple, kwargs: dict) -> Any:
    """The fake result of ``target(*args)`` if it is decided by the rule above, else None."""
    if kwargs:
        return None
    table = _METHODS if op == "call_method" else _FUNCTIONS
    try:
        arity = table.get(target)
    except TypeError:  # an unhashable target
        return None
    if arity is None or len(args) != arity:
        return None
    first = None
    for arg in args:
        kind = type(arg)
        if kind is FakeTensor:
            if not _plain(arg, fake_mode):
                return None
            if first is None:
                if not _contiguous(arg.size(), arg.stride()):
                    return None
                first = arg
            elif not (arg.dtype is first.dtype and arg.device == first.device
                      and _equal_all(arg.size(), first.size()) and _equal_all(arg.stride(), first.stride())):
                return None
        elif kind not in _NUMBERS:
            return None
    if first is None:
        return None
    return fresh_fake(fake_mode, first.size(), first.stride(), first.dtype, first.device)


def fresh_fake(fake_mode: FakeTensorMode, size: Any, stride: Any, dtype: torch.dtype, device: torch.device) -> FakeTensor:
    """A new fake tensor of this metadata, as the fake mode makes a constructor's result (an
    empty meta tensor, wrapped) without the way through its dispatch: half the cost."""
    return FakeTensor(fake_mode, torch.empty_strided(size, stride, dtype=dtype, device="meta"), device)


def _plain(t: FakeTensor, fake_mode: FakeTensorMode) -> bool:
    return (t.fake_mode is fake_mode and t.constant is None and t.layout is torch.strided
            and t.dtype in _DTYPES and not t.requires_grad and not t.is_conj() and not t.is_neg())


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
