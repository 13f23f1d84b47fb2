"""Cheaper guards for the same facts (issue 12): an attribute found absent guarded by where
the lookup looked (instance dict, module stores, class dicts) instead of a ``hasattr`` that
raises an AttributeError per call; class dicts read through their mappingproxy; a module's
members read from its dicts. Each change of the world below must still retrace (compared with
eager), and the guards must take the cheap form."""

import abc
import collections

import pytest
import torch

import symexec
from helpers import assert_same, check_sequence

X = torch.arange(4.0) - 1.5


def _guard_exprs(compiled):
    return " ".join(g.expr for g in symexec.cache_entries(compiled)[0].guards)


# -- an attribute found absent on a module ------------------------------------------------------
class _Probe(torch.nn.Module):
    def forward(self, x):
        return x * 2 if hasattr(self, "extra") else x - 1


class _ProbeSub(_Probe):
    pass


_PROBE = _ProbeSub()


def _instance_attribute():
    _PROBE.extra = 1


def _registered_buffer():
    _PROBE.register_buffer("extra", torch.ones(1))


def _registered_parameter():
    _PROBE.extra = torch.nn.Parameter(torch.ones(1))


def _registered_submodule():
    _PROBE.extra = torch.nn.ReLU()


def _class_attribute():
    _ProbeSub.extra = 1


@pytest.mark.parametrize("change", [_instance_attribute, _registered_buffer, _registered_parameter,
                                    _registered_submodule, _class_attribute])
def test_module_attribute_found_absent_retraces_once_present(change):
    global _PROBE
    _PROBE = _ProbeSub()

    def fn(x):
        return _PROBE(x)

    try:
        compiled = check_sequence(fn, [X])
        assert "___hasattr(" not in _guard_exprs(compiled)  # (the stores and dicts, not an AttributeError per call)
        check_sequence(fn, [X], change, [X], [X])
    finally:
        if "extra" in _ProbeSub.__dict__:
            del _ProbeSub.extra


# -- an attribute found absent on a plain object ------------------------------------------------
class _Plain:
    pass


class _PlainSub(_Plain):
    pass


def _plain_instance_attribute(obj):
    obj.extra = 3


def _plain_class_attribute(obj):
    _Plain.extra = 3


def _plain_getattr_added(obj):
    _PlainSub.__getattr__ = lambda self, name: 5


@pytest.mark.parametrize("change", [_plain_instance_attribute, _plain_class_attribute, _plain_getattr_added])
def test_object_attribute_found_absent_retraces_once_present(change):
    obj = _PlainSub()

    def fn(x):
        return x + getattr(obj, "extra", 1)

    try:
        compiled = check_sequence(fn, [X])
        assert "___hasattr(" not in _guard_exprs(compiled)
        check_sequence(fn, [X], lambda: change(obj), [X], [X])
    finally:
        for cls in (_Plain, _PlainSub):
            for name in ("extra", "__getattr__"):
                if name in cls.__dict__:
                    delattr(cls, name)


def test_missing_attribute_still_raises_eagers_error():
    class M(torch.nn.Module):
        def forward(self, x):
            try:
                return self.nothing_here
            except AttributeError as e:
                return x + len(str(e))

    check_sequence(lambda x, m=M(): m(x), [X], [X])


# -- class dicts, read through their mappingproxy ------------------------------------------------
class _Scaler:
    factor = 2

    def scale(self, x):
        return x * self.factor


def test_class_dict_guards_use_the_proxy_and_see_changes():
    obj = _Scaler()

    def fn(x):
        return obj.scale(x)

    compiled = check_sequence(fn, [X])
    assert ".__dict__.get(" not in _guard_exprs(compiled)  # (one subscript of a proxy made once)

    def replace_method():
        _Scaler.scale = lambda self, x: x - self.factor

    def change_factor():
        _Scaler.factor = 5

    original = _Scaler.__dict__["scale"]
    try:
        check_sequence(fn, [X], replace_method, [X], change_factor, [X], [X])
    finally:
        _Scaler.scale, _Scaler.factor = original, 2


