"""Python objects that are neither constants, containers, tensors nor functions.

Classes, modules other than torch's, sets of constants, and plain user objects (reads of
their instance attributes and calls of their plain methods; everything else is issue #6).
"""

from __future__ import annotations

import inspect
import types
from typing import Any

from ..exc import Unsupported
from ..source import AttrSource, Source
from .base import DELETED, VariableTracker
from .constant import COMPUTED_WRAPPERS, ConstantVariable, is_literal
from .functions import UserFunctionVariable, UserMethodVariable


class UserDefinedClassVariable(VariableTracker):
    """A class: ``isinstance`` targets, ``type(x)`` results, class attribute reads."""

    def __init__(self, cls: type, source: Source | None = None) -> None:
        super().__init__(source)
        self.cls = cls

    def python_type(self) -> type:
        return type(self.cls)

    def as_python_constant(self) -> Any:
        return self.cls

    def describe(self) -> str:
        return f"class {self.cls.__qualname__}"

    def var_getattr(self, tx: Any, name: str) -> VariableTracker:
        try:
            static = inspect.getattr_static(self.cls, name)
        except AttributeError as e:
            raise Unsupported(f"class {self.cls.__qualname__} has no attribute {name!r}") from e
        source = AttrSource(self.source, name) if self.source else None
        if isinstance(static, staticmethod):
            static = static.__func__
        if isinstance(static, types.FunctionType) or is_literal(static):
            return tx.wrap(static, source)
        raise Unsupported(f"reading {self.cls.__qualname__}.{name} ({type(static).__name__}; issue #6)")

    def reconstruct(self, cg: Any) -> None:
        if self.source is not None:
            self.source.emit_load(cg)
        else:
            cg.load_const(self.cls)

    def __repr__(self) -> str:
        return f"UserDefinedClassVariable({self.cls.__qualname__})"


class PythonModuleVariable(VariableTracker):
    """A module that is not torch's: attribute reads wrap what they find, with a source."""

    def __init__(self, module: types.ModuleType, source: Source | None = None) -> None:
        super().__init__(source)
        self.module = module

    def python_type(self) -> type:
        return types.ModuleType

    def as_python_constant(self) -> Any:
        return self.module

    def describe(self) -> str:
        return f"module {self.module.__name__}"

    def var_getattr(self, tx: Any, name: str) -> VariableTracker:
        if not hasattr(self.module, name):
            raise Unsupported(f"module {self.module.__name__} has no attribute {name!r}")
        value = getattr(self.module, name)
        return tx.wrap(value, AttrSource(self.source, name) if self.source else None)

    def reconstruct(self, cg: Any) -> None:
        if self.source is not None:
            self.source.emit_load(cg)
        else:
            cg.load_const(self.module)

    def __repr__(self) -> str:
        return f"PythonModuleVariable({self.module.__name__})"


