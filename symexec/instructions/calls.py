"""Calls and functions: CALL and its companions, MAKE_FUNCTION, returns, generators.

The two slots under a call's arguments hold [NULL, callable] or [method, self] on 3.11 and
3.12, [callable, NULL] or [callable, self] on 3.13: whichever slot is not NULL is the callable,
and with no NULL the first is called with the second as its first argument. Keyword names come
from KW_NAMES (3.11, 3.12) or as a tuple on the stack (CALL_KW, 3.13).
"""

from __future__ import annotations

from typing import Any

from ..context import HandlerContext
from ..exc import TracedException, Unsupported
from ..variables import ConstantVariable, NestedUserFunctionVariable, NullVariable, wrap_constant
from ..variables.user_objects import ExceptionVariable, ObjectVariableBase
from .registry import instruction


def _callable_and_args(first: Any, second: Any, args: tuple) -> tuple[Any, list[Any]]:
    if isinstance(first, NullVariable):
        return second, list(args)
    if isinstance(second, NullVariable):
        return first, list(args)
    return first, [second, *args]


def _call(tx: HandlerContext, first: Any, second: Any, args: tuple, kw_names: tuple) -> Any:
    fn, positional = _callable_and_args(first, second, args)
    tx.calling = fn
    kwargs = {}
    if kw_names:
        kwargs = dict(zip(kw_names, positional[-len(kw_names):]))
        positional = positional[: -len(kw_names)]
    return tx.call(fn, positional, kwargs)


@instruction("KW_NAMES")
def KW_NAMES(tx: HandlerContext, inst: Any) -> None:
    tx.kw_names = inst.arg


@instruction("CALL", pops=lambda n: n + 2, pushes=1)
def CALL(tx: HandlerContext, inst: Any, first: Any, second: Any, *args: Any) -> Any:
    kw_names, tx.kw_names = tx.kw_names, ()
    return _call(tx, first, second, args, kw_names)


@instruction("CALL_KW", pops=lambda n: n + 3, pushes=1)
def CALL_KW(tx: HandlerContext, inst: Any, first: Any, second: Any, *args_and_names: Any) -> Any:
    *args, names = args_and_names
    return _call(tx, first, second, tuple(args), names.as_python_constant())


@instruction("CALL_FUNCTION_EX", pops=lambda flags: 3 + (flags & 1), pushes=1)
def CALL_FUNCTION_EX(tx: HandlerContext, inst: Any, first: Any, second: Any, args: Any, kwargs: Any = None) -> Any:
    if isinstance(first, NullVariable):
        fn = second
    elif isinstance(second, NullVariable):
        fn = first
    else:
        raise Unsupported("CALL_FUNCTION_EX without the NULL slot")
    tx.calling = fn
    positional = args.unpack(tx)
    keywords = {}
    if kwargs is not None:
        keywords = {k.as_python_constant(): kwargs.call_method(tx, "__getitem__", [k], {}) for k in kwargs.unpack(tx)}
    return tx.call(fn, positional, keywords)


def _flags(arg: Any) -> int:
    return arg if isinstance(arg, int) else 0  # 3.13: no argument, SET_FUNCTION_ATTRIBUTE follows


@instruction("MAKE_FUNCTION", pops=lambda flags: 1 + bin(_flags(flags) & 0x0F).count("1"), pushes=1)
def MAKE_FUNCTION(tx: HandlerContext, inst: Any, *values: Any) -> Any:
    flags = _flags(inst.arg)
    values_left = list(values)
    code = values_left.pop().as_python_constant()
    closure = values_left.pop() if flags & 0x08 else None
    annotations = values_left.pop() if flags & 0x04 else None
    kwdefaults = values_left.pop() if flags & 0x02 else None
    defaults = values_left.pop() if flags & 0x01 else None
    fn = NestedUserFunctionVariable(code, tx.f_globals, defaults, kwdefaults, closure)
    fn.annotations = annotations
    fn.globals_source = tx.globals_source
    return fn


@instruction("SET_FUNCTION_ATTRIBUTE", pops=2, pushes=1)
def SET_FUNCTION_ATTRIBUTE(tx: HandlerContext, inst: Any, value: Any, fn: Any) -> Any:
    flag = int(inst.arg)
    if flag == 0x01:
        fn.defaults = value
    elif flag == 0x02:
        fn.kwdefaults = value
    elif flag == 0x08:
        fn.closure = value
    elif flag == 0x04:
        fn.annotations = value
    return fn


@instruction("RETURN_VALUE", pops=1)
def RETURN_VALUE(tx: HandlerContext, inst: Any, value: Any) -> None:
    tx.finish(value)


@instruction("RETURN_CONST")
def RETURN_CONST(tx: HandlerContext, inst: Any) -> None:
    tx.finish(wrap_constant(inst.arg))


