"""Building and unpacking containers, strings and slices."""

from __future__ import annotations

from typing import Any

from ..context import HandlerContext
from ..exc import TracedException, Unsupported
from ..variables import (
    ConstantVariable, ConstDictVariable, ListVariable, SetVariable, SliceVariable, TupleVariable,
)
from ..variables.base import hash_key
from ..variables.dicts import mapping_items
from ..variables.builtin_functions import BuiltinVariable
from ..variables.object_protocol import tp_name
from ..variables.number_builtins import SymTextVariable
from ..variables.tensor import SymNodeVariable
from ..variables.user_objects import ObjectVariableBase
from .registry import instruction


@instruction("BUILD_TUPLE", pops=lambda n: n, pushes=1)
def BUILD_TUPLE(tx: HandlerContext, inst: Any, *items: Any) -> Any:
    return TupleVariable(list(items))


@instruction("BUILD_LIST", pops=lambda n: n, pushes=1)
def BUILD_LIST(tx: HandlerContext, inst: Any, *items: Any) -> Any:
    return ListVariable(list(items))


@instruction("BUILD_SET", pops=lambda n: n, pushes=1)
def BUILD_SET(tx: HandlerContext, inst: Any, *items: Any) -> Any:
    return SetVariable(list(items), tx=tx)


@instruction("BUILD_MAP", pops=lambda n: 2 * n, pushes=1)
def BUILD_MAP(tx: HandlerContext, inst: Any, *flat: Any) -> Any:
    return ConstDictVariable({hash_key(flat[i], tx): flat[i + 1] for i in range(0, len(flat), 2)})  # (a tensor by identity)


@instruction("BUILD_CONST_KEY_MAP", pops=lambda n: n + 1, pushes=1)
def BUILD_CONST_KEY_MAP(tx: HandlerContext, inst: Any, *values_and_keys: Any) -> Any:
    *values, keys = values_and_keys
    return ConstDictVariable(dict(zip(keys.as_python_constant(), values)))


@instruction("BUILD_STRING", pops=lambda n: n, pushes=1)
def BUILD_STRING(tx: HandlerContext, inst: Any, *parts: Any) -> Any:
    if any(isinstance(p, SymTextVariable) for p in parts):  # (f"rows={n}": made at run time too)
        joined: list[Any] = []
        for part in parts:
            if isinstance(part, SymTextVariable):
                joined += part.parts
            else:
                text = part.as_python_constant()
                if type(text) is not str:
                    raise Unsupported(f"joining {part.describe()} into a string")
                joined.append(text)
        return SymTextVariable(joined)
    return ConstantVariable("".join(p.as_python_constant() for p in parts))


@instruction("BUILD_SLICE", pops=lambda n: n, pushes=1)
def BUILD_SLICE(tx: HandlerContext, inst: Any, *parts: Any) -> Any:
    return SliceVariable(*parts) if len(parts) == 3 else SliceVariable(*parts, ConstantVariable(None))


_CONVERSIONS = {1: str, 2: repr, 3: ascii}


def _format(tx: HandlerContext, value: Any, spec: Any, conversion: int = 0) -> Any:
    lazy = _symbolic_text(value, spec, conversion)
    if lazy is not None:
        return lazy
    if isinstance(value, ObjectVariableBase):  # (its own __str__, __repr__ or __format__: traced)
        if conversion:
            value = BuiltinVariable(_CONVERSIONS[conversion]).call_function(tx, [value], {})
        return BuiltinVariable(format).call_function(tx, [value, *([spec] if spec is not None else [])], {})
    v = value.as_python_constant()
    if conversion:
        v = _CONVERSIONS[conversion](v)
    return ConstantVariable(format(v, spec.as_python_constant() if spec is not None else ""))


def _symbolic_text(value: Any, spec: Any, conversion: int) -> Any:
    """The text of a symbolic number, made at run time (``SymTextVariable``); None otherwise."""
    spec_text = spec.as_python_constant() if spec is not None and spec.is_python_constant() else "" if spec is None else None
    if type(spec_text) is not str:
        return None
    if isinstance(value, SymNodeVariable) and value.python_type() in (int, float, bool):
        return SymTextVariable.of(value, conversion, spec_text)
    if isinstance(value, SymTextVariable) and not conversion and len(value.parts) == 1:
        number, converted, own_spec = value.parts[0]
        if converted and not own_spec:  # (3.13: CONVERT_VALUE, then the spec)
            return SymTextVariable.of(number, converted, spec_text)
    return None


