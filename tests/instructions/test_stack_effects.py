"""Every handler's declared stack effect agrees with CPython's ``dis.stack_effect``."""

from __future__ import annotations

import dis
import inspect
import sys

import pytest
from bytecode import Bytecode, Instr

from symexec.instructions import DISPATCH


def _corpus(x, y, *args, k=1, **kw):  # noqa: ANN001, ANN002, ANN003 - a bytecode sample, never run
    a, *b = x
    c = [i for i in range(3) if i]
    d = {**kw, "k": k}
    e = {1, 2, *b}
    f = f"{x!r:>10}{y}"
    g = lambda q=1, *, r=2: q + r + c  # noqa: E731
    h = x[1:2:3], x[1:2]
    x[0] = y
    del x[0]
    del e
    x.attr, = b
    y += x @ y
    if x is None or y is not None and x in y:
        pass
    for i, j in zip(x, y):
        continue
    print(*args, **kw)
    x.m(1, n=2)

    def inner():
        nonlocal a
        a = a + 1
        return a

    gen = (i * 2 for i in x)
    return -x, +y, ~x, not y, a, b, c, d, f, g, h, inner, (x, y), [x, y], x < y, x == y, gen


def _instructions(fn):
    stack = [fn.__code__]
    while stack:
        code = stack.pop()
        for instr in Bytecode.from_code(code):
            if isinstance(instr, Instr):
                yield instr
                if inspect.iscode(instr.arg):
                    stack.append(instr.arg)


def test_every_handler_of_the_corpus_is_registered():
    missing = {i.name for i in _instructions(_corpus) if i.name not in DISPATCH}
    # Exception-handling and with-block opcodes arrive with issues #4 and #6.
    assert missing <= {"PUSH_EXC_INFO", "CHECK_EXC_MATCH", "POP_EXCEPT", "RERAISE"}, missing


# RETURN_GENERATOR: dis books no push, but the first resume pushes the value sent in.
_BOOKED_ELSEWHERE = ("PRECALL", "CALL", "RETURN_GENERATOR")


@pytest.mark.parametrize("instr", [i for i in _instructions(_corpus) if i.name in DISPATCH and i.name not in _BOOKED_ELSEWHERE],
                         ids=lambda i: i.name)
def test_declared_effect_matches_dis(instr):
    pops, pushes = DISPATCH[instr.name].effect(instr.arg)
    assert pushes - pops == instr.stack_effect(jump=False), instr


def test_precall_and_call_as_a_pair():
    # 3.11 books PRECALL n as -n and CALL n as -1; our CALL pops callable, NULL/self and args.
    for n in range(4):
        pops, pushes = DISPATCH["CALL"].effect(n)
        precall = dis.stack_effect(dis.opmap["PRECALL"], n)
        call = dis.stack_effect(dis.opmap["CALL"], n)
        assert pushes - pops == precall + call
        assert DISPATCH["PRECALL"].effect(n) == (0, 0)


@pytest.mark.parametrize("name", sorted(DISPATCH))
def test_registered_names_are_real_opcodes(name):
    # Names of other versions may be registered for the handler they share; on this Python
    # each registered name must be an opcode or one of those aliases.
    aliases = {"POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE", "JUMP",
               "JUMP_NO_INTERRUPT", "LOAD_FAST_CHECK"}
    assert name in dis.opmap or (name in aliases and sys.version_info < (3, 12))


@pytest.mark.parametrize("name", sorted(n for n in DISPATCH if n in dis.opmap and dis.opmap[n] >= dis.HAVE_ARGUMENT
                                          and not callable(DISPATCH[n].pops) and not callable(DISPATCH[n].pushes)
                                          and n not in _BOOKED_ELSEWHERE))
def test_fixed_effects_for_several_args(name):
    # Handlers with a constant effect must be right whatever their argument.
    pops, pushes = DISPATCH[name].effect(None)
    opcode = dis.opmap[name]
    jumps = opcode in dis.hasjrel or opcode in dis.hasjabs
    for arg in (0, 1, 3):
        assert pushes - pops == dis.stack_effect(opcode, arg, jump=False if jumps else None), (name, arg)
