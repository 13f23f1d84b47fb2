"""Loads and stores: locals, constants, globals and builtins, closure cells."""

from __future__ import annotations

import builtins
import sys
from typing import Any

from ..exc import Unsupported
from ..source import ConstSource
from ..variables import NULL, CellVariable, wrap_constant
from ..variables.constant import ConstantVariable
from .registry import instruction


@instruction("LOAD_FAST", "LOAD_FAST_CHECK", pushes=1)
def LOAD_FAST(tx: Any, inst: Any) -> Any:
    return tx.get_local(inst.arg)


@instruction("STORE_FAST", pops=1)
def STORE_FAST(tx: Any, inst: Any, value: Any) -> None:
    tx.output.name_value(value, inst.arg)  # the graph calls it `z` where the user wrote z = ...
    tx.set_local(inst.arg, value)


@instruction("DELETE_FAST")
def DELETE_FAST(tx: Any, inst: Any) -> None:
    tx.get_local(inst.arg)  # raises like CPython when unbound
    tx.delete_local(inst.arg)


@instruction("LOAD_CONST", pushes=1)
def LOAD_CONST(tx: Any, inst: Any) -> Any:
    value = inst.arg
    if type(value).__name__ == "code":
        return ConstantVariable(value)  # consumed by MAKE_FUNCTION
    return wrap_constant(value)


@instruction("LOAD_GLOBAL", pushes=lambda arg: 1 + bool(arg[0]))
def LOAD_GLOBAL(tx: Any, inst: Any) -> Any:
    push_null, name = inst.arg
    value = tx.load_global(name)
    return (NULL, value) if push_null else value


@instruction("STORE_GLOBAL", pops=1)
def STORE_GLOBAL(tx: Any, inst: Any, value: Any) -> None:
    tx.store_global(inst.arg, value)


@instruction("IMPORT_NAME", pops=2, pushes=1)
def IMPORT_NAME(tx: Any, inst: Any, level: Any, fromlist: Any) -> Any:
    # A module imported inside the function: the one imported for real (import runs code
    # only the first time, and the trace must not be the first time: eager would run it too).
    name = inst.arg
    if level.as_python_constant() != 0:
        raise Unsupported(f"a relative import of {name!r} inside a compiled function")
    module = sys.modules.get(name)
    if module is None:
        raise Unsupported(f"importing {name!r}, not imported yet, inside a compiled function")
    if not fromlist.as_python_constant():  # `import a.b` binds a
        module = sys.modules[name.partition(".")[0]]
    return tx.wrap(module, ConstSource.of(module))


@instruction("IMPORT_FROM", pops=1, pushes=2)
def IMPORT_FROM(tx: Any, inst: Any, module: Any) -> tuple:
    return module, module.var_getattr(tx, inst.arg)


@instruction("MAKE_CELL")
def MAKE_CELL(tx: Any, inst: Any) -> None:
    name = inst.arg.name
    contents = tx.get_local(name) if tx.has_local(name) else None
    if contents is not None:
        tx.delete_local(name)
    tx.cells[name] = CellVariable(contents)


@instruction("LOAD_CLOSURE", pushes=1)
def LOAD_CLOSURE(tx: Any, inst: Any) -> Any:
    return tx.cells[inst.arg.name]


@instruction("LOAD_DEREF", pushes=1)
def LOAD_DEREF(tx: Any, inst: Any) -> Any:
    cell = tx.cells[inst.arg.name]
    if cell.contents is None:
        raise Unsupported(f"free variable {inst.arg.name!r} referenced before assignment")
    return cell.contents


@instruction("STORE_DEREF", pops=1)
def STORE_DEREF(tx: Any, inst: Any, value: Any) -> None:
    cell = tx.cells[inst.arg.name]
    if cell.pre_existing:
        tx.output.side_effects.store_cell(cell, value)
    cell.contents = value


@instruction("DELETE_DEREF")
def DELETE_DEREF(tx: Any, inst: Any) -> None:
    cell = tx.cells[inst.arg.name]
    if cell.pre_existing:
        raise Unsupported(f"deleting the nonlocal {inst.arg.name!r}")
    cell.contents = None


@instruction("LOAD_BUILD_CLASS", pushes=1)
def LOAD_BUILD_CLASS(tx: Any, inst: Any) -> Any:
    # A class statement: calling __build_class__ breaks the graph, and CPython makes the class.
    return tx.wrap(builtins.__build_class__, None)