# -- dict keys: an empty dict is `not d` ----------------------------------------------------------
@pytest.mark.parametrize("make", [dict, collections.OrderedDict])
def test_empty_dict_keys_guard_sees_an_added_key(make):
    d = make()

    def fn(x):
        return x + len(d) if not d else x * len(d)

    check_sequence(fn, [X], lambda: d.update(a=1), [X], lambda: d.clear(), [X])


# -- torch's global state through its C readers --------------------------------------------------
def test_deterministic_algorithms_flags_still_retrace():
    def fn(x):
        return x + (1 if torch.are_deterministic_algorithms_enabled() else 2) + \
            (3 if torch.is_deterministic_algorithms_warn_only_enabled() else 4)

    before = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    try:
        check_sequence(fn, [X], lambda: torch.use_deterministic_algorithms(True, warn_only=True), [X],
                       lambda: torch.use_deterministic_algorithms(True), [X])
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


# -- an object copied while tracing: its state compared in C where it holds no tensor ------------
class _Config:
    def __init__(self):
        self.layers = 2
        self.flag = True
        self.names = {"a": 1, "b": [1, 2]}


def _copy_twice(x, config):
    import copy

    first, second = copy.deepcopy(config), copy.deepcopy(config)
    extra = 1 if first.flag is True else 2
    return x * first.layers + second.names["a"] + extra + len(second.names["b"]) + len(list(first.names))


def _flag_to_int(config):
    config.flag = 1  # == True, yet `is True` differs


def _nested_value(config):
    config.names["b"].append(3)


def _nested_key_order(config):
    config.names = {"b": [1, 2], "a": 1}  # == the old dict: the order differs


def _nested_int_to_float(config):
    config.names["a"] = 1.0


def _layers(config):
    config.layers = 3


@pytest.mark.parametrize("change", [_flag_to_int, _nested_value, _nested_key_order, _nested_int_to_float, _layers])
def test_copied_object_state_is_compared_exactly(change):
    config = _Config()
    compiled = check_sequence(_copy_twice, [X, config])
    copies = [g for g in symexec.cache_entries(compiled)[0].guards if "<its state when traced>" in g.text]
    assert len(copies) == 1  # (copied twice, guarded once)
    check_sequence(_copy_twice, [X, config], lambda: change(config), [X, config], [X, config])


def test_state_check_is_exact_where_equality_is_not():
    from symexec.variables.snapshots import state_check

    then = {"a": 1, "b": [1, {"c": True}], "d": None, "e": "s"}
    check = state_check(then)
    assert check({"a": 1, "b": [1, {"c": True}], "d": None, "e": "s"})
    assert not check({"a": True, "b": [1, {"c": True}], "d": None, "e": "s"})  # type
    assert not check({"a": 1, "b": [1, {"c": 1}], "d": None, "e": "s"})  # nested type
    assert not check({"b": [1, {"c": True}], "a": 1, "d": None, "e": "s"})  # key order
    assert not check({"a": 1, "b": [1, {"c": True}], "d": None})  # a key missing
    assert not check(None) and not check({"a": torch.ones(2)})  # not a dict; a tensor


# -- equal mutable constants stay distinct objects in generated code ----------------------------
def test_equal_mutable_constants_are_not_merged_into_one():
    from bytecode import Instr

    from symexec.codegen import PyCodegen

    first, second, third = {}, {}, [1, ({},)]
    cg = PyCodegen(1)
    for value in (first, second, third, (1, "a"), (1, "a")):
        cg.load_const(value)
    cg.build(tuple, 5)
    cg.instructions.append(Instr("RETURN_VALUE", lineno=1))

    def template():
        pass

    code = cg.assemble(template.__code__, "consts")
    got = eval(code)
    assert got[0] is first and got[1] is second and got[2] is third and got[3] == (1, "a")


class _TableA:
    table = {}


class _TableB:
    table = {}  # (equal to _TableA.table, another object)


