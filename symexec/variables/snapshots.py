"""Comparing an object's state with a snapshot taken while tracing, in guards.

``copy.deepcopy(obj)`` of an input runs for real while tracing (builtin_functions.py), so the entry is
valid while ``obj``'s state still equals what was copied. ``==`` cannot say so for state that
holds tensors (a module's parameters: elementwise, and ambiguous as a bool), which made every
call retrace; ``same_state`` compares tensors by metadata and values, containers item by item.
"""

from __future__ import annotations

from typing import Any, Callable

import torch


def same_state(now: Any, then: Any) -> bool:
    """Whether ``now`` equals the snapshot ``then``, tensors compared exactly (a guard: it never
    raises, an answer it cannot give is False)."""
    try:
        return _same(now, then)
    except Exception:  # noqa: BLE001 - a guard answers; False only retraces
        return False


def state_check(then: dict) -> Callable[[Any], bool]:
    """``same_state(now, then)`` for one snapshot of an object's ``__dict__``, as a guard calls
    it on every hit. Where the snapshot holds no tensor and no module (a config: strings,
    numbers, small containers), the dict's own ``==`` runs in C, with what ``==`` does not
    check done after: the keys' order, each value's exact type (``1 == True``), and nested
    containers compared item by item."""
    if type(then) is not dict or _holds_tensor_or_module(then):
        return lambda now: same_state(now, then)
    keys, types = list(then), [type(v) for v in then.values()]
    nested = [k for k, v in then.items() if isinstance(v, (dict, list, tuple))]

    def check(now: Any) -> bool:
        try:
            return (type(now) is dict and now == then and list(now) == keys
                    and list(map(type, now.values())) == types and all(_same(now[k], then[k]) for k in nested))
        except Exception:  # noqa: BLE001 - a guard answers; False only retraces
            return False
    return check


def _holds_tensor_or_module(value: Any) -> bool:
    if isinstance(value, (torch.Tensor, torch.nn.Module)):
        return True
    if isinstance(value, dict):
        return any(_holds_tensor_or_module(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_tensor_or_module(v) for v in value)
    return False


def _same(now: Any, then: Any) -> bool:
    if type(now) is not type(then):
        return False
    if isinstance(now, torch.Tensor):
        return _same_tensor(now, then)
    if isinstance(now, dict):
        return list(now) == list(then) and all(_same(now[k], then[k]) for k in now)
    if isinstance(now, (list, tuple)):
        return len(now) == len(then) and all(_same(a, b) for a, b in zip(now, then))
    if isinstance(now, torch.nn.Module):
        return _same(vars(now), vars(then))
    return bool(now == then)


def _same_tensor(now: torch.Tensor, then: torch.Tensor) -> bool:
    return (now.dtype == then.dtype and now.device == then.device and now.shape == then.shape
            and now.stride() == then.stride() and now.requires_grad == then.requires_grad
            and vars(now).keys() == vars(then).keys() and torch.equal(now.detach(), then.detach()))
