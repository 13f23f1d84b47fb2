"""The FX graph under construction: placeholders with their sources, fake tensors, outputs.

Tensor inputs become placeholders named after their source (``l_x_``) whose example values are
fake tensors made by one ``FakeTensorMode`` with a ``ShapeEnv``; every operation becomes a node
whose fake result is computed on the spot, so shapes and dtypes are known while tracing. Each
node remembers the user's file, line and source text, which the printed graph shows as
``# File: example.py:5 in mse, code: z = (x - y) ** 2``.
"""

from __future__ import annotations

import contextlib
import itertools
import keyword
import math
import linecache
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch._dispatch.python import enable_python_dispatcher
from torch.fx.passes.runtime_assert import insert_deferred_runtime_asserts
from torch.fx.experimental.symbolic_shapes import (DimDynamic, ShapeEnv, StatelessSymbolicContext, compute_unbacked_bindings,
                                                  free_unbacked_symbols, PendingUnbackedSymbolNotFound)
from torch.utils._stats import simple_call_counter

from .dynamic import DynamicPolicy, FrameState
from .exc import InternalError, Unsupported
from .guard_code import Code, ShapeCall, code
from .guards import GuardKind, GuardSet
from .shape_rules import fresh_fake, known_result
from .source import FloatTensorSource, Source, placeholder_name
from .variables.higher_order import graph_module
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
    """The same sizes (or strides, or offset), comparing symbolic ones by their node (each read
    of a size makes a new ``SymInt`` around the same node): ``==`` on them would add a guard."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is int or type(b) is int:
        return type(a) is type(b) and a == b
    return a is b or a.node is b.node


_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1


def _nowhere() -> list[tuple[str, int | None, str]]:
    return [("<unknown>", None, "<unknown>")]


class _NoTorchState:
    active_contexts: tuple = ()  # (a graph made alone, in tests: no autocast entered)


class OutputGraph:
    """The FX graph of one trace, with what makes its values known while tracing: the fake
    mode and its ShapeEnv, the placeholders and the sources of the inputs, the outputs. The
    rest of the trace's state lives in its other parts (``trace.Trace``)."""

    def __init__(self, guards: GuardSet, policy: DynamicPolicy | None = None, *,
                 torch_state: Any = None, where: Callable[[], list[tuple[str, int | None, str]]] | None = None) -> None:
        self.graph = torch.fx.Graph()  # where operations go: the root graph, or a subgraph being traced
        self._root = self.graph  # (the graph's inputs are always the root's)
        self.guards = guards  # (an input's tensor, type and shape guards are installed with it)
        self.policy = policy or DynamicPolicy(False, FrameState())
        # The torch state the trace has set (trace.TorchState): fake runs happen in it.
        self.torch_state = torch_state if torch_state is not None else _NoTorchState()
        # The user's (filename, lineno, function name) being traced, stamped on every node.
        self.where = where or _nowhere
        self.shape_env = ShapeEnv()
        # Inputs with symbols, for the ShapeEnv's guards: (fake tensor or SymInt, source).
        self.symbolic_inputs: list[tuple[Any, Source]] = []
        # The graph's asserts (``assert_true``): the text its torch._assert_async raises -> the
        # message of the AssertionError the call raises instead.
        self.assertions: dict[str, Any] = {}
        # A symbolic input tensor's sizes, strides and offset as it came in (the guards are
        # about those, whatever an in-place resize_ or transpose_ made of it since).
        self._as_given: dict[int, tuple] = {}
        self.fake_mode = FakeTensorMode(shape_env=self.shape_env, allow_non_fake_inputs=False)
        self.fake_memo = FakeMemo(self.fake_mode)
        self._dispatch_cache = self.fake_mode.cache_enabled  # as torch's config has it
        self.inputs: list[GraphInput] = []
        self._tensors_by_id: dict[int, TensorVariable] = {}  # one input per tensor
        self.closed = False  # the graph is finished: no input may be added
        self._last_placeholder: torch.fx.Node | None = None

    def release(self) -> None:
        """Drop the trackers of the input tensors (they hold the call's arguments) and the
        fake results remembered: what the entry keeps (the graph, its examples' metadata)
        does not need them."""
        self._tensors_by_id.clear()
        self.fake_memo.known.clear()

    # -- inputs -----------------------------------------------------------------------------
    def add_tensor_input(self, value: torch.Tensor, source: Source, lazy: bool = False) -> TensorVariable:
        """The tracker of an input tensor. ``lazy``: made a graph input, with its tensor guard,
        when the trace first reads it (``TensorVariable.lazy``); until then guarded only by its
        class."""
        known = self._tensors_by_id.get(id(value))
        if known is not None:  # the same tensor reached through two sources: one input
            assert known.source is not None
            self.guards.alias(source, known.source)
            return known
        if value.layout is not torch.strided or value.is_quantized or value.is_nested:
            # (torch.compile runs these uncompiled too: fake tensors and guards model strides)
            raise Unsupported(f"a {value.layout} tensor" if value.layout is not torch.strided else
                              f"a {'quantized' if value.is_quantized else 'nested'} tensor")
        if lazy:
            self.guards.type_match(source, value)
            var = TensorVariable.lazy(type(value), source, lambda: self._tensor_input(value, source))
        else:
            var = TensorVariable(*self._tensor_input(value, source), type(value), source)
        self._tensors_by_id[id(value)] = var
        return var

    def _tensor_input(self, value: torch.Tensor, source: Source) -> tuple[torch.fx.Node, Any]:
        """An input tensor's placeholder and fake tensor, its tensor guard installed."""
        if self.closed:  # (a lazy input read once the graph and its guards are done)
            raise InternalError(f"the input {source.name} was first read after the graph was closed")
        dims = self.policy.dynamic_dims(source, value)
        strides = self.policy.dynamic_strides(source, value)
        if any(d is not DimDynamic.STATIC for d in dims) or strides is not None:
            context = StatelessSymbolicContext(dynamic_sizes=dims, dynamic_strides=strides)
            fake = self.fake_mode.from_tensor(value, source=source, symbolic_context=context)
            static = tuple(isinstance(s, int) for s in fake.size())
            self.guards.tensor_match(source, value, static_dims=static, marks=self.policy.marks_check(value, static))
            self._symbolic_trace()
            self.symbolic_inputs.append((fake, source))
            self._as_given[id(fake)] = (fake.size(), fake.stride(), fake.storage_offset())
        else:
            self.guards.tensor_match(source, value, marks=self.policy.marks_check(value, (True,) * value.dim()))
            fake = self.fake_mode.from_tensor(value, static_shapes=True)
        return self._placeholder(source, fake, weakref.ref(value)), fake

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
        if not _INT64_MIN <= value <= _INT64_MAX:
            return None  # (a graph takes an int as an int64: this one stays a constant, guarded exactly)
        # An int is not a size: it may be negative (create_symbol would assume it positive).
        sym = self.shape_env.create_unspecified_symint_and_symbol(value, source, DimDynamic.DYNAMIC)
        if not isinstance(sym, torch.SymInt):
            return None
        self.guards.type_match(source, value)
        self.guards.add(GuardKind.EQUALS_MATCH, f"{source.name} fits in int64",
                        code(f"{_INT64_MIN} <= ", source, f" <= {_INT64_MAX}"), source)
        self._symbolic_trace()
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
        self.guards.add(GuardKind.EQUALS_MATCH, f"math.isfinite({source.name})", code("math.isfinite(", source, ")"), source)
        self._symbolic_trace()
        self.symbolic_inputs.append((sym, source))
        # The graph takes it as a 0-d float64 tensor and reads it with .item(), as under
        # torch.compile: AOTAutograd bakes a float argument of the graph into its own trace
        # (unguarded: every later value ran with the first), and turns this form into tensors.
        real = torch._as_tensor_fullprec(value)
        fake = self.fake_mode.from_tensor(real, static_shapes=True)
        fake.item_memo = sym
        tensor = self._placeholder(FloatTensorSource(source), fake, real)
        node, _ = self.create_call("call_method", "item", (tensor,), {}, example=sym)
        var = SymNodeVariable(node, sym, source)
        var.guards = self.guards  # specialising it guards its exact value (-0.0 and 0.0 differ)
        return var

    def _symbolic_trace(self) -> None:
        """The trace has symbols: the fake mode's dispatch cache is kept on this trace's own
        ShapeEnv, so it would mostly miss, and making each entry (it rebuilds the output from
        the entry to check it) costs about as much as the op's meta function itself. The
        trace's own memo takes its place (a static trace keeps torch's cache, which lives
        across traces)."""
        self.fake_mode.cache_enabled = False
        self.fake_memo.enabled = True

    def _placeholder(self, source: Source, example: Any, real: Any) -> torch.fx.Node:
        if self._last_placeholder is None:
            ctx = self._root.inserting_before(None)
        else:
            ctx = self._root.inserting_after(self._last_placeholder)
        with ctx:
            node = self._root.placeholder(self._unique_input_name(placeholder_name(source)))
        node.meta["example_value"] = example
        node.meta["source"] = source
        if isinstance(example, torch.Tensor):
            node.meta["symexec_version"] = _version(example)  # (asserts check it is unchanged)
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
        # One (costly) call renders each source as a token between NULs; each guard then
        # splits at them into torch's text and the sources it mentions: the text on sources
        # (L['a'].size()[0]) and the predicate over them (a read of a.size(), shared).
        mentioned: list[Any] = []

        def token(source: Any) -> str:
            mentioned.append(source)
            return f"\x00{len(mentioned) - 1}\x00"

        for guard in self.shape_env.produce_guards(examples, sources, source_ref=token, ignore_static=False):
            pieces = guard.split("\x00")  # (torch's text, a token's index, torch's text, ...)
            mentions = [mentioned[int(i)] for i in pieces[1::2]]
            text = "".join(p if i % 2 == 0 else mentions[i // 2].name for i, p in enumerate(pieces))
            expr = code(*(p if i % 2 == 0 else _source_code(mentions[i // 2]) for i, p in enumerate(pieces)))
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
        unwritable = _keyword_overload(op, target, args, kwargs)
        if unwritable is not None:
            raise Unsupported(f"{unwritable}: torch.fx writes a graph as Python, where this name is a "
                              f"keyword (torch.compile breaks on it too)")
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
            try:
                self._bind_unbacked(node, example)
            except PendingUnbackedSymbolNotFound as e:  # its result's size is an expression of them
                self.graph.erase_node(node)
                env = self.fake_mode.shape_env
                env.ignorable_fresh_unbacked_symbols.extend(env.pending_fresh_unbacked_symbols)
                name = target if isinstance(target, str) else getattr(target, "__name__", repr(target))
                raise Unsupported(f"{name}() makes a size from tensor values that torch's fake tensors cannot "
                                  f"bind ({e.__class__.__name__})") from e
        node.meta["example_value"] = example
        return node, example

    def _bind_unbacked(self, node: torch.fx.Node, example: Any) -> None:
        """Settle the data-dependent (unbacked) symbols the fake run of ``node`` just made.

        Those in its result are bound to it (``node.meta["unbacked_bindings"]``, as torch's own
        tracers record them). Those that are not were consumed inside the operation: a 0-d tensor
        passed where a number is expected (``p.addcdiv_(a, b, value=-step_size)``, Adam's step)
        is read with ``.item()`` by torch's argument parser. Left pending, they were found by the
        next tracer sharing this ShapeEnv, AOTAutograd's, which raised
        ``PendingUnbackedSymbolNotFound`` on the graph's inputs: they are marked as discarded, as
        torch's own fake implementations mark the ones they discard."""
        env = self.fake_mode.shape_env
        if env is None or not env.pending_fresh_unbacked_symbols:
            return
        held = free_unbacked_symbols(example)
        env.ignorable_fresh_unbacked_symbols.extend(s for s in env.pending_fresh_unbacked_symbols if s not in held)
        bindings = compute_unbacked_bindings(env, example)
        if bindings:
            node.meta["unbacked_bindings"] = bindings

    def _run_fake(self, op: str, target: Any, args: tuple, kwargs: dict) -> Any:
        fake_args, fake_kwargs = torch.fx.node.map_arg((args, kwargs), lambda n: n.meta["example_value"])
        key = None
        if self.fake_memo.enabled and not self.torch_state.active_contexts:
            # (a symbolic trace outside autocast: torch's meta functions cost most there)
            known = known_result(self.fake_mode, op, target, fake_args, fake_kwargs)
            if known is not None:
                return known
            key = self.fake_memo.key(op, target, fake_args, fake_kwargs)
        if key is not None:
            known = self.fake_memo.get(key)
            if known is not None:
                return known
        # A symbolic trace runs without torch's dispatch cache (_symbolic_trace), except an
        # operation seen decomposing into hundreds of inner ops, which repeat.
        many = self.fake_memo.enabled and self._dispatch_cache and _decomposes_into_many(op, target)
        dispatches = simple_call_counter.get(_DISPATCH_COUNTER, 0)
        self.fake_mode.cache_enabled = self.fake_mode.cache_enabled or many
        try:
            # Torch's Python dispatcher, as under torch.compile: ops whose meta functions are
            # written in Python for symbolic sizes (expand in addbmm, interpolate's output size)
            # reach them only through it.
            with self.fake_mode, enable_python_dispatcher():
                if op == "call_method":
                    result = getattr(fake_args[0], target)(*fake_args[1:], **fake_kwargs)
                else:
                    result = target(*fake_args, **fake_kwargs)
        finally:
            if many:
                self.fake_mode.cache_enabled = False
        if simple_call_counter.get(_DISPATCH_COUNTER, 0) - dispatches > _MANY_DISPATCHES:
            _note_many(op, target)
        if key is not None:
            self.fake_memo.remember(key, result)
        return result

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
            node.graph.erase_node(node)

    @contextlib.contextmanager
    def subgraph(self) -> Iterator[torch.fx.Graph]:
        """Record operations into a fresh graph while the block runs (the body of a
        higher-order operator: ``variables/higher_order.py``). Values of the enclosing graphs
        used there stay nodes of those graphs, for the caller to lift; new inputs of the trace
        still go to the root graph."""
        outer, self.graph = self.graph, torch.fx.Graph()
        try:
            yield self.graph
        finally:
            self.graph = outer

    def _stack_trace(self) -> str:
        """The user's frames at this node, outermost first (a caller inlining the next at its
        call), as a traceback shows them and torch.compile's nodes carry them."""
        parts = []
        for filename, lineno, name in self.where():
            # (a line always follows: torch.fx's `# File:` comment reads the innermost frame
            # only with its code line, and code run by exec or typed at a prompt has no source)
            line = (linecache.getline(filename, lineno).strip() if lineno else "") or "<source not available>"
            parts.append(f'  File "{filename}", line {lineno}, in {name}\n    {line}\n')
        return "".join(parts)

    def call_node_count(self) -> int:
        return sum(1 for n in self.graph.nodes if n.op in ("call_function", "call_method", "call_module"))

    def tensor_op_count(self) -> int:
        """The operations recorded so far that are not symbolic arithmetic (whose results are
        symbolic numbers)."""
        return sum(1 for n in self.graph.nodes if n.op in ("call_function", "call_method", "call_module")
                   and not isinstance(n.meta.get("example_value"), (torch.SymInt, torch.SymFloat, torch.SymBool)))

    def assert_true(self, condition: Any, message: Any) -> bool:
        """Record ``assert condition, message`` of a one-value tensor as a check in the graph;
        False (nothing recorded) where an input tensor was changed in place before it: a
        backend writes those changes back only when the graph ends, which a failing check stops.
        The graph's callable raises ``AssertionError(message)`` for it (``with_assertions``)."""
        for node in self.graph.nodes:
            example = node.meta.get("example_value") if node.op == "placeholder" else None
            if isinstance(example, torch.Tensor) and (
                    node.meta.get("symexec_version") is None or _version(example) != node.meta["symexec_version"]):
                return False  # (an inference tensor keeps no version: it may have changed)
        marker = f"symexec assertion {len(self.assertions)} of graph {id(self):x}"
        self.create_call("call_function", torch._assert_async, (condition.as_proxy(), marker), {}, example=False)
        self.assertions[marker] = message
        return True

    @staticmethod
    def numbers_only(gm: torch.fx.GraphModule) -> bool:
        """Whether every operation of ``gm`` computes a number or a size (``x.size(0) * 2``, the
        sizes a function returns past a break): such a graph runs as the Python it is, with no
        backend, as there is nothing for one to compile."""
        calls = [n for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]
        return bool(calls) and all(_is_number(n.meta.get("example_value")) and (
            n.op == "call_method" and n.target in _SIZE_METHODS or not any(
                isinstance(a.meta.get("example_value"), torch.Tensor) for a in n.all_input_nodes)) for n in calls)

    def grad_mode_only(self) -> bool | None:
        """The grad mode a graph leaves set when all it does is set it (a ``with no_grad()``
        entered before a break): no graph is needed for that, the caller's code sets it. None
        when the graph does anything else."""
        calls = [n for n in self.graph.nodes if n.op in ("call_function", "call_method", "call_module")]
        if not calls or any(n.op != "call_function" or n.target is not torch._C._set_grad_enabled
                            or len(n.args) != 1 or type(n.args[0]) is not bool for n in calls):
            return None
        return calls[-1].args[0]

    # -- the end ----------------------------------------------------------------------------
    def finish(self, outputs: list[Any]) -> tuple[torch.fx.GraphModule, list[Any]]:
        """Close the graph on ``outputs``; drop dead nodes and unused inputs; return it with its
        example inputs."""
        self.closed = True
        self.graph.output(tuple(o.node for o in outputs))
        for node in reversed(list(self.graph.nodes)):
            if not node.users and node.op in ("call_function", "call_method") and self._is_pure(node):
                self.graph.erase_node(node)
        if self._unbacked_made():
            # What the trace assumed of data-dependent numbers (torch._check(n == 3), a size >= 0)
            # lives in the ShapeEnv, which may have replaced the number by what it assumed:
            # checked when the graph runs, as torch's own tracers do (before unused inputs go:
            # a check may read one).
            insert_deferred_runtime_asserts(graph_module(self.graph), self.shape_env, "symexec")
        used = []
        for graph_input in self.inputs:
            if graph_input.node.users:
                used.append(graph_input)
            else:
                self.graph.erase_node(graph_input.node)
        self.inputs = used
        self.graph.lint()
        gm = graph_module(self.graph)
        gm.meta["symexec_sources"] = [i.source for i in used]
        examples = []
        for graph_input in used:
            value = graph_input.example() if isinstance(graph_input.example, weakref.ref) else graph_input.example
            if value is None:
                raise Unsupported("an input tensor died while tracing")
            examples.append(value)
        return gm, examples

    def _unbacked_made(self) -> bool:
        """Whether the trace made a data-dependent (unbacked) symbol."""
        return bool(self.shape_env.unbacked_symint_counter or self.shape_env.unbacked_symfloat_counter)

    @staticmethod
    def _is_pure(node: torch.fx.Node) -> bool:
        if node.meta.get("pure"):
            return True  # its maker knows it has no effect (an item of a node's tuple result)
        if isinstance(node.meta.get("example_value"), torch.Tensor):
            return False  # tensor ops may mutate their inputs; they stay
        target = node.target
        return target in _PURE_TARGETS or (getattr(target, "__module__", None) in ("_operator", "operator")
                                          and not getattr(target, "__name__", "").startswith(("i", "set", "del")))


# Operations whose fake run dispatched more than _MANY_DISPATCHES inner ops (interpolate's
# bicubic decomposition: about a thousand, where linear or layer_norm make some twenty), by
# (op, target), for the process: torch's dispatch cache serves their repeated inner ops. Counted
# by torch's own counter of fake dispatches; without it nothing is noted.
_DISPATCH_COUNTER = "FakeTensorMode.__torch_dispatch__"
_MANY_DISPATCHES = 200
_DECOMPOSING: set = set()


def _decomposes_into_many(op: str, target: Any) -> bool:
    try:
        return (op, target) in _DECOMPOSING
    except TypeError:  # an unhashable target
        return False


def _note_many(op: str, target: Any) -> None:
    try:
        _DECOMPOSING.add((op, target))
    except TypeError:
        pass


class FakeMemo:
    """The fake results of one symbolic trace's operations, by what they depend on: an operation
    run again on tensors of the same metadata (the second layer of a model, q/k/v projections of
    one input) makes a new tensor of the remembered metadata instead of running the op's meta
    function again (a symbolic ``linear`` or ``layer_norm`` costs milliseconds of sympy; torch's
    own dispatch cache is off on these traces, see ``_symbolic_trace``).

    Only what is decided by the metadata alone is remembered: the arguments are fake tensors of
    this mode (dtype, device, requires_grad, symbolic sizes, strides and offset, conj/neg bits),
    symbolic numbers (their expressions) and plain constants; the result is one fresh tensor (or a
    view of one) that does not require grad, shares no input's storage (an in-place op, ``out=``,
    ``detach``) and has no unbacked size (a data-dependent one). The guards the first run added
    hold for the second: the ShapeEnv already has them. Grad mode is part of the key; traces
    inside an autocast block the trace entered skip the memo."""

    def __init__(self, fake_mode: FakeTensorMode) -> None:
        self.fake_mode = fake_mode
        self.known: dict[Any, tuple] = {}
        self.enabled = False  # on symbolic traces (OutputGraph._symbolic_trace)

    def key(self, op: str, target: Any, args: tuple, kwargs: dict) -> Any:
        """The key of a call on fake values, with its fake tensors; None if it cannot have one
        (no tensor among the arguments, or an argument a key cannot capture)."""
        tensors: list[FakeTensor] = []
        try:
            parts = (op, target, torch.is_grad_enabled(), _memo_key(args, tensors, self.fake_mode),
                     _memo_key(tuple(sorted(kwargs.items())), tensors, self.fake_mode))
            hash(parts)
        except _NotMemoizable:
            return None
        except TypeError:  # an unhashable target or constant
            return None
        return (parts, tuple(tensors)) if tensors else None

    def get(self, key: Any) -> torch.Tensor | None:
        known = self.known.get(key[0])
        if known is None:
            return None
        dtype, device, base, view = known
        fresh = fresh_fake(self.fake_mode, *base, dtype, device)
        if view is None:
            return fresh
        with self.fake_mode:
            return fresh.as_strided(*view)

    def remember(self, key: Any, result: Any) -> None:
        """Remember ``result`` if it is one fresh tensor, or a view of one (``linear`` of a 3-d
        input is a view of its 2-d matmul, in eager as here): made again the same way."""
        parts, inputs = key
        base = result._base if type(result) is FakeTensor and result._is_view() else result
        if (type(result) is not FakeTensor or type(base) is not FakeTensor or base._is_view()
                or base.dtype != result.dtype or base.device != result.device
                or any(t.fake_mode is not self.fake_mode or t.requires_grad or t.layout is not torch.strided
                       or t.constant is not None or t.is_conj() or t.is_neg() for t in (result, base))
                or base.storage_offset() != 0 or any(torch._C._is_alias_of(result, t) for t in inputs)
                or self._unbacked_possible() and (free_unbacked_symbols(result) or free_unbacked_symbols(base))):
            return
        view = None if base is result else (result.size(), result.stride(), result.storage_offset())
        self.known[parts] = (result.dtype, result.device, (base.size(), base.stride()), view)

    def _unbacked_possible(self) -> bool:
        """Whether the trace has made a data-dependent (unbacked) symbol yet: every one is
        numbered by these counters (checking a result's symbols costs more than the op)."""
        env = self.fake_mode.shape_env
        return env is None or bool(env.unbacked_symint_counter or env.unbacked_symfloat_counter)


class _NotMemoizable(Exception):
    """An argument whose effect on an operation's result is not captured by a key."""


_MEMO_CONSTANTS = (int, float, bool, str, type(None), torch.dtype, torch.device, torch.layout, torch.memory_format,
                   type(Ellipsis))


def _memo_key(value: Any, tensors: list, fake_mode: FakeTensorMode) -> Any:
    """What ``value`` contributes to an operation's fake result (collecting its fake tensors)."""
    kind = type(value)
    if kind in _MEMO_CONSTANTS:
        return kind, value
    if kind is FakeTensor:
        if value.fake_mode is not fake_mode or value.constant is not None or value.layout is not torch.strided:
            raise _NotMemoizable
        tensors.append(value)
        return ("tensor", value.dtype, value.device, value.requires_grad, _exprs(value.size()),
                _exprs(value.stride()), _exprs(value.storage_offset()), value.is_conj(), value.is_neg())
    if kind in (torch.SymInt, torch.SymFloat, torch.SymBool):
        return kind, value.node.expr
    if kind in (tuple, list, torch.Size):
        return kind, tuple(_memo_key(v, tensors, fake_mode) for v in value)
    if kind is slice:
        return kind, _memo_key((value.start, value.stop, value.step), tensors, fake_mode)
    raise _NotMemoizable


def _exprs(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_exprs(v) for v in value)
    return value.node.expr if isinstance(value, torch.SymInt) else value


def _source_code(source: Any) -> Source | Code:
    """A source as guard code, also the ShapeEnv's own sources of a tensor's property
    (``TensorPropertySource(L['a'], SIZE, 0)`` becomes ``a.size()[0]``, the ``size()`` call
    one a guard function shares)."""
    if isinstance(source, Source):
        return source
    base, method = _source_code(source.base), source.prop.method_name()
    if source.idx is None:
        return code(base, f".{method}()")
    if isinstance(base, Source) and method in ("size", "stride"):
        return code(ShapeCall(base, method), f"[{int(source.idx)}]")
    return code(base, f".{method}()[{int(source.idx)}]")


# What a number-only graph may read of a tensor: its sizes, never its data (``item()`` stays in
# a graph, as under torch.compile).
_SIZE_METHODS = frozenset({"size", "stride", "numel", "dim", "storage_offset"})


def _is_number(value: Any) -> bool:
    """A Python or symbolic number, or a size (a tuple of them)."""
    if isinstance(value, tuple):
        return all(_is_number(v) for v in value)
    return type(value) in (int, float, bool, torch.SymInt, torch.SymFloat, torch.SymBool)


def _keyword_overloads() -> dict[str, list[tuple[str, int, set[str], set[str]]]]:
    """ATen overloads named by a Python keyword (``aten::random_.from``): by op name, the
    overload's name, its required positional arguments (self included), the names of its
    positional arguments, and the names no other overload of the op has."""
    schemas: dict[str, list[Any]] = {}
    for schema in torch._C._jit_get_all_schemas():
        schemas.setdefault(schema.name.partition("::")[2], []).append(schema)
    found: dict[str, list[tuple[str, int, set[str], set[str]]]] = {}
    for name, overloads in schemas.items():
        for schema in overloads:
            if keyword.iskeyword(schema.overload_name):
                positional = [a for a in schema.arguments if not a.kwarg_only]
                others = {a.name for other in overloads if other is not schema for a in other.arguments}
                found.setdefault(name, []).append((
                    schema.overload_name, sum(1 for a in positional if a.default_value is None),
                    {a.name for a in positional}, {a.name for a in schema.arguments} - others))
    return found


_KEYWORD_OVERLOADS = _keyword_overloads()


def _keyword_overload(op: str, target: Any, args: tuple, kwargs: dict) -> str | None:
    """The ``aten::name.overload`` a call would dispatch to when that overload's name is a
    Python keyword: a backend that re-traces the graph (AOTAutograd) writes it as
    ``torch.ops.aten.random_.from(...)``, which is not Python. None for any other call."""
    if op == "call_method" and isinstance(target, str):
        name = target
    elif op == "call_function" and isinstance(target, torch._ops.OpOverload):
        name = target._schema.name.partition("::")[2]
        return f"aten::{name}.{target._overloadname}" if keyword.iskeyword(target._overloadname) else None
    elif op == "call_function" and getattr(torch.Tensor, getattr(target, "__name__", ""), None) is target:
        name = target.__name__
    else:
        return None
    for overload, required, positional, unique in _KEYWORD_OVERLOADS.get(name, ()):
        if unique & kwargs.keys() or len(args) + len(positional & kwargs.keys()) >= required:
            return f"aten::{name}.{overload}"
    return None


def _version(t: torch.Tensor) -> int | None:
    """The tensor's version counter (bumped by every in-place change); None for an inference
    tensor, which keeps none."""
    try:
        return t._version
    except RuntimeError:
        return None


def with_assertions(compiled: Callable[..., Any], assertions: dict[str, Any]) -> Callable[..., Any]:
    """The graph's callable, raising eager's ``AssertionError(message)`` where one of its
    asserts fails (its ``torch._assert_async`` raised RuntimeError with that assert's text)."""
    def graph_with_assertions(*args: Any) -> Any:
        try:
            return compiled(*args)
        except RuntimeError as e:
            message = assertions.get(str(e), _NO_ASSERTION)
            if message is _NO_ASSERTION:
                raise
            raise (AssertionError() if message is None else AssertionError(message)) from None
    return graph_with_assertions


_NO_ASSERTION = object()
