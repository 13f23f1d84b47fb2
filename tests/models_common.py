"""Shared by tests/test_models.py, tests/test_hf_models.py and benchmarks/models.py: comparing
model outputs, and the 25 HF architectures of issue 11 built from tiny random configs.

Nothing is downloaded (HF_HUB_OFFLINE=1 is set before transformers is imported): every model
is built from a config object, in eval mode, with small sizes (hidden 32, 2 layers, vocabulary
100) so a whole model traces in seconds.
"""

from __future__ import annotations

import dataclasses
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
import torch._dynamo  # the reference (tests and benchmarks only; symexec never imports it)
import transformers
from helpers import CountingBackend

import symexec

transformers.logging.set_verbosity_error()  # tiny vocabularies make configs complain


# --------------------------------------------------------------------------------------------
# Comparing outputs (moved from test_models.py unchanged)


def tensors(value):
    """Every tensor of a model output, in order (ModelOutputs, tuples, caches)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if hasattr(value, "to_tuple"):
        return tensors(value.to_tuple())
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors(v)]
    if hasattr(value, "layers"):  # a transformers Cache
        return [t for layer in value.layers for t in tensors([getattr(layer, "keys", None), getattr(layer, "values", None)])]
    return []


def assert_outputs_equal(expected, actual):
    a, b = tensors(expected), tensors(actual)
    assert len(a) == len(b) and a, (len(a), len(b))
    for x, y in zip(a, b):
        assert x.shape == y.shape and x.dtype == y.dtype
        assert torch.allclose(x, y, rtol=1e-4, atol=1e-5), (x - y).abs().max()


def sequence_dim_is_symbolic(gm):
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    examples = [n.meta.get("example_value") for n in placeholders]
    return any(isinstance(e, torch.Tensor) and any(isinstance(d, torch.SymInt) for d in e.shape) for e in examples)


# --------------------------------------------------------------------------------------------
# Comparing outputs with their structure: every tensor, caches of every kind included


def _cache_layer_leaves(layer, path):
    """A cache layer's state: keys and values of attention layers, the conv and recurrent
    states (dicts of tensors) of Mamba-like layers; every attribute, by name."""
    yield path, type(layer).__name__
    for name in sorted(vars(layer)):
        yield from leaves(vars(layer)[name], f"{path}.{name}")


def leaves(value, path="out"):
    """(path, tensor-or-marker) pairs for every tensor in a model output, in order. Structure
    (types, lengths, None) is part of the result, so a differently shaped output differs."""
    if value is None or isinstance(value, (torch.Tensor, bool, int, float, str, torch.device, torch.dtype)):
        yield path, value
    elif hasattr(value, "to_tuple"):  # a transformers ModelOutput
        yield path, (type(value).__name__, tuple(value.keys()))
        for key, item in value.items():
            yield from leaves(item, f"{path}.{key}")
    elif isinstance(value, (tuple, list)):
        yield path, (type(value).__name__, len(value))
        for i, item in enumerate(value):
            yield from leaves(item, f"{path}[{i}]")
    elif isinstance(value, dict):
        yield path, ("dict", tuple(value))
        for key, item in value.items():
            yield from leaves(item, f"{path}[{key!r}]")
    elif hasattr(value, "self_attention_cache"):  # EncoderDecoderCache: two caches
        yield path, type(value).__name__
        yield from leaves(value.self_attention_cache, f"{path}.self_attention_cache")
        yield from leaves(value.cross_attention_cache, f"{path}.cross_attention_cache")
    elif hasattr(value, "layers"):  # a transformers Cache
        yield path, (type(value).__name__, len(value.layers))
        for i, layer in enumerate(value.layers):
            yield from _cache_layer_leaves(layer, f"{path}.layers[{i}]")
    else:
        yield path, f"<unknown {type(value).__name__}>"


def differences(actual, expected, rtol=1e-4, atol=1e-5):
    """Where `actual` differs from `expected`; an empty list when structures match and every
    tensor is allclose (same shape and dtype)."""
    ours, theirs = list(leaves(actual)), list(leaves(expected))
    if [p for p, _ in ours] != [p for p, _ in theirs]:
        return [f"output structure differs: {[p for p, _ in ours]} vs {[p for p, _ in theirs]}"]
    problems = []
    for (path, a), (_, b) in zip(ours, theirs):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            if a.shape != b.shape or a.dtype != b.dtype:
                problems.append(f"{path}: {a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}")
            elif not torch.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
                problems.append(f"{path}: max abs difference {(a - b).abs().max().item():.3g}")
        elif isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor) or a != b:
            problems.append(f"{path}: {a!r} vs {b!r}")
    if not any(isinstance(a, torch.Tensor) for _, a in ours):
        problems.append("no tensor in the output")
    return problems


# --------------------------------------------------------------------------------------------
# The 25 HF architectures of issue 11. Each builder returns (model, make): make(size) gives
# (args, kwargs) for a batch of 2 at sequence length `size` (image side `2 * size` for ViT and
# CLIP), the same inputs for the same size (a generator seeded with the size), with an
# attention mask that hides the last two positions of the second row, and use_cache=True where
# the model has a cache.

VOCAB = 100
SIZES = (16, 8, 12)  # first call static, the second recompiles dynamic, the third must reuse it
# Mamba's torch-only scan is a Python loop over the sequence, unrolled into the graph (one
# recompile per length for torch.compile too): shorter lengths keep its traces short.
_SIZES = {"mamba": (8, 4, 6)}


_SMALL = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "vocab_size": VOCAB, "max_position_embeddings": 64}
_DECODER = {**_SMALL, "num_key_value_heads": 2, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}


def sizes_of(name):
    """The sizes one of the 25 runs at: first, second (dynamic), third (reuse)."""
    return _SIZES.get(name, SIZES)


def _generator(size):
    return torch.Generator().manual_seed(1000 + size)


def _ids(size, generator):
    return torch.randint(3, VOCAB, (2, size), generator=generator)


def _mask(size):
    mask = torch.ones(2, size, dtype=torch.long)
    mask[1, -2:] = 0  # right padding on the second row: every query still sees position 0
    return mask


def _text(cache=None, token_types=False):
    """make(size) for a text model: input_ids, attention_mask (and token_type_ids, use_cache)."""
    def make(size):
        kwargs = {"input_ids": _ids(size, _generator(size)), "attention_mask": _mask(size)}
        if token_types:
            kwargs["token_type_ids"] = (torch.arange(size) >= size // 2).long().expand(2, size)
        if cache is not None:
            kwargs["use_cache"] = cache
        return (), kwargs
    return make


def _decoder(model_class, config_class, **options):
    return model_class(config_class(**{**_DECODER, **options})), _text(cache=True)


def _encoder(model_class, config, token_types=True):
    return model_class(config), _text(token_types=token_types)


def _pixels(size, generator):
    return torch.randn(2, 3, 2 * size, 2 * size, generator=generator)


def _seq2seq(model_class, config):
    def make(size):
        generator = _generator(size)
        return (), {"input_ids": _ids(size, generator), "attention_mask": _mask(size),
                    "decoder_input_ids": _ids(size, generator), "use_cache": True}
    return model_class(config), make


def _vit():
    t = transformers
    config = t.ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                         image_size=32, patch_size=8)
    return t.ViTModel(config), lambda s: ((), {"pixel_values": _pixels(s, _generator(s)),
                                               "interpolate_pos_encoding": True})


def _whisper():
    # The encoder takes exactly 2 * max_source_positions frames: only the decoder's length varies.
    t = transformers
    config = t.WhisperConfig(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                             decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=VOCAB,
                             num_mel_bins=16, max_source_positions=16, max_target_positions=64, pad_token_id=0,
                             bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)

    def make(size):
        generator = _generator(size)
        return (), {"input_features": torch.randn(2, 16, 32, generator=generator),
                    "decoder_input_ids": _ids(size, generator), "decoder_attention_mask": _mask(size),
                    "use_cache": True}
    return t.WhisperModel(config), make


def _clip():
    t = transformers
    text = {**_SMALL, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}
    vision = {**_SMALL, "image_size": 32, "patch_size": 8}
    del vision["vocab_size"], vision["max_position_embeddings"]
    config = t.CLIPConfig(text_config=text, vision_config=vision, projection_dim=16)

    def make(size):
        generator = _generator(size)
        ids = _ids(size, generator)
        ids[:, -3] = 2  # an end-of-text token: the pooled text output is read there
        return (), {"input_ids": ids, "attention_mask": _mask(size), "pixel_values": _pixels(size, generator),
                    "interpolate_pos_encoding": True}
    return t.CLIPModel(config), make


def _hf25():
    t = transformers
    s = _SMALL
    return {
        "mistral": lambda: _decoder(t.MistralModel, t.MistralConfig),
        "qwen2": lambda: _decoder(t.Qwen2Model, t.Qwen2Config),
        "qwen3": lambda: _decoder(t.Qwen3Model, t.Qwen3Config, head_dim=8),
        "phi3": lambda: _decoder(t.Phi3Model, t.Phi3Config),
        "gemma2": lambda: _decoder(t.Gemma2Model, t.Gemma2Config, head_dim=8, sliding_window=8),
        "gemma3_text": lambda: _decoder(t.Gemma3TextModel, t.Gemma3TextConfig, head_dim=8, sliding_window=8),
        "falcon": lambda: _decoder(t.FalconModel, t.FalconConfig),
        "gpt_neox": lambda: _decoder(t.GPTNeoXModel, t.GPTNeoXConfig),
        "opt": lambda: (t.OPTModel(t.OPTConfig(hidden_size=32, ffn_dim=64, num_hidden_layers=2, num_attention_heads=4,
                                               vocab_size=VOCAB, max_position_embeddings=64, word_embed_proj_dim=32,
                                               pad_token_id=0, bos_token_id=1, eos_token_id=2)),
                        _text(cache=True)),
        "bloom": lambda: (t.BloomModel(t.BloomConfig(hidden_size=32, n_layer=2, n_head=4, vocab_size=VOCAB,
                                                     pad_token_id=0, bos_token_id=1, eos_token_id=2)),
                          _text(cache=True)),
        "gptj": lambda: (t.GPTJModel(t.GPTJConfig(n_embd=32, n_layer=2, n_head=4, n_inner=64, rotary_dim=4,
                                                  vocab_size=VOCAB, n_positions=64, pad_token_id=0,
                                                  bos_token_id=1, eos_token_id=2)),
                         _text(cache=True)),
        "mixtral": lambda: _decoder(t.MixtralModel, t.MixtralConfig, num_local_experts=4, num_experts_per_tok=2),
        "starcoder2": lambda: _decoder(t.Starcoder2Model, t.Starcoder2Config),
        "olmo": lambda: _decoder(t.OlmoModel, t.OlmoConfig),
        "mamba": lambda: (t.MambaModel(t.MambaConfig(hidden_size=32, state_size=8, num_hidden_layers=2,
                                                     vocab_size=VOCAB, expand=2, conv_kernel=4, pad_token_id=0,
                                                     bos_token_id=1, eos_token_id=2)),
                          _text(cache=True)),
        "bart": lambda: _seq2seq(t.BartModel, t.BartConfig(
            d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
            encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=VOCAB, max_position_embeddings=64,
            pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)),
        "roberta": lambda: _encoder(t.RobertaModel, t.RobertaConfig(
            **{**s, "max_position_embeddings": 72}, pad_token_id=1, type_vocab_size=1), token_types=False),
        "distilbert": lambda: _encoder(t.DistilBertModel, t.DistilBertConfig(
            dim=32, hidden_dim=64, n_layers=2, n_heads=4, vocab_size=VOCAB, max_position_embeddings=64),
            token_types=False),
        "albert": lambda: _encoder(t.AlbertModel, t.AlbertConfig(**s, embedding_size=16)),
        "electra": lambda: _encoder(t.ElectraModel, t.ElectraConfig(**s, embedding_size=16)),
        "deberta_v2": lambda: _encoder(t.DebertaV2Model, t.DebertaV2Config(
            **s, relative_attention=True, pos_att_type=["p2c", "c2p"], position_buckets=16)),
        "bert_masked": lambda: _encoder(t.BertModel, t.BertConfig(**s)),
        "vit": _vit,
        "whisper": _whisper,
        "clip": _clip,
    }


HF25_BUILDERS = _hf25()
HF25 = list(HF25_BUILDERS)


def build_hf25(name):
    """(model in eval mode, make) for one of the 25, built with seed 0 (random weights)."""
    torch.manual_seed(0)
    model, make = HF25_BUILDERS[name]()
    return model.eval(), make


# --------------------------------------------------------------------------------------------
# Capturing a model with symexec and with torch.compile, side by side
#
# Each system runs the sequence of sizes with a CountingBackend, fullgraph=True first; if that
# raises, fullgraph is recorded as failing and the sequence runs again with fullgraph=False.
# Every call is compared with eager on the same inputs, and the inputs with fresh ones.


def _symexec(model, backend, fullgraph):
    return symexec.compile(model, backend=backend, fullgraph=fullgraph)


def _dynamo(model, backend, fullgraph):
    return torch.compile(model, backend=backend, fullgraph=fullgraph)


# name -> (empty its caches, wrap a model); torch.compile is the reference, symexec never imports it
SYSTEMS = {"symexec": (symexec.reset, _symexec), "torch.compile": (torch._dynamo.reset, _dynamo)}


@dataclasses.dataclass
class Capture:
    """What one system made of one model over the sequence of sizes."""

    system: str
    fullgraph: bool  # fullgraph=True ran every call
    fullgraph_error: str | None = None
    new_graphs: list = dataclasses.field(default_factory=list)  # graphs compiled by each call
    ops: int = 0  # op nodes of the first call's graphs (not those computing numbers or sizes)
    problems: list = dataclasses.field(default_factory=list)  # differences from eager, errors
    graphs: list = dataclasses.field(default_factory=list)  # every GraphModule, in order

    @property
    def graph_count(self):
        """Graphs compiled by the first call (graph breaks make more than one)."""
        return self.new_graphs[0] if self.new_graphs else 0

    @property
    def second_call_dynamic(self):
        """Whether a graph compiled by the second call has an input with a symbolic size."""
        if len(self.new_graphs) < 2:
            return False
        first, second = self.new_graphs[:2]
        return any(sequence_dim_is_symbolic(gm) for gm in self.graphs[first:first + second])


class _FullgraphFailed(Exception):
    pass


def _run_sequence(system, model, make, sizes, fullgraph):
    reset, wrap = SYSTEMS[system]
    reset()
    backend = CountingBackend()
    compiled = wrap(model, backend, fullgraph)
    result = Capture(system, fullgraph)
    for number, size in enumerate(sizes, 1):
        args, kwargs = make(size)
        expected = model(*args, **kwargs)
        before = backend.graph_count
        try:
            actual = compiled(*args, **kwargs)
        except Exception as error:  # eager ran: the compiler raised
            if fullgraph:
                raise _FullgraphFailed(f"call {number}: {type(error).__name__}: {_first_line(error)}") from error
            result.problems.append(f"call {number} (size {size}) raised {type(error).__name__}: {error}")
            return result
        result.new_graphs.append(backend.graph_count - before)
        if number == 1:
            result.ops = sum(backend.tensor_op_counts())
        result.problems += [f"call {number} (size {size}): {d}" for d in differences(actual, expected)]
        # The inputs, which both runs shared, are as make() builds them: neither wrote into them.
        result.problems += [f"call {number} (size {size}): input {d}" for d in differences((args, kwargs), make(size))]
        result.graphs = backend.graphs
    return result


def _first_line(error):
    return (str(error).strip().splitlines() or [""])[0][:300]


def capture(system, model, make, sizes=SIZES):
    """Run `model` compiled by `system` ("symexec" or "torch.compile") on each size, under
    torch.no_grad(); return a Capture."""
    with torch.no_grad():
        try:
            return _run_sequence(system, model, make, sizes, fullgraph=True)
        except _FullgraphFailed as failed:
            result = _run_sequence(system, model, make, sizes, fullgraph=False)
            result.fullgraph_error = str(failed)
            return result
        finally:
            SYSTEMS[system][0]()  # empty its caches: the next run starts afresh


def shortfalls(ours, theirs):
    """Where symexec's capture falls short of torch.compile's; an empty list when it does not."""
    found = [f"symexec output: {p}" for p in ours.problems]
    found += [f"torch.compile output: {p}" for p in theirs.problems]  # the reference must be sound
    if ours.problems or theirs.problems:
        return found
    if ours.graph_count > theirs.graph_count:
        found.append(f"graphs: symexec {ours.graph_count}, torch.compile {theirs.graph_count}")
    if ours.ops < 0.9 * theirs.ops:
        found.append(f"ops: symexec {ours.ops} < 90% of torch.compile's {theirs.ops}")
    if theirs.second_call_dynamic and not ours.second_call_dynamic:
        found.append("the second size's graphs have no input of symbolic size (torch.compile's have)")
    if theirs.fullgraph and not ours.fullgraph:
        found.append(f"fullgraph=True fails: {ours.fullgraph_error}")
    for call in range(1, len(theirs.new_graphs)):
        if ours.new_graphs[call] > theirs.new_graphs[call]:
            found.append(f"call {call + 1} compiled {ours.new_graphs[call]} graph(s), "
                         f"torch.compile {theirs.new_graphs[call]}")
    return found
