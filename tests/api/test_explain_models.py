"""explain on models (issue 23, point 5): the ops a submodule or an inlined call makes are
attributed to every frame on the way, the caller's line of the call included, and a model's
hundreds of guards stay readable in the text report."""

import inspect
import re

import torch
import transformers

import symexec
from symexec.explain import GUARDS_SHOWN, node_frames


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 3)

    def forward(self, x):
        y = self.linear(x)
        return y.relu()


class Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        z = self.block(x)
        return z * 2


def _line(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _tinted(out):
    return {int(n) for n in re.findall(r'<tr class="graph[^"]*"><td class="n">(\d+)', out._repr_html_())}


def test_a_submodules_ops_carry_every_frame_outermost_first():
    out = symexec.explain(Outer(), torch.randn(2, 3))
    relu = next(n for n in out.graphs[0].graph.nodes if n.op == "call_method" and n.target == "relu")
    frames = [(line, name) for _, line, name in node_frames(relu)]
    assert frames == [(_line(Outer.forward, "self.block(x)"), "forward"), (_line(Block.forward, "y.relu()"), "forward")]
    # (before, only the innermost frame: the line calling the block was not tinted)
    assert _tinted(out) == {_line(Outer.forward, "self.block(x)"), _line(Outer.forward, "z * 2")}


def test_gpt2_lines_calling_submodules_are_tinted_and_its_guards_are_summed_up():
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=100, n_positions=64)
    model = transformers.GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        out = symexec.explain(model, torch.randint(0, 100, (1, 8)))
    forward = type(model).forward
    tinted = _tinted(out)
    assert _line(forward, "self.transformer(") in tinted and _line(forward, "self.lm_head(") in tinted
    text = str(out)
    assert len(out.guards) > 100 and len(text.splitlines()) < 60 + len(out.break_reasons) * 6, text
    assert f"more: out.functions[0].entry.guards" in text and text.count("torch.is_grad_enabled()") == 1
    assert GUARDS_SHOWN < len(out.functions[0].entry.guards)


# (torch.fx's `# File:` comment needs a code line after the innermost frame: a function made by
# exec, or typed at a prompt, had none, and its nodes lost their comment)
def test_nodes_of_code_without_a_source_file_keep_their_file_comment():
    namespace = {}
    exec("def made(x):\n    y = x.sin()\n    return y + 1\n", {}, namespace)
    out = symexec.explain(namespace["made"], torch.randn(2))
    readable = out.graphs[0].print_readable(print_output=False)
    assert "# File: <string>:2 in made, code: <source not available>" in readable, readable
    assert "# File: <string>:3 in made" in readable, readable


def test_tree_attributes_every_op_to_the_lines_that_made_it():
    out = symexec.explain(Outer(), torch.randn(2, 3))
    tree = out.tree().splitlines()
    call, relu, double = _line(Outer.forward, "self.block(x)"), _line(Block.forward, "y.relu()"), _line(Outer.forward, "z * 2")
    assert tree[0] == "Outer: 3 op(s) in 1 graph(s)"
    assert tree[1].startswith(f"  test_explain_models.py:{call} in forward: 2 op(s)  z = self.block(x)")
    assert any(line.startswith(f"    test_explain_models.py:{relu} in forward: 1 op(s)") for line in tree)
    assert out.tree(depth=1).splitlines()[1:] == [
        f"  test_explain_models.py:{call} in forward: 2 op(s)  z = self.block(x)",
        f"  test_explain_models.py:{double} in forward: 1 op(s)  return z * 2"]