def test_spliced_guards_pass_when_the_guards_pass():
    # Each class's dict is guarded to hold its own empty dict: as one constant, one of the two
    # identity guards failed in the entry's one-call form, and every hit went through a miss.
    a, b = _TableA(), _TableB()

    def fn(x):
        return x + len(a.table) + len(b.table)

    compiled = check_sequence(fn, [X], [X], [X], [X])
    entry = symexec.cache_entries(compiled)[0]
    merged = entry.merged
    assert merged is not None and merged(X) is not symexec.codegen.MISS


# -- a class whose __getattribute__ is Python (a config that maps names) ----------------------------
class _MappedConfig:
    attribute_map = {"hidden": "n_embd"}

    def __getattribute__(self, key):
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)


class _Gpt(_MappedConfig):
    def __init__(self):
        self.n_embd = 3
        self.flag = True


def _config_reads(x, config):
    extra = getattr(config, "missing", 5) + hasattr(config, "other")
    return x * config.hidden + extra + (1 if config.flag else 0)


def _set_mapped(config):
    config.n_embd = 4


def _map_changed(config):
    _MappedConfig.attribute_map = {"hidden": "flag"}


def _missing_added(config):
    config.missing = 7


def _other_on_class(config):
    _Gpt.other = 1


def _getattr_added(config):
    def __getattr__(self, name):
        if name.startswith("__"):  # (copy looks for __deepcopy__)
            raise AttributeError(name)
        return 11

    _Gpt.__getattr__ = __getattr__


def _getattribute_replaced(config):
    _Gpt.__getattribute__ = lambda self, key: 2 if key == "hidden" else object.__getattribute__(self, key)


@pytest.mark.parametrize("change", [_set_mapped, _map_changed, _missing_added, _other_on_class, _getattr_added,
                                    _getattribute_replaced])
def test_python_getattribute_is_traced_and_its_reads_guarded(change):
    config = _Gpt()
    try:
        compiled = check_sequence(_config_reads, [X, config])
        exprs = _guard_exprs(compiled)
        assert "___hasattr(" not in exprs and ".hidden" not in exprs  # (read past the method, not through it)
        check_sequence(_config_reads, [X, config], lambda: change(config), [X, config], [X, config])
    finally:
        _MappedConfig.attribute_map = {"hidden": "n_embd"}
        for name in ("other", "__getattr__", "__getattribute__"):
            if name in _Gpt.__dict__:
                delattr(_Gpt, name)


class _Counting:
    reads = 0

    def __getattribute__(self, key):
        type(self).reads += 1  # a side effect: traced as such, or run for real
        return super().__getattribute__(key)


class _Raising:
    def __getattribute__(self, key):
        if key == "bad":
            raise KeyError(key)
        try:
            return super().__getattribute__(key)
        except AttributeError:
            return -1


def test_getattribute_with_effects_or_its_own_errors_behaves_as_eager():
    counting, raising = _Counting(), _Raising()
    counting.v = 2

    def reads(x):
        return x * counting.v

    def errors(x):
        try:
            raising.bad
        except KeyError:
            x = x + 1
        return x + raising.absent

    compiled = symexec.compile(reads)
    for _ in range(3):  # the first call (the trace) and hits: one read each, as eager does
        before = _Counting.reads
        assert_same(reads(X), compiled(X))
        assert _Counting.reads - before == 2
    # (The graph breaks at the read: the method is never run again by a guard, and the
    # tracker code asks the object's type, never its __class__, which would run the method.)
    check_sequence(errors, [X], [X])


class _ClassCounting:
    reads = 0

    def __getattribute__(self, key):
        if key == "__class__":
            type(self).reads += 1
        return super().__getattribute__(key)


class _ClaimsInt:
    __class__ = property(lambda self: int)


class _Registered(abc.ABC):
    pass


_Registered.register(_ClassCounting)


