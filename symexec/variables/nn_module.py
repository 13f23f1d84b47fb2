"""``torch.nn.Module`` instances: parameters and buffers as graph inputs with sources
(``L['self'].layers[0].weight``), submodule calls inlined, containers iterated and indexed.

A module call is inlined (its ``forward`` runs in the trace) when no hook is registered on it;
the guards then include that it still has none. With hooks, the graph breaks and CPython
calls the module, hooks and all.
"""

from __future__ import annotations

import collections
import inspect
import types
from typing import Any

import torch

from ..context import TracerContext
from ..exc import AttributeMissing, TracedException, Unsupported
from ..guards import GuardKind
from ..source import AttrSource, GetItemSource, ModuleMemberSource, ObjectAttrSource, PrivateObjectSource
from .base import DELETED, BoundMethodVariable, Methods, VariableTracker, class_static, is_data_descriptor
from .dicts import ConstDictVariable
from .functions import UserMethodVariable
from .constant import ConstantVariable
from .lists import IteratorVariable, ListVariable, TupleVariable
from .object_protocol import class_attribute, lookup_on_class, no_attribute, python_function, tp_name
from .user_objects import InstanceDictVariable, UserDefinedObjectVariable, call_getattr_hook

# What Module.__setattr__ changes besides the name itself: stale until the writes are replayed.
_INTERNALS = frozenset({"_parameters", "_buffers", "_modules", "_non_persistent_buffers_set"})

# Where nn.Module.__getattr__ looks for a member, in its order.
_STORES = ("_parameters", "_buffers", "_modules")

_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")


# What ``nn.Module.__call__`` reads of the module, in order, when it has no hooks.
_CALL_READS = ("_compiled_call_impl", "_call_impl", "forward", "_backward_hooks", "_backward_pre_hooks",
               "_forward_hooks", "_forward_pre_hooks")


def _same_read(read: VariableTracker, plain: VariableTracker) -> bool:
    """Whether two reads of an attribute are the same value: one tracker, or one function
    bound to one object."""
    if read is plain:
        return True
    if isinstance(read, UserMethodVariable) and isinstance(plain, UserMethodVariable):
        return read.obj is plain.obj and read.fn.is_python_constant() and plain.fn.is_python_constant() and \
            read.fn.as_python_constant() is plain.fn.as_python_constant()
    return False


_GLOBAL_HOOK_DICTS = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                      "_global_backward_pre_hooks", "_global_forward_hooks_always_called")


def _registration_hooks(tx: TracerContext, name: str) -> bool:
    """Whether a global registration hook of this kind is registered now; guarded either way."""
    hooks = getattr(torch.nn.modules.module, name)
    tx.guards.add(GuardKind.GLOBAL_STATE, f"no {name}", f"not {tx.guards.constant(hooks)}")
    return bool(hooks)


def _is_buffer(tx: TracerContext, value: VariableTracker) -> bool:
    """``isinstance(value, torch.nn.Buffer)``: a tensor with a true ``_is_buffer`` attribute."""
    if not issubclass(value.python_type(), torch.Tensor):
        return False
    try:
        return bool(value.var_getattr(tx, "_is_buffer").as_python_constant())
    except AttributeMissing:
        return False


def _typename(value: VariableTracker) -> str:
    """``torch.typename(value)``, as Module.__setattr__'s messages name it."""
    example = getattr(value, "example", None)
    return torch.typename(example if isinstance(example, torch.Tensor) else value.as_python_constant())


def _global_hooks(tx: TracerContext) -> bool:
    """Whether a global module hook is registered now; guarded either way."""
    module = torch.nn.modules.module
    dicts = [getattr(module, name) for name in _GLOBAL_HOOK_DICTS if isinstance(getattr(module, name, None), dict)]
    tx.guards.add(GuardKind.GLOBAL_STATE, "no global nn.Module hooks",
                  " and ".join(f"not {tx.guards.constant(d)}" for d in dicts) or "True")
    return any(dicts)


_CONTAINER_GETITEMS = {cls.__getitem__ for cls in (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict,
                                                     torch.nn.ParameterList, torch.nn.ParameterDict)}


# Each of these methods of torch.nn.Module, and what it yields per module: the items of one
# of its dicts (members), or the modules themselves; named or not.
_MEMBER_METHODS = {
    "parameters": ("_parameters", False), "named_parameters": ("_parameters", True),
    "buffers": ("_buffers", False), "named_buffers": ("_buffers", True),
    "children": ("children", False), "named_children": ("children", True),
    "modules": ("modules", False), "named_modules": ("modules", True),
}


