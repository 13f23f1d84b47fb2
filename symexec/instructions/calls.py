"""Calls and functions: CALL and its 3.11 companions, MAKE_FUNCTION, RETURN_VALUE."""

from __future__ import annotations

from typing import Any

from ..exc import Unsupported
from ..variables import ConstantVariable, NestedUserFunctionVariable, NullVariable
from .registry import instruction


@instruction("KW_NAMES")
def KW_NAMES(tx: Any, inst: Any) -> None:
    tx.kw_names = inst.arg


@instruction("CALL", pops=lambda n: n + 2, pushes=1)
def CALL(tx: Any, inst: Any, first: Any, second: Any, *args: Any) -> Any:
    # 3.11: [NULL, callable, args...] or [method, self, args...].
    fn, positional = (second, list(args)) if isinstance(first, NullVariable) else (first, [second, *args])
    kw_names, tx.kw_names = tx.kw_names, ()
    kwargs = {}
    if kw_names:
        kwargs = dict(zip(kw_names, positional[-len(kw_names):]))
        positional = positional[: -len(kw_names)]
    return tx.call(fn, positional, kwargs)


@instruction("CALL_FUNCTION_EX", pops=lambda flags: 3 + (flags & 1), pushes=1)
def CALL_FUNCTION_EX(tx: Any, inst: Any, null: Any, fn: Any, args: Any, kwargs: Any = None) -> Any:
    if not isinstance(null, NullVariable):
        raise Unsupported("CALL_FUNCTION_EX without the NULL slot")
    positional = args.unpack(tx)
    keywords = {}
    if kwargs is not None:
        keywords = {k.as_python_constant(): kwargs.call_method(tx, "__getitem__", [k], {}) for k in kwargs.unpack(tx)}
    return tx.call(fn, positional, keywords)


@instruction("MAKE_FUNCTION", pops=lambda flags: 1 + bin(flags & 0x0F).count("1"), pushes=1)
def MAKE_FUNCTION(tx: Any, inst: Any, *values: Any) -> Any:
    flags = inst.arg
    values_left = list(values)
    code = values_left.pop().as_python_constant()
    closure = values_left.pop() if flags & 0x08 else None
    if flags & 0x04:
        values_left.pop()  # annotations: not needed to run the function
    kwdefaults = values_left.pop() if flags & 0x02 else None
    defaults = values_left.pop() if flags & 0x01 else None
    return NestedUserFunctionVariable(code, tx.f_globals, defaults, kwdefaults, closure)


@instruction("RETURN_VALUE", pops=1)
def RETURN_VALUE(tx: Any, inst: Any, value: Any) -> None:
    tx.finish(value)


@instruction("RETURN_GENERATOR", pushes=1)
def RETURN_GENERATOR(tx: Any, inst: Any) -> Any:
    # CPython returns the generator here and, on the first resume, pushes the value sent in
    # (None), which the POP_TOP that follows discards; dis books that push to no instruction.
    return ConstantVariable(None)


@instruction("YIELD_VALUE", pops=1, pushes=1)
def YIELD_VALUE(tx: Any, inst: Any, value: Any) -> Any:
    tx.yield_value(value)
    return ConstantVariable(None)  # what send() passes back in: next() sends None


@instruction("BEFORE_WITH", pops=1, pushes=2)
def BEFORE_WITH(tx: Any, inst: Any, manager: Any) -> tuple:
    enter = getattr(manager, "enter", None)
    if enter is None:
        raise Unsupported(f"entering {manager.describe()} as a context manager (the graph breaks; CPython enters it)")
    return enter(tx)


@instruction("RAISE_VARARGS", pops=lambda argc: argc)
def RAISE_VARARGS(tx: Any, inst: Any, *exception: Any) -> None:
    # The graph breaks here and CPython raises for real: the exception, its message and its
    # traceback are the user's own, and a handler around it runs as in eager.
    raise Unsupported("raise: the exception is raised by CPython, after the graph")


@instruction("LOAD_ASSERTION_ERROR", pushes=1)
def LOAD_ASSERTION_ERROR(tx: Any, inst: Any) -> Any:
    return tx.wrap(AssertionError, None)