@pytest.mark.parametrize("obj", [_ClassCounting(), _ClaimsInt()], ids=["class_counting", "claims_int"])
def test_isinstance_asks_the_objects_class_as_cpython_does(obj):
    """isinstance(o, C) reads o.__class__ where type(o) is no subclass of C, and an ABC's check
    always reads it: through a Python __getattribute__ (its effects, once per check, as in eager)
    or a __class__ of the class's own (isinstance(o, int) is True for _ClaimsInt)."""
    def fn(x, o):
        return (x + isinstance(o, int) + isinstance(o, type(obj)) + isinstance(o, _Registered)
                + isinstance(o, (str, float)), _ClassCounting.reads)

    compiled = symexec.compile(fn)
    for _ in range(3):
        _ClassCounting.reads = 0
        expected = fn(X, obj)
        _ClassCounting.reads = 0
        assert_same(expected, compiled(X, obj))


# -- writes to the trace's own copies are replayed only where the copy can be reached ------------
class _Holder:
    def __init__(self):
        self.settings = {"a": 1}
        self.slot = 2


def _copy_edited_and_returned(x, holder):
    import copy

    mine = copy.deepcopy(holder.settings)
    mine["b"] = 2
    del mine["a"]
    return x + 1, mine


def _copy_edited_and_stored(x, holder):
    import copy

    mine = copy.deepcopy(holder.settings)
    mine["c"] = 3
    holder.slot = mine
    return x * 2


def _copy_edited_in_a_list(x, holder):
    import copy

    mine = copy.deepcopy(holder)
    mine.settings["d"] = 4
    mine.slot = "edited"
    return [x, [mine.settings, mine]]


def _copy_edited_and_dropped(x, holder):
    import copy

    mine = copy.deepcopy(holder)
    mine.settings["e"] = 5
    mine.slot = 7
    return x + len(mine.settings) + mine.slot


@pytest.mark.parametrize("fn", [_copy_edited_and_returned, _copy_edited_and_stored, _copy_edited_in_a_list,
                                _copy_edited_and_dropped])
def test_edited_copies_reach_the_caller_as_eager(fn):
    check_sequence(fn, [X, _Holder()], [X, _Holder()], captured=fn is not _copy_edited_in_a_list)  # that one has no op


def test_edits_of_an_unreachable_copy_are_not_replayed():
    compiled = check_sequence(_copy_edited_and_dropped, [X, _Holder()])
    assert "deepcopy" not in symexec.cache_entries(compiled)[0].readable_code


def _edited_copy_read_back(x, holder):
    import copy

    mine = copy.deepcopy(holder)
    settings = mine.settings
    settings["e"] = 5
    again = copy.deepcopy(mine)  # (a copy of the edited copy)
    return x + len(settings) + len(mine.settings) + len(sorted(mine.settings)) + len(again.settings)


def test_an_edited_copy_is_read_as_edited():
    # len() of the trace's own copy read the real copy, which the trace's edits had not reached:
    # the result missed every key added while tracing.
    check_sequence(_edited_copy_read_back, [X, _Holder()], [X, _Holder()])


# -- a method found on a class is one constant for every instance ---------------------------------
_SCALE = 2.0


class _Block(torch.nn.Module):
    def forward(self, x):
        return x * _SCALE


class _Twice(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.first, self.second = _Block(), _Block()

    def forward(self, x):
        return self.second(self.first(x))


_TWICE = _Twice()


def _rebind_global():
    global _SCALE
    _SCALE = 3.0


def _replace_method():
    _Block.forward = lambda self, x: x + 1


def _instance_forward():
    _TWICE.second.forward = lambda x: x - 1


@pytest.mark.parametrize("change", [_rebind_global, _replace_method, _instance_forward])
def test_a_method_shared_by_instances_is_guarded_once_and_still_retraces(change):
    global _TWICE, _SCALE
    _TWICE, _SCALE = _Twice(), 2.0
    original = _Block.__dict__["forward"]

    def fn(x):
        return _TWICE(x)

    try:
        check_sequence(fn, [X], change, [X], [X])
    finally:
        _Block.forward, _SCALE = original, 2.0


def test_the_globals_of_a_method_are_guarded_once_for_all_instances():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 4), torch.nn.Linear(4, 4))
    compiled = check_sequence(lambda x: model(x), [X])
    # Linear.forward reads the global F of torch.nn.modules.linear: one guard, not one per layer.
    reads_of_f = [g for g in symexec.cache_entries(compiled)[0].guards if "['F']" in g.text]
    assert len(reads_of_f) == 1, [g.text for g in reads_of_f]


