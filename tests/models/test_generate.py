"""HF ``generate()`` (issue 19, point 5): greedy decoding of 20 new tokens by GPT-2 and LLaMA
(tiny random configs: 2 layers, hidden 32, vocabulary 100, nothing downloaded), compiled the
ways torch.compile's users compile a model for ``generate``:

- ``forward``: ``model.forward = symexec.compile(model.forward)``, the pattern HF's docs give
  for torch.compile; ``generate`` calls ``self(...)``, whose ``nn.Module.__call__`` finds the
  instance attribute.
- ``call``: the whole module compiled in place, ``model._compiled_call_impl =
  symexec.compile(model._call_impl)``: what torch's ``model.compile()`` does (hooks included).
  symexec has no ``model.compile()`` of its own; torch.compile's side runs ``model.compile()``.
- ``wrapper``: ``symexec.compile(model).generate(...)``. The wrapper reads ``generate`` from
  ``_orig_mod``, bound to the original model, whose ``self(...)`` is not compiled: nothing is
  traced and the tokens are eager's, exactly as with ``torch.compile(model).generate(...)``
  (0 graphs for both). Checked so that it stays so.

Each run is a sequence of ``generate`` calls (prompt lengths 8, 12, 5; a batch of 2 whose
second row is left-padded, with its attention mask) on a fresh model, against eager's tokens
on the same weights. Per call, symexec must compile no more graphs than torch.compile does in
the same run with the same pattern (each graph past the first is a recompile: prefill, first
decoding step, the cache length turning symbolic, then the prefill length), without a graph
break, a fallback or a ``SymexecWarning``. The counting backend runs the graphs as they are;
one case runs AOTAutograd (``aot_eager``) beneath it. (Both models and patterns on CPython
3.11; elsewhere GPT-2 compiled in place: helpers.BROAD.)

Last, ``generate`` itself compiled (not a pattern torch.compile recommends), called twice: the
tokens are eager's and no continuation falls back (one did, on ``"name" in
inspect.signature(f).parameters.keys()``; that line is also tested reduced to a plain function);
the second call compiles nothing, as torch.compile's does (it retraced: guards on the identity
of objects made per call, also reduced to plain functions).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import sys
import types
import warnings

import pytest
import torch
import torch._dynamo  # the reference: tests only
import transformers
from helpers import CountingBackend, broad_or
from models_common import VOCAB  # also sets HF_HUB_OFFLINE=1 and quiets transformers

import symexec
from symexec.backends import aot_eager

MAX_NEW_TOKENS = 20
PROMPTS = ((8, 1), (12, 2), (5, 3))  # (length, seed): a new prefill length, then cache hits only
KINDS = ("gpt2", "llama")
PAD, BOS, EOS = 0, 1, 2


def build(kind):
    """A fresh model in eval mode, seed 0: every run of one kind has the same weights."""
    torch.manual_seed(0)
    if kind == "gpt2":
        config = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=VOCAB, n_positions=64,
                                         pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS)
        model = transformers.GPT2LMHeadModel(config)
    elif kind == "llama":
        config = transformers.LlamaConfig(num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                          hidden_size=32, intermediate_size=64, vocab_size=VOCAB,
                                          max_position_embeddings=64, pad_token_id=PAD, bos_token_id=BOS,
                                          eos_token_id=EOS)
        model = transformers.LlamaForCausalLM(config)
    else:
        raise ValueError(kind)
    return model.eval()


def prompt(length, seed):
    """input_ids and attention_mask for a batch of 2; the second row left-padded by 2."""
    ids = torch.randint(3, VOCAB, (2, length), generator=torch.Generator().manual_seed(seed))
    mask = torch.ones_like(ids)
    ids[1, :2] = PAD
    mask[1, :2] = 0
    return ids, mask


def generate(model, length, seed):
    ids, mask = prompt(length, seed)
    return model.generate(ids, attention_mask=mask, max_new_tokens=MAX_NEW_TOKENS, do_sample=False,
                          pad_token_id=PAD)


@functools.cache
def eager_tokens(kind):
    model = build(kind)
    return [generate(model, *p) for p in PROMPTS]


def apply_pattern(system, pattern, model, backend):
    """Compile `model` for generate() by `pattern`; return (what to call generate on, the
    compiled function whose cache holds the entries, or None)."""
    if system == "symexec":
        if pattern == "forward":
            model.forward = symexec.compile(model.forward, backend=backend)
            return model, model.forward
        if pattern == "call":
            model._compiled_call_impl = symexec.compile(model._call_impl, backend=backend)
            return model, model._compiled_call_impl
        if pattern == "wrapper":
            compiled = symexec.compile(model, backend=backend)
            return compiled, compiled._compiled_forward
    else:
        if pattern == "forward":
            model.forward = torch.compile(model.forward, backend=backend)
            return model, None
        if pattern == "call":
            model.compile(backend=backend)
            return model, None
        if pattern == "wrapper":
            return torch.compile(model, backend=backend), None
    raise ValueError((system, pattern))


def run(system, kind, pattern, backend=None, prompts=PROMPTS):
    """generate() on each prompt with `kind` compiled by `system` and `pattern`; return
    (tokens of each call, graphs compiled by each call, the compiled function, warnings)."""
    reset = symexec.reset if system == "symexec" else torch._dynamo.reset
    reset()
    backend = backend or CountingBackend()
    target, compiled = apply_pattern(system, pattern, build(kind), backend)
    tokens, new_graphs = [], []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for p in prompts:
                before = backend.graph_count
                tokens.append(generate(target, *p))
                new_graphs.append(backend.graph_count - before)
    finally:
        if system != "symexec":
            reset()
    return tokens, new_graphs, compiled, caught


@functools.cache
def reference(kind, pattern):
    """torch.compile's graphs per generate() call, prompt by prompt (computed once)."""
    tokens, new_graphs, _, _ = run("torch.compile", kind, pattern)
    assert all(torch.equal(a, b) for a, b in zip(tokens, eager_tokens(kind))), "torch.compile's tokens"
    return new_graphs


