"""No stalls after the first call (issue 19): an entry's one-call form (its guards spliced in
front of its replacement, symexec/splice.py) is built with the entry, so no later call builds
code; and it behaves as the guard and the replacement called one after the other."""

import dis
import types

import pytest
import torch
from bytecode import Bytecode, ConcreteBytecode

import symexec
from helpers import assert_same, check, check_sequence
from symexec import codegen, splice
from symexec.codegen import MISS
from symexec.guard_compile import CompiledGuards

X = torch.arange(6.0)


def _hot(compiled):
    return compiled._symexec.cache.hot


# -- built with the entry, never on a hit ------------------------------------------------------
def test_the_first_hit_already_calls_the_one_call_form():
    def fn(x, n):
        return x * n + 1

    compiled = check_sequence(fn, [X, 3])
    entry, = symexec.cache_entries(compiled)
    assert isinstance(entry.merged, types.FunctionType)
    assert _hot(compiled) == [entry.merged]  # (not a guard-then-replacement closure swapped later)
    assert entry.merged(X, 3) is not MISS and entry.merged(X, 4) is MISS


@pytest.fixture
def building(monkeypatch):
    """Records every call that builds code: assembling, splicing, the bytecode package's
    conversions, compiling guard source."""
    calls = []

    def record(owner, name, wrap=lambda f: f):
        original = getattr(owner, name)

        def recorded(*args, **kwargs):
            calls.append(name)
            return original(*args, **kwargs)
        monkeypatch.setattr(owner, name, wrap(recorded))

    record(codegen.PyCodegen, "assemble")
    record(codegen, "splice_guards")
    record(CompiledGuards, "_compile")
    for cls in (Bytecode, ConcreteBytecode):
        record(cls, "from_code", staticmethod)
        record(cls, "to_code")
    return calls


def test_hits_build_nothing(building):
    # The fourth call of an entry used to assemble its guards and its code again, on the
    # caller's thread: as long as the first call for a 12-layer GPT-2.
    def fn(x, scale):
        y = torch.relu(x) * scale
        return y.sum() + len(x)

    compiled = symexec.compile(fn, backend="eager")
    compiled(X, 2.0)
    assert "assemble" in building and "splice_guards" in building  # the first call builds both
    building.clear()
    for _ in range(2, 11):
        assert_same(fn(X, 2.0), compiled(X, 2.0))
    assert building == []


def test_hits_of_a_model_build_nothing(building):
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).eval()
    compiled = symexec.compile(model, backend="eager")
    x = torch.randn(3, 4)
    with torch.no_grad():
        compiled(x)
        building.clear()
        for _ in range(2, 11):
            assert_same(model(x), compiled(x))
    assert building == []
    entry, = symexec.cache_entries(compiled._compiled_forward)
    assert entry.merged is not None


# -- the one-call form, checked as generated code ------------------------------------------------
def _body_positions(code):
    """The position of each instruction after RESUME (EXTENDED_ARGs left out, repeats merged)."""
    out, seen = [], False
    for ins in dis.get_instructions(code):
        if seen and ins.opname != "EXTENDED_ARG" and (not out or out[-1] != ins.positions):
            out.append(ins.positions)
        seen = seen or ins.opname == "RESUME"
    return out


def test_the_one_call_code_round_trips_and_keeps_the_replacements_lines():
    def fn(x, items, *rest, scale=2, **options):
        total = x * scale
        for item in items:
            total = total + item
        return total + len(rest) + len(options)

    compiled = check_sequence(fn, [X, [1, 2]], [X, [1, 2]])
    entry, = symexec.cache_entries(compiled)
    merged = entry.merged.__code__
    dis.Bytecode(merged).dis()
    assert merged.co_stacksize >= entry.replacement_code.co_stacksize
    replaced = _body_positions(entry.replacement_code)
    assert _body_positions(merged)[-len(replaced):] == replaced  # (a traceback through it reads the same)
    assert merged.co_varnames[:merged.co_argcount] == entry.replacement_code.co_varnames[:merged.co_argcount]


# -- differential: guards that fail or raise after the entry's first call ---------------------------
def test_failing_guards_on_calls_two_to_ten_miss_and_recompile():
    def fn(x, n, mode):
        if mode == "double":
            return x * 2 + n
        return x - n

    steps = [[X, 1, "double"], [X, 1, "double"], [X, 2, "double"], [X, 2, "half"], [X.double(), 2, "half"],
             [X[:4], 2, "half"], [X, 1, "double"], [X, 3, "half"], [X.double(), 2, "half"], [X, 1, "double"]]
    compiled = check_sequence(fn, *steps)
    assert all(entry.merged is not None for entry in symexec.cache_entries(compiled))


def test_a_guard_that_raises_misses():
    def fn(x, items):
        return x * len(items) + items[0]

    compiled = check_sequence(fn, [X, [1, 2]], [X, [1, 2]])
    entry, = symexec.cache_entries(compiled)
    assert entry.merged(X, [1, 2]) is not MISS
    assert entry.merged(X, 5) is MISS  # (len(5) raises TypeError inside the guards)
    assert entry.merged(X, None) is MISS
    check_sequence(fn, [X, [1, 2]], [X, [1, 2]], [X, (3, 4)], [X, [1, 2, 3]], [X, [1, 2]])