def _copy_read_then_rebound(x, holder):
    import copy

    mine = copy.deepcopy(holder)
    mine.settings["b"] = mine.slot  # the value 2 (a constant read from the copy)...
    mine.slot = 3  # ...before the copy's attribute is rebound
    return x + len(mine.settings), mine.settings


def _copy_container_read_then_rebound(x, holder):
    import copy

    mine = copy.deepcopy(holder)
    settings = mine.settings
    mine.settings = {"z": 0}
    return x + 1, settings, mine.settings


@pytest.mark.parametrize("fn", [_copy_read_then_rebound, _copy_container_read_then_rebound])
def test_a_value_read_from_a_copy_survives_the_copy_changing(fn):
    # (found by the fuzzer: the dict held 3, re-read from the copy after its change)
    check_sequence(fn, [X, _Holder()], [X, _Holder()])


def _config_written_then_read(x, config):
    before = config.hidden
    config.n_embd = before + 1  # (the traced read after it must see the write)
    return x * config.hidden + before


class _Fresh:
    def __getattribute__(self, key):
        if key == "fresh":
            return [1]  # a new object per read
        return super().__getattribute__(key)


def test_reads_through_getattribute_see_the_traces_writes_and_new_objects():
    check_sequence(_config_written_then_read, [X, _Gpt()], [X, _Gpt()])
    fresh = _Fresh()
    check_sequence(lambda x: x + (fresh.fresh is fresh.fresh) + len(fresh.fresh), [X], [X])


# -- an inlined call's arguments, bound from the code object --------------------------------------
def _sig_a(x, k=2, *rest, j, m=3, **more):
    return x * k + j + m + len(rest) + sum(more.values())


def _sig_b(x, y, /, z=1, *, w=5):
    return x + y * z - w


def _sig_c(x, /, **kw):
    return x + len(kw) + kw.get("x", 0)


@pytest.mark.parametrize("call", [
    lambda x: _sig_a(x, j=1), lambda x: _sig_a(x, 3, 4, 5, j=1, m=0, extra=7), lambda x: _sig_a(k=4, x=x, j=2),
    lambda x: _sig_b(x, 2), lambda x: _sig_b(x, 2, z=3, w=0), lambda x: _sig_c(x, x=4, y=5),
    lambda x: _sig_a(x), lambda x: _sig_a(x, j=1, k=2), lambda x: _sig_b(x, y=2), lambda x: _sig_b(x, 1, 2, 3),
    lambda x: _sig_a(x, j=1, q=1, **{"q": 2}) if False else _sig_b(x, 2, w=1, v=0),
])
def test_inlined_calls_bind_their_arguments_as_cpython(call):
    # the calls that bind wrongly raise TypeError before any op; the others capture
    check_sequence(call, [X], [X], captured=False)


# -- a dict subclass's items are guarded as the dict holds them ------------------------------------
class _Instantiating(dict):
    """transformers' ClassInstantier: ``d[key]`` makes a new object of the stored class."""

    def __getitem__(self, key):
        cls = super().__getitem__(key)
        return cls()


class _Double(torch.nn.Module):
    def forward(self, x):
        return x * 2


class _Triple(torch.nn.Module):
    def forward(self, x):
        return x * 3


_ACTIVATIONS = _Instantiating(act=_Double)