# torch's nn.Module.__init__ as symexec found it (torch._dynamo, once imported, replaces it on
# the class with a wrapper that calls this one and then tags the module for its own use).
_MODULE_INIT = torch.nn.Module.__init__
# torch's containers' own __init__, which only register the modules given (no parameters made):
# run for real on a container the trace made, with modules the trace made too.
_CONTAINER_INITS = {cls.__dict__["__init__"]: cls for cls in (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict)}


def has_writes(tx: TracerContext, var: VariableTracker) -> bool:
    """Whether the trace wrote an attribute of ``var`` (a write replayed after the graph)."""
    return any(obj is var for obj, _, _ in tx.trace.side_effects.attributes.values())


def _real_argument(var: VariableTracker) -> Any:
    """The real value of an argument of a constructor run for real: a constant, an object the
    trace made (a module), or a list, tuple or dict of those; anything else cannot be."""
    source = var.source
    if isinstance(source, PrivateObjectSource):
        return source.value
    if var.is_python_constant() and isinstance(var, ConstantVariable):
        return var.as_python_constant()
    if isinstance(var, (ListVariable, TupleVariable)) and var.source is None:
        return var.python_type()(_real_argument(item) for item in var.items)
    if isinstance(var, ConstDictVariable) and var.source is None and var.user_cls in (dict, collections.OrderedDict):
        return var.user_cls((k, _real_argument(v)) for k, v in var.items.items())
    raise Unsupported(f"{var.describe()} is not known while tracing")