@instruction("RETURN_GENERATOR", pushes=1)
def RETURN_GENERATOR(tx: HandlerContext, inst: Any) -> Any:
    # CPython returns the generator here and, on the first resume, pushes the value sent in
    # (None), which the POP_TOP that follows discards; dis books that push to no instruction.
    return ConstantVariable(None)


@instruction("YIELD_VALUE", pops=1, pushes=1)
def YIELD_VALUE(tx: HandlerContext, inst: Any, value: Any) -> Any:
    tx.yield_value(value)
    return ConstantVariable(None)  # what send() passes back in: next() sends None


@instruction("END_SEND", pops=2, pushes=1)
def END_SEND(tx: HandlerContext, inst: Any, receiver: Any, value: Any) -> Any:
    return value


@instruction("CLEANUP_THROW", pops=3, pushes=2)
def CLEANUP_THROW(tx: HandlerContext, inst: Any, receiver: Any, sent: Any, exception: Any) -> tuple:
    # (3.12+) An exception thrown into a ``yield from`` (generators.py) and raised at its
    # yield: a StopIteration ends the ``yield from`` with its value, anything else goes on.
    if not issubclass(exception.python_type(), StopIteration):
        raise TracedException(exception)
    return ConstantVariable(None), exception.var_getattr(tx, "value")


@instruction("BEFORE_WITH", pops=1, pushes=2)
def BEFORE_WITH(tx: HandlerContext, inst: Any, manager: Any) -> tuple:
    enter = getattr(manager, "enter", None)
    if enter is None and isinstance(manager, ObjectVariableBase) and manager.has_python_method(tx, "__enter__") \
            and manager.has_python_method(tx, "__exit__") and not type(manager.python_type()).__module__.startswith("torch") \
            and not manager.python_type().__module__.startswith("torch"):
        # A context manager written in Python: both halves inlined.
        return manager.var_getattr(tx, "__exit__"), manager.call_method(tx, "__enter__", [], {})
    if enter is None:
        raise Unsupported(f"entering {manager.describe()} as a context manager (the graph breaks; CPython enters it)")
    return enter(tx)


@instruction("RAISE_VARARGS", pops=lambda argc: argc)
def RAISE_VARARGS(tx: HandlerContext, inst: Any, *exception: Any) -> None:
    # Raised in the trace, it unwinds to a handler of the traced code; unhandled, the graph
    # breaks and CPython raises it for real, with the user's own traceback.
    if not exception:
        if tx.exc_info is None:
            raise Unsupported("RuntimeError: No active exception to reraise")
        raise TracedException(tx.exc_info)
    raise TracedException(ExceptionVariable.of(tx, exception[0]))


@instruction("RERAISE", pops=1)
def RERAISE(tx: HandlerContext, inst: Any, exception: Any) -> None:
    raise TracedException(exception)


@instruction("PUSH_EXC_INFO", pops=1, pushes=2)
def PUSH_EXC_INFO(tx: HandlerContext, inst: Any, exception: Any) -> tuple:
    previous = tx.exc_info if tx.exc_info is not None else ConstantVariable(None)
    tx.exc_info = exception
    return previous, exception


@instruction("POP_EXCEPT", pops=1)
def POP_EXCEPT(tx: HandlerContext, inst: Any, previous: Any) -> None:
    tx.exc_info = None if previous.is_python_constant() and previous.as_python_constant() is None else previous


@instruction("CHECK_EG_MATCH", pops=2, pushes=2)
def CHECK_EG_MATCH(tx: HandlerContext, inst: Any, exception: Any, classes: Any) -> None:
    raise Unsupported("`except*` (the graph breaks; CPython splits the exception group)")


@instruction("PREP_RERAISE_STAR", pops=2, pushes=1)
def PREP_RERAISE_STAR(tx: HandlerContext, inst: Any, original: Any, raised: Any) -> None:
    raise Unsupported("`except*` (the graph breaks; CPython splits the exception group)")


@instruction("CHECK_EXC_MATCH", pops=2, pushes=2)
def CHECK_EXC_MATCH(tx: HandlerContext, inst: Any, exception: Any, classes: Any) -> tuple:
    return exception, ConstantVariable(issubclass(exception.python_type(), classes.as_python_constant()))


@instruction("WITH_EXCEPT_START", pushes=1)
def WITH_EXCEPT_START(tx: HandlerContext, inst: Any) -> Any:
    # Stack: exit, lasti, previous exception, exception: call exit(type, exception, traceback).
    exit_fn, exception = tx.peek(4), tx.peek(1)
    return exit_fn.call_function(tx, [tx.wrap(exception.python_type(), None), exception, ConstantVariable(None)], {})


@instruction("LOAD_ASSERTION_ERROR", pushes=1)
def LOAD_ASSERTION_ERROR(tx: HandlerContext, inst: Any) -> Any:
    return tx.wrap(AssertionError, None)