def test_a_dict_subclass_making_objects_per_read_is_hit_not_retraced():
    def fn(x):
        return _ACTIVATIONS["act"](x)

    try:
        compiled = check_sequence(fn, [X], [X], [X])
        assert len(symexec.cache_entries(compiled)) == 1  # (each call retraced: ACT2FN in Mamba)
        check_sequence(fn, [X], lambda: dict.__setitem__(_ACTIVATIONS, "act", _Triple), [X], [X])
    finally:
        dict.__setitem__(_ACTIVATIONS, "act", _Double)


# -- no garbage collection while tracing; as it was afterwards, however the trace ends -------------
@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("fault", [None, KeyboardInterrupt])  # (internal errors: test_never_silent)
def test_garbage_collection_is_as_it_was_after_a_trace(enabled, fault):
    import gc

    import faults

    def fn(x):
        return x + 1

    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        compiled = symexec.compile(fn)
        if fault is None:
            compiled(X)
        else:
            with faults.inject("handler", exc=fault):
                with pytest.raises(KeyboardInterrupt):
                    compiled(X)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


# -- values read past a class's own lookup, loaded again by the replacement -------------------------
class _Weights(dict):
    def __getitem__(self, key):
        return super().__getitem__(key)


def test_values_read_past_the_class_lookup_reach_the_graph_as_inputs():
    config, weights = _Gpt(), _Weights(w=torch.full((4,), 2.0))
    config.scale = torch.full((4,), 3.0)  # (a tensor read through the Python __getattribute__)

    def fn(x):
        return x * config.scale + weights["w"]

    compiled = check_sequence(fn, [X], [X])
    # the replacement reloads both tensors on each call: a change of either is seen
    config.scale.add_(1)
    weights["w"].mul_(2)
    check_sequence(fn, [X])
    assert torch.equal(compiled(X), fn(X))


# -- distinct inputs: pair by pair for a few locals, by address for more, no id() ----------------
def _add_then_read(first, *rest):
    first.add_(1)  # seen through another argument only if it is the same tensor
    return [t * 2 for t in rest]


@pytest.mark.parametrize("n", [3, 10, 12])
def test_distinct_inputs_however_many_are_guarded(n):
    """aot_eager functionalizes the in-place add: its graph is right only for distinct inputs."""
    names = ", ".join(f"t{i}" for i in range(n))
    scope = {"_add_then_read": _add_then_read}
    exec(f"def fn({names}):\n    return _add_then_read({names})\n", scope)
    ts = [torch.ones(2) * i for i in range(n)]
    shared = torch.ones(2)
    compiled = check_sequence(scope["fn"], ts, [shared, shared] + ts[2:], ts, [ts[-1]] + ts[1:],
                              backend="aot_eager")
    exprs = " ".join(g.expr for e in symexec.cache_entries(compiled) for g in e.guards)
    assert "___id(" not in exprs  # (an audit event per id(): see guards.distinct)
    assert ("___addr(" in exprs) == (n > 10)


def _append_twice(*lists):
    for items in lists:
        items.append(items[0] + 1)  # one list passed twice grows twice: the lengths read after
    return [len(items) for items in lists], lists[0][-1]


def test_distinct_items_of_a_list_are_guarded():
    def fn(items):
        return _append_twice(*items)

    a, b = [torch.ones(2)], [torch.zeros(2)]
    check_sequence(fn, [[a, b, [torch.ones(3)]]], [[a, a, [torch.ones(3)]]], [[a, b, b]])


def _reads_a_tensor_of_a_dict(x, kw):
    return x + kw["m"]


def test_a_tensor_read_from_a_container_is_checked_once():
    # A lazy input is guarded by its class until read; its tensor guard checks the class
    # first, so the class guard goes: each hit checks the tensor once, as before laziness.
    compiled = check_sequence(_reads_a_tensor_of_a_dict, [torch.ones(2), {"m": torch.ones(2)}],
                              [torch.ones(3), {"m": torch.ones(3)}])
    texts = [g.text for entry in symexec.cache_entries(compiled) for g in entry.guards]
    assert not [t for t in texts if t.startswith("type(L['kw']['m'])")], texts
    assert [t for t in texts if t.startswith("check_tensor(L['kw']['m']")]
