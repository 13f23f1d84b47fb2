"""Generated guard code never contains user data as source text.

Attribute names, dict keys and their reprs reach the generated guard function (and the
replacement code) as constants of its namespace or as escaped literals of exact builtin types:
a hostile name cannot run, a name that is not an identifier cannot break the syntax, and a key
whose repr does not evaluate back (an Enum, a torch.device, inf) still gives a guard that passes
on the next equal call.
"""

import enum
import gc
import weakref

import pytest
import torch

import symexec
from helpers import check
from symexec.source import AttrSource, GetItemSource, LocalSource, safe_name


def _t(*shape):
    return torch.randn(*shape)


def _entries(compiled):
    return len(symexec.cache_entries(compiled))


def _calls(fn, make_args, calls=3):
    """Call ``fn`` eagerly and compiled on fresh arguments, several times: equal results, one
    cache entry (every later call hits it)."""
    compiled = symexec.compile(fn)
    for _ in range(calls):
        eager_args, compiled_args = make_args(), make_args()
        expected = fn(*eager_args)
        actual = compiled(*compiled_args)
        torch.testing.assert_close(actual, expected)
    assert _entries(compiled) == 1, symexec.recompile_reasons(compiled)
    assert symexec.cache_entries(compiled)[0].fallback_reason is None
    return compiled


# -- attribute names ------------------------------------------------------------------------


class Holder:
    def __init__(self, **attrs):
        for name, value in attrs.items():
            setattr(self, name, value)


def test_hostile_getattr_name_does_not_run(tmp_path):
    marker = tmp_path / "pwned"
    name = f"s if open({str(marker)!r}, 'a') else s"

    def fn(o, x):
        return x + getattr(o, name)

    check(fn, Holder(**{name: 2.0, "s": 1.0}), _t(3))
    assert not marker.exists()


def test_hostile_setattr_name_does_not_run(tmp_path):
    marker = tmp_path / "pwned"
    name = f"s if open({str(marker)!r}, 'a') else s"

    def fn(o, x):
        setattr(o, name, x + 1)
        return getattr(o, name) * 2

    check(fn, Holder(**{name: 0, "s": 1.0}), _t(3))
    assert not marker.exists()


@pytest.mark.parametrize("name", ["my attr", "1st", "class", "None", "a.b", "x[0]", "", "ﬁ"])
def test_attribute_names_that_are_not_identifiers(name):
    def fn(o, x):
        return x * getattr(o, name) + o.fi

    # ("ﬁ" is an identifier that Python source would normalise to "fi": a different attribute)
    check(fn, Holder(**{name: 3.0, "fi": 5.0}), _t(3))


def test_attribute_name_that_is_a_keyword_set_and_read():
    def fn(o, x):
        setattr(o, "class", getattr(o, "class") + 1)
        setattr(o, "my attr", x)
        return x + getattr(o, "class")

    check(fn, Holder(**{"class": 1}), _t(2))


def test_attr_source_text_escapes():
    source = AttrSource(LocalSource("o"), "my attr")
    assert source.name == "getattr(L['o'], 'my attr')"
    assert source.expr() == "___getattr(o, 'my attr')"
    assert AttrSource(LocalSource("o"), "w").expr() == "o.w"


# -- module children with such names ---------------------------------------------------------


def _compare_module(module, *inputs):
    compiled = symexec.compile(module)
    for _ in range(2):
        torch.testing.assert_close(compiled(*inputs), module(*inputs))
    assert _entries(compiled) == 1, symexec.recompile_reasons(compiled)
    assert symexec.cache_entries(compiled)[0].fallback_reason is None


def test_module_dict_with_odd_keys():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleDict({k: torch.nn.Linear(4, 4) for k in ("layer-1", "class", "1st")})

        def forward(self, x):
            for key in ("layer-1", "class", "1st"):
                x = self.layers[key](x)
            return x

    _compare_module(Net(), _t(2, 4))


def test_module_dict_items_with_odd_keys():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleDict({k: torch.nn.Linear(4, 4) for k in ("layer-1", "class", "1st")})

        def forward(self, x):
            for _, layer in self.layers.items():
                x = layer(x)
            return x

    _compare_module(Net(), _t(2, 4))


