"""Structural pattern matching (``match``): the checks CPython's match opcodes make, on
trackers whose types and contents are known while tracing."""

from __future__ import annotations

from typing import Any

from ..context import HandlerContext
from ..exc import Unsupported
from ..variables import BuiltinVariable, ConstantVariable, ConstDictVariable, TupleVariable
from ..variables.base import class_static, subclass_check
from .registry import instruction


# What CPython's MATCH_SEQUENCE and MATCH_MAPPING read: a flag of the subject's type, which
# ``collections.abc.Sequence.register(C)`` (Mapping's) sets on C and its subclasses.
_TPFLAGS_SEQUENCE = 1 << 5
_TPFLAGS_MAPPING = 1 << 6


def _has_flag(tx: HandlerContext, value: Any, flag: int) -> bool:
    cls = value.python_type()
    answer = bool(cls.__flags__ & flag)
    tx.guards.class_flag(cls, flag, answer)
    return answer


@instruction("MATCH_SEQUENCE", pushes=1)
def MATCH_SEQUENCE(tx: HandlerContext, inst: Any) -> Any:
    return ConstantVariable(_has_flag(tx, tx.peek(1), _TPFLAGS_SEQUENCE))


@instruction("MATCH_MAPPING", pushes=1)
def MATCH_MAPPING(tx: HandlerContext, inst: Any) -> Any:
    return ConstantVariable(_has_flag(tx, tx.peek(1), _TPFLAGS_MAPPING))


@instruction("GET_LEN", pushes=1)
def GET_LEN(tx: HandlerContext, inst: Any) -> Any:
    return BuiltinVariable(len).call_function(tx, [tx.peek(1)], {})


@instruction("MATCH_KEYS", pushes=1)
def MATCH_KEYS(tx: HandlerContext, inst: Any) -> Any:
    subject, keys = tx.peek(2), tx.peek(1)
    if not isinstance(subject, ConstDictVariable):
        raise Unsupported(f"matching the keys of {subject.describe()}")
    wanted = keys.as_python_constant()
    if not all(k in subject.items for k in wanted):
        return ConstantVariable(None)
    return TupleVariable([subject.items[k] for k in wanted])


@instruction("MATCH_CLASS", pops=3, pushes=1)
def MATCH_CLASS(tx: HandlerContext, inst: Any, subject: Any, cls: Any, names: Any) -> Any:
    klass = cls.as_python_constant()
    if not subclass_check(tx, subject.python_type(), klass):
        return ConstantVariable(None)
    positional = inst.arg
    attributes = []
    if positional:
        match_args = class_static(tx, klass, "__match_args__") or ()
        if len(match_args) < positional:
            raise Unsupported(f"matching {positional} positional patterns of {klass.__qualname__}")
        attributes += list(match_args[:positional])
    attributes += list(names.as_python_constant())
    return TupleVariable([subject.var_getattr(tx, name) for name in attributes])
