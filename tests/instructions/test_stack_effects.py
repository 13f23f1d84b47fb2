"""Every handler's declared stack effect agrees with CPython's ``dis.stack_effect`` on the
running Python, and every opcode of that Python has a handler or a stated reason why a traced
function never contains it."""

from __future__ import annotations

import dis
import inspect

import pytest
from bytecode import Bytecode, Instr

from symexec.instructions import DISPATCH, NEVER_TRACED
from symexec.versions import V



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
    s = x[1:2]
    x[:3] = s
    with y:
        pass
    try:
        s = super().m
    except KeyError as err:
        s = err
    if x < y:
        s = (yield from x)
    return -x, +y, ~x, not y, a, b, c, d, f, g, h, inner, (x, y), [x, y], x < y, x == y, gen, s


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
    assert not missing


def _specialised() -> set[str]:
    import opcode  # noqa: PLC0415

    return {name for names in getattr(opcode, "_specializations", {}).values() for name in names}


def test_every_opcode_is_handled_or_never_traced():
    # Pseudo-instructions (>= 256) exist only inside the compiler; specialised and instrumented
    # forms only at run time (co_code shows the base form).
    real = {name for name, op in dis.opmap.items()
            if op < 256 and not name.startswith("INSTRUMENTED_") and name not in _specialised()}
    unaccounted = sorted(real - DISPATCH.keys() - NEVER_TRACED.keys())
    assert not unaccounted, f"opcodes with no handler and no reason in NEVER_TRACED: {unaccounted}"
    assert not (DISPATCH.keys() & NEVER_TRACED.keys())


# RETURN_GENERATOR: dis books no push, but the first resume pushes the value sent in.
# 3.11 books a call's pops to PRECALL n (-n) and CALL n (-1).
_BOOKED_ELSEWHERE = ("PRECALL", "CALL", "RETURN_GENERATOR") if V.precall else ("RETURN_GENERATOR",)


@pytest.mark.parametrize("instr", [i for i in _instructions(_corpus) if i.name in DISPATCH and i.name not in _BOOKED_ELSEWHERE],
                         ids=lambda i: i.name)
def test_declared_effect_matches_dis(instr):
    pops, pushes = DISPATCH[instr.name].effect(instr.arg)
    assert pushes - pops == instr.stack_effect(jump=False), instr


@pytest.mark.skipif(not V.precall, reason="PRECALL exists on 3.11 only")
def test_precall_and_call_as_a_pair():
    # 3.11 books PRECALL n as -n and CALL n as -1; our CALL pops callable, NULL/self and args.
    for n in range(4):
        pops, pushes = DISPATCH["CALL"].effect(n)
        precall = dis.stack_effect(dis.opmap["PRECALL"], n)
        call = dis.stack_effect(dis.opmap["CALL"], n)
        assert pushes - pops == precall + call
        assert DISPATCH["PRECALL"].effect(n) == (0, 0)


# Registered names that are opcodes of another supported version only (the pseudo-instruction
# names JUMP and JUMP_NO_INTERRUPT share JUMP_FORWARD's handler on every version).
_OTHER_VERSIONS = {
    (3, 11): {"POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE", "JUMP",
              "JUMP_NO_INTERRUPT", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "LOAD_SUPER_ATTR", "BINARY_SLICE",
              "STORE_SLICE", "CALL_INTRINSIC_1", "CALL_INTRINSIC_2", "RETURN_CONST", "END_FOR", "END_SEND",
              "CLEANUP_THROW", "LOAD_FAST_LOAD_FAST", "STORE_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST", "CALL_KW",
              "TO_BOOL", "SET_FUNCTION_ATTRIBUTE", "FORMAT_SIMPLE", "FORMAT_WITH_SPEC", "CONVERT_VALUE"},
    (3, 12): {"PRECALL", "UNARY_POSITIVE", "LIST_TO_TUPLE", "JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP",
              "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE", "POP_JUMP_FORWARD_IF_FALSE",
              "POP_JUMP_BACKWARD_IF_FALSE", "POP_JUMP_FORWARD_IF_NONE", "LOAD_METHOD", "POP_JUMP_BACKWARD_IF_NONE",
              "POP_JUMP_FORWARD_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE", "PREP_RERAISE_STAR",
              "LOAD_FAST_LOAD_FAST", "STORE_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST", "CALL_KW", "TO_BOOL",
              "SET_FUNCTION_ATTRIBUTE", "FORMAT_SIMPLE", "FORMAT_WITH_SPEC", "CONVERT_VALUE"},
}
_OTHER_VERSIONS[(3, 13)] = (_OTHER_VERSIONS[(3, 12)] - {"LOAD_FAST_LOAD_FAST", "STORE_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST",
                                                        "CALL_KW", "TO_BOOL", "SET_FUNCTION_ATTRIBUTE", "FORMAT_SIMPLE",
                                                        "FORMAT_WITH_SPEC", "CONVERT_VALUE"}) \
    | {"KW_NAMES", "FORMAT_VALUE", "LOAD_CLOSURE"}


@pytest.mark.parametrize("name", sorted(DISPATCH))
def test_registered_names_are_real_opcodes(name):
    # Names of other versions are registered for the handler they share; on this Python each
    # registered name must be an opcode or one of those.
    real = dis.opmap.get(name, 256) < 256 or name in ("JUMP", "JUMP_NO_INTERRUPT")
    assert real or name in _OTHER_VERSIONS[V.version], name


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
