"""A frame that runs as its original code still gets its callees compiled.

CPython has no hook here to compile nested frames for us, so where symexec runs a function's
original code (a graph break that cannot be resumed), it runs a copy whose every
``LOAD_GLOBAL`` of a function of the same module goes through ``compiled_callee``: a compiled
wrapper of that function, traced on its own, instead of the function itself. Nothing else
changes: other values pass through untouched.
"""

from __future__ import annotations

import types
import weakref
from typing import Any, Callable

from bytecode import Bytecode, Instr

from .versions import call_instrs, with_null

_copies: "weakref.WeakKeyDictionary[types.FunctionType, types.FunctionType]" = weakref.WeakKeyDictionary()


def with_compiled_callees(fn: types.FunctionType, compile_fn: Callable[[types.FunctionType], Any]) -> types.FunctionType:
    """``fn`` with the functions it reads from its globals called through compiled wrappers."""
    copy = _copies.get(fn)
    if copy is not None:
        return copy
    module_globals = fn.__globals__

    def compiled_callee(value: Any) -> Any:
        if isinstance(value, types.FunctionType) and value.__globals__ is module_globals and value is not fn:
            return compile_fn(value)
        return value

    bytecode = Bytecode.from_code(fn.__code__)
    items: list[Any] = []
    for item in bytecode:
        if not (isinstance(item, Instr) and item.name == "LOAD_GLOBAL"):
            items.append(item)
            continue
        push_null, name = item.arg
        line = item.lineno
        # compiled_callee(value), with the NULL of the call that follows where it was.
        value = with_null([Instr("LOAD_CONST", compiled_callee, lineno=line)], line) \
            + [Instr("LOAD_GLOBAL", (False, name), lineno=line), *call_instrs(1, line)]
        items += with_null(value, line) if push_null else value
    bytecode.clear()
    bytecode.extend(items)
    code = bytecode.to_code()
    copy = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__qualname__ = fn.__qualname__
    _copies[fn] = copy
    return copy
