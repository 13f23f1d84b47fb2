"""The FX graph under construction: placeholders with their sources, fake tensors, outputs.

Tensor inputs become placeholders named after their source (``l_x_``) whose example values are
fake tensors made by one ``FakeTensorMode`` with a ``ShapeEnv``; every operation becomes a node
whose fake result is computed on the spot, so shapes and dtypes are known while tracing. Each
node remembers the user's file, line and source text, which the printed graph shows as
``# File: example.py:5 in mse, code: z = (x - y) ** 2``.
"""

from __future__ import annotations

import itertools
import math
import linecache
import weakref
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode
from torch._dispatch.python import enable_python_dispatcher
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

from .dynamic import DynamicPolicy, FrameState
from .exc import Unsupported
from .guards import GuardKind, GuardSet
from .side_effects import SideEffects
from .source import Source, placeholder_name
from .variables.tensor import SymNodeVariable, TensorVariable


@dataclass
class GraphInput:
    source: Source
    node: torch.fx.Node
    example: Any  # a weakref to the real tensor of this call (not kept alive), or the int


# Nodes without effects whose result is not a tensor: dropped when nothing uses them (a
# comparison of sizes that only decided a branch, a size read for a guard).
_PURE_TARGETS = frozenset({"size", "numel", "dim", "stride", "storage_offset"})


