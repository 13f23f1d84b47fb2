"""A ``torch.optim.Optimizer`` passed in: traced as torch.compile traces it, in one graph.

Two things set it apart from any other object (both are the contract torch's optimizers are
written against: under ``torch.compiler.is_compiling()`` their code assumes them):

- **The capturable view.** Its ``param_groups`` read as ``capturable=True`` in the trace (never in
  the real dicts): the step's arithmetic stays in tensors (``1 - beta1 ** step`` with ``step`` a
  tensor, ``torch.where`` instead of ``if rho_t > 5``), where the non-capturable path would branch
  on a tensor or pass a list of tensors where torch takes numbers (Adamax's foreach step raised
  ``TypeError``). A group with a tensor hyperparameter is seen as it is: there ``capturable``
  also decides which errors are raised. A group so seen cannot be written back (its replay would
  store the view); a traced write to one breaks the graph.
- **``zero_grad()`` as what it does.** ``zero_grad(set_to_none=True)`` (torch's own) sets every
  parameter's ``grad`` to None: traced line by line it read each ``grad`` to skip the ones
  already None, and the guard on that (None before the first ``backward``, a tensor after) made
  the second step of a compiled training step recompile. Storing None into every one leaves
  the same, read nothing, and guards nothing; with a profiler on, it is traced as it is (its
  ``record_function`` label must be recorded).
- **State made before the trace reads it.** ``_init_group`` (torch's own) is run once for real
  when it is reached with state still to make and nothing pending, then traced as usual: it
  finds the state made, as every later call does, so the first call's entry serves them all
  (one graph, as torch.compile: a trace of the first step alone made one graph that creates
  the state, then a second for every later step). It only fills empty state entries with
  zeros: the same tensors eager's first step would make, so even a trace that falls back
  leaves what eager leaves.
- **A step that cannot be traced whole runs whole.** ``opt.step()`` (torch's own step) is
  traced into; where that trace breaks (Adafactor reads its step count and norms with
  ``.item()`` and branches on them, per parameter), the call breaks the graph and the step runs
  as plain Python, uncompiled, as torch.compile runs such frames (a graph break in a loop skips
  the frame). Compiled, its frames broke inside the loop over the parameters, and each
  continuation, keyed on that step's floats, retraced on every step (86 graphs in 6 whole
  training steps under aot_eager, where torch.compile made 1). The same where a group asks
  for ``capturable=True`` with a parameter (or its ``step``) on a device torch's own check
  refuses: torch skips that check while compiling; run for real, the step raises eager's
  ``AssertionError``, message and all. (``symexec.compile(opt.step)`` itself is not seen
  here: the bound method is traced as any other.)
"""

from __future__ import annotations

import collections
import types
from typing import Any

import torch
from torch.optim.optimizer import _get_capturable_supported_devices

from ..context import TracerContext
from ..exc import AttributeMissing, Unsupported
from .constant import ConstantVariable
from .ctx import record_function_records
from .dicts import ConstDictVariable
from .functions import UserMethodVariable
from .lists import ListVariable
from .user_objects import UserDefinedObjectVariable


class OptimizerVariable(UserDefinedObjectVariable):
    """An instance of a ``torch.optim.Optimizer`` subclass that existed before the call."""

    models = torch.optim.Optimizer

    def var_getattr(self, tx: TracerContext, name: str) -> Any:
        found = super().var_getattr(tx, name)
        if name == "param_groups" and isinstance(found, ListVariable):
            for group in found.items:
                _capturable_view(group)
        if type(found) is UserMethodVariable and found.obj is self:
            return self.method(found.fn, found.source)
        return found

    def method(self, fn: Any, source: Any) -> UserMethodVariable:
        """The optimizer's method ``fn`` (a function tracker, guarded), bound to it: modelled
        where it is torch's own ``step``, ``zero_grad`` or ``_init_group``."""
        name = getattr(getattr(fn, "fn", None), "__name__", None)
        if name in _MODELLED and _is_torch_own(fn.fn):
            return _MODELLED[name](fn, self, source)
        return UserMethodVariable(fn, self, source)


def _is_torch_own(fn: Any) -> bool:
    """Whether ``fn`` is torch's own code (through torch's wrappers), not a user override."""
    while isinstance(fn, types.FunctionType) and hasattr(fn, "__wrapped__") and fn.__module__.startswith("torch."):
        fn = fn.__wrapped__
    return isinstance(fn, types.FunctionType) and fn.__module__.startswith("torch.optim.")


_VIEW_REASON = "writing to a param group the trace sees as capturable (its replay would store the view)"


def _capturable_view(group: Any) -> None:
    """``group['capturable']`` reads True in this trace, where the group allows it."""
    if type(group) is not ConstDictVariable or "capturable" not in group.items or group.not_replayable:
        return
    if any(not value.is_python_constant() for key, value in group.items.items() if key != "params"):
        return  # a tensor hyperparameter (lr, betas): capturable decides errors there, seen as it is
    group.items["capturable"] = ConstantVariable(True)
    group.not_replayable = _VIEW_REASON


