"""The FX graph under construction: placeholders with their sources, fake tensors, outputs.

Tensor inputs become placeholders named after their source (``l_x_``) whose example values are
fake tensors made by one ``FakeTensorMode`` with a ``ShapeEnv``; every operation becomes a node
whose fake result is computed on the spot, so shapes and dtypes are known while tracing. Each
node remembers the user's file, line and source text, which the printed graph shows as
``# File: example.py:5 in mse, code: z = (x - y) ** 2``.
"""

from __future__ import annotations

import linecache
import weakref
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from .exc import Unsupported
from .guards import GuardSet
from .source import Source, placeholder_name
from .variables.tensor import TensorVariable


@dataclass
class GraphInput:
    source: Source
    node: torch.fx.Node
    example: weakref.ref  # the real tensor of this call, not kept alive past it


class OutputGraph:
    def __init__(self, guards: GuardSet) -> None:
        self.graph = torch.fx.Graph()
        self.guards = guards
        self.shape_env = ShapeEnv()
        self.fake_mode = FakeTensorMode(shape_env=self.shape_env, allow_non_fake_inputs=False)
        self.inputs: list[GraphInput] = []
        self.input_trackers: dict[Source, Any] = {}  # the builder's memo: one tracker per source
        self._tensors_by_id: dict[int, TensorVariable] = {}
        self._last_placeholder: torch.fx.Node | None = None
        # (filename, lineno, function name) of the instruction being traced.
        self.location: tuple[str, int | None, str] = ("<unknown>", None, "<unknown>")

    # -- inputs -----------------------------------------------------------------------------
    def add_tensor_input(self, value: torch.Tensor, source: Source) -> TensorVariable:
        known = self._tensors_by_id.get(id(value))
        if known is not None:  # the same tensor reached through two sources: one input
            assert known.source is not None
            self.guards.alias(source, known.source)
            return known
        self.guards.tensor_match(source, value)
        fake = self.fake_mode.from_tensor(value, static_shapes=True)
        if self._last_placeholder is None:
            ctx = self.graph.inserting_before(None)
        else:
            ctx = self.graph.inserting_after(self._last_placeholder)
        with ctx:
            node = self.graph.placeholder(placeholder_name(source))
        node.meta["example_value"] = fake
        node.meta["source"] = source
        self._last_placeholder = node
        self.inputs.append(GraphInput(source, node, weakref.ref(value)))
        var = TensorVariable(node, fake, type(value), source)
        self._tensors_by_id[id(value)] = var
        return var

    # -- operations -------------------------------------------------------------------------
    def create_call(self, op: str, target: Any, args: tuple, kwargs: dict, example: Any = None) -> tuple[torch.fx.Node, Any]:
        """Append a node and compute its fake result (unless the caller knows it)."""
        node = self.graph.create_node(op, target, args, kwargs)
        node.meta["stack_trace"] = self._stack_trace()
        if example is None:
            try:
                example = self._run_fake(op, target, args, kwargs)
            except Unsupported:
                self.graph.erase_node(node)
                raise
            except Exception as e:
                self.graph.erase_node(node)
                name = target if isinstance(target, str) else getattr(target, "__name__", repr(target))
                raise Unsupported(f"{name}() failed on fake tensors: {type(e).__name__}: {e}") from e
        node.meta["example_value"] = example
        return node, example

    def _run_fake(self, op: str, target: Any, args: tuple, kwargs: dict) -> Any:
        fake_args, fake_kwargs = torch.fx.node.map_arg((args, kwargs), lambda n: n.meta["example_value"])
        with self.fake_mode:
            if op == "call_method":
                return getattr(fake_args[0], target)(*fake_args[1:], **fake_kwargs)
            return target(*fake_args, **fake_kwargs)

    def name_value(self, value: Any, name: str) -> None:
        """Name the node of a freshly computed tensor after the local it is first stored in."""
        node = getattr(value, "node", None)
        if (node is None or getattr(value, "source", None) is not None or node.op == "placeholder"
                or node.meta.get("named") or not name.isidentifier()):
            return
        node._rename(name)  # fx keeps names unique (z, z_1, ...)
        node.meta["named"] = True

    def remove_node(self, node: torch.fx.Node) -> None:
        if not node.users:
            self.graph.erase_node(node)

    def _stack_trace(self) -> str:
        filename, lineno, name = self.location
        line = linecache.getline(filename, lineno).strip() if lineno else ""
        return f'  File "{filename}", line {lineno}, in {name}\n    {line}\n'

    def call_node_count(self) -> int:
        return sum(1 for n in self.graph.nodes if n.op in ("call_function", "call_method", "call_module"))

    # -- the end ----------------------------------------------------------------------------
    def finish(self, outputs: list[TensorVariable]) -> tuple[torch.fx.GraphModule, list[torch.Tensor]]:
        """Close the graph on ``outputs``; drop unused inputs; return it with its example inputs."""
        self.graph.output(tuple(o.node for o in outputs))
        used = []
        for graph_input in self.inputs:
            if graph_input.node.users:
                used.append(graph_input)
            else:
                self.graph.erase_node(graph_input.node)
        self.inputs = used
        self.graph.lint()
        gm = torch.fx.GraphModule(torch.nn.Module(), self.graph)
        gm.meta["symexec_sources"] = [i.source for i in used]
        examples = []
        for graph_input in used:
            value = graph_input.example()
            if value is None:
                raise Unsupported("an input tensor died while tracing")
            examples.append(value)
        return gm, examples