def _same(a: Any, b: Any) -> bool:
    """The same sizes (or strides, or offset), comparing symbolic ones by identity: ``==`` on
    them would add a guard."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a is b or (type(a) is int and type(b) is int and a == b)


class OutputGraph:
    def __init__(self, guards: GuardSet, policy: DynamicPolicy | None = None) -> None:
        self.graph = torch.fx.Graph()
        self.guards = guards
        self.policy = policy or DynamicPolicy(False, FrameState())
        self.shape_env = ShapeEnv()
        # Inputs with symbols, for the ShapeEnv's guards: (fake tensor or SymInt, source).
        self.symbolic_inputs: list[tuple[Any, Source]] = []
        # A symbolic input tensor's sizes, strides and offset as it came in (the guards are
        # about those, whatever an in-place resize_ or transpose_ made of it since).
        self._as_given: dict[int, tuple] = {}
        self.fake_mode = FakeTensorMode(shape_env=self.shape_env, allow_non_fake_inputs=False)
        self.inputs: list[GraphInput] = []
        self.input_trackers: dict[Source, Any] = {}  # the builder's memo: one tracker per source
        self.objects_by_id: dict[int, tuple[Any, Any]] = {}  # mutable inputs reached through several sources: (object, tracker)
        self.real_cells: dict[int, Any] = {}  # closure cells met while tracing, one tracker each
        self.side_effects = SideEffects()
        self.translators: list[Any] = []  # every frame of the trace, the root first
        self.grad_enabled = torch.is_grad_enabled()  # as the traced code has set it so far
        self.active_contexts: list[Any] = []  # autocast modes entered for real while tracing
        self._tensors_by_id: dict[int, TensorVariable] = {}
        self._last_placeholder: torch.fx.Node | None = None
        # (filename, lineno, function name) of the instruction being traced.
        self.location: tuple[str, int | None, str] = ("<unknown>", None, "<unknown>")

    def release(self) -> None:
        """Drop the trackers of this trace (they hold the call's arguments): what the entry
        keeps (the graph, its examples' metadata) does not need them."""
        self.input_trackers.clear()
        self.objects_by_id.clear()
        self.real_cells.clear()
        self._tensors_by_id.clear()
        self.side_effects = SideEffects()
        for tx in self.translators:
            tx.release()
        self.translators.clear()

    # -- inputs -----------------------------------------------------------------------------
    def add_tensor_input(self, value: torch.Tensor, source: Source) -> TensorVariable:
        known = self._tensors_by_id.get(id(value))
        if known is not None:  # the same tensor reached through two sources: one input
            assert known.source is not None
            self.guards.alias(source, known.source)
            return known
        if value.layout is not torch.strided or value.is_quantized or value.is_nested:
            # (torch.compile runs these uncompiled too: fake tensors and guards model strides)
            raise Unsupported(f"a {value.layout} tensor" if value.layout is not torch.strided else
                              f"a {'quantized' if value.is_quantized else 'nested'} tensor")
        dims = self.policy.dynamic_dims(source, value)
        if any(dims):
            context = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC if d else DimDynamic.STATIC for d in dims])
            fake = self.fake_mode.from_tensor(value, source=source, symbolic_context=context)
            static = [isinstance(s, int) for s in fake.size()]
            self.guards.tensor_match(source, value, static_dims=tuple(static))
            self.symbolic_inputs.append((fake, source))
            self._as_given[id(fake)] = (fake.size(), fake.stride(), fake.storage_offset())
        else:
            self.guards.tensor_match(source, value)
            fake = self.fake_mode.from_tensor(value, static_shapes=True)
        node = self._placeholder(source, fake, weakref.ref(value))
        var = TensorVariable(node, fake, type(value), source)
        self._tensors_by_id[id(value)] = var
        return var

    def real_input(self, source: Source) -> Any:
        """The real tensor of this call behind an input's source, or None if it died."""
        for graph_input in self.inputs:
            if graph_input.source == source:
                example = graph_input.example
                return example() if isinstance(example, weakref.ref) else example
        return None

    def add_int_input(self, value: int, source: Source) -> SymNodeVariable | None:
        """An int input traced as a SymInt graph input, or None when the ShapeEnv specialises
        it (0 and 1 are always constants)."""
        # An int is not a size: it may be negative (create_symbol would assume it positive).
        sym = self.shape_env.create_unspecified_symint_and_symbol(value, source, DimDynamic.DYNAMIC)
        if not isinstance(sym, torch.SymInt):
            return None
        self.guards.type_match(source, value)
        self.symbolic_inputs.append((sym, source))
        return SymNodeVariable(self._placeholder(source, sym, value), sym, source)

    def add_float_input(self, value: float, source: Source) -> SymNodeVariable | None:
        """A float input traced as a SymFloat graph input (one that changes between calls,
        like the result of ``.item()`` handed to a continuation)."""
        if not math.isfinite(value) or math.copysign(1.0, value) < 0 and value == 0:
            return None  # inf, nan, -0.0: sympy's reals cannot tell them apart; a constant, guarded exactly
        symbol = self.shape_env.create_unspecified_symbol(value, source=source, dynamic_dim=DimDynamic.DYNAMIC)
        sym = self.shape_env.create_symfloatnode(symbol, hint=value, source=source)
        if not isinstance(sym, torch.SymFloat):
            return None
        self.guards.type_match(source, value)
        self.guards.add(GuardKind.EQUALS_MATCH, f"math.isfinite({source.name})", f"math.isfinite({source.expr()})", source)
        self.symbolic_inputs.append((sym, source))
        var = SymNodeVariable(self._placeholder(source, sym, value), sym, source)
        var.guards = self.guards  # specialising it guards its exact value (-0.0 and 0.0 differ)
        return var

    def _placeholder(self, source: Source, example: Any, real: Any) -> torch.fx.Node:
        if self._last_placeholder is None:
            ctx = self.graph.inserting_before(None)
        else:
            ctx = self.graph.inserting_after(self._last_placeholder)
        with ctx:
            node = self.graph.placeholder(self._unique_input_name(placeholder_name(source)))
        node.meta["example_value"] = example
        node.meta["source"] = source
        self._last_placeholder = node
        self.inputs.append(GraphInput(source, node, real))
        return node

    def _unique_input_name(self, name: str) -> str:
        """Two sources can map to one name (``L['d'][inf]`` and ``L['d'][-inf]``): numbered."""
        taken = {graph_input.node.target for graph_input in self.inputs}
        if name not in taken:
            return name
        return next(f"{name}{i}" for i in itertools.count(1) if f"{name}{i}" not in taken)

    def install_shape_guards(self) -> None:
        """The ShapeEnv's guards on symbolic inputs, as text on sources and as expressions."""
        if not self.symbolic_inputs:
            return
        examples = [self._input_as_given(e) for e, _ in self.symbolic_inputs]
        sources = [s for _, s in self.symbolic_inputs]
        # One (costly) call renders each source as a token; the tokens then become the text
        # on sources (L['a'].size()[0]) and the guard function's expression (a.size()[0]).
        rendered: dict[str, tuple[str, str]] = {}

        def token(source: Any) -> str:
            key = f"\x00{len(rendered)}\x00"
            rendered[key] = (_source_text(source), _source_expr(source))
            return key

        for guard in self.shape_env.produce_guards(examples, sources, source_ref=token, ignore_static=False):
            text, expr = guard, guard
            for key, (name, code) in rendered.items():
                if key in guard:
                    text, expr = text.replace(key, name), expr.replace(key, code)
            self.guards.shape(text, expr)

    def _input_as_given(self, example: Any) -> Any:
        """The input as it came in: itself, or, where its metadata changed in place, a view of
        it with the metadata it had (made only then: a fake op costs milliseconds)."""
        given = self._as_given.get(id(example))
        if given is None or all(_same(a, b) for a, b in zip(given, (example.size(), example.stride(),
                                                                     example.storage_offset()))):
            return example
        with self.fake_mode:
            return example.as_strided(*given)

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
        # Torch's Python dispatcher, as under torch.compile: ops whose meta functions are
        # written in Python for symbolic sizes (expand in addbmm, interpolate's output size)
        # reach them only through it.
        with self.fake_mode, enable_python_dispatcher():
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
    def finish(self, outputs: list[Any]) -> tuple[torch.fx.GraphModule, list[Any]]:
        """Close the graph on ``outputs``; drop dead nodes and unused inputs; return it with its
        example inputs."""
        self.graph.output(tuple(o.node for o in outputs))
        for node in reversed(list(self.graph.nodes)):
            if not node.users and node.op in ("call_function", "call_method") and self._is_pure(node):
                self.graph.erase_node(node)
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
            value = graph_input.example() if isinstance(graph_input.example, weakref.ref) else graph_input.example
            if value is None:
                raise Unsupported("an input tensor died while tracing")
            examples.append(value)
        return gm, examples

    @staticmethod
    def _is_pure(node: torch.fx.Node) -> bool:
        if node.meta.get("pure"):
            return True  # its maker knows it has no effect (an item of a node's tuple result)
        if isinstance(node.meta.get("example_value"), torch.Tensor):
            return False  # tensor ops may mutate their inputs; they stay
        target = node.target
        return target in _PURE_TARGETS or (getattr(target, "__module__", None) in ("_operator", "operator")
                                          and not getattr(target, "__name__", "").startswith(("i", "set", "del")))


def _source_text(source: Any) -> str:
    return source.name


def _source_expr(source: Any) -> str:
    """A source as an expression of the guard function, also for the ShapeEnv's own sources
    (``TensorPropertySource(L['a'], SIZE, 0)`` becomes ``a.size()[0]``)."""
    if isinstance(source, Source):
        return source.expr()
    return source._name_template.format(_source_expr(source.base))
