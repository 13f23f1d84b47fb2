"""``torch.nn.Module`` instances: parameters and buffers as graph inputs with sources
(``L['self'].layers[0].weight``), submodule calls inlined, containers iterated and indexed.

A module call is inlined (its ``forward`` runs in the trace) when no hook is registered on it;
the guards then include that it still has none. With hooks, the graph breaks and CPython
calls the module, hooks and all.
"""

from __future__ import annotations

from typing import Any

import torch

from ..exc import Unsupported
from ..guards import GuardKind
from ..source import AttrSource, GetItemSource, Source
from .base import DELETED, VariableTracker
from .constant import ConstantVariable
from .lists import ListVariable, TupleVariable
from .user_objects import UserDefinedObjectVariable, class_attribute, lookup_on_class

_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")


_GLOBAL_HOOK_DICTS = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                      "_global_backward_pre_hooks", "_global_forward_hooks_always_called")


def _global_hooks(tx: Any) -> bool:
    """Whether a global module hook is registered now; guarded either way."""
    module = torch.nn.modules.module
    dicts = [getattr(module, name) for name in _GLOBAL_HOOK_DICTS if isinstance(getattr(module, name, None), dict)]
    tx.guards.add(GuardKind.GLOBAL_STATE, "no global nn.Module hooks",
                  " and ".join(f"not {tx.guards.constant(d)}" for d in dicts) or "True")
    return any(dicts)


class NNModuleVariable(UserDefinedObjectVariable):
    def describe(self) -> str:
        return f"the module {self.source.name if self.source else ''} ({self.cls.__qualname__})"

    @property
    def module(self) -> torch.nn.Module:
        return self.value

    def var_getattr(self, tx: Any, name: str) -> VariableTracker:
        written = self.written_attribute(tx, name)
        if written is not None:
            return written
        mod = self.module
        source = AttrSource(self.source, name)
        instance_dict = mod.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if name in instance_dict.get(store, {}):
                return tx.wrap(instance_dict[store][name], source)
        if name in instance_dict:
            return tx.wrap(instance_dict[name], source)
        if self.source is not None:  # an instance attribute set later (``m.forward = ...``) shadows it
            tx.guards.not_in_instance_dict(self.source, name)
        return class_attribute(tx, self, self.cls, name, class_source=self._class_source())

    def store_attr(self, tx: Any, name: str, value: VariableTracker | None) -> None:
        if value is not None and issubclass(value.python_type(), (torch.nn.Module, torch.nn.Parameter)):
            raise Unsupported(f"assigning a module or parameter to {name!r} of a module")
        # Module.__setattr__ runs when the write is replayed, as it would in eager.
        tx.output.side_effects.store_attr(self, name, DELETED if value is None else value)

    def call_function(self, tx: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        mod = self.module
        _, call = lookup_on_class(tx, self.cls, "__call__")
        if call is not torch.nn.Module.__call__:  # the class's own __call__ runs, as in eager
            return super().call_function(tx, args, kwargs)
        if any(getattr(mod, hooks, None) for hooks in _HOOK_DICTS) or _global_hooks(tx):
            raise Unsupported(f"calling {self.describe()}, which has hooks", hint="CPython runs it, hooks and all")
        if self.source is not None:
            checks = " and ".join(f"not {self.source.expr()}.{h}" for h in _HOOK_DICTS)
            tx.guards.add(GuardKind.ID_MATCH, f"no hooks on {self.source.name}", checks, self.source)
        forward = self.var_getattr(tx, "forward")
        return forward.call_function(tx, args, kwargs)

    def _children(self, tx: Any) -> list[tuple[Any, VariableTracker]]:
        mod = self.module
        self._guard_children(tx)
        if isinstance(mod, torch.nn.ModuleDict):
            return [(k, tx.wrap(m, GetItemSource(self.source, k))) for k, m in mod.items()]
        if isinstance(mod, (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ParameterList)):
            return [(i, tx.wrap(m, GetItemSource(self.source, i))) for i, m in enumerate(mod)]
        raise Unsupported(f"iterating over {self.describe()}")

    def unpack(self, tx: Any) -> list[VariableTracker]:
        children = self._children(tx)
        if isinstance(self.module, torch.nn.ModuleDict):
            return [ConstantVariable(k) for k, _ in children]
        return [v for _, v in children]

    def _guard_children(self, tx: Any) -> None:
        """The container's children, as the trace enumerates them: their names, in order
        (a ModuleList appended to later retraces)."""
        store = "_parameters" if isinstance(self.module, torch.nn.ParameterList) else "_modules"
        if self.source is not None:
            tx.guards.keys_match(AttrSource(self.source, store), list(getattr(self.module, store)))

    def call_method(self, tx: Any, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        mod = self.module
        if name == "__len__" and isinstance(mod, (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict)):
            self._guard_children(tx)
            return ConstantVariable(len(mod))
        if name == "__getitem__" and len(args) == 1:
            key = args[0].as_python_constant()
            if isinstance(key, slice):  # the children in that slice (for iteration and indexing)
                if not isinstance(mod, (torch.nn.Sequential, torch.nn.ModuleList)):
                    raise Unsupported("slicing a module container")
                return ListVariable([tx.wrap(mod[i], GetItemSource(self.source, i)) for i in range(len(mod))[key]])
            if isinstance(mod, (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ParameterList)):
                key = range(len(mod))[key]  # a negative index, as the source of the child
            return tx.wrap(mod[key], GetItemSource(self.source, key))
        if name in ("items", "keys", "values") and isinstance(mod, torch.nn.ModuleDict) and not args:
            children = self._children(tx)
            if name == "keys":
                return ListVariable([ConstantVariable(k) for k, _ in children])
            if name == "values":
                return ListVariable([v for _, v in children])
            return ListVariable([TupleVariable([ConstantVariable(k), v]) for k, v in children])
        if name in ("parameters", "buffers", "children") and not args:
            store = {"parameters": mod.named_parameters, "buffers": mod.named_buffers, "children": mod.named_children}[name]
            if self.source is None:
                raise Unsupported(f"{name}() of a module without a source")
            for path, sub in mod.named_modules():  # what the enumeration walks: every module's dicts
                for part in ("_modules", "_parameters", "_buffers"):
                    tx.guards.keys_match(AttrSource(_dotted(self.source, path) if path else self.source, part),
                                         list(getattr(sub, part)))
            return ListVariable([tx.wrap(value, _dotted(self.source, key)) for key, value in store()])
        if name == "__iter__":
            return ListVariable(self.unpack(tx))
        return super().call_method(tx, name, args, kwargs)

    def __repr__(self) -> str:
        return f"NNModuleVariable({self.cls.__qualname__})"


def _dotted(source: Source | None, path: str) -> Source | None:
    for part in path.split("."):
        source = GetItemSource(source, int(part)) if part.isdigit() else AttrSource(source, part)
    return source
