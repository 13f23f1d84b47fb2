"""Loads and stores: locals, constants, globals and builtins, closure cells.

3.12 adds LOAD_FAST_AND_CLEAR (inlined comprehensions save the outer variable, NULL when it
is unbound, and store it back after); 3.13 adds the fused pairs LOAD_FAST_LOAD_FAST,
STORE_FAST_LOAD_FAST and STORE_FAST_STORE_FAST, and loads a closure cell with LOAD_FAST.
"""

from __future__ import annotations

import builtins
import importlib.util
import sys
from typing import Any

from ..context import HandlerContext
from ..exc import Unsupported
from ..source import ConstSource
from ..variables import NULL, CellVariable, wrap_constant
from ..variables.base import NullVariable
from ..variables.constant import ConstantVariable
from ..versions import global_null_order
from .registry import instruction


def _load(tx: HandlerContext, name: Any) -> Any:
    # 3.13: LOAD_FAST of a cell (a CellVar/FreeVar, or the name of an argument that is also a
    # cell) is the old LOAD_CLOSURE.
    if not isinstance(name, str):
        return tx.cells[name.name]
    if name in tx.cells and not tx.has_local(name):
        return tx.cells[name]
    return tx.get_local(name)


def _store(tx: HandlerContext, name: str, value: Any) -> None:
    if isinstance(value, NullVariable):  # what LOAD_FAST_AND_CLEAR saved: the name was unbound
        tx.delete_local(name)
        return
    tx.trace.graph.name_value(value, name)  # the graph calls it `z` where the user wrote z = ...
    tx.set_local(name, value)


@instruction("LOAD_FAST", "LOAD_FAST_CHECK", pushes=1)
def LOAD_FAST(tx: HandlerContext, inst: Any) -> Any:
    return _load(tx, inst.arg)


@instruction("LOAD_FAST_AND_CLEAR", pushes=1)
def LOAD_FAST_AND_CLEAR(tx: HandlerContext, inst: Any) -> Any:
    value = tx.get_local(inst.arg) if tx.has_local(inst.arg) else NULL
    tx.delete_local(inst.arg)
    return value


@instruction("LOAD_FAST_LOAD_FAST", pushes=2)
def LOAD_FAST_LOAD_FAST(tx: HandlerContext, inst: Any) -> tuple:
    first, second = inst.arg
    return _load(tx, first), _load(tx, second)


@instruction("STORE_FAST", pops=1)
def STORE_FAST(tx: HandlerContext, inst: Any, value: Any) -> None:
    _store(tx, inst.arg, value)


@instruction("STORE_FAST_LOAD_FAST", pops=1, pushes=1)
def STORE_FAST_LOAD_FAST(tx: HandlerContext, inst: Any, value: Any) -> Any:
    stored, loaded = inst.arg
    _store(tx, stored, value)
    return _load(tx, loaded)


@instruction("STORE_FAST_STORE_FAST", pops=2)
def STORE_FAST_STORE_FAST(tx: HandlerContext, inst: Any, below: Any, top: Any) -> None:
    first, second = inst.arg  # the top of the stack goes to the first name
    _store(tx, first, top)
    _store(tx, second, below)


@instruction("DELETE_FAST")
def DELETE_FAST(tx: HandlerContext, inst: Any) -> None:
    tx.get_local(inst.arg)  # raises like CPython when unbound
    tx.delete_local(inst.arg)


@instruction("LOAD_CONST", pushes=1)
def LOAD_CONST(tx: HandlerContext, inst: Any) -> Any:
    value = inst.arg
    if type(value).__name__ == "code":
        return ConstantVariable(value)  # consumed by MAKE_FUNCTION
    return wrap_constant(value)


@instruction("LOAD_GLOBAL", pushes=lambda arg: 1 + bool(arg[0]))
def LOAD_GLOBAL(tx: HandlerContext, inst: Any) -> Any:
    push_null, name = inst.arg
    value = tx.load_global(name)
    return global_null_order(NULL, value) if push_null else value


@instruction("STORE_GLOBAL", pops=1)
def STORE_GLOBAL(tx: HandlerContext, inst: Any, value: Any) -> None:
    tx.store_global(inst.arg, value)


@instruction("DELETE_GLOBAL")
def DELETE_GLOBAL(tx: HandlerContext, inst: Any) -> None:
    raise Unsupported(f"deleting the global {inst.arg!r} (the graph breaks; CPython deletes it)")


