"""User Python functions and closures: called by inlining their bytecode.

``UserFunctionVariable`` is a real function object met while tracing (a global helper, a
closure passed in); ``NestedUserFunctionVariable`` is one created by MAKE_FUNCTION inside the
traced code (lambdas, comprehensions, inner defs), whose defaults and closure cells are
trackers. Calling either runs its code in a child translator (``tx.inline_call``), so its torch
operations land in the same graph.
"""

from __future__ import annotations

import functools
import inspect
import types
from typing import Any, Callable

from .. import versions
from ..torch_api import allowed_in_graph_by_torch, disable_reason, disabled_by_torch, disabled_by_user
from ..context import TracerContext
from ..exc import AttributeMissing, Unsupported
from ..source import AttrSource, ConstSource, GetItemSource, GlobalSource, Source
from .base import VariableTracker
from .object_protocol import DESCRIPTORS
from .constant import ConstantVariable, is_literal, wrap_constant
from .dicts import ConstDictVariable
from .lists import TupleVariable

_FUNCTION_ATTRS = frozenset({"__name__", "__qualname__", "__module__", "__doc__", "__defaults__",
                             "__kwdefaults__", "__wrapped__", "__globals__", "__annotations__"})
# The function object's own settable slots (getset descriptors, not its ``__dict__``), by the
# type a new value must have (CPython raises TypeError for another): what functools.wraps sets.
_SETTABLE_SLOTS = {"__module__": object, "__doc__": object, "__name__": str, "__qualname__": str,
                   "__annotations__": dict, "__type_params__": tuple}
# Slots whose value the trace relies on (binding, globals, code) or that cannot be set.
_FIXED_SLOTS = frozenset({"__code__", "__defaults__", "__kwdefaults__", "__globals__", "__closure__", "__dict__",
                          "__builtins__", "__class__"})
# The builtin function type's own attributes, and those of the bound method type and object
# (a bound method reads any other name from its function): builtin classes, which cannot change.
_FUNCTION_TYPE_ATTRS = frozenset(vars(types.FunctionType))
_METHOD_TYPE_ATTRS = frozenset(vars(types.MethodType)) | frozenset(vars(object))
# Read from a real function with a source: its slots (``__type_params__`` where the function
# type has it: 3.12+, which functools.wraps copies there).
_READ_ATTRS = _FUNCTION_ATTRS | ({"__type_params__"} & _FUNCTION_TYPE_ATTRS)
_NOT_INLINABLE_FLAGS = inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE

class CellVariable(VariableTracker):
    """A closure cell. ``contents`` is the tracker inside, or None while the cell is empty.

    A cell that existed before the call (a real closure cell) knows how generated code writes
    it (``emit_store``): writing it is a side effect on the user's world, replayed after the
    graph.
    """

    models = types.CellType

    built_once = True

    def __init__(self, contents: VariableTracker | None = None, pre_existing: bool = False,
                 loader: "Callable[[], VariableTracker | None] | None" = None,
                 store: "Callable[[Any], None] | None" = None, source: Source | None = None) -> None:
        super().__init__(source)  # the source of the cell object itself, where it has one
        self._contents = contents
        self._loader = loader  # wraps a real cell's contents on first read, so unused cells add no guard
        self.pre_existing = pre_existing
        self._store = store

    def subvalues(self) -> list[VariableTracker]:
        return [self.contents] if self.contents is not None else []

    def reconstruct(self, cg: Any) -> None:
        """The real cell: re-fetched, or made by generated code (a cell of the traced frame, at a
        graph break, shared by the inner functions rebuilt there and by the continuation)."""
        if self.source is not None:
            self.source.emit_load(cg)
        elif self.pre_existing:
            raise Unsupported("re-creating a closure cell of an enclosing function")
        else:
            # Made empty and remembered, then filled: its contents may be a function closing
            # over this very cell (a recursive inner function), which must find it.
            cg.call_const(types.CellType, lambda: [])
            cg.remember(self)
            if self.contents is not None:
                cg.reconstruct(self.contents)
                cg.load_built(self)
                cg.emit("STORE_ATTR", "cell_contents")

    def emit_store(self, cg: Any) -> None:
        """With the new contents on the stack, write them into the real cell."""
        if self._store is None:
            raise Unsupported("writing a closure cell that generated code cannot reach")
        self._store(cg)

    @property
    def contents(self) -> VariableTracker | None:
        if self._loader is not None:
            self._contents, self._loader = self._loader(), None
        return self._contents

    @contents.setter
    def contents(self, value: VariableTracker | None) -> None:
        self._contents, self._loader = value, None

    def __repr__(self) -> str:
        return f"CellVariable({self.contents!r})"