def test_add_module_with_odd_names():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for name in ("layer-1", "class", "1st"):
                self.add_module(name, torch.nn.Linear(4, 4))

        def forward(self, x):
            for name in ("layer-1", "class", "1st"):
                x = getattr(self, name)(x)
            return x

    _compare_module(Net(), _t(2, 4))


# -- dict keys ----------------------------------------------------------------------------------


class Color(enum.Enum):
    RED = 1
    BLUE = 2


def test_enum_keys():
    def fn(d, x):
        return x * d[Color.RED] + d[Color.BLUE]

    check(fn, {Color.RED: _t(3), Color.BLUE: _t(3)}, _t(3))


def test_enum_keys_iterated():
    def fn(d, x):
        for key, value in d.items():
            x = x + value * key.value
        return x

    check(fn, {Color.RED: _t(3), Color.BLUE: _t(3)}, _t(3))


def test_device_keys():
    def fn(d, x):
        return x + d[torch.device("cpu")]

    check(fn, {torch.device("cpu"): _t(3)}, _t(3))


def test_infinite_float_keys():
    def fn(d, x):
        total = x
        for key in d:
            total = total + d[key]
        return total

    check(fn, {float("inf"): _t(3), 1.5: _t(3)}, _t(3))
    check(fn, {float("-inf"): _t(3), 1.5: _t(3)}, _t(3))


def test_keys_whose_placeholder_names_collide():
    def fn(d, x):
        return x + d[float("inf")] + d[float("-inf")] + d["a_b"] + d["a"]["b"]

    check(fn, {float("inf"): _t(3), float("-inf"): _t(3), "a_b": _t(3), "a": {"b": _t(3)}}, _t(3))


def test_nan_key_same_object():
    nan = float("nan")

    def fn(d, x):
        for key in d:
            x = x + d[key]
        return x

    _calls(fn, lambda: ({nan: torch.ones(3), 2: torch.ones(3)}, torch.ones(3)))


def test_tuple_keys():
    def fn(d, x):
        for key in d:
            x = x + d[key]
        return x + d[(1, "a")]

    check(fn, {(1, "a"): _t(3), (Color.RED, 2.0): _t(3), ("b", (float("inf"),)): _t(3)}, _t(3))


SIDE_EFFECTS = []


class HostileStr(str):
    """A str subclass whose repr runs code (and hashes and compares as the str)."""

    __hash__ = str.__hash__
    __eq__ = str.__eq__

    def __repr__(self):
        SIDE_EFFECTS.append("repr")
        return "__import__('os').system('echo pwned')"


def test_str_subclass_key_with_hostile_repr():
    SIDE_EFFECTS.clear()
    key = HostileStr("k")

    def fn(d, x):
        total = x
        for k in d:
            total = total + d[k]
        return total

    _calls(fn, lambda: ({key: torch.ones(3), "j": torch.ones(3)}, torch.ones(3)))
    assert "repr" not in SIDE_EFFECTS or SIDE_EFFECTS == ["repr"]  # (see the next test)


def test_str_subclass_key_repr_is_never_called():
    SIDE_EFFECTS.clear()
    key = HostileStr("k")

    def fn(d, x):
        return x + d[key]

    _calls(fn, lambda: ({key: torch.ones(3)}, torch.ones(3)))
    assert SIDE_EFFECTS == []


def test_str_subclass_attribute_name_with_hostile_repr():
    SIDE_EFFECTS.clear()
    name = HostileStr("w")

    def fn(o, x):
        return x * getattr(o, name)

    _calls(fn, lambda: (Holder(w=2.0), torch.ones(3)))
    assert SIDE_EFFECTS == []


def test_get_item_source_text_runs_no_user_code():
    SIDE_EFFECTS.clear()
    source = GetItemSource(LocalSource("d"), HostileStr("k"))
    assert "pwned" not in source.name and "pwned" not in source.expr()
    assert SIDE_EFFECTS == []
    assert GetItemSource(LocalSource("d"), "k").expr() == "d['k']"
    assert GetItemSource(LocalSource("d"), (1, "a")).expr() == "d[(1, 'a', )]"


def test_changed_enum_key_recompiles():
    def fn(d, x):
        for key in d:
            x = x + d[key]
        return x

    compiled = symexec.compile(fn)
    compiled({Color.RED: torch.ones(2)}, torch.ones(2))
    compiled({Color.RED: torch.ones(2)}, torch.ones(2))
    assert _entries(compiled) == 1
    torch.testing.assert_close(compiled({Color.BLUE: torch.ones(2) * 3}, torch.ones(2)), torch.ones(2) * 4)
    assert _entries(compiled) == 2