class _RaisingConfig:  # (at module level: an entry guarding a class made inside a function keeps two calls)
    def __init__(self, broken):
        self.broken = broken

    @property
    def scale(self):
        if self.broken:
            raise RuntimeError("broken")
        return 3


def test_guards_raising_on_a_property_miss():
    def fn(x, config):
        return x * config.scale

    ok, broken = _RaisingConfig(False), _RaisingConfig(True)
    compiled = check_sequence(fn, [X, ok], [X, ok], [X, ok])
    entry, = symexec.cache_entries(compiled)
    assert entry.merged(X, ok) is not MISS
    with pytest.raises(RuntimeError, match="broken"):  # the miss traces again, and the user's error propagates
        compiled(X, broken)
    with pytest.raises(RuntimeError, match="broken"):
        fn(X, broken)


def test_many_guards_with_long_jumps_and_many_constants():
    # Hundreds of guards: the guard's jumps need EXTENDED_ARG, its constants more than 256.
    values = list(range(1000, 1300))

    def fn(x, table):
        return x + sum(table)

    changed = values[:-1] + [7]
    compiled = check_sequence(fn, [X, values], [X, values], [X, changed], [X, values], [X, changed])
    for entry in symexec.cache_entries(compiled):
        assert entry.merged is not None
        assert entry.merged(X, values if entry.merged(X, values) is not MISS else changed) is not MISS
        assert len(entry.merged.__code__.co_consts) > 256


def test_closures_keyword_only_and_defaults():
    offset = torch.tensor(0.5)

    def fn(x, *rest, scale=2, shift=None, **kw):
        y = x * scale + offset
        if shift is not None:
            y = y + shift
        return y + len(rest) + len(kw)

    compiled = symexec.compile(fn, backend="eager")
    for args, kwargs in [((X,), {}), ((X,), {}), ((X, 1), {"scale": 3}), ((X, 1), {"scale": 3, "a": 1}),
                         ((X,), {"shift": 1.0}), ((X,), {}), ((X, 1, 2), {"scale": 3})]:
        assert_same(fn(*args, **kwargs), compiled(*args, **kwargs))
    assert all(entry.merged is not None for entry in symexec.cache_entries(compiled))


def test_entries_around_a_graph_break_are_spliced_too():
    def fn(x):
        y = x + 1
        symexec.graph_break()
        return y * 2

    compiled = check(fn, X, calls=10)
    for entry in symexec.cache_entries(compiled):
        assert entry.merged is not None


# -- the splice itself, on codes CPython compiled ----------------------------------------------------
def _guard(params, exprs, namespace):
    source = (f"def ___guard({params}):\n    try:\n        return {' and '.join(f'({e})' for e in exprs)}\n"
              f"    except Exception:\n        return False\n")
    exec(compile(source, "<guards>", "exec"), namespace)
    return namespace.pop("___guard")


def _spliced(guard, fn):
    code = splice.splice_guards(guard.__code__, fn.__code__, guard.__globals__, MISS)
    assert code is not None
    dis.Bytecode(code).dis()
    merged = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    merged.__kwdefaults__ = fn.__kwdefaults__
    return merged


def _replacement():
    k = 3

    def fn(a, b, *rest, scale=2, **kw):
        total = 0
        for i in range(a):
            try:
                total += i * k * scale // (b or 1)
            except ZeroDivisionError:
                total = -1
        v0 = v1 = v2 = v3 = v4 = v5 = v6 = v7 = v8 = v9 = v10 = v11 = v12 = v13 = v14 = v15 = v16 = 1
        return total + len(rest) + len(kw) + v16 + v0
    return fn


def test_splice_of_compiled_codes():
    fn = _replacement()
    namespace = {"___type": type, "___len": len, "___const": [int, "x"]}
    namespace.update({f"___obj_{i}": i for i in range(300)})
    exprs = ["___type(a) is ___const[0]", "a < 100", "(___t0 := b) is None or ___t0 >= 0", "___len(rest) < 9",
             "scale != 0", "'x' in ___const"]
    exprs += [f"___obj_{i} == {i}" for i in range(300)]  # globals and constants past 256
    exprs += [f"(___t{i} := a + {i}) == a + {i}" for i in range(1, 40)]  # the guard's own locals
    merged = _spliced(_guard("a, b, *rest, scale, **kw", exprs, namespace), fn)
    for args, kwargs in [((5, 2, 1, 2), {"x": 1}), ((7, None), {}), ((3, 1), {"scale": 5})]:
        assert merged(*args, **kwargs) == fn(*args, **kwargs)
    assert merged(5.0, 1) is MISS  # a guard fails
    assert merged(200, 1) is MISS
    assert merged(5, "s") is MISS  # a guard raises: '>=' between str and int
    assert merged(5, 1, *range(10)) is MISS
    assert _body_positions(merged.__code__)[-len(_body_positions(fn.__code__)):] == _body_positions(fn.__code__)


def test_splice_refuses_what_it_cannot_splice():
    fn = _replacement()
    nested = _guard("a, b, *rest, scale, **kw", ["(lambda: a)() == a"], {})  # a function made in the guard
    renamed = _guard("c, b, *rest, scale, **kw", ["c == 1"], {})  # parameters spelled otherwise
    unknown = _guard("a, b, *rest, scale, **kw", ["___missing == 1"], {})  # a global nowhere
    for guard in (nested, renamed, unknown):
        assert splice.splice_guards(guard.__code__, fn.__code__, guard.__globals__, MISS) is None