@instruction("IMPORT_NAME", pops=2, pushes=1)
def IMPORT_NAME(tx: HandlerContext, inst: Any, level: Any, fromlist: Any) -> Any:
    # A module imported inside the function: the one imported for real, a read of sys.modules
    # (guarded). A first import runs the module's code: the graph breaks there, CPython imports
    # at the break, and the entry is for that first time only (its guard: not imported yet), so
    # that the next call is traced with the module imported.
    name = _absolute_name(tx, inst.arg, level.as_python_constant())
    module = sys.modules.get(name)
    if module is None and (name == "torch" or name.startswith("torch.")):
        module = _import_torch_module(name)
    if module is None:
        raise Unsupported(f"importing {name!r}, not imported yet, inside a compiled function",
                          hint="CPython imports it at the break; the next call is traced with it imported",
                          break_guards=lambda guards: guards.module_not_imported(name))
    tx.guards.module_imported(name, module)
    names = fromlist.as_python_constant()
    if not names:  # `import a.b` binds a
        top = name.partition(".")[0]
        module = sys.modules[top]
        tx.guards.module_imported(top, module)
    elif hasattr(module, "__path__") and not all(n != "*" and n in vars(module) for n in names):
        # `from pkg import sub`: a submodule not imported yet is imported (its code run).
        missing = [f"{name}.{n}" for n in names if n not in vars(module)]
        raise Unsupported(f"from {name} import {', '.join(names)}: not all of them are attributes of the package yet",
                          hint="CPython imports them at the break; the next call is traced with them imported",
                          break_guards=lambda guards: [guards.module_not_imported(m) for m in missing])
    return tx.wrap(module, ConstSource.of(module))


def _import_torch_module(name: str) -> Any:
    """One of torch's own modules, imported now, while tracing, rather than at the call (torch
    imports some lazily, on the path ``torch.compiler.is_compiling()`` opens): importing it
    shows nothing a program could see, so the moment makes no difference. None if it fails
    (CPython raises at the break)."""
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - CPython raises it where the import stands
        return None


def _absolute_name(tx: HandlerContext, name: str, level: int) -> str:
    """The module a (relative) import names, as CPython resolves it from the function's
    module: ``__package__``, else ``__spec__.parent``, else from ``__name__``."""
    if level == 0:
        return name
    f_globals = tx.f_globals
    package = f_globals.get("__package__")
    if package is None:
        spec = f_globals.get("__spec__")
        package = spec.parent if spec is not None else f_globals.get("__name__", "")
        if spec is None and "__path__" not in f_globals:
            package = package.rpartition(".")[0]
    if not isinstance(package, str) or not package:
        raise Unsupported("a relative import outside a package")  # (CPython raises ImportError)
    try:
        return importlib.util.resolve_name("." * level + name, package)
    except ImportError as e:
        raise Unsupported(f"a relative import CPython refuses: {e}") from e


@instruction("IMPORT_FROM", pops=1, pushes=2)
def IMPORT_FROM(tx: HandlerContext, inst: Any, module: Any) -> tuple:
    return module, module.var_getattr(tx, inst.arg)


@instruction("MAKE_CELL")
def MAKE_CELL(tx: HandlerContext, inst: Any) -> None:
    name = inst.arg.name
    contents = tx.get_local(name) if tx.has_local(name) else None
    if contents is not None:
        tx.delete_local(name)
    tx.cells[name] = CellVariable(contents)


@instruction("LOAD_CLOSURE", pushes=1)
def LOAD_CLOSURE(tx: HandlerContext, inst: Any) -> Any:
    return tx.cells[inst.arg.name]


@instruction("LOAD_DEREF", pushes=1)
def LOAD_DEREF(tx: HandlerContext, inst: Any) -> Any:
    cell = tx.cells[inst.arg.name]
    if cell.contents is None:
        raise Unsupported(f"free variable {inst.arg.name!r} referenced before assignment")
    return cell.contents


@instruction("STORE_DEREF", pops=1)
def STORE_DEREF(tx: HandlerContext, inst: Any, value: Any) -> None:
    cell = tx.cells[inst.arg.name]
    if cell.pre_existing:
        tx.trace.side_effects.store_cell(cell, value)
    else:
        tx.trace.side_effects.note(cell)
    cell.contents = value


@instruction("DELETE_DEREF")
def DELETE_DEREF(tx: HandlerContext, inst: Any) -> None:
    cell = tx.cells[inst.arg.name]
    if cell.pre_existing:
        raise Unsupported(f"deleting the nonlocal {inst.arg.name!r}")
    tx.trace.side_effects.note(cell)
    cell.contents = None


@instruction("LOAD_BUILD_CLASS", pushes=1)
def LOAD_BUILD_CLASS(tx: HandlerContext, inst: Any) -> Any:
    # A class statement: calling __build_class__ breaks the graph, and CPython makes the class.
    return tx.wrap(builtins.__build_class__, None)