@instruction("FORMAT_VALUE", pops=lambda flags: 2 if flags & 0x04 else 1, pushes=1)
def FORMAT_VALUE(tx: HandlerContext, inst: Any, value: Any, spec: Any = None) -> Any:
    return _format(tx, value, spec, inst.arg & 0x03)


# 3.13 splits FORMAT_VALUE: CONVERT_VALUE (!s, !r, !a), then FORMAT_SIMPLE or FORMAT_WITH_SPEC.
@instruction("CONVERT_VALUE", pops=1, pushes=1)
def CONVERT_VALUE(tx: HandlerContext, inst: Any, value: Any) -> Any:
    if isinstance(value, SymNodeVariable) and value.python_type() in (int, float, bool):
        return SymTextVariable.of(value, int(inst.arg))
    if isinstance(value, ObjectVariableBase):
        return BuiltinVariable(_CONVERSIONS[int(inst.arg)]).call_function(tx, [value], {})
    return ConstantVariable(_CONVERSIONS[int(inst.arg)](value.as_python_constant()))


@instruction("FORMAT_SIMPLE", pops=1, pushes=1)
def FORMAT_SIMPLE(tx: HandlerContext, inst: Any, value: Any) -> Any:
    return _format(tx, value, None)


@instruction("FORMAT_WITH_SPEC", pops=2, pushes=1)
def FORMAT_WITH_SPEC(tx: HandlerContext, inst: Any, value: Any, spec: Any) -> Any:
    return _format(tx, value, spec)


@instruction("LIST_APPEND", pops=1)
def LIST_APPEND(tx: HandlerContext, inst: Any, item: Any) -> None:
    tx.peek(inst.arg).call_method(tx, "append", [item], {})


@instruction("LIST_EXTEND", pops=1)
def LIST_EXTEND(tx: HandlerContext, inst: Any, items: Any) -> None:
    tx.peek(inst.arg).call_method(tx, "extend", [items], {})


@instruction("LIST_TO_TUPLE", pops=1, pushes=1)
def LIST_TO_TUPLE(tx: HandlerContext, inst: Any, lst: Any) -> Any:
    return TupleVariable(lst.unpack(tx))


@instruction("SET_ADD", pops=1)
def SET_ADD(tx: HandlerContext, inst: Any, item: Any) -> None:
    tx.peek(inst.arg).call_method(tx, "add", [item], {})


@instruction("SET_UPDATE", pops=1)
def SET_UPDATE(tx: HandlerContext, inst: Any, items: Any) -> None:
    tx.peek(inst.arg).call_method(tx, "update", [items], {})


@instruction("MAP_ADD", pops=2)
def MAP_ADD(tx: HandlerContext, inst: Any, key: Any, value: Any) -> None:
    tx.peek(inst.arg).call_method(tx, "__setitem__", [key, value], {})


@instruction("DICT_UPDATE", "DICT_MERGE", pops=1)
def DICT_UPDATE(tx: HandlerContext, inst: Any, other: Any) -> None:
    target = tx.peek(inst.arg)
    items = mapping_items(tx, other)
    if items is None:  # (DICT_MERGE's message names the function called)
        if inst.name == "DICT_MERGE":
            raise Unsupported(f"TypeError: argument after ** must be a mapping, not {other.describe()}")
        raise TracedException(TypeError(f"'{tp_name(other.python_type())}' object is not a mapping"))
    if inst.name == "DICT_MERGE":
        duplicate = target.items.keys() & items.keys()
        if duplicate:
            raise Unsupported(f"TypeError: got multiple values for keyword argument {sorted(duplicate, key=repr)[0]!r}")
    target.call_method(tx, "update", [other if isinstance(other, ConstDictVariable) else ConstDictVariable(items)], {})


@instruction("UNPACK_SEQUENCE", pops=1, pushes=lambda n: n)
def UNPACK_SEQUENCE(tx: HandlerContext, inst: Any, seq: Any) -> tuple:
    items = seq.unpack(tx)
    if len(items) != inst.arg:
        raise Unsupported(f"ValueError: unpacking {len(items)} values into {inst.arg}")
    return tuple(reversed(items))


@instruction("UNPACK_EX", pops=1, pushes=lambda arg: (arg & 0xFF) + (arg >> 8) + 1)
def UNPACK_EX(tx: HandlerContext, inst: Any, seq: Any) -> tuple:
    before, after = inst.arg & 0xFF, inst.arg >> 8
    items = seq.unpack(tx)
    if len(items) < before + after:
        raise Unsupported(f"ValueError: not enough values to unpack (expected at least {before + after})")
    middle = ListVariable(items[before: len(items) - after])
    return tuple(reversed([*items[:before], middle, *items[len(items) - after:]]))