def real_cell(tx: TracerContext, cell: types.CellType, source: Source | None, store: "Callable[[Any], None] | None",
              cell_source: Source | None = None) -> CellVariable:
    """A tracker for a cell that exists outside the trace; its contents are wrapped when read.
    ``source`` re-fetches the contents; ``store`` writes new contents in generated code;
    ``cell_source`` re-fetches the cell itself. One cell reached two ways (a frame's own cell and
    the closure of a function over it) is one tracker, so a write through one is read through
    the other."""
    known = tx.trace.memos.real_cells.get(id(cell))
    if known is not None:
        return known
    try:
        contents = cell.cell_contents
    except ValueError:  # an empty cell
        var = CellVariable(None, pre_existing=True, store=store, source=cell_source)
    else:
        var = CellVariable(pre_existing=True, loader=lambda: tx.wrap(contents, source), store=store, source=cell_source)
    tx.trace.memos.real_cells[id(cell)] = var
    return var


class BaseUserFunctionVariable(VariableTracker):
    """A Python function (``types.FunctionType``) that the trace inlines when it is called: its
    code, globals, closure and defaults. Generators, coroutines and functions marked
    ``symexec.disable`` are not inlined (``check_inlinable``)."""

    models = types.FunctionType

    code: types.CodeType
    f_globals: dict[str, Any]
    global_source: Source | None = None  # how generated code reaches those globals, if known

    def python_type(self) -> type:
        return types.FunctionType

    def truth(self, tx: TracerContext) -> bool:
        return True  # (a function has neither __bool__ nor __len__)

    def check_inlinable(self) -> None:
        if self.code.co_flags & _NOT_INLINABLE_FLAGS:
            raise Unsupported(f"calling coroutine function {self.code.co_name}()")

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        self.check_inlinable()
        return tx.inline_call(self, args, kwargs)

    def bind(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> dict[str, VariableTracker]:
        """Map parameter names to trackers as CPython would, defaults and */** included."""
        raise NotImplementedError

    def closure_cells(self, tx: TracerContext) -> list[CellVariable]:
        raise NotImplementedError

    def _bind_with(self, shell: types.FunctionType, args: list[VariableTracker], kwargs: dict[str, VariableTracker],
                   wrap_default: Any) -> dict[str, VariableTracker]:
        fast = _bind_simple(shell, args, kwargs, wrap_default)
        if fast is not None:
            return fast
        try:
            bound = inspect.signature(shell, follow_wrapped=False).bind(*args, **kwargs)
        except TypeError as e:
            raise Unsupported(f"call of {self.code.co_name}() does not match its signature: {e}") from e
        bound.apply_defaults()
        result: dict[str, VariableTracker] = {}
        for name, param in bound.signature.parameters.items():
            local = name
            if name not in self.code.co_varnames and name.startswith("implicit"):
                local = "." + name.removeprefix("implicit")  # inspect renames a comprehension's .0
            value = bound.arguments[name]
            if param.kind is param.VAR_POSITIONAL:
                value = TupleVariable(list(value))
            elif param.kind is param.VAR_KEYWORD:
                value = ConstDictVariable(dict(value))
            elif not isinstance(value, VariableTracker):
                value = wrap_default(name, value)
            result[local] = value
        return result


def _as_tracker(wrap_default: Any, name: str, value: Any) -> VariableTracker:
    """A default as a tracker: a function made while tracing holds trackers already, a real one
    holds real values that ``wrap_default`` wraps (through their source)."""
    return value if isinstance(value, VariableTracker) else wrap_default(name, value)


def _bind_simple(shell: types.FunctionType, args: list[VariableTracker], kwargs: dict[str, VariableTracker],
                 wrap_default: Any) -> dict[str, VariableTracker] | None:
    """The common call, bound from the code object as CPython does (``inspect.signature`` costs
    tens of microseconds per inlined call): every argument matched once, each missing one
    with a default. None where anything is unusual (a keyword naming a positional-only
    parameter, an unknown or duplicate keyword, too many or too few arguments): then
    ``inspect`` binds it, or says why it cannot."""
    code = shell.__code__
    names, npos, nkw = code.co_varnames, code.co_argcount, code.co_kwonlyargcount
    varargs, varkw = code.co_flags & 0x04, code.co_flags & 0x08
    if len(args) > npos and not varargs:
        return None
    result: dict[str, VariableTracker] = dict(zip(names[:npos], args))
    extra_kw: dict[str, VariableTracker] = {}
    named = names[code.co_posonlyargcount:npos + nkw]
    for key, value in kwargs.items():
        if key in result:
            return None
        if key in named:
            result[key] = value
        elif varkw and key not in names[:code.co_posonlyargcount]:
            extra_kw[key] = value
        else:
            return None
    defaults = shell.__defaults__ or ()
    first_default = npos - len(defaults)
    for i, name in enumerate(names[:npos]):
        if name not in result:
            if i < first_default:
                return None
            result[name] = _as_tracker(wrap_default, name, defaults[i - first_default])
    kwdefaults = shell.__kwdefaults__ or {}
    for name in names[npos:npos + nkw]:
        if name not in result:
            if name not in kwdefaults:
                return None
            result[name] = _as_tracker(wrap_default, name, kwdefaults[name])
    index = npos + nkw
    if varargs:
        result[names[index]] = TupleVariable(list(args[npos:]))
        index += 1
    if varkw:
        result[names[index]] = ConstDictVariable(extra_kw)
        index += 1
    return {name: result[name] for name in names[:index]}  # (in the signature's order)


class UserFunctionVariable(BaseUserFunctionVariable):
    """A real Python function object."""

    models = types.FunctionType

    # Whether the guards pin this very object (False for a function made per call, whose code,
    # globals and empty ``__dict__`` are pinned instead: ``is`` on it is then guarded by source).
    identity_pinned = True
    # Set where a function marked allow_in_graph is traced into after all (given what a graph
    # cannot hold: TorchVariable): its marks are not asked again.
    traced_into = False

    def __init__(self, fn: types.FunctionType, source: Source | None = None) -> None:
        super().__init__(source)
        self.fn = fn
        self.code = fn.__code__
        self.f_globals = fn.__globals__

    def as_python_constant(self) -> Any:
        return self.fn

    def describe(self) -> str:
        return f"function {self.fn.__qualname__}"

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if disabled_by_torch(self.fn) and self.source is not None:
            # torch's wrapper that keeps torch.compile out (Optimizer.zero_grad, or what
            # torch.compile itself marks after tracing an optimizer): it only switches
            # torch.compile's frame hook off around the call. symexec calls what it wraps
            # (read through the wrapper, guarded); traced, the switches went into the graph.
            inner = tx.wrap(self.fn.__wrapped__, AttrSource(self.source, "__wrapped__"))
            return inner.call_function(tx, args, kwargs)
        if is_marked_constant(self.fn) and not getattr(self.fn, "_symexec_disabled", False):
            return call_marked_constant(self.fn, args, kwargs)
        if not self.traced_into and (getattr(self.fn, "_symexec_allow_in_graph", False)
                                     or getattr(self.fn, "_symexec_graph_break", False) or allowed_in_graph_by_torch(self.fn)):
            # (found where no builder saw it: a staticmethod read from its class) one node, or
            # the break, as the builder makes of it
            return tx.wrap(self.fn, self.source or ConstSource.of(self.fn)).call_function(tx, args, kwargs)
        if args:
            result = args[0].own_call(tx, self.fn, args, kwargs)
            if result is not None:
                return result
        return super().call_function(tx, args, kwargs)

    def check_inlinable(self) -> None:
        if getattr(self.fn, "_symexec_disabled", False):
            raise Unsupported(f"{self.fn.__qualname__}() is marked symexec.disable",
                              hint="the call runs as plain Python between graphs")
        if disabled_by_user(self.fn):
            reason = disable_reason(self.fn)
            raise Unsupported(f"{self.fn.__qualname__}() is marked torch.compiler.disable"
                              + (f" ({reason})" if reason else ""),
                              hint="the call runs as plain Python between graphs, as under torch.compile")
        super().check_inlinable()

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        if name == "__code__":
            return ConstantVariable(self.code)  # immutable; the function itself is guarded
        if name == "__wrapped__" and not hasattr(self.fn, name):  # (functools.wraps sets it; it may be set later)
            if self.source is None:
                raise Unsupported(f"{self.fn.__qualname__} without __wrapped__, unguarded")
            tx.guards.hasattr_match(self.source, name, False)
            raise AttributeMissing.exactly(AttributeError(f"'function' object has no attribute '{name}'"), guarded=True)
        if name in _READ_ATTRS or name in getattr(self.fn, "__dict__", {}):
            return tx.wrap(getattr(self.fn, name), AttrSource(self.source, name) if self.source else None)
        if name == "__dict__":  # (a live dict: read through a source, the function's own if none)
            return tx.wrap(self.fn.__dict__, AttrSource(self.source or ConstSource.of(self.fn), name))
        return super().var_getattr(tx, name)

    def bind(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> dict[str, VariableTracker]:
        defaults = self.fn.__defaults__ or ()
        positional = self.code.co_varnames[: self.code.co_argcount]
        first_default = len(positional) - len(defaults)

        def wrap_default(name: str, value: Any) -> VariableTracker:
            if self.source is None:
                return tx.wrap(value, None)
            if name in positional and positional.index(name) >= first_default:
                index = positional.index(name) - first_default
                return tx.wrap(value, GetItemSource(AttrSource(self.source, "__defaults__"), index))
            return tx.wrap(value, GetItemSource(AttrSource(self.source, "__kwdefaults__"), name))

        return self._bind_with(self.fn, args, kwargs, wrap_default)

    def closure_cells(self, tx: TracerContext) -> list[CellVariable]:
        cells = []
        base = self.source or ConstSource.of(self.fn)  # (a function held by the trace itself)
        for i, cell in enumerate(self.fn.__closure__ or ()):
            cell_source = GetItemSource(AttrSource(base, "__closure__"), i)

            def store(cg: Any, cell_source: Source = cell_source) -> None:
                cell_source.emit_load(cg)
                cg.emit("STORE_ATTR", "cell_contents")

            cells.append(real_cell(tx, cell, AttrSource(cell_source, "cell_contents"), store, cell_source))
        return cells

    def __repr__(self) -> str:
        return f"UserFunctionVariable({self.fn.__qualname__})"


def is_marked_constant(fn: Any) -> bool:
    """Whether ``fn`` carries ``torch._dynamo.assume_constant_result``'s mark (also set by
    libraries that cannot import torch, such as transformers' version probes)."""
    return getattr(fn, "_dynamo_marked_constant", False) is True


def call_marked_constant(fn: Callable[..., Any], args: list[VariableTracker],
                         kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """A call of a function marked ``assume_constant_result``: called for real while tracing,
    its result a constant of the trace, not guarded. That is the mark's documented contract
    (torch.compiler.assume_constant_result: "mark a function as having a constant result ...
    torch.compile will not attempt to validate whether the constant assumption is true"), and
    what torch.compile does; the function then runs once per trace, not once per call. Only
    where that cannot change more than the mark allows: arguments known while tracing (their
    values guarded), an immutable result (a list the caller could mutate would be shared by
    every later call), no exception (CPython raises it, at the break)."""
    try:
        const_args = [a.as_python_constant() for a in args]
        const_kwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
    except Unsupported:
        raise Unsupported(f"calling {getattr(fn, '__qualname__', fn)}, marked assume_constant_result, "
                          f"with values not known while tracing") from None
    name = getattr(fn, "__qualname__", repr(fn))
    try:
        value = fn(*const_args, **const_kwargs)
    except Exception as e:
        raise Unsupported(f"{name}, marked assume_constant_result, raises {type(e).__name__}: {e}") from e
    if not is_literal(value):
        raise Unsupported(f"{name}, marked assume_constant_result, returns a {type(value).__name__}, "
                          f"not an immutable constant")
    return wrap_constant(value)


class NestedUserFunctionVariable(BaseUserFunctionVariable):
    """A function made by MAKE_FUNCTION while tracing; nothing about it exists outside yet.
    Attributes set on it (``functools.wraps``: ``__module__``, ``__name__``, ``__doc__``...,
    ``__wrapped__`` and the wrapped function's ``__dict__``) are kept and set again on the
    function generated code makes; setting ``__code__``, ``__defaults__``, ``__kwdefaults__``
    or ``__dict__`` itself, or deleting an attribute, is not modelled."""

    models = types.FunctionType

    built_once = True  # (one object however many places hold it)

    def __init__(self, code: types.CodeType, f_globals: dict[str, Any], defaults: VariableTracker | None,
                 kwdefaults: VariableTracker | None, closure: VariableTracker | None) -> None:
        super().__init__()
        self.code = code
        self.f_globals = f_globals
        self.defaults = defaults
        self.kwdefaults = kwdefaults
        self.closure = closure
        self.globals_source: Source | None = None  # how the making frame reached f_globals
        self.annotations: VariableTracker | None = None  # MAKE_FUNCTION's (name/value pairs)
        # The _SETTABLE_SLOTS set while tracing: one dict tracker, so generated code builds it once
        # (a tracker made per reconstruct could share the id of one already built, and be taken for it).
        self.slots = ConstDictVariable({})
        self.instance_dict: ConstDictVariable | None = None  # its __dict__, once read or written

    def describe(self) -> str:
        return f"function {self.code.co_qualname}"

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        if name in self.slots.items:
            return self.slots.items[name]
        if name == "__code__":
            return ConstantVariable(self.code)
        if name in ("__name__", "__qualname__"):
            return ConstantVariable(getattr(self.code, "co_" + name.strip("_")))
        if name == "__dict__":
            return self._instance_dict()
        if self.instance_dict is not None and name in self.instance_dict.items:
            return self.instance_dict.items[name]
        if name == "__doc__":  # (CPython takes it from the code's constants, by version)
            cells = tuple(types.CellType() for _ in self.code.co_freevars)  # (a closure's code needs its cells)
            return ConstantVariable(types.FunctionType(self.code, {}, None, None, cells).__doc__)
        if name == "__module__":
            return self._module_name(tx)
        if name == "__type_params__" and name in _FUNCTION_TYPE_ATTRS:
            return TupleVariable([])  # (making a generic function breaks the graph: CALL_INTRINSIC_2)
        if name == "__annotations__" and self.annotations is None:
            self.slots.items[name] = ConstDictVariable({})  # made on first read, then the same dict
            return self.slots.items[name]
        return super().var_getattr(tx, name)

    def _module_name(self, tx: TracerContext) -> VariableTracker:
        """``__module__``: the making frame's global ``__name__`` (read through its source)."""
        if "__name__" not in self.f_globals or (self.globals_source is None and "__name__" in tx.trace.side_effects.globals):
            raise Unsupported(f"the __module__ of {self.describe()}")
        source = GlobalSource("__name__") if self.globals_source is None else GetItemSource(self.globals_source, "__name__")
        return tx.wrap(self.f_globals["__name__"], source)

    def _instance_dict(self) -> ConstDictVariable:
        if self.instance_dict is None:
            self.instance_dict = ConstDictVariable({})
        return self.instance_dict

    def store_attr(self, tx: TracerContext, name: str, value: VariableTracker | None) -> None:
        if value is None or name in _FIXED_SLOTS or _reaches(value, self):
            return super().store_attr(tx, name, value)
        if name in _SETTABLE_SLOTS:
            required = _SETTABLE_SLOTS[name]
            if required is not object and not _is_exactly(value, required):
                raise Unsupported(f"setting {name} of {self.describe()} to a value that is not a {required.__name__}")
            self.slots.items[name] = value
        elif name in _FUNCTION_TYPE_ATTRS:  # another of function's own attributes
            super().store_attr(tx, name, value)
        else:
            self._instance_dict().items[name] = value

    def bind(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> dict[str, VariableTracker]:
        # A function object with our trackers as its defaults lets inspect do the binding.
        shell = types.FunctionType(
            self.code, {}, self.code.co_name,
            tuple(self.defaults.unpack(tx)) if self.defaults else None,
            tuple(types.CellType() for _ in self.code.co_freevars),
        )
        if self.kwdefaults is not None:
            assert isinstance(self.kwdefaults, ConstDictVariable)
            shell.__kwdefaults__ = dict(self.kwdefaults.items)
        return self._bind_with(shell, args, kwargs, lambda name, value: ConstantVariable(value))

    def closure_cells(self, tx: TracerContext) -> list[CellVariable]:
        return list(self.closure.unpack(tx)) if self.closure else []  # type: ignore[arg-type]

    def subvalues(self) -> list[VariableTracker]:
        held = (self.defaults, self.kwdefaults, self.annotations, self.closure, self.instance_dict, self.slots)
        return [v for v in held if v is not None]

    def reconstruct(self, cg: Any) -> None:
        if not self.slots.items and (self.instance_dict is None or not self.instance_dict.items):
            self._reconstruct_function(cg)
            return
        cg.call_const(_with_attributes, lambda: [self._reconstruct_function(cg),
                                                 cg.reconstruct(self.slots),
                                                 cg.reconstruct(self._instance_dict())])

    def _reconstruct_function(self, cg: Any) -> None:
        """MAKE_FUNCTION again, in generated code, over the cells it closes over (made by
        generated code too, shared with the continuation). A cell made first may hold this
        very function (a recursive inner function): made then, it is the one loaded here."""
        if self.closure is not None and _reaches(self.closure, self):
            for cell in self.closure.unpack(None):
                cg.reconstruct(cell)
                cg.emit("POP_TOP")
            if cg.load_built(self):
                return
        if self.globals_source is not None:
            # Made by a frame of another module (a library's decorator inlined): MAKE_FUNCTION in
            # generated code would take the compiled function's globals; it takes that module's.
            cg.call_const(_with_globals, lambda: [self._make_function(cg), self.globals_source.emit_load(cg)])
            return
        self._make_function(cg)

    def _make_function(self, cg: Any) -> None:
        flags = 0
        if self.defaults is not None:
            cg.reconstruct(self.defaults)
            flags |= 0x01
        if self.kwdefaults is not None:
            cg.reconstruct(self.kwdefaults)
            flags |= 0x02
        if self.annotations is not None:
            cg.reconstruct(self.annotations)
            flags |= 0x04
        if self.closure is not None:  # its cells, the very ones the continuation gets
            cells = self.closure.unpack(None)
            for cell in cells:
                cg.reconstruct(cell)
            cg.build(tuple, len(cells))
            flags |= 0x08
        cg.load_const(self.code)
        cg.make_function(flags)

    def __repr__(self) -> str:
        return f"NestedUserFunctionVariable({self.code.co_qualname})"


def _is_exactly(value: VariableTracker, required: type) -> bool:
    try:
        return value.python_type() is required
    except Unsupported:
        return False


def _with_attributes(fn: types.FunctionType, slots: dict[str, Any], attributes: dict[str, Any]) -> types.FunctionType:
    """``fn`` with the slots and ``__dict__`` entries the trace set on it."""
    for name, value in slots.items():
        setattr(fn, name, value)
    fn.__dict__.update(attributes)
    return fn


def _with_globals(fn: types.FunctionType, f_globals: dict[str, Any]) -> types.FunctionType:
    """``fn`` over other globals (its code, defaults, annotations, closure and names kept)."""
    made = types.FunctionType(fn.__code__, f_globals, fn.__name__, fn.__defaults__, fn.__closure__)
    made.__kwdefaults__, made.__qualname__ = fn.__kwdefaults__, fn.__qualname__
    made.__annotations__ = fn.__annotations__
    return made


def _reaches(start: VariableTracker, target: VariableTracker) -> bool:
    """Whether ``target`` is among the trackers ``start`` holds, however deep."""
    seen, todo = set(), [start]
    while todo:
        var = todo.pop()
        if var is target:
            return True
        if id(var) not in seen:
            seen.add(id(var))
            todo.extend(var.subvalues())
    return False


class UserMethodVariable(VariableTracker):
    """A function bound to an object: calling it passes the object first."""

    models = types.MethodType

    def __init__(self, fn: BaseUserFunctionVariable, obj: VariableTracker, source: Source | None = None) -> None:
        super().__init__(source)
        self.fn, self.obj = fn, obj

    def python_type(self) -> type:
        return types.MethodType

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.fn.call_function(tx, [self.obj, *args], kwargs)

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        """A bound method's own ``__func__`` and ``__self__``; any name that is not the method
        type's (nor object's) is read from its function (CPython's method_getattro), as its
        ``__doc__`` is: ``__name__``, ``__module__``, ``__wrapped__``, ``__dict__``..."""
        if name == "__func__":
            return self.fn
        if name == "__self__":
            return self.obj
        if name == "__doc__" or name not in _METHOD_TYPE_ATTRS:
            return self.fn.var_getattr(tx, name)
        return super().var_getattr(tx, name)

    def subvalues(self) -> list[VariableTracker]:
        return [self.obj]

    def reconstruct(self, cg: Any) -> None:
        if self.source is not None:
            self.source.emit_load(cg)
        else:
            cg.call_const(types.MethodType, lambda: [cg.reconstruct(self.fn), cg.reconstruct(self.obj)])

    def __repr__(self) -> str:
        return f"UserMethodVariable({self.fn!r})"


# -- how functions found on a class bind (object_protocol.class_attribute) ---------------------

def _class_function(fn: types.FunctionType) -> UserFunctionVariable:
    # The function itself, a constant: the lookup that found it is guarded (the class's MRO,
    # the dict that holds it, the classes before it), so every instance of the class shares
    # its reads (its globals are one dict, guarded once).
    return UserFunctionVariable(fn, ConstSource.of(fn))


def _bind_function(tx: TracerContext, static: Any, obj: VariableTracker | None, cls: type, name: str,
                   class_source: Source | None) -> VariableTracker | None:
    fn = _class_function(static)
    return fn if obj is None else UserMethodVariable(fn, obj)


def _bind_staticmethod(tx: TracerContext, static: Any, obj: VariableTracker | None, cls: type, name: str,
                       class_source: Source | None) -> VariableTracker | None:
    return _class_function(static.__func__) if isinstance(static.__func__, types.FunctionType) else None


def _bind_classmethod(tx: TracerContext, static: Any, obj: VariableTracker | None, cls: type, name: str,
                      class_source: Source | None) -> VariableTracker | None:
    func = static.__func__
    if versions.V.classmethod_chains_get and type(func) is property and isinstance(func.fget, types.FunctionType):
        # ``@classmethod @property`` (3.9-3.12): the property's __get__ on the class, its getter run
        return _class_function(func.fget).call_function(tx, [tx.wrap(cls, class_source)], {})
    if not isinstance(func, types.FunctionType):
        return None
    return UserMethodVariable(_class_function(func), tx.wrap(cls, class_source))


def _bind_property(tx: TracerContext, static: Any, obj: VariableTracker | None, cls: type, name: str,
                   class_source: Source | None) -> VariableTracker | None:
    if obj is None:
        return None  # (the property object itself, through its __get__)
    if not isinstance(static.fget, types.FunctionType):
        raise Unsupported(f"the property {cls.__qualname__}.{name} has no Python getter")
    return _class_function(static.fget).call_function(tx, [obj], {})


DESCRIPTORS.update({types.FunctionType: _bind_function, staticmethod: _bind_staticmethod,
                    classmethod: _bind_classmethod, property: _bind_property})


class GraphBreakVariable(VariableTracker):
    """``symexec.graph_break()``: calling it is where the graph must end."""

    models = types.FunctionType  # ``symexec.graph_break``

    def __init__(self, fn: Any, source: Source | None = None) -> None:
        super().__init__(source)
        self.fn = fn

    def reconstruct(self, cg: Any) -> None:
        cg.load_const(self.fn)

    def python_type(self) -> type:
        return type(lambda: None)

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        raise Unsupported("symexec.graph_break() was called", hint="remove the call to keep one graph")
