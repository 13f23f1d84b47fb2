"""Jumps and loops. Every condition must be known while tracing (SPEC §2); a condition on a
tensor's value is data-dependent: the graph breaks there, and CPython takes the branch.

On 3.13 a condition goes through TO_BOOL (or COMPARE_OP's bool bit) before the jump. The
conversion is left to the instruction that takes the truth (the jump, UNARY_NOT), so a
data-dependent condition breaks at the jump on every version, with the same two continuations.
From 3.12 a loop ends on END_FOR: FOR_ITER's jump pushes one more slot, which it pops.
"""

from __future__ import annotations

from typing import Any

from ..context import HandlerContext
from ..exc import Unsupported
from ..variables import BuiltinVariable, ConstantVariable, IteratorVariable, identical
from ..variables.generators import GeneratorVariable, is_none
from ..variables.iteration import iterator_of
from ..variables.tensor import TensorVariable, is_symbolic
from ..variables.user_objects import ObjectVariableBase
from ..versions import V
from .registry import instruction

_NONE = ConstantVariable(None)
TRUTH_CONSUMERS = frozenset({"POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE", "UNARY_NOT"})


def as_bool(tx: HandlerContext, value: Any) -> Any:
    """``bool(value)``, deferred to the next instruction where that one takes the truth anyway."""
    if tx.program.instructions[tx.ip].name in TRUTH_CONSUMERS:
        return value
    return ConstantVariable(value.truth(tx))


@instruction("TO_BOOL", pops=1, pushes=1)
def TO_BOOL(tx: HandlerContext, inst: Any, value: Any) -> Any:
    return as_bool(tx, value)


@instruction("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP_NO_INTERRUPT", "JUMP")
def JUMP(tx: HandlerContext, inst: Any) -> None:
    tx.jump(inst.arg)


def _register_pop_jump(names: tuple[str, ...], taken: Any) -> None:
    @instruction(*names, pops=1)
    def pop_jump(tx: HandlerContext, inst: Any, value: Any) -> None:
        if taken(tx, value):
            tx.jump(inst.arg)


_register_pop_jump(("POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE", "POP_JUMP_IF_TRUE"),
                   lambda tx, v: asserted_in_graph(tx, v) or v.truth(tx))
_register_pop_jump(("POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_FALSE", "POP_JUMP_IF_FALSE"),
                   lambda tx, v: not v.truth(tx))
_register_pop_jump(("POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NONE", "POP_JUMP_IF_NONE"),
                   lambda tx, v: identical(v, _NONE, tx))
_register_pop_jump(("POP_JUMP_FORWARD_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE", "POP_JUMP_IF_NOT_NONE"),
                   lambda tx, v: not identical(v, _NONE, tx))


def asserted_in_graph(tx: HandlerContext, value: Any) -> bool:
    """``assert <tensor>, <constant message>``: the check is a node of the graph
    (``torch._assert_async``, as under torch.compile), and the trace goes on past it. Where it
    fails the graph stops there, as eager stops at the assert, and the call raises eager's
    ``AssertionError(message)`` (``OutputGraph.assert_true``). Only where that is all eager
    would have done: nothing catches it in the trace's frames, nothing is pending to replay
    after the graph, no input tensor was changed in place (a backend writes those back at the
    graph's end), and the tensor holds one value. False: the branch breaks the graph."""
    if not isinstance(value, TensorVariable):
        return False
    message = _assertion_message(tx.program.instructions, tx.ip)
    if message is _NOT_AN_ASSERT or tx.handled_here_or_above(tx.ip - 1):
        return False
    effects = tx.trace.side_effects
    if effects or effects.class_attrs or is_symbolic(value.example.numel()) or value.example.numel() != 1:
        return False
    return tx.trace.graph.assert_true(value, message)


_NOT_AN_ASSERT = object()


def _assertion_message(instructions: list[Any], index: int) -> Any:
    """The constant message of the assert statement whose raise starts at ``index``
    (``LOAD_ASSERTION_ERROR [LOAD_CONST m, PRECALL 0, CALL 0] RAISE_VARARGS 1``), None for
    none; ``_NOT_AN_ASSERT`` when the code there is something else."""
    names = [getattr(i, "name", None) for i in instructions[index:index + 5]]
    if names[:2] == ["LOAD_ASSERTION_ERROR", "RAISE_VARARGS"]:
        return None
    calls = (["PRECALL", "CALL"] if "PRECALL" in names else ["CALL"])
    if names[:2 + len(calls) + 1] == ["LOAD_ASSERTION_ERROR", "LOAD_CONST", *calls, "RAISE_VARARGS"] \
            and all(instructions[index + 2 + k].arg == 0 for k in range(len(calls))):
        return instructions[index + 1].arg
    return _NOT_AN_ASSERT


@instruction("JUMP_IF_TRUE_OR_POP", pops=1)
def JUMP_IF_TRUE_OR_POP(tx: HandlerContext, inst: Any, value: Any) -> Any:
    if value.truth(tx):
        tx.jump(inst.arg)
        return value  # the jump keeps the value on the stack
    return None


@instruction("JUMP_IF_FALSE_OR_POP", pops=1)
def JUMP_IF_FALSE_OR_POP(tx: HandlerContext, inst: Any, value: Any) -> Any:
    if not value.truth(tx):
        tx.jump(inst.arg)
        return value
    return None


@instruction("GET_ITER", pops=1, pushes=1)
def GET_ITER(tx: HandlerContext, inst: Any, iterable: Any) -> Any:
    if isinstance(iterable, ObjectVariableBase):
        return iterator_of(tx, iterable)  # (a user object's items, taken one at a time)
    return iterable if isinstance(iterable, IteratorVariable) else IteratorVariable(iterable.unpack(tx))


@instruction("FOR_ITER", pops=1, pushes=2)
def FOR_ITER(tx: HandlerContext, inst: Any, iterator: Any) -> Any:
    if not isinstance(iterator, IteratorVariable):
        raise Unsupported(f"iterating {iterator.describe()} passed in (a {iterator.python_type().__name__})")
    item = iterator.next_item()
    if item is None:  # exhausted: leave the loop, where the iterator is popped
        tx.jump(inst.arg)
        return (iterator, _NONE) if V.loop_exit else None
    return iterator, item


@instruction("END_FOR", pops=V.end_for_pops)
def END_FOR(tx: HandlerContext, inst: Any, *slots: Any) -> None:
    return None


@instruction("GET_YIELD_FROM_ITER", pops=1, pushes=1)
def GET_YIELD_FROM_ITER(tx: HandlerContext, inst: Any, iterable: Any) -> Any:
    return iterable if isinstance(iterable, IteratorVariable) else BuiltinVariable(iter).call_function(tx, [iterable], {})


@instruction("SEND", pops=2, pushes=2)
def SEND(tx: HandlerContext, inst: Any, receiver: Any, value: Any) -> Any:
    # `yield from`: the value sent in goes on to the inner generator, whose next item is
    # yielded in turn; once it has returned, its return value is the `yield from`'s result.
    if isinstance(receiver, GeneratorVariable):
        yielded, item = receiver.send(value)
    elif isinstance(receiver, IteratorVariable) and is_none(value):
        item = receiver.next_item()
        yielded, item = (True, item) if item is not None else (False, _NONE)
    else:
        raise Unsupported(f"send() to {receiver.describe()} in a `yield from`")
    if not yielded:
        tx.jump(inst.arg)
        return (receiver, item) if V.send_keeps_receiver else item
    return receiver, item
