"""torch's own ``nn.Module`` classes constructed inside a compiled function.

``nn.Softmax(dim=-1)(x)``, ``nn.ReLU()(x)``, ``nn.Identity()``: a module without parameters or
buffers is made for real while tracing (its constructor is torch's, run with constant
arguments) and becomes an object private to the trace; its call is inlined like any module's,
and where it reaches the user's world generated code hands out a fresh copy per call, as eager
makes a new one. A module that makes parameters or buffers (``nn.Linear(2, 2)``) draws them from
the RNG on each eager call: the graph breaks there and CPython constructs it, RNG and all, as
torch.compile does; the trace's own attempt runs with the RNG state restored, leaving no trace.
"""

from __future__ import annotations

from typing import Any

import torch

from ..exc import Unsupported
from ..source import PrivateObjectSource
from .base import VariableTracker


def construct_torch_module(tx: Any, cls: type, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    if not cls.__module__.startswith("torch.nn.modules."):
        raise Unsupported(f"constructing {cls.__qualname__} inside a compiled function")
    try:
        const_args = [a.as_python_constant() for a in args]
        const_kwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
    except Unsupported:
        raise Unsupported(f"constructing {cls.__qualname__} with values not known while tracing") from None
    try:
        with torch.random.fork_rng(devices=[]):  # (the RNG state as it was, whatever happens)
            module = cls(*const_args, **const_kwargs)
    except Exception as e:  # the user's arguments are wrong: CPython raises it, at the break
        raise Unsupported(f"constructing {cls.__qualname__} raises {type(e).__name__}: {e}") from e
    if next(module.parameters(), None) is not None or next(module.buffers(), None) is not None:
        raise Unsupported(f"constructing {cls.__qualname__} inside a compiled function makes parameters or buffers, "
                          f"from the RNG on every call", hint="the graph breaks; CPython constructs it")
    return tx.wrap(module, PrivateObjectSource.of(module))