class SetVariable(VariableTracker):
    """A set (or frozenset) of constants, built while tracing."""

    def __init__(self, items: list[VariableTracker], frozen: bool = False) -> None:
        super().__init__()
        self.frozen = frozen
        self.items: dict[Any, VariableTracker] = {}
        for item in items:
            self.add(item)

    def add(self, item: VariableTracker) -> None:
        self.items.setdefault(item.as_python_constant(), item)

    def python_type(self) -> type:
        return frozenset if self.frozen else set

    def as_python_constant(self) -> Any:
        return self.python_type()(self.items)

    def unpack(self, tx: Any) -> list[VariableTracker]:
        # The same order as the real set would iterate in.
        return [self.items[v] for v in self.as_python_constant()]

    def truth(self, tx: Any) -> bool:
        return bool(self.items)

    def call_method(self, tx: Any, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name in ("add", "update", "remove", "discard", "pop", "clear") and not self.frozen:
            tx.output.side_effects.mutate(self)
        if name == "add" and len(args) == 1 and not self.frozen:
            self.add(args[0])
            return ConstantVariable(None)
        if name == "update" and not self.frozen:
            for arg in args:
                for item in arg.unpack(tx):
                    self.add(item)
            return ConstantVariable(None)
        if name in ("remove", "discard") and len(args) == 1 and not self.frozen:
            key = args[0].as_python_constant()
            if key not in self.items and name == "remove":
                raise Unsupported(f"KeyError: {key!r}")
            self.items.pop(key, None)
            return ConstantVariable(None)
        if name == "clear" and not args and not self.frozen:
            self.items.clear()
            return ConstantVariable(None)
        if name == "__contains__" and len(args) == 1:
            return ConstantVariable(args[0].as_python_constant() in self.items)
        if name in ("union", "intersection", "difference", "symmetric_difference", "issubset", "issuperset",
                    "isdisjoint", "__len__", "copy"):
            result = getattr(self.as_python_constant(), name)(*[a.as_python_constant() for a in args])
            return wrap_other_constant(result) if isinstance(result, (set, frozenset)) else ConstantVariable(result)
        raise Unsupported(f"method {name!r} of a set")

    def reconstruct(self, cg: Any) -> None:
        if self.source is not None:
            self.source.emit_load(cg)
        elif self.frozen:
            cg.load_const(self.as_python_constant())
        else:
            self.reconstruct_items(cg)

    def reconstruct_items(self, cg: Any) -> None:
        """Push a new set with the traced items."""
        for item in self.items.values():
            cg.reconstruct(item)
        cg.build(set, len(self.items))

    def __repr__(self) -> str:
        return f"SetVariable({list(self.items)[:6]!r})"


def wrap_other_constant(value: Any) -> VariableTracker:
    if isinstance(value, (set, frozenset)):
        return SetVariable([ConstantVariable(v) for v in value], frozen=isinstance(value, frozenset))
    raise Unsupported(f"a {type(value).__name__} computed while tracing")


COMPUTED_WRAPPERS.update({set: wrap_other_constant, frozenset: wrap_other_constant})


class UserDefinedObjectVariable(VariableTracker):
    """An instance of a user class passed in: attribute reads and plain method calls only."""

    def __init__(self, value: Any, source: Source | None = None) -> None:
        super().__init__(source)
        self.value = value

    def python_type(self) -> type:
        return type(self.value)

    def describe(self) -> str:
        return f"{type(self.value).__qualname__} object" + (f" {self.source.name}" if self.source else "")

    def var_getattr(self, tx: Any, name: str) -> VariableTracker:
        if self.source is None:
            raise Unsupported(f"reading {name!r} of {self.describe()} without a source")
        pending = tx.output.side_effects.pending_attr(self, name)
        if pending is DELETED:
            raise Unsupported(f"AttributeError: {name!r} was deleted")
        if pending is not None:
            return pending
        cls = type(self.value)
        instance_dict = getattr(self.value, "__dict__", {})
        if getattr(cls, "__getattribute__", object.__getattribute__) is not object.__getattribute__:
            raise Unsupported(f"{cls.__qualname__} overrides __getattribute__ (issue #6)")
        try:
            static = inspect.getattr_static(cls, name)
        except AttributeError:
            static = None
        class_attr = AttrSource(AttrSource(self.source, "__class__"), name)
        if isinstance(static, property) and isinstance(static.fget, types.FunctionType):
            return UserFunctionVariable(static.fget, AttrSource(class_attr, "fget")).call_function(tx, [self], {})
        if static is not None and type(static).__name__ == "member_descriptor":  # __slots__
            return tx.wrap(getattr(self.value, name), AttrSource(self.source, name))
        if static is not None and (hasattr(static, "__set__") or hasattr(static, "__delete__")):
            raise Unsupported(f"reading the data descriptor {cls.__qualname__}.{name} (issue #6)")
        if name in instance_dict:
            return tx.wrap(instance_dict[name], AttrSource(self.source, name))
        if isinstance(static, types.FunctionType):
            return UserMethodVariable(UserFunctionVariable(static, class_attr), self)
        if isinstance(static, staticmethod) and isinstance(static.__func__, types.FunctionType):
            return UserFunctionVariable(static.__func__, class_attr)
        if isinstance(static, classmethod) and isinstance(static.__func__, types.FunctionType):
            cls_var = tx.wrap(cls, AttrSource(self.source, "__class__"))
            return UserMethodVariable(UserFunctionVariable(static.__func__, AttrSource(class_attr, "__func__")), cls_var)
        if static is not None and is_literal(static):
            return tx.wrap(static, class_attr)
        raise Unsupported(f"reading {cls.__qualname__}.{name} (issue #6)")

    def store_attr(self, tx: Any, name: str, value: VariableTracker | None) -> None:
        cls = type(self.value)
        static = inspect.getattr_static(cls, name, None)
        if hasattr(static, "__set__") or getattr(cls, "__setattr__", object.__setattr__) is not object.__setattr__:
            raise Unsupported(f"setting {cls.__qualname__}.{name} runs Python code (a descriptor or __setattr__; issue #6)")
        tx.output.side_effects.store_attr(self, name, DELETED if value is None else value)

    def __repr__(self) -> str:
        return f"UserDefinedObjectVariable({type(self.value).__qualname__})"


class GraphBreakVariable(VariableTracker):
    """``symexec.graph_break()``: calling it is where the graph must end."""

    def __init__(self, fn: Any, source: Source | None = None) -> None:
        super().__init__(source)
        self.fn = fn

    def reconstruct(self, cg: Any) -> None:
        cg.load_const(self.fn)

    def python_type(self) -> type:
        return type(lambda: None)

    def call_function(self, tx: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        raise Unsupported("symexec.graph_break() was called", hint="remove the call to keep one graph")