def check_symexec_run(kind, pattern, backend=None, prompts=PROMPTS):
    tokens, ours, compiled, caught = run("symexec", kind, pattern, backend, prompts)
    for number, (got, expected) in enumerate(zip(tokens, eager_tokens(kind)), 1):
        assert torch.equal(got, expected), f"generate call {number}: tokens differ:\neager   {expected}\nsymexec {got}"
    symexec_warnings = [str(w.message) for w in caught if issubclass(w.category, symexec.SymexecWarning)]
    assert not symexec_warnings, symexec_warnings
    entries = symexec.cache_entries(compiled)
    assert [e.fallback_reason for e in entries if e.fallback_reason is not None] == []
    assert [str(e.break_reason) for e in entries if e.break_reason is not None] == []
    assert len(entries) == sum(ours)  # one graph per entry: no break
    assert len(symexec.recompile_reasons(compiled)) == max(len(entries) - 1, 0)
    theirs = reference(kind, pattern)[:len(prompts)]  # (a prefix of the run: the same calls)
    assert all(a <= b for a, b in zip(ours, theirs)), \
        f"graphs per generate() call: symexec {ours}, torch.compile {theirs}"
    return ours, theirs


@pytest.mark.parametrize("kind,pattern", broad_or([(k, p) for k in KINDS for p in ("forward", "call")], [("gpt2", "call")]))
def test_generate_compiled(kind, pattern):
    ours, theirs = check_symexec_run(kind, pattern)
    assert ours[0] >= 2, f"the prefill and the decoding steps were not compiled: {ours}"


@pytest.mark.parametrize("kind", broad_or(KINDS, ["gpt2"]))
def test_generate_on_module_wrapper_runs_eagerly_like_torch_compile(kind):
    ours, theirs = check_symexec_run(kind, "wrapper")
    assert ours == theirs == [0] * len(PROMPTS)


class CountingAotEager(CountingBackend):
    """Counts the graphs, then compiles them with AOTAutograd (symexec's "aot_eager")."""

    def __call__(self, gm, example_inputs):
        super().__call__(gm, example_inputs)
        return aot_eager(gm, example_inputs)


@pytest.mark.broad  # (what it adds to test_generate_compiled is AOTAutograd beneath: no bytecode)
def test_generate_forward_aot_eager():
    # One prompt: aot_eager's compile of each graph is the slow part. The graph count is the
    # frontend's: compared with torch.compile's under the counting (eager) backend.
    check_symexec_run("gpt2", "forward", CountingAotEager(), prompts=PROMPTS[:1])


# --------------------------------------------------------------------------------------------
# generate itself compiled, symexec.compile(model.generate): not one of torch.compile's
# recommended patterns (torch.compile makes 15 graphs of it, breaking around the Python of
# generate and compiling the forward calls in their own frames), but what a user may try.


