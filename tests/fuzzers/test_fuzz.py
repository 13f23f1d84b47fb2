"""The differential guard fuzzer (tests/fuzz.py) with a fixed seed: one test per template, every
guard dimension of /work/shared/GUARDS.md. For a long run with fresh seeds and de-duplicated,
shrunk repros: `python -m tests.fuzz --minutes N`."""

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import fuzz
from helpers import BROAD

settings.register_profile(
    "symexec-fuzz", derandomize=True, max_examples=12 if BROAD else 4, deadline=None, database=None,
    print_blob=False, suppress_health_check=list(HealthCheck),
    # no Phase.explain: it re-runs a failing case many times (minutes per failing template)
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
)


@pytest.mark.parametrize("name", fuzz.TEMPLATE_NAMES)
@settings(settings.get_profile("symexec-fuzz"))
@given(data=st.data())
def test_fuzz_template(name, data):
    dynamic, steps = data.draw(fuzz.sequences(name), label="(dynamic, steps)")
    fuzz.symexec.reset()
    try:
        fuzz.run_sequence(name, dynamic, steps)
    except fuzz.Finding as f:
        raise AssertionError(fuzz.describe(name, dynamic, steps, f)) from None


# Minimal repros the long fuzzer (`python -m tests.fuzz --minutes N`) found, or of bugs found
# otherwise that a template can express, replayed as is.
_X = fuzz.T()
REPROS = {
    "partial_keyword_names": ("partial_callable", None, [
        fuzz.Call([_X, fuzz.Part("torch.add", other=1)]),
        fuzz.Call([_X, fuzz.Part("torch.add", other=1)]),
        fuzz.Call([_X, fuzz.Part("torch.add", other=1, alpha=3)])]),
    "nan_after_dynamic_float": ("floats", None, [
        fuzz.Call([_X, 0.0]), fuzz.Call([_X, 0.0]), fuzz.Call([_X, float("nan")])]),
    "neg_zero_after_neg_inf": ("floats", None, [
        fuzz.Call([_X, 0.0]), fuzz.Call([_X, float("-inf")]), fuzz.Call([_X, -0.0])]),
    "class_property_over_instance_dict": ("module_members", None, [
        fuzz.Call([fuzz.T(shape=(2, 3)), fuzz.Ref("model")]), fuzz.Mut("M.factor = property(lambda self: 3.0)"),
        fuzz.Call([fuzz.T(shape=(2, 3)), fuzz.Ref("model")])]),
    "default_removed_then_restored": ("defaults_changed", None, [
        fuzz.Call([fuzz.T()]), fuzz.Call([fuzz.T()]), fuzz.Mut("fn.__defaults__ = None"), fuzz.Call([fuzz.T()]),
        fuzz.Mut("fn.__defaults__ = (3,)"), fuzz.Call([fuzz.T()])]),
    "enum_member_value_unguarded": ("enum_member", None, [
        fuzz.Call([_X, fuzz.Ref("Color.RED")]), fuzz.Call([_X, fuzz.Ref("Color.GREEN")])]),
    "stride_symbol_fixed_by_a_guard": ("tensor_meta", None, [
        fuzz.Call([fuzz.T(shape=(2, 3), variant="t")]), fuzz.Call([fuzz.T(shape=(2, 3))])]),
    "zero_after_inf": ("floats", None, [
        fuzz.Call([_X, 0.0]), fuzz.Call([_X, float("inf")]), fuzz.Call([_X, 0.0])]),
}


@pytest.mark.parametrize("repro", sorted(REPROS))
def test_fuzz_repro(repro):
    name, dynamic, steps = REPROS[repro]
    try:
        fuzz.run_sequence(name, dynamic, steps)
    except fuzz.Finding as f:
        raise AssertionError(fuzz.describe(name, dynamic, steps, f)) from None
