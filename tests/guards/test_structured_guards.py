"""Guards as data (issue 21 part 4): a guard's predicate is code around the Sources it reads,
rendered once; sharing and constants are decided from those objects, never from text. User
strings that look like guard code (quotes, brackets, ``___const[3]``, ``.size()``) are data."""

import ast
import pathlib

import torch

import symexec
from helpers import check, check_sequence
from symexec.guard_code import Code, ShapeCall, code
from symexec.guard_compile import shared_expressions
from symexec.guards import Guard, GuardKind, GuardSet
from symexec.source import AttrSource, GetItemSource, LocalSource

TRICKY = ["a'b", 'a"b', "x]", "[0]", "___const[3]", "x.size()", "x.size()[0]", "___t0", "(___s0 := 1)", "\\", "L['x']"]


def _guard_exprs(compiled):
    return [g.expr for e in symexec.cache_entries(compiled) for g in e.guards]


def test_dict_keys_that_look_like_guard_code():
    def fn(d, x):
        return x + sum(v for v in d.values())

    d = {k: i for i, k in enumerate(TRICKY)}
    check(fn, d, torch.ones(3))
    other = dict(d)
    other["x.size()"] = 100
    renamed = {("___const[4]" if k == "___const[3]" else k): v for k, v in d.items()}
    check_sequence(fn, [d, torch.ones(3)], [other, torch.ones(3)], [renamed, torch.ones(3)], [d, torch.ones(2)])


def test_values_and_items_that_look_like_guard_code():
    def fn(d, s, x):
        return x * len(s) if d["x.size()"] == "___const[3]" else x - 1

    steps = [[{"x.size()": "___const[3]", "[0]": 1}, "a'b\"c", torch.ones(2)],
             [{"x.size()": "___const[4]", "[0]": 1}, "a'b\"c", torch.ones(2)],
             [{"x.size()": "___const[3]", "[0]": 1}, "x.size()", torch.ones(2)],
             [{"x.size()": "___const[3]", "[0]": 1}, "a'b\"c", torch.ones(4)]]
    check_sequence(fn, *steps)


def test_attribute_names_that_look_like_guard_code():
    class Holder:
        pass

    def fn(h, x):
        return x + getattr(h, "x.size()") + getattr(h, "a'b]")

    def holder(a, b):
        h = Holder()
        setattr(h, "x.size()", a)
        setattr(h, "a'b]", b)
        return h

    check(fn, holder(1, 2), torch.ones(3))
    check_sequence(fn, [holder(1, 2), torch.ones(3)], [holder(1, 5), torch.ones(3)], [holder(3, 2), torch.ones(3)])


def test_sizes_of_tensors_under_tricky_keys_shared_and_checked():
    def fn(d):
        return d["x.size()"] + d["x.size()"].sum() * d["___const[3]"].shape[0]

    t = {"x.size()": torch.ones(2, 3), "___const[3]": torch.ones(4)}
    compiled = check_sequence(fn, [t], [{"x.size()": torch.ones(3, 3), "___const[3]": torch.ones(4)}],
                              [{"x.size()": torch.ones(5, 3), "___const[3]": torch.ones(6)}],
                              [{"x.size()": torch.ones(5, 2), "___const[3]": torch.ones(6)}], dynamic=True)
    assert symexec.cache_entries(compiled)


def _guard(*pieces):
    return Guard(GuardKind.ID_MATCH, "", code(*pieces))


def test_sharing_is_decided_from_the_sources():
    # Three guards through L['m'].layer: the chain is read once into a temp; a source whose
    # text appears inside a string literal is not a use of it.
    m = LocalSource("m")
    layer = AttrSource(m, "layer")
    w, b = AttrSource(layer, "weight"), AttrSource(layer, "bias")
    guards = [_guard(w, " is not None"), _guard(b, " is None"), _guard("'m.layer' != ", AttrSource(m, "name"))]
    shared = shared_expressions(guards)
    assert shared == ["(___t0 := m.layer).weight is not None", "___t0.bias is None", "'m.layer' != m.name"]
    assert list(guards[0].code.reads()) == [w]


def test_size_calls_shared_per_tensor_from_data():
    x = GetItemSource(LocalSource("d"), "x.size()")
    guards = [_guard(ShapeCall(x, "size"), "[0] == 2"), _guard(ShapeCall(x, "size"), "[1] == 3"),
              _guard(ShapeCall(x, "stride"), "[0] == 3")]
    shared = shared_expressions(guards)
    assert shared == ["(___s0 := (___t0 := d['x.size()']).size())[0] == 2", "___s0[1] == 3", "___t0.stride()[0] == 3"]


def test_guard_set_records_sources_and_constants_as_data():
    guards = GuardSet()
    key = object()  # not a literal: a constant of the source
    source = GetItemSource(LocalSource("d"), key)
    guards.len_match(source, 2)
    (guard,) = guards.guards
    assert isinstance(guard.code, Code) and list(guard.code.reads()) == [source]
    assert guard.expr == f"___len(d[___const[{id(key)}]]) == 2"


def test_guard_modules_do_not_parse_text():
    root = pathlib.Path(symexec.__file__).parent
    for name in ("guards.py", "guard_compile.py", "guard_code.py"):
        tree = ast.parse((root / name).read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "re" not in imported, name
        calls = {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
        assert not calls & {"find", "rfind", "finditer", "findall"}, name


def test_shape_guards_share_reads_with_the_other_guards():
    # The ShapeEnv's guards name their sources structurally: a parameter's size() is read once,
    # through the temp the tensor guard bound (once printed in full per size).
    lin = torch.nn.Linear(4, 4)
    compiled = symexec.compile(lambda x: lin(x), dynamic=True)
    for n in (2, 3, 4):
        compiled(torch.ones(n, 4))
    entry = symexec.cache_entries(compiled)[0]
    text = " and ".join(shared_expressions(entry.guards))
    assert "_parameters['weight'].size()" not in text and "_parameters['weight'].stride()" not in text, text