class _Messages(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def _logged(artifact):
    """The messages of one of symexec's log artifacts ("fallbacks", "recompiles") meanwhile."""
    logger = logging.getLogger(f"symexec.{artifact}")
    handler, level = _Messages(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@functools.cache
def compiled_generate_calls():
    """symexec.compile(model.generate) called twice on the same prompt: per call (tokens, graphs
    compiled, the fallbacks logged, the retraces logged)."""
    model = build("gpt2")
    backend = CountingBackend()
    compiled = symexec.compile(model.generate, backend=backend)
    ids, mask = prompt(*PROMPTS[0])
    calls = []
    for _ in range(2):
        before = backend.graph_count
        with _logged("fallbacks") as fallbacks, _logged("recompiles") as retraces, \
                _frames_of(type(model.transformer.h[0].attn).forward) as attention_frames:
            tokens = compiled(ids, attention_mask=mask, max_new_tokens=MAX_NEW_TOKENS, do_sample=False,
                              pad_token_id=PAD)
        calls.append((tokens, backend.graph_count - before, fallbacks, retraces, attention_frames))
    return calls


@contextlib.contextmanager
def _frames_of(fn):
    """How many frames of ``fn``'s own code CPython runs meanwhile (a one-element list)."""
    code, count = fn.__code__, [0]

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is code:
            count[0] += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield count
    finally:
        sys.setprofile(previous)


def test_compiled_generate_tokens():
    for tokens, *_ in compiled_generate_calls():
        assert torch.equal(tokens, eager_tokens("gpt2")[0])


# (a continuation fell back at transformers' `"inputs_tensor" in
# inspect.signature(decoding_method).parameters.keys()`: the keys view of a mappingproxy)
def test_compiled_generate_does_not_fall_back():
    assert [fallbacks for _, _, fallbacks, _, _ in compiled_generate_calls()] == [[], []]
    assert compiled_generate_calls()[0][1] >= 3  # the forward calls are compiled (torch.compile: 15 graphs)


# (it retraced 7 continuations on every call, to the cache size limit: guards pinned objects
# made per call, a bound builtin's __self__ and a genexpr's function; both reduced below)
def test_compiled_generate_second_call_compiles_nothing():
    _, graphs, _, retraces, _ = compiled_generate_calls()[1]
    assert (graphs, retraces) == (0, [])


# (the decoding loop, run as its code, calls ``model_forward = self.__call__``: the bound
# nn.Module.__call__ ran as it is, so every decoding step ran the model eagerly)
def test_compiled_generate_runs_the_decoding_forward_compiled():
    attention_frames = [frames[0] for *_, frames in compiled_generate_calls()]
    assert attention_frames == [0, 0]  # no layer ran as its own code: every forward call was compiled


def _decoding_method(self, input_ids, logits_processor=None):
    pass


def _uses_signature_keys(x):
    if "input_ids" in inspect.signature(_decoding_method).parameters.keys():
        x = x + 1
    return x * 2


def test_signature_parameters_keys_contains():
    x = torch.randn(3)
    compiled = symexec.compile(_uses_signature_keys, backend=CountingBackend())
    assert torch.equal(compiled(x), _uses_signature_keys(x))
    assert [e.fallback_reason for e in symexec.cache_entries(compiled)] == [None]
    assert symexec.cache_entries(compiled)[0].graph is not None


class _Criteria(list):  # (with its own __getitem__ it is an object: constructing it, and
    def __getitem__(self, i):  # calling its builtin append, are graph breaks)
        return list.__getitem__(self, i)


def _appends_to_a_fresh_object(x):
    criteria = _Criteria()
    x = x * 2  # (a graph in the continuation: each retrace of it compiles one more)
    criteria.append(1)  # in the continuation: `criteria` an input, `criteria.append` a builtin bound to it
    return x + len(criteria)


def _graphs_per_call(fn, make_args, calls=3):
    """``fn`` compiled and called ``calls`` times on fresh arguments, each result compared with
    eager's: the graphs each call compiled."""
    backend = CountingBackend()
    compiled = symexec.compile(fn, backend=backend)
    per_call = []
    for _ in range(calls):
        args = make_args()
        before = backend.graph_count
        assert torch.equal(compiled(*args), fn(*args))
        per_call.append(backend.graph_count - before)
    return per_call


# (`L['___stack0'].append.__self__ is _Criteria`: the object's identity, not "bound to the
# object there", was guarded)
def test_bound_builtin_of_a_fresh_object_does_not_retrace():
    x = torch.randn(3)
    per_call = _graphs_per_call(_appends_to_a_fresh_object, lambda: (x,))
    assert per_call[1:] == [0, 0], per_call


class _Processors(list):  # (with its own __getitem__ it is an object: iterating over it breaks)
    def __getitem__(self, i):
        return list.__getitem__(self, i)


class _Criterion:
    eos = 2


def _any_over_a_genexpr(x, criteria):
    x = x * 2
    has_eos = any(hasattr(c, "eos") for c in criteria)  # the break: the genexpr's function on the stack
    return x + has_eos


def test_function_made_by_the_trace_on_a_continuations_stack_does_not_retrace():
    # (the continuation guarded `L['___stack2'] is f.<locals>.<genexpr>`: the function the
    # generated code makes anew on each call)
    x = torch.randn(3)
    per_call = _graphs_per_call(_any_over_a_genexpr, lambda: (x, _Processors([_Criterion(), _Criterion()])))
    assert per_call == [2, 0, 0], per_call


def _holds_a_bound_builtin(x):
    keys = types.MappingProxyType({"a": 1, "b": 2}).keys  # a builtin bound to an object made per call
    x = x * 2
    symexec.graph_break()  # (`keys` goes to the continuation as a local: no attribute to relate it to)
    x = x + 1  # (a graph in the continuation: each retrace of it compiles one more)
    return x + len(list(keys()))


def test_a_builtin_bound_to_an_object_made_per_call_does_not_retrace():
    # (3.13 hands generate's `params.keys` to a continuation bound already: guarded as
    # `L['___stack3'].__self__ is mappingproxy`, that one object, it retraced on every call;
    # the call breaks and runs for real, so the object's type is what the trace relies on)
    x = torch.randn(3)
    per_call = _graphs_per_call(_holds_a_bound_builtin, lambda: (x,))
    assert per_call[1:] == [0, 0], per_call