class NNModuleVariable(UserDefinedObjectVariable):
    """An ``nn.Module`` that existed before the call: its parameters, buffers and submodules are
    read from the dict that holds them (guarded by where torch's lookup looks), its
    ``__call__`` (hooks included) and ``forward`` are traced, containers (``Sequential``,
    ``ModuleList``, ``ModuleDict``) are indexed, sliced, iterated. Attribute writes follow
    ``nn.Module.__setattr__`` and are replayed after the graph. A class's own ``__getitem__`` or
    ``__call__`` is traced as the user's code; slicing a container other than ``Sequential`` and
    ``ModuleList`` breaks the graph."""

    models = torch.nn.Module

    def describe(self) -> str:
        return f"the module {self.source.name if self.source else ''} ({self.cls.__qualname__})"

    @property
    def module(self) -> torch.nn.Module:
        return self.value

    def own_call(self, tx: TracerContext, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        """torch's ``nn.Module.__init__`` (or what now stands for it on the class), or a torch
        container's (``Sequential``'s...), called on a module the trace made: run for real, before
        any traced write to the module (a write it would overwrite must not win)."""
        if fn in (torch.nn.Module.__setattr__, torch.nn.Module.__delattr__) and args[0] is self and not kwargs:
            return self._explicit_module_store(tx, fn, args[1:])
        source = self.source
        if not isinstance(source, PrivateObjectSource) or not isinstance(source.value, torch.nn.Module):
            return None
        if fn is not _MODULE_INIT and fn is not class_static(tx, torch.nn.Module, "__init__") and \
                not isinstance(source.value, _CONTAINER_INITS.get(fn, ())):
            return None
        module = source.value
        if has_writes(tx, self):
            raise Unsupported(f"nn.Module.__init__ on a {type(module).__qualname__} the trace already wrote to")
        try:
            const_args = [_real_argument(a) for a in args[1:]]
            const_kwargs = {k: _real_argument(v) for k, v in kwargs.items()}
        except Unsupported:
            raise Unsupported("nn.Module.__init__ with values not known while tracing") from None
        try:
            fn(module, *const_args, **const_kwargs)
        except Exception as e:  # (CPython raises it, at the break)
            raise Unsupported(f"nn.Module.__init__ raises {type(e).__name__}: {e}") from e
        return ConstantVariable(None)

    def _explicit_module_store(self, tx: TracerContext, fn: Any, args: list[VariableTracker]) -> VariableTracker | None:
        """``nn.Module.__setattr__(module, name, value)`` called as a function (``super().__setattr__``
        in a class's own ``__setattr__``): torch's store, replayed through torch's method; None
        (the call traced as written) where the arguments are not a constant name and a value."""
        setting = fn is torch.nn.Module.__setattr__
        if len(args) != (2 if setting else 1) or not args[0].is_python_constant() or \
                type(args[0].as_python_constant()) is not str or self.source is None:
            return None
        self._module_store(tx, args[0].as_python_constant(), args[1] if setting else None, torch.nn.Module)
        return ConstantVariable(None)

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        written = self.written_attribute(tx, name)
        if written is not None:
            return written
        own = class_static(tx, self.cls, "__getattribute__")
        if own is not object.__getattribute__:
            return self._through_own_getattribute(tx, own, name)
        mod = self.module
        source = AttrSource(self.source, name)
        instance_dict = mod.__dict__
        if name in _INTERNALS and self.has_pending_writes(tx):
            raise Unsupported(f"reading {name} of {self.describe()} after the trace set its attributes")
        if name == "__dict__":
            return ModuleInstanceDictVariable.of(tx, self)
        if name in instance_dict:  # (it shadows what __getattr__ would find)
            if not is_data_descriptor(class_static(tx, self.cls, name)):
                return tx.wrap(instance_dict[name], source)
            # A data descriptor on the class (a property) wins over the instance dict, as
            # object.__getattribute__ has it.
            return class_attribute(tx, self, self.cls, name, class_source=self._class_source())
        hook = class_static(tx, self.cls, "__getattr__")
        own_hook = hook is not torch.nn.Module.__getattr__ and isinstance(hook, types.FunctionType)
        for store in () if own_hook else _STORES:  # (torch's __getattr__ looks there: a class's own first)
            if name in instance_dict.get(store, {}):
                return tx.wrap(instance_dict[store][name], self._member_source(tx, store, name))
        if self.source is not None:  # an instance attribute set later (``m.forward = ...``) shadows it
            tx.guards.not_in_instance_dict(self.source, name)
        if name in _MEMBER_METHODS and self._own_method(tx, name):
            return BoundMethodVariable(self, name)  # enumerated by ``members`` (no generator to run)
        try:
            return class_attribute(tx, self, self.cls, name, class_source=self._class_source())
        except AttributeMissing:
            if own_hook and class_static(tx, self.cls, "__getattribute__") is object.__getattribute__:
                # the class's own __getattr__, traced (it may end in torch's through super())
                return call_getattr_hook(tx, UserMethodVariable(python_function(hook), self), name)
            if self.source is None or not self._plain_lookup(tx):
                raise
            for store in _STORES:  # (torch's __getattr__ finds it in none of them either)
                tx.guards.not_in_member_store(self.source, store, name)
            raise AttributeMissing.exactly(AttributeError(f"'{self.cls.__name__}' object has no attribute '{name}'"),
                                           guarded=True) from None

    def _through_own_getattribute(self, tx: TracerContext, own: Any, name: str) -> VariableTracker:
        """``module.name`` where the class has its own Python ``__getattribute__``: traced, as
        any call (its ``super().__getattribute__`` is ``object_getattribute``); an AttributeError
        it raises calls ``__getattr__`` (torch's, or the class's own), traced too."""
        if not isinstance(own, types.FunctionType) or self.source is None:
            raise Unsupported(f"reading {name!r} of {self.describe()}, whose class's __getattribute__ is not Python")
        try:
            return call_getattr_hook(tx, UserMethodVariable(python_function(own), self), name)
        except AttributeMissing as missing:
            hook = class_static(tx, self.cls, "__getattr__")
            if missing.error is None or not isinstance(hook, types.FunctionType):
                raise
            return call_getattr_hook(tx, UserMethodVariable(python_function(hook), self), name)

    def native_call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        """``object.__getattribute__(module, name)`` (``super().__getattribute__`` in a class's
        own): ``object_getattribute``; an AttributeError raised for the code to handle."""
        if name == "__getattribute__" and len(args) == 1 and not kwargs and type(args[0].as_python_constant()) is str:
            try:
                return self.object_getattribute(tx, args[0].as_python_constant())
            except AttributeMissing as e:
                if e.error is None:
                    raise
                raise TracedException(e.error) from None
        return super().native_call_method(tx, name, args, kwargs)

    def object_getattribute(self, tx: TracerContext, name: str) -> VariableTracker:
        """``object.__getattribute__`` of the module: the class's data descriptor, its own
        ``__dict__``, the class; not torch's stores (``Module.__getattr__`` looks there). What it
        reads is re-read as that (``object.__getattribute__(m, name)``), past the class's own."""
        written = self.written_attribute(tx, name)
        if written is not None:
            return written
        if name == "__dict__":
            return ModuleInstanceDictVariable.of(tx, self, native=True)
        source = ObjectAttrSource(self.source, name) if self.source is not None else None
        instance_dict = self.module.__dict__
        if name in instance_dict and not is_data_descriptor(class_static(tx, self.cls, name)):
            return tx.wrap(instance_dict[name], source)
        if self.source is not None and name not in instance_dict:
            tx.guards.not_in_instance_dict(self.source, name, native=True)
        try:
            return class_attribute(tx, self, self.cls, name, class_source=self._class_source())
        except AttributeMissing as e:
            if e.error is not None:
                raise
            raise AttributeMissing.exactly(no_attribute(self.cls, name), guarded=True) from None

    def _plain_lookup(self, tx: TracerContext) -> bool:
        """The module's attribute lookup is torch's own: ``Module.__getattr__`` (the stores),
        ``object.__getattribute__`` (the class and instance dict), both guarded."""
        return (self._own_method(tx, "__getattr__")
                and class_static(tx, self.cls, "__getattribute__") is object.__getattribute__)

    def _member_source(self, tx: TracerContext, store: str, name: str, index: int | None = None) -> Any:
        """Where generated code re-reads member ``name`` (in ``store``): straight from that dict
        where ``module.name`` (``module[index]``) cannot find anything else, which is guarded:
        the lookup is torch's own (``__getattr__``, ``__getattribute__``, and for a child the
        container's ``__getitem__``), no class attribute and no instance attribute of that name,
        no dict ``__getattr__`` searches first holding it. Else through the attribute."""
        if self.source is None:
            return AttrSource(self.source, name) if index is None else GetItemSource(self.source, index)
        plain = self._plain_lookup(tx)
        if index is None:
            plain = plain and class_static(tx, self.cls, name) is None
        else:
            plain = plain and self._own_container_getitem(tx)
        if not plain:
            return AttrSource(self.source, name) if index is None else GetItemSource(self.source, index)
        tx.guards.not_in_instance_dict(self.source, name)
        for earlier in _STORES[:_STORES.index(store)]:
            tx.guards.not_in_member_store(self.source, earlier, name)
        return ModuleMemberSource(self.source, store, name, index)

    def _own_container_getitem(self, tx: TracerContext) -> bool:
        """``container[i]`` is the i-th of ``_modules`` (``ModuleList``'s and ``Sequential``'s
        own ``__getitem__``, the class lookup guarded; the keys are guarded by the caller)."""
        for base in (torch.nn.ModuleList, torch.nn.Sequential):
            if isinstance(self.module, base):
                return class_static(tx, self.cls, "__getitem__") is base.__getitem__
        return False

    def store_attr(self, tx: TracerContext, name: str, value: VariableTracker | None) -> None:
        """``module.name = value`` as ``nn.Module.__setattr__`` does it: a Parameter is
        registered, a tensor replaces a buffer of that name, a wrong type for a parameter, buffer
        or submodule slot raises its TypeError, anything else is a plain attribute. The write is
        replayed after the graph (the real ``__setattr__`` runs then, as in eager); reads of the
        name until then see the value written (``written_attribute``)."""
        method = "__delattr__" if value is None else "__setattr__"
        if not self._own_method(tx, method):
            if isinstance(class_static(tx, self.cls, method), types.FunctionType):
                return super().store_attr(tx, name, value)  # the class's own, inlined
            raise Unsupported(f"{method} of {self.describe()} is not torch.nn.Module's")
        self._module_store(tx, name, value)

    def _module_store(self, tx: TracerContext, name: str, value: VariableTracker | None, through: type | None = None) -> None:
        """What ``nn.Module.__setattr__`` (``__delattr__`` when value is None) does; replayed
        as ``through.__setattr__(module, name, value)`` when given, else ``module.name = value``."""
        if value is not None:
            self._check_assignment(tx, name, value)
        tx.trace.side_effects.store_attr(self, name, DELETED if value is None else value, through)

    def _check_assignment(self, tx: TracerContext, name: str, value: VariableTracker) -> None:
        slot = self._slot(tx, name)
        kind = value.python_type()
        none = value.is_python_constant() and value.as_python_constant() is None
        if issubclass(kind, torch.nn.Parameter):
            self._check_new_parameter(tx, name, value, slot)
        elif slot == "_parameters" and not none:
            raise TracedException(TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                            "(torch.nn.Parameter or None expected)"))
        elif issubclass(kind, torch.nn.Module) or slot == "_modules" and none:
            raise Unsupported(f"assigning a submodule {name!r} of {self.describe()}")
        elif slot == "_modules":
            raise TracedException(TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                            "(torch.nn.Module or None expected)"))
        elif _is_buffer(tx, value):
            raise Unsupported(f"assigning a torch.nn.Buffer to {name!r} of {self.describe()}")
        elif slot == "_buffers":
            if not none and not issubclass(kind, torch.Tensor):
                raise TracedException(TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                                "(torch.nn.Buffer, torch.Tensor or None expected)"))
            if not self._own_method(tx, "register_buffer") or _registration_hooks(tx, "_global_buffer_registration_hooks"):
                raise Unsupported(f"replacing the buffer {name!r} runs Python code (hooks or register_buffer)")
        elif hasattr(class_static(tx, self.cls, name), "__set__"):
            raise Unsupported(f"setting {self.cls.__qualname__}.{name} runs a data descriptor")

    def _slot(self, tx: TracerContext, name: str) -> str | None:
        """Which of the module's dicts holds ``name`` (their keys guarded), or None."""
        for store in ("_parameters", "_modules", "_buffers"):
            entries = self.module.__dict__.get(store)
            if type(entries) is not dict:
                raise Unsupported(f"{self.describe()} has no {store} dict (Module.__init__ not run)")
            tx.guards.keys_match(AttrSource(self.source, store), list(entries))
            if name in entries:
                return store
        return None

    def _check_new_parameter(self, tx: TracerContext, name: str, value: VariableTracker, slot: str | None) -> None:
        """What ``register_parameter`` checks, where the answer is not a plain registration."""
        if "." in name or not name or (slot != "_parameters" and class_static(tx, self.cls, name) is not None):
            raise Unsupported(f"registering the parameter {name!r}: register_parameter raises")
        if not self._own_method(tx, "register_parameter") or not self._own_method(tx, "__getattr__"):
            raise Unsupported(f"registering a parameter of {self.describe()} runs its own Python code")
        if not value.var_getattr(tx, "is_leaf").as_python_constant():
            raise Unsupported("registering a non-leaf parameter (register_parameter raises)")
        if _registration_hooks(tx, "_global_parameter_registration_hooks"):
            raise Unsupported("a global parameter registration hook is registered")

    def _own_method(self, tx: TracerContext, name: str) -> bool:
        """Whether ``name`` is ``torch.nn.Module``'s own method for this module (the class
        lookup guarded; an instance attribute of that name is guarded absent by the caller)."""
        return class_static(tx, self.cls, name) is getattr(torch.nn.Module, name)

    def has_pending_writes(self, tx: TracerContext) -> bool:
        """Whether the trace set or deleted attributes of this module (replayed after the
        graph: until then its real ``_parameters``, ``_buffers`` and ``__dict__`` are stale)."""
        return any(obj is self for obj, _, _ in tx.trace.side_effects.attributes.values())

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        mod = self.module
        _, call = lookup_on_class(tx, self.cls, "__call__")
        if call is not torch.nn.Module.__call__:  # the class's own __call__ runs, as in eager
            return super().call_function(tx, args, kwargs)
        if class_static(tx, self.cls, "__getattribute__") is not object.__getattribute__:
            return self._call_through_own_getattribute(tx, args, kwargs)
        if any(getattr(mod, hooks, None) for hooks in _HOOK_DICTS) or _global_hooks(tx):
            raise Unsupported(f"calling {self.describe()}, which has hooks", hint="CPython runs it, hooks and all")
        if issubclass(self.cls, torch.nn.RNNBase):
            # (as torch.compile: its forward checks its flat weights' weakrefs in a loop, which
            # broke once per weight, each break a continuation of its own)
            raise Unsupported(f"calling {self.describe()}, a recurrent module (RNN, LSTM, GRU)",
                              hint="CPython runs it, as under torch.compile")
        if self.source is not None:
            checks = tx.guards.code(*(piece for i, h in enumerate(_HOOK_DICTS) for piece in (" and not " if i else "not ", self.source, f".{h}")))
            tx.guards.add(GuardKind.ID_MATCH, f"no hooks on {self.source.name}", checks, self.source)
        forward = self.var_getattr(tx, "forward")
        if tx.calling is self:  # the call's result is forward's: a nested break goes on inside it
            tx.calling = forward
        return forward.call_function(tx, args, kwargs)

    def _call_through_own_getattribute(self, tx: TracerContext, args: list[VariableTracker],
                                       kwargs: dict[str, VariableTracker]) -> VariableTracker:
        """``module(...)`` where the class has its own ``__getattribute__``: what
        ``Module.__call__`` reads of the module, in its order, read through it (traced); each
        must be what ``object.__getattribute__`` finds (the forward excepted), the hooks empty."""
        forward = None
        for name in _CALL_READS:
            read = self.var_getattr(tx, name)
            if name == "forward":
                forward = read
                continue
            if not _same_read(read, self.object_getattribute(tx, name)):
                raise Unsupported(f"calling {self.describe()}, whose __getattribute__ changes {name!r}")
            if name in _HOOK_DICTS and read.truth(tx):
                raise Unsupported(f"calling {self.describe()}, which has hooks", hint="CPython runs it, hooks and all")
        if _global_hooks(tx):
            raise Unsupported(f"calling {self.describe()}, with global module hooks")
        assert forward is not None
        return forward.call_function(tx, args, kwargs)

    def _children(self, tx: TracerContext) -> list[tuple[Any, VariableTracker]]:
        mod = self.module
        self._guard_children(tx)
        if isinstance(mod, torch.nn.ModuleDict):
            return [(k, tx.wrap(m, GetItemSource(self.source, k))) for k, m in mod.items()]
        if isinstance(mod, (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ParameterList)):
            return [(i, tx.wrap(m, self._child_source(tx, i))) for i, m in enumerate(mod)]
        raise Unsupported(f"iterating over {self.describe()}")

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        children = self._children(tx)
        if isinstance(self.module, torch.nn.ModuleDict):
            return [ConstantVariable(k) for k, _ in children]
        return [v for _, v in children]

    def _child_source(self, tx: TracerContext, index: Any) -> Any:
        """Where generated code re-reads ``container[index]``: the index-th entry of its
        ``_modules`` (their keys guarded, in order) where the container's lookup is torch's."""
        mod = self.module
        if self.source is None or not isinstance(index, int) or not isinstance(mod, (torch.nn.ModuleList,
                                                                                   torch.nn.Sequential)):
            return GetItemSource(self.source, index)
        self._guard_children(tx)
        # ModuleList's __getitem__ reads the key str(i), Sequential's the i-th entry.
        keys = list(mod._modules)
        key = str(index) if isinstance(mod, torch.nn.ModuleList) else keys[index]
        if key not in mod._modules:
            return GetItemSource(self.source, index)
        return self._member_source(tx, "_modules", key, index)

    def _guard_children(self, tx: TracerContext) -> None:
        """The container's children, as the trace enumerates them: their names, in order
        (a ModuleList appended to later retraces)."""
        store = "_parameters" if isinstance(self.module, (torch.nn.ParameterList, torch.nn.ParameterDict)) else "_modules"
        if self.source is not None:
            tx.guards.keys_match(AttrSource(self.source, store), list(getattr(self.module, store)))

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        result = self.methods.call(self, tx, name, args, kwargs)
        return result if result is not None else super().call_method(tx, name, args, kwargs)  # (as any object's)

    # torch's own methods that the trace answers from the module's members (guarded); any
    # other method, or one of these the class overrides, is called as an object's.
    methods = Methods("torch.nn.Module")

    @methods("__len__")
    def _len(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not isinstance(self.module, (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict)):
            return None
        self._guard_children(tx)
        return ConstantVariable(len(self.module))

    @methods("__getitem__")
    def _getitem_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if len(args) != 1:
            return None
        mod = self.module
        getitem = class_static(tx, self.cls, "__getitem__")
        if getitem is None:
            raise TracedException(TypeError(f"'{tp_name(self.cls)}' object is not subscriptable"))
        if getitem not in _CONTAINER_GETITEMS:  # the class's own, traced as in eager
            return None
        key = args[0].as_python_constant()
        if isinstance(key, slice):  # a new container of the children in that slice
            if not isinstance(mod, (torch.nn.Sequential, torch.nn.ModuleList)) or \
                    not self._own_container_getitem(tx):
                raise Unsupported("slicing a module container")
            self._guard_children(tx)
            keys = list(mod._modules)
            return SlicedContainerVariable(self.cls, [(keys[i], tx.wrap(mod[i], self._child_source(tx, i)))
                                                      for i in range(len(mod))[key]])
        try:
            child = mod[key]
        except (IndexError, KeyError, TypeError, AttributeError) as e:  # (torch's own __getitem__: no user code;
            # a ParameterDict's missing key is an AttributeError)
            self._guard_children(tx)
            raise TracedException(e) from e
        if isinstance(mod, (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ParameterList)):
            key = range(len(mod))[key]  # a negative index, as the source of the child
        return tx.wrap(child, self._child_source(tx, key))

    @methods("items", "keys", "values")
    def _dict_view(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        if not isinstance(self.module, torch.nn.ModuleDict) or args:
            return None
        children = self._children(tx)
        if name == "keys":
            return ListVariable([ConstantVariable(k) for k, _ in children])
        if name == "values":
            return ListVariable([v for _, v in children])
        return ListVariable([TupleVariable([ConstantVariable(k), v]) for k, v in children])

    @methods(*_MEMBER_METHODS)
    def _members(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        return ModuleMembersVariable(members(tx, self, name, args, kwargs)) if self._own_method(tx, name) else None

    @methods("__iter__")
    def _iter(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
        return ListVariable(self.unpack(tx))

    def __repr__(self) -> str:
        return f"NNModuleVariable({self.cls.__qualname__})"


class ModuleInstanceDictVariable(InstanceDictVariable):
    """A module's ``__dict__`` (a lazy property caching into it): reads as any object's; a
    write bypasses ``Module.__setattr__``, so only where the two agree, a plain attribute no
    parameter, buffer or submodule slot holds (keys guarded) and no data descriptor handles."""

    models = dict

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name == "__setitem__" and len(args) == 2 and not kwargs:
            key, value = args[0].as_python_constant(), args[1]
            if type(key) is not str or self.obj._slot(tx, key) is not None or _is_buffer(tx, value) or \
                    issubclass(value.python_type(), (torch.nn.Parameter, torch.nn.Module)) or \
                    hasattr(class_static(tx, self.obj.cls, key), "__set__"):
                raise Unsupported(f"writing {key!r} into {self.describe()}, where Module.__setattr__ would differ")
            tx.trace.side_effects.store_attr(self.obj, key, value)
            return ConstantVariable(None)
        return super().call_method(tx, name, args, kwargs)

    def _lookup(self, tx: TracerContext, key: VariableTracker) -> VariableTracker | None:
        name = key.as_python_constant()
        pending = tx.trace.side_effects.pending_attr(self.obj, name) if type(name) is str else None
        if pending is not None and (pending is DELETED or self.obj._slot(tx, name) is not None or
                                    issubclass(pending.python_type(), torch.nn.Parameter)):
            raise Unsupported(f"reading {name!r} of {self.describe()} after the trace set it through Module.__setattr__")
        return super()._lookup(tx, key)


# -- parameters(), named_buffers(), modules()...: the module tree enumerated ------------------------
# (the methods themselves: _MEMBER_METHODS, above NNModuleVariable)


def members(tx: TracerContext, var: NNModuleVariable, method: str, args: list[VariableTracker],
            kwargs: dict[str, VariableTracker]) -> list[VariableTracker]:
    """What ``var.method(*args, **kwargs)`` yields, as torch.nn.Module's own generators walk
    the tree: modules depth first, each member once by identity unless ``remove_duplicate``
    is False, ``None`` entries skipped. Every fact the walk reads is guarded: the keys of each
    dict it reads, the ``None`` entries, that the methods it calls on submodules are Module's,
    and which of the objects met are one object (alias guards) or distinct."""
    what, named = _MEMBER_METHODS[method]
    bound = inspect.signature(getattr(torch.nn.Module, method)).bind(
        None, *[a.as_python_constant() for a in args], **{k: v.as_python_constant() for k, v in kwargs.items()})
    bound.apply_defaults()
    options = dict(bound.arguments)
    if options.pop("memo", None) is not None:
        raise Unsupported("named_modules() with a memo")
    if var.source is None:
        raise Unsupported(f"{method}() of a module without a source")
    prefix, dedup = options.get("prefix", ""), options.get("remove_duplicate", True)
    if what == "children":
        found = _dedup(tx, [(k, m) for k, m in _entries(tx, var, "_modules")], True)
    elif what == "modules":
        found = _tree(tx, var, prefix, dedup, set())
    else:
        modules = _tree(tx, var, prefix, dedup, set()) if options["recurse"] else [(prefix, var)]
        found = _dedup(tx, [(f"{path}{'.' if path else ''}{k}", v) for path, module in modules
                            for k, v in _entries(tx, module, what)], dedup)
    if named:
        return [TupleVariable([ConstantVariable(name), v]) for name, v in found]
    return [v for _, v in found]


def _entries(tx: TracerContext, var: NNModuleVariable, store: str) -> list[tuple[str, VariableTracker]]:
    """The non-None entries of one of a module's dicts, wrapped (its keys guarded, and each
    None entry guarded to stay None)."""
    if var.has_pending_writes(tx):
        raise Unsupported(f"enumerating {var.describe()} after the trace set its attributes")
    entries = var.module.__dict__.get(store)
    if type(entries) is not dict:
        raise Unsupported(f"{var.describe()} has no {store} dict")
    store_source = AttrSource(var.source, store)
    tx.guards.keys_match(store_source, list(entries))
    found = []
    for key, value in entries.items():
        if value is None:
            tx.guards.equals_match(GetItemSource(store_source, key), None)
        else:
            found.append((key, tx.wrap(value, ModuleMemberSource(var.source, store, key))))  # (as torch's walk reads it)
    return found


def _tree(tx: TracerContext, var: NNModuleVariable, prefix: str, dedup: bool, memo: set[int]) -> list[tuple[str, NNModuleVariable]]:
    """``named_modules()``: the module and its descendants, depth first (each submodule's own
    ``named_modules`` is Module's, guarded), each once unless ``dedup`` is False."""
    if id(var.module) in memo:
        return []
    if dedup:
        memo.add(id(var.module))
    _distinct(tx, var)
    found = [(prefix, var)]
    for key, child in _entries(tx, var, "_modules"):
        if not isinstance(child, NNModuleVariable) or not child._own_method(tx, "named_modules"):
            raise Unsupported(f"named_modules() reaching {child.describe()}, which is not Module's")
        tx.guards.not_in_instance_dict(child.source, "named_modules")
        found += _tree(tx, child, f"{prefix}{'.' if prefix else ''}{key}", dedup, memo)
    return found


def _dedup(tx: TracerContext, items: list[tuple[str, VariableTracker]], dedup: bool) -> list[tuple[str, VariableTracker]]:
    """Each object once, the first time it is met (trackers of one object are one tracker:
    the builder shares them, with an alias guard)."""
    seen: set[int] = set()
    found = []
    for name, item in items:
        _distinct(tx, item)
        if id(item) in seen:
            continue
        if dedup:
            seen.add(id(item))
        found.append((name, item))
    return found


def _distinct(tx: TracerContext, var: VariableTracker) -> None:
    """The walk relied on ``var`` being no other object it met: guarded with the inputs."""
    if var.source is not None:
        tx.guards.distinct(var.source)


class ModuleMembersVariable(IteratorVariable):
    """The generator ``module.parameters()`` (and the other enumerations) returns, over the
    members enumerated while tracing; re-created as a generator over those still to come."""

    models = types.GeneratorType

    built_once = True  # (one generator object, however many places hold it)

    def __init__(self, items: list[VariableTracker]) -> None:
        super().__init__(items, types.GeneratorType)


class SlicedContainerVariable(VariableTracker):
    """``seq[a:b]`` of a ``Sequential`` or ``ModuleList`` (torch's ``__getitem__``): a new
    container of its class (``self.__class__(...)`` of the children in the slice, under their
    keys), whose children keep the sources they were read through, so they stay guarded. It is
    called (Sequential's ``forward``: each child in turn), iterated, indexed and measured as
    torch's; generated code builds the container where it leaves the trace."""

    models = (torch.nn.Sequential, torch.nn.ModuleList)

    built_once = True

    def __init__(self, cls: type, children: list[tuple[str, VariableTracker]]) -> None:
        super().__init__()
        self.cls, self.children = cls, children

    def python_type(self) -> type:
        return self.cls

    def describe(self) -> str:
        return f"a slice of a {self.cls.__qualname__}"

    def subvalues(self) -> list[VariableTracker]:
        return [child for _, child in self.children]

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        return self.subvalues()

    def _torch_method(self, tx: TracerContext, name: str, base: type) -> bool:
        return class_static(tx, self.cls, name) is base.__dict__[name]

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if not issubclass(self.cls, torch.nn.Sequential) or kwargs or len(args) != 1 or \
                not self._torch_method(tx, "forward", torch.nn.Sequential) or \
                not self._torch_method(tx, "__call__", torch.nn.Module) or \
                not self._torch_method(tx, "_call_impl", torch.nn.Module) or _global_hooks(tx):
            raise Unsupported(f"calling {self.describe()}")
        value = args[0]
        for _, child in self.children:
            value = child.call_function(tx, [value], {})
        return value

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        base = torch.nn.Sequential if issubclass(self.cls, torch.nn.Sequential) else torch.nn.ModuleList
        if name == "__len__" and not args and self._torch_method(tx, "__len__", base):
            return ConstantVariable(len(self.children))
        if name == "__iter__" and not args and self._torch_method(tx, "__iter__", base):
            return ListVariable(self.subvalues()).call_method(tx, "__iter__", [], {})
        if name == "__getitem__" and len(args) == 1 and self._torch_method(tx, "__getitem__", base):
            key = args[0].as_python_constant()
            if isinstance(key, slice):
                return SlicedContainerVariable(self.cls, self.children[key])
            return self.children[range(len(self.children))[key]][1]
        raise Unsupported(f"method {name!r} of {self.describe()}")

    def reconstruct(self, cg: Any) -> None:
        def arguments() -> list[None]:
            for key, child in self.children:
                cg.load_const(key)
                cg.reconstruct(child)
                cg.build(tuple, 2)
            cg.build(list, len(self.children))
            return [None]

        if issubclass(self.cls, torch.nn.Sequential):  # Sequential's slice: OrderedDict of the items
            cg.call_const(self.cls, lambda: [cg.call_const(collections.OrderedDict, arguments)])
        else:  # ModuleList's: the children
            def children() -> list[None]:
                for _, child in self.children:
                    cg.reconstruct(child)
                cg.build(list, len(self.children))
                return [None]
            cg.call_const(self.cls, children)

    def __repr__(self) -> str:
        return f"SlicedContainerVariable({self.cls.__qualname__}, {len(self.children)})"
