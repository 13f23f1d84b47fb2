"""What the backends users pick (``aot_eager``, ``inductor``) are given works with them as with
the eager backend: each test runs the same calls under each and compares with eager."""

import collections
import os

import pytest
import torch

import symexec
from helpers import assert_same

BACKENDS = ["eager", "aot_eager", "inductor"]


def _calls(fn, calls, backend):
    compiled = symexec.compile(fn, backend=backend)
    for args in calls:
        assert_same(fn(*args), compiled(*args), f"{args[1:]!r}")
    return compiled


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_float_that_changes_between_calls(backend):
    # Made symbolic once it changes, the float was a graph argument, which AOTAutograd's trace
    # baked in without a guard: every later value ran with the third call's (x * 6.0).
    def fn(x, s):
        return x * (s * 2.0), 1 - s ** -0.8

    x = torch.randn(4)
    calls = [(x, s) for s in (1.0, 2.0, 3.0, 4.0, 5.0)]
    compiled = _calls(fn, calls, backend)
    if backend != "inductor":  # (the same graphs as aot_eager's, compiled for minutes)
        # eager: the first value, then one symbolic entry; aot_eager: `1 - s ** -0.8` returned
        # cannot become a tensor, and AOTAutograd asks for the float constant each time.
        assert len(symexec.cache_entries(compiled)) <= _dynamo_graphs(fn, calls, backend)


def _dynamo_graphs(fn, calls, backend):
    import torch._dynamo
    from torch._dynamo.backends.registry import lookup_backend

    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return lookup_backend(backend)(gm, example_inputs)

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=counting)
    for args in calls:
        compiled(*args)
    torch._dynamo.reset()
    return len(graphs)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_floats_read_with_python_math_stay_exact(backend):
    def fn(x, s):
        alpha = max(1e-3, s / (x.numel() ** 0.5)) * min(0.01, 1 / (s ** 0.5))
        return x * alpha

    _calls(fn, [(torch.randn(4), s) for s in (1.0, 2.0, 3.0, 4.0, 9.0)], backend)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_an_int_that_changes_between_calls(backend):
    def fn(x, n):
        return x * (n * 2), x.sum() * x.shape[0]

    _calls(fn, [(torch.ones(n), n) for n in (2, 3, 4, 5)], backend)


def test_a_defaultdict_with_a_lambda_factory_compared_with_none():
    # `d is None` asked the tracker for its value: defaultdict(items) made from it raised
    # TypeError (the first argument is the factory), an internal error (Optimizer.zero_grad
    # with foreach=True builds one).
    def fn(x):
        d = collections.defaultdict(lambda: collections.defaultdict(list))
        if d is None:
            return x
        for v in d.values():
            x = x + len(v)
        return x + 1

    _calls(fn, [(torch.ones(2),)], "eager")


# -- serving: torch.inference_mode() ---------------------------------------------------------------
def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_model_served_under_inference_mode_is_compiled(backend):
    # It ran the original forward, said only in the fallbacks log; torch.compile captures it.
    model = _mlp()
    compiled = symexec.compile(model, backend=backend)
    x = torch.randn(3, 4)
    for _ in range(3):
        with torch.inference_mode():
            expected, actual = model(x), compiled(x)
        assert_same(expected, actual)
        assert actual.is_inference()
    entries = symexec.cache_entries(compiled)
    assert len(entries) == 1 and entries[0].graph is not None and entries[0].fallback_reason is None
    # The mode is guarded: outside it, a new entry whose results are ordinary tensors with grad.
    actual = compiled(x)
    assert_same(model(x), actual)
    assert not actual.is_inference() and actual.requires_grad
    assert len(symexec.cache_entries(compiled)) == 2


def test_inference_tensors_and_the_mode_are_read_as_eager_reads_them():
    def fn(x):
        y = x * 2
        y.add_(1)
        return y, y.is_inference(), x.is_inference(), torch.is_inference_mode_enabled()

    with torch.inference_mode():
        made_inside = torch.randn(3)
    compiled = symexec.compile(fn)
    for x, inside in ((torch.randn(3), True), (made_inside, True), (made_inside, False), (torch.randn(3), False)):
        if inside:
            with torch.inference_mode():
                expected, actual = fn(x), compiled(x)
        else:
            expected, actual = fn(x), compiled(x)
        assert_same(expected, actual, f"inside={inside}")


