"""Cheaper guards for the same facts (issue 12): an attribute found absent guarded by where
the lookup looked (instance dict, module stores, class dicts) instead of a ``hasattr`` that
raises an AttributeError per call; class dicts read through their mappingproxy; a module's
members read from its dicts. Each change of the world below must still retrace (compared with
eager), and the guards must take the cheap form."""

import collections

import pytest
import torch

import symexec
from helpers import check_sequence

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
