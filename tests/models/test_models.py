"""Real models (issue #6): HF transformers GPT-2, BERT, LLaMA and T5 from small random
configs, nn.TransformerEncoder, an MLP and a small CNN, in eval mode, batch 2, sequence 16.

For each: compiled outputs equal eager; one graph, as torch.compile makes; fullgraph=True
succeeds; a second sequence length retraces once with the sequence dimension symbolic; a third
reuses that graph. (All of them on CPython 3.11; elsewhere GPT-2, the encoder, the MLP and the
CNN: helpers.BROAD.)
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402
import torch._dynamo  # noqa: E402
import transformers  # noqa: E402
from helpers import CountingBackend, broad_or  # noqa: E402
from models_common import assert_outputs_equal, sequence_dim_is_symbolic  # noqa: E402

import symexec  # noqa: E402

transformers.logging.set_verbosity_error()


def _hf(name):
    if name == "gpt2":
        config = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=100, n_positions=64,
                                         bos_token_id=0, eos_token_id=0)
        return transformers.GPT2Model(config), lambda s: {"input_ids": torch.randint(0, 100, (2, s))}
    if name == "bert":
        config = transformers.BertConfig(num_hidden_layers=2, num_attention_heads=2, hidden_size=32,
                                         intermediate_size=64, vocab_size=100, max_position_embeddings=64)
        return transformers.BertModel(config), lambda s: {"input_ids": torch.randint(0, 100, (2, s))}
    if name == "llama":
        config = transformers.LlamaConfig(num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                          hidden_size=32, intermediate_size=64, vocab_size=100,
                                          max_position_embeddings=64)
        return transformers.LlamaModel(config), lambda s: {"input_ids": torch.randint(0, 100, (2, s))}
    config = transformers.T5Config(num_layers=2, num_decoder_layers=2, num_heads=2, d_model=32, d_kv=16, d_ff=64,
                                   vocab_size=100)
    return transformers.T5Model(config), lambda s: {"input_ids": torch.randint(0, 100, (2, s)),
                                                    "decoder_input_ids": torch.randint(0, 100, (2, s))}


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.pool = torch.nn.MaxPool2d(2)
        self.head = torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d((4, 4)), torch.nn.Flatten(), torch.nn.Linear(256, 10))

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        return self.head(x)


def _local(name):
    if name == "transformer_encoder":
        layer = torch.nn.TransformerEncoderLayer(32, 2, 64, batch_first=True)
        return torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), lambda s: (torch.randn(2, s, 32),)
    if name == "mlp":
        mlp = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
                                  torch.nn.Linear(64, 8))
        return mlp, lambda s: (torch.randn(2, s, 32),)
    return SmallCNN(), lambda s: (torch.randn(2, 3, s, s),)


MODELS = ["gpt2", "bert", "llama", "t5", "transformer_encoder", "mlp", "cnn"]


def build(name):
    torch.manual_seed(0)
    if name in ("gpt2", "bert", "llama", "t5"):
        model, make = _hf(name)
        return model.eval(), (lambda s: ((), make(s)))
    model, make = _local(name)
    return model.eval(), (lambda s: (make(s), {}))


@pytest.mark.parametrize("name", broad_or(MODELS, ("gpt2", "cnn")))
def test_model_in_one_graph_like_torch_compile(name):
    model, make = build(name)
    sizes = (16, 8, 12) if name != "cnn" else (16, 32, 24)
    ours, theirs = CountingBackend(), CountingBackend()
    compiled = symexec.compile(model, backend=ours, fullgraph=True)
    torch._dynamo.reset()
    reference = torch.compile(model, backend=theirs, fullgraph=True)
    with torch.no_grad():
        for i, size in enumerate(sizes):
            args, kwargs = make(size)
            expected = model(*args, **kwargs)
            assert_outputs_equal(expected, compiled(*args, **kwargs))
            reference(*args, **kwargs)
            if i == 0:
                assert ours.graph_count == 1 == theirs.graph_count
                assert ours.op_counts()[0] >= 0.9 * theirs.op_counts()[0]  # the same model, captured whole
            elif i == 1:  # a second length: one retrace, the length symbolic
                assert ours.graph_count == 2
                assert sequence_dim_is_symbolic(ours.graphs[1])
            else:  # a third: reused
                assert ours.graph_count == 2
    torch._dynamo.reset()
    entries = symexec.cache_entries(compiled)
    assert len(entries) == 2 and all(e.fallback_reason is None and e.break_reason is None for e in entries)


def test_compiled_module_keeps_the_module_interface():
    model, make = build("mlp")
    compiled = symexec.compile(model)
    assert list(compiled.parameters()) == list(model.parameters())
    assert set(compiled.state_dict()) == {f"_orig_mod.{k}" for k in model.state_dict()}
    compiled.train()
    assert model.training
    compiled.eval()
    assert not model.training
    model.tag = "mlp"
    assert compiled.tag == "mlp"  # other attributes are read from the module


def test_forward_hooks_run_on_a_compiled_module():
    model, make = build("mlp")
    seen = []
    model.register_forward_pre_hook(lambda mod, args: seen.append("pre"))
    model.register_forward_hook(lambda mod, args, out: seen.append("post"))
    compiled = symexec.compile(model)
    args, _ = make(16)
    with torch.no_grad():
        assert torch.allclose(compiled(*args), model(*args))
    assert seen == ["pre", "post", "pre", "post"]


class GatedMLP(torch.nn.Module):
    """An MLP whose forward branches on a tensor's value: a data-dependent graph break."""

    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(32, 64)
        self.down = torch.nn.Linear(64, 32)

    def forward(self, x):
        h = torch.relu(self.up(x))
        if h.mean() > 0.2:  # the graph breaks: CPython decides, each side is traced on its own
            h = h * 0.5
        return self.down(h) + x


def test_mlp_with_a_data_dependent_break_like_torch_compile():
    torch.manual_seed(0)
    model = GatedMLP().eval()
    ours, theirs = CountingBackend(), CountingBackend()
    compiled = symexec.compile(model, backend=ours)
    torch._dynamo.reset()
    reference = torch.compile(model, backend=theirs)
    with torch.no_grad():
        for scale in (1.0, -1.0, 1.0, -1.0):  # both sides of the branch, each twice
            x = torch.randn(2, 16, 32) * scale + scale
            expected = model(x)
            assert_outputs_equal(expected, compiled(x))
            assert_outputs_equal(expected, reference(x))
    torch._dynamo.reset()
    assert ours.graph_count <= theirs.graph_count
    assert sum(ours.op_counts()) >= 0.9 * sum(theirs.op_counts())
    assert symexec.explain(model, torch.randn(2, 16, 32)).graph_break_count == 1