def test_updating_an_inference_tensor_outside_the_mode_raises_as_in_eager():
    def fn(x):
        x.add_(1)
        return x

    with torch.inference_mode():
        x = torch.randn(3)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode") as eager:
        fn(x)
    with pytest.raises(RuntimeError) as compiled:
        symexec.compile(fn)(x)
    assert str(compiled.value) == str(eager.value)


# -- the environment: a variable read is guarded by its value, not the whole environment -----------
def _set_env(name, value):
    import os

    def step():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    return step


@pytest.mark.parametrize("read", ["get", "get-default", "getenv", "subscript", "contains"])
def test_reading_one_environment_variable_guards_that_variable_alone(read, monkeypatch):
    import os

    from helpers import check_sequence

    monkeypatch.delenv("SYMEXEC_TEST_FLAG", raising=False)
    monkeypatch.delenv("SYMEXEC_TEST_OTHER", raising=False)

    def fn(x):
        if read == "get":
            flag = os.environ.get("SYMEXEC_TEST_FLAG")
        elif read == "get-default":
            flag = os.environ.get("SYMEXEC_TEST_FLAG", "0")
        elif read == "getenv":
            flag = os.getenv("SYMEXEC_TEST_FLAG")
        elif read == "subscript":
            try:
                flag = os.environ["SYMEXEC_TEST_FLAG"]
            except KeyError:
                flag = "unset"
        else:
            flag = "SYMEXEC_TEST_FLAG" in os.environ
        return x + 1 if flag in ("1", True) else x - 1

    x = torch.ones(2)
    compiled = check_sequence(fn, [x], _set_env("SYMEXEC_TEST_OTHER", "a"), [x], _set_env("SYMEXEC_TEST_FLAG", "1"),
                              [x], _set_env("SYMEXEC_TEST_OTHER", None), [x], _set_env("SYMEXEC_TEST_FLAG", "2"),
                              [x], _set_env("SYMEXEC_TEST_FLAG", None), [x])
    # Another variable set and removed recompiles nothing: unset, "1" and "2" (contains: two).
    assert len(symexec.cache_entries(compiled)) == (2 if read == "contains" else 3)


# -- torch.set_default_device("cpu"): a mode that changes nothing is traced through ----------------
def test_a_call_under_set_default_device_cpu_is_compiled():
    # transformers' LLaMA sets it while building (TorchBench's llama): from then on every
    # compiled function ran uncompiled, under "a torch function mode".
    import warnings

    linear = torch.nn.Linear(4, 2)

    def fn(x):
        return linear(x) + torch.zeros(2), torch.ones(1).device

    compiled = symexec.compile(fn)
    x = torch.randn(3, 4)
    torch.set_default_device("cpu")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", symexec.SymexecWarning)
            assert_same(fn(x), compiled(x))
            assert_same(fn(x), compiled(x))
    finally:
        torch.set_default_device(None)
    entries = symexec.cache_entries(compiled)
    assert len(entries) == 1 and entries[0].graph is not None and entries[0].fallback_reason is None
    assert_same(fn(x), compiled(x))  # without the mode: the entry's guard on the mode stack fails
    assert len(symexec.cache_entries(compiled)) == 2


def test_an_environment_guard_reads_as_the_code_does(monkeypatch):
    # (it read `os.environ.get(G['os'].environ, 'SYMEXEC_TEST_FLAG') is None`)
    monkeypatch.delenv("SYMEXEC_TEST_FLAG", raising=False)

    def fn(x):
        return x + 1 if os.environ.get("SYMEXEC_TEST_FLAG") is None else x - 1

    texts = [g.text for g in symexec.explain(fn, torch.ones(2)).guards]
    assert "G['os'].environ.get('SYMEXEC_TEST_FLAG') is None" in texts, texts
