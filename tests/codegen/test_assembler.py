"""Issue 21 (3): one code writer. Every code object symexec makes goes through
``symexec/assembler.py``, which checks it; ``bytecode``'s constant key is patched only while a
code object is assembled; the readable form is rendered when someone reads it."""

import dis
import types

import pytest
import torch
from bytecode import Instr
from bytecode import concrete as bytecode_concrete

import symexec
from symexec import assembler, codegen, rendering
from symexec.exc import InternalError

from helpers import check


def _signature(name="f", argnames=("x",)):
    return assembler.Signature(name=name, argnames=tuple(argnames), argcount=len(argnames), posonlyargcount=0,
                               kwonlyargcount=0, freevars=(), cellvars=(), flags=0x01 | 0x02, filename="<test>",
                               first_lineno=1)


def test_assembles_what_it_is_given_and_the_code_runs():
    items = [*assembler.prologue((), 1), Instr("LOAD_FAST", "x", lineno=1), Instr("RETURN_VALUE", lineno=1)]
    code = assembler.assemble(items, _signature())
    assert types.FunctionType(code, {})(5) == 5


def test_a_negative_stack_is_refused():
    items = [*assembler.prologue((), 1), Instr("POP_TOP", lineno=1), Instr("LOAD_CONST", None, lineno=1),
             Instr("RETURN_VALUE", lineno=1)]
    with pytest.raises(InternalError, match="malformed|negative"):
        assembler.assemble(items, _signature())


def test_code_that_falls_off_its_end_is_refused():
    items = [*assembler.prologue((), 1), Instr("LOAD_FAST", "x", lineno=1), Instr("POP_TOP", lineno=1)]
    with pytest.raises(InternalError, match="falls off"):
        assembler.assemble(items, _signature())


def test_a_jump_past_the_end_is_refused():
    def f(x):
        while x:
            x -= 1
        return x
    code = f.__code__
    raw = bytearray(code.co_code)
    jump = next(ins for ins in dis.get_instructions(code) if ins.opcode in dis.hasjrel and "FORWARD" in ins.opname
                or ins.opname in ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE"))
    raw[jump.offset + 1] = 250  # its target: far past the last instruction
    with pytest.raises(InternalError, match="jump lands"):
        assembler.checked(code.replace(co_code=bytes(raw)))
    assert assembler.checked(code) is code


def test_constants_are_kept_apart_only_while_assembling():
    original = bytecode_concrete.const_key
    compiled = symexec.compile(lambda x, a, b: (x + 1, a is b), backend="eager")
    compiled(torch.ones(1), [], [])
    assert bytecode_concrete.const_key is original  # (importing or running symexec does not patch it)
    # and while assembling, two equal lists are two constants
    a, b = [], []
    items = [*assembler.prologue((), 1), Instr("LOAD_CONST", a, lineno=1), Instr("LOAD_CONST", b, lineno=1),
             Instr("BUILD_TUPLE", 2, lineno=1), Instr("RETURN_VALUE", lineno=1)]
    first, second = types.FunctionType(assembler.assemble(items, _signature(argnames=())), {})()
    assert first is a and second is b


def test_every_kind_of_generated_code_goes_through_the_checker(monkeypatch):
    seen = []
    real = assembler.checked

    def recording(code, names=None):
        seen.append(code.co_name)
        return real(code, names)
    monkeypatch.setattr(assembler, "checked", recording)

    def f(x, g):
        y = x + 1
        symexec.graph_break()  # a continuation
        return g(y)

    def callee(t):
        print("in callee")  # a callee run at a break: compiled on its own
        return t * 2
    check(f, torch.ones(2), callee)
    names = set(seen)
    assert any(n.startswith("__symexec_f_") for n in names)  # replacements (and their spliced form)
    assert any(n.startswith("__resume_in_") for n in names)  # continuations
    assert any(n.startswith("__symexec_callee_") for n in names)


def test_a_call_site_copy_goes_through_the_checker(monkeypatch):
    seen = []
    real = assembler.reassemble
    monkeypatch.setattr(assembler, "reassemble", lambda bc: seen.append(bc.name) or real(bc))

    def inner(x):
        return x * 3

    def f(x):
        print("breaks")
        return inner(x) + 1
    callees = symexec.compile(f, backend="eager")._symexec.callees
    copy = callees.fallback_copy(f)
    assert torch.equal(copy(torch.ones(1)), f(torch.ones(1)))
    assert seen == ["f"]


def test_the_readable_form_is_rendered_only_when_read(monkeypatch):
    fed = []
    real_feed = rendering.Renderer.feed
    monkeypatch.setattr(rendering.Renderer, "feed", lambda self, *a: fed.append(a) or real_feed(self, *a))

    def f(x):
        y = x + 1
        print("hi")
        return y * 2
    compiled = symexec.compile(f, backend="eager")
    compiled(torch.ones(1))
    assert fed == []  # compiling rendered nothing
    entry = symexec.cache_entries(compiled)[0]
    text = entry.readable_code
    assert fed and "print" in text and text.startswith("def __symexec_f_0(x):")
    assert entry.readable_code == text  # rendered once
    assert codegen.render("def g():", []) == "def g():\n"



def test_a_failing_differential_test_shows_what_symexec_ran():
    import helpers
    compiled = symexec.compile(lambda x: x * 2, backend="eager")
    compiled(torch.ones(1))
    with pytest.raises(AssertionError) as failure:
        helpers._compare_reporting(compiled, helpers._run(lambda: 1, [], {}), helpers._run(lambda: 2, [], {}), 1)
    text = str(failure.value)
    assert "eager 1, compiled 2" in text and "guards:" in text and "__compiled_fn_" in text and "mul = " in text