# -- sharing of subexpressions does not rewrite string literals -------------------------------


def test_source_text_inside_a_string_constant():
    def fn(o, x):
        if o.tag == "o.tag":
            return x + 1
        return x - 1

    check(fn, Holder(tag="o.tag"), _t(3))
    check(fn, Holder(tag="other"), _t(3))


def test_size_call_text_inside_string_constants():
    def fn(o, p, x):
        if o.a == "x.size()" and p.a == "x.size()":
            return x + 1
        return x - 1

    check(fn, Holder(a="x.size()"), Holder(a="x.size()"), _t(3))


# -- names of locals ------------------------------------------------------------------------------


def test_parameters_named_like_the_guard_namespace():
    def fn(l, ___len, ___type, math, torch_):
        return l[0] + l[1] * ___len + math

    check(fn, [_t(3), _t(3)], 2, 3, 4.0, 5)


def test_safe_name_is_one_to_one():
    names = ["x", "___local_x", "x@", "@", "_40_", "x_40_", "___local_x_40_", "a b", "a_20_b", "ﬁ", "fi",
             "math", "torch", "___len", "___obj_0", "___stack0", "class", "_", "__", "___"]
    rendered = [safe_name(n) for n in names]
    assert len(set(rendered)) == len(names)
    for name, text in zip(names, rendered):
        assert text.isidentifier() and text.isascii(), (name, text)
    assert safe_name("x") == "x" and safe_name("___stack0") == "___stack0"


# -- lifetime of constants -----------------------------------------------------------------------


def test_class_reached_through_super_is_freed_by_reset():
    def make():
        class Base:
            def scale(self, x):
                return x * 2

        class Derived(Base):
            def scale(self, x):
                return super().scale(x) + 1

        return Derived

    Derived = make()
    base_ref = weakref.ref(Derived.__mro__[1])

    def fn(o, x):
        return o.scale(x)

    compiled = symexec.compile(fn)
    torch.testing.assert_close(compiled(Derived(), torch.ones(2)), torch.ones(2) * 3)
    del Derived
    symexec.reset()
    del compiled
    gc.collect()
    assert base_ref() is None


# -- the ShapeEnv's guards name the same sources ----------------------------------------------


def test_dynamic_shapes_under_odd_keys_and_attributes():
    def fn(d, o, x):
        return d[Color.RED].sum(0) + getattr(o, "my attr").sum(0) + x.sum(0)

    compiled = symexec.compile(fn)
    for n in (2, 3, 4, 5):
        args = ({Color.RED: torch.ones(n, 3)}, Holder(**{"my attr": torch.ones(n + 1, 3)}), torch.ones(n + 2, 3))
        torch.testing.assert_close(compiled(*args), fn(*args))
    # the sizes become dynamic after the second shape: no entry per size after that
    assert _entries(compiled) <= 2, symexec.recompile_reasons(compiled)


def test_shared_size_calls_define_before_use_and_skip_literals():
    # (the guards as data since issue 21 part 4: the same expressions, from their sources)
    from symexec.guard_code import ShapeCall, code
    from symexec.guard_compile import shared_expressions
    from symexec.guards import Guard, GuardKind

    key = object()
    xa, x, o = GetItemSource(LocalSource("x"), "a"), LocalSource("x"), LocalSource("o")
    dk = GetItemSource(LocalSource("d"), key)
    const = f"___const[{id(key)}]"
    exprs = [code(ShapeCall(xa, "size"), "[1] == ", ShapeCall(xa, "size"), "[0]"),
             code(AttrSource(o, "s"), " == 'x.size()' and ", ShapeCall(x, "size"), "[0] == 1"),
             code(ShapeCall(dk, "size"), "[0] == 2"), code("2 <= ", ShapeCall(dk, "size"), "[0]")]
    shared = shared_expressions([Guard(GuardKind.SHAPE, "", e) for e in exprs])
    assert shared == ["(___s0 := x['a'].size())[1] == ___s0[0]", "o.s == 'x.size()' and x.size()[0] == 1",
                      f"(___s1 := d[{const}].size())[0] == 2", "2 <= ___s1[0]"]