class InitGroupVariable(UserMethodVariable):
    """``optimizer._init_group(group, params, grads, ...)``: the state made for real first,
    where the trace may, then the method traced."""

    models = types.MethodType

    def call_function(self, tx: TracerContext, args: list[Any], kwargs: dict[str, Any]) -> Any:
        self._make_state(tx, args, kwargs)
        return super().call_function(tx, args, kwargs)

    def _make_state(self, tx: TracerContext, args: list[Any], kwargs: dict[str, Any]) -> None:
        optimizer = self.obj.value
        memos = tx.trace.memos
        if kwargs or not args or tx.trace.side_effects:  # a pending write: the real world is not the trace's
            return
        if any(type(a) is not ListVariable or a.source is not None or a.items for a in args[1:]):
            return  # (torch's optimizers pass fresh empty lists to fill)
        group = next((value for value, var in memos.objects_by_id.values() if var is args[0]), None)
        state = optimizer.__dict__.get("state")
        if type(group) is not dict or type(state) not in (dict, collections.defaultdict) or id(state) in memos.objects_by_id:
            return  # (the trace has read the state already: its view of it would go stale)
        params = group.get("params")
        if type(params) is not list or all(p in state and state[p] for p in params if p.grad is not None):
            return  # nothing to make
        method = self.fn.fn  # type: ignore[attr-defined]
        try:
            method(optimizer, group, *[[] for _ in args[1:]])
        except Exception as e:  # (a sparse gradient, a complex parameter...: raised where eager raises)
            raise Unsupported(f"{type(optimizer).__qualname__}._init_group raised {type(e).__name__}") from None



class ZeroGradVariable(UserMethodVariable):
    """``optimizer.zero_grad()``, ``zero_grad(True)``: None stored into every parameter's grad."""

    models = types.MethodType

    def call_function(self, tx: TracerContext, args: list[Any], kwargs: dict[str, Any]) -> Any:
        given = args[0] if args else kwargs.get("set_to_none")
        if len(args) + len(kwargs) > 1 or kwargs and "set_to_none" not in kwargs \
                or given is not None and not (given.is_python_constant() and given.as_python_constant() is True) \
                or record_function_records() or not self._patched(tx):
            return super().call_function(tx, args, kwargs)  # (zeroing in place, a profiler, a first call's patching)
        tx.guards.global_state([("a record_function records", record_function_records, False)])
        none = ConstantVariable(None)
        for group in self.obj.var_getattr(tx, "param_groups").unpack(tx):
            for param in group.getitem(tx, ConstantVariable("params")).unpack(tx):
                param.store_attr(tx, "grad", none)
        return none

    def _patched(self, tx: TracerContext) -> bool:
        """Whether torch has patched the optimizer's step (its first ``zero_grad`` or ``step``
        does it, by ``_patch_step_function``), read and guarded as the method reads it."""
        try:
            self.obj.var_getattr(tx, "_zero_grad_profile_name")
        except AttributeMissing:
            return False
        return True


class StepVariable(UserMethodVariable):
    """``optimizer.step(...)``: traced into, unless a group's ``capturable=True`` is refused by
    torch's own device check (then it breaks here). At a break at this call, whatever raised
    it, the step runs as it is, uncompiled (``breaks.py`` reads ``runs_uncompiled``)."""

    models = types.MethodType

    runs_uncompiled = True

    def call_function(self, tx: TracerContext, args: list[Any], kwargs: dict[str, Any]) -> Any:
        refused = _refused_capturable(self.obj.value)
        if refused is not None:
            raise Unsupported(f"{refused}: torch checks the devices of a capturable step only when not compiling "
                              f"(torch.compiler.is_compiling()), so the step runs for real, and raises as in eager")
        return super().call_function(tx, args, kwargs)


def _refused_capturable(optimizer: Any) -> str | None:
    """Why eager's step would refuse a group's ``capturable=True`` (a parameter, or its state's
    ``step``, off the devices ``_get_capturable_supported_devices`` names), or None. Read from
    the real groups, unguarded: a refusal only runs the step for real, right either way. The
    trace made where nothing is refused relies on what it reads itself, guarded there: each
    group's ``capturable`` (``param_groups[0]['capturable'] is False``) and the devices of the
    parameters and steps (their tensor guards)."""
    supported = _get_capturable_supported_devices(supports_xla=False)  # (the shorter list: refuses more)
    groups = getattr(optimizer, "param_groups", None)
    state = getattr(optimizer, "state", None)
    if type(groups) is not list or not isinstance(state, dict):
        return None
    for group in groups:
        if type(group) is not dict or group.get("capturable") is not True:
            continue
        for param in group.get("params", ()):
            if not isinstance(param, torch.Tensor):
                continue
            entry = state.get(param)  # (a defaultdict's get makes nothing)
            step = entry.get("step") if type(entry) is dict else None
            if param.device.type not in supported:
                return f"capturable=True with a parameter on {param.device.type}"
            if isinstance(step, torch.Tensor) and step.device.type != param.device.type:
                return f"capturable=True with a parameter on {param.device.type} and its step on {step.device.type}"
    return None


_MODELLED = {"_init_group": InitGroupVariable, "zero_grad": ZeroGradVariable, "step": StepVariable}
