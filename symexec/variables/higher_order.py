"""torch's higher-order operators: ``torch.cond``, ``torch._higher_order_ops.map``,
``torch.while_loop`` and ``torch._higher_order_ops.scan``, each callable they take traced into a
subgraph of its own, as under torch.compile.

torch's Python wrappers (``torch.cond``, ``map``, ``while_loop``) are traced into like any
Python function of torch's: they check and flatten their arguments (symexec runs those checks,
so a call eager rejects raises eager's error) and call the operator object, which this module
models (``cond_op``, ``map_impl``, ``while_loop_op``, ``scan_op``; ``torch.ops.higher_order.cond`` called
directly is the same object). Each callable is traced, by the trace's own machinery, on fresh
placeholders of a new FX graph (``OutputGraph.subgraph``); what it reads of the enclosing trace
(closed-over tensors, module parameters, an outer subgraph's values) is lifted into extra
placeholders, passed to the operator as extra operands (the operators' contract). The graph
holds each subgraph as a GraphModule attribute and one call of the operator::

    cond_true_0 = self.cond_true_0          # get_attr
    cond_false_0 = self.cond_false_0
    cond = torch.ops.higher_order.cond(gt, cond_true_0, cond_false_0, (l_x_, l_w_))
    getitem = cond[0]

``cond`` with a predicate known while tracing (a Python bool, or a size comparison on static
shapes) runs the branch it picks, inlined, as eager ``torch.cond`` does.

What is not modelled breaks the graph before the operator, and CPython runs it (eager torch
raises its own error for what its rules forbid): a callable that changes anything outside it (a
list append, an attribute or a global set, ``print`` breaks inside), that mutates an input in
place or returns one of its inputs (or a view of one), that raises, or that returns anything but
tensors; branches whose results differ in structure; operands that are not flat tuples of
tensors; a scan carry whose metadata changes; torch's other higher-order operators
(``associative_scan``'s generic mode on the CPU is no operator: ``vmap`` and tensor operations,
traced as such).
"""

from __future__ import annotations

import inspect
import itertools
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch._higher_order_ops.cond import cond_op
from torch._higher_order_ops.map import map_impl
from torch._higher_order_ops.scan import scan_op
from torch._higher_order_ops.while_loop import while_loop_op
from torch._ops import HigherOrderOperator

from ..callees import HIGHER_ORDER_WRAPPERS
from ..context import TracerContext
from ..exc import TracedException, Unsupported
from ..source import Source
from .base import VariableTracker
from .constant import ConstantVariable
from .lists import ListVariable, TupleVariable
from .pytree import _flatten, _unflatten
from .tensor import SymNodeVariable, TensorVariable, wrap_fx_value


# torch's Python wrappers of the operators (``torch.cond``...): traced into, never recorded whole
# (they take callables); at a break CPython runs them as they are (``callees.py``).
WRAPPERS = HIGHER_ORDER_WRAPPERS


class HigherOrderOpVariable(VariableTracker):
    """One of torch's higher-order operators (``torch.ops.higher_order.cond``, ``map_impl``,
    ``while_loop``, ``scan``). Calling one traces its callables into subgraphs and records one
    node. Others (``associative_scan``'s operator, ``invoke_subgraph``...) are not modelled:
    calling them breaks the graph."""

    models = HigherOrderOperator

    def __init__(self, op: HigherOrderOperator, source: Source | None = None) -> None:
        super().__init__(source)
        self.op = op

    def python_type(self) -> type:
        return type(self.op)

    def as_python_constant(self) -> Any:
        return self.op

    def describe(self) -> str:
        return f"torch's higher-order operator {self.op.name()}"

    def call_function(self, tx: TracerContext, args: list[VariableTracker],
                      kwargs: dict[str, VariableTracker]) -> VariableTracker:
        model = _MODELS.get(self.op)
        if model is None:
            raise Unsupported(f"{self.describe()}, which symexec does not trace", hint="CPython runs it")
        try:
            bound = inspect.signature(model).bind(tx, *args, **kwargs)
        except TypeError:
            raise Unsupported(f"{self.describe()} called with arguments it does not take",
                              hint="CPython raises torch's error") from None
        return model(*bound.args)

    def reconstruct(self, cg: Any) -> None:
        cg.load_const(self.op)

    def __repr__(self) -> str:
        return f"HigherOrderOpVariable({self.op.name()})"


# -- tracing a callable into a subgraph -------------------------------------------------------
@dataclass
class _Body:
    """A callable traced into its own graph: the graph, its flat tensor results and their
    structure, and the values of enclosing graphs it reads (lifted into placeholders)."""

    graph: torch.fx.Graph
    outputs: list[TensorVariable]
    spec: Any
    free: list[torch.fx.Node]


def _trace_body(tx: TracerContext, fn: VariableTracker, examples: list[Any], what: str, *,
                single: bool = False, structure: Any = None) -> _Body:
    """Trace ``fn`` called on new placeholders with the metadata of ``examples`` (a constant:
    passed as itself) into a graph of its own; ``structure``: the placeholders are the leaves of
    a tuple of that pytree structure, which ``fn`` is called with, else they are its arguments.
    ``single``: its one tensor result is the graph's output (a loop's condition), else a tuple of
    its flat results."""
    trace = tx.trace
    with trace.side_effects.watch() as changes, trace.graph.subgraph() as graph:
        try:
            args = [_placeholder(tx, graph, f"arg{i}", example) for i, example in enumerate(examples)]
            fakes = [arg.example for arg in args if isinstance(arg, TensorVariable)]
            call_args = args if structure is None else _sequence(_unflatten(tx, args, structure), what).items
            try:
                result = fn.call_function(tx, call_args, {})
            except TracedException as e:
                raise Unsupported(f"{what} raises {e.exception.describe()}", hint="CPython runs the call") from None
            leaves, spec = _flatten(tx, result, None)
            for leaf in leaves:
                if not isinstance(leaf, TensorVariable):
                    raise Unsupported(f"{what} returns {leaf.describe()}; symexec traces only tensor results")
            if single and len(leaves) != 1:
                raise Unsupported(f"{what} returns {len(leaves)} values, not one tensor")
            nodes = tuple(leaf.as_proxy() for leaf in leaves)
            graph.output(nodes[0] if single else nodes)
            if not changes.only_its_own():
                raise Unsupported(f"{what} changes objects outside it", hint="torch raises; CPython runs the call")
            if any(fake._version for fake in fakes):
                raise Unsupported(f"{what} mutates an input in place", hint="torch raises; CPython runs the call")
            free = _free_nodes(graph)
            _check_reads_and_results(graph, free, leaves, what)
        except BaseException:
            _discard(graph)
            raise
    return _Body(graph, leaves, spec, free)


def _check_reads_and_results(graph: torch.fx.Graph, free: list[torch.fx.Node], leaves: list[TensorVariable],
                             what: str) -> None:
    """A callable may read tensors and sizes around it (lifted), and return no input of its own
    nor any of those, nor a view of one."""
    for node in free:
        if not isinstance(node.meta["example_value"], (torch.Tensor, torch.SymInt)):
            raise Unsupported(f"{what} reading a {type(node.meta['example_value']).__name__} of the code around it")
    read = [node.meta["example_value"] for node in (*graph.find_nodes(op="placeholder"), *free)]
    if any(_aliases(leaf.example, read) for leaf in leaves):
        raise Unsupported(f"{what} returns one of its inputs or a view of one", hint="torch raises; CPython runs the call")


def _placeholder(tx: TracerContext, graph: torch.fx.Graph, name: str, example: Any) -> VariableTracker:
    """A new input of a subgraph with the metadata of ``example`` (a fake tensor or a SymInt)."""
    node = graph.placeholder(name)
    if isinstance(example, torch.Tensor):
        with tx.trace.graph.fake_mode:
            fresh = torch.empty_strided(example.size(), example.stride(), dtype=example.dtype, device=example.device,
                                        requires_grad=example.requires_grad)
        node.meta["example_value"] = fresh
        return TensorVariable(node, fresh)
    node.meta["example_value"] = example
    if isinstance(example, torch.SymInt):
        return SymNodeVariable(node, example)
    if type(example) in (int, float, bool):  # (a constant operand: the body is traced with its value)
        return ConstantVariable(example)
    raise Unsupported(f"a {type(example).__name__} as an operand of a higher-order operator")


def _aliases(value: torch.Tensor, inputs: list[Any]) -> bool:
    return any(isinstance(t, torch.Tensor) and torch._C._is_alias_of(value, t) for t in inputs)


def _free_nodes(graph: torch.fx.Graph) -> list[torch.fx.Node]:
    """The values of enclosing graphs ``graph`` reads, in the order it first reads them."""
    free: dict[torch.fx.Node, None] = {}
    for node in graph.nodes:
        for used in node.all_input_nodes:
            if used.graph is not graph:
                free.setdefault(used, None)
    return list(free)


def _lift(body: _Body, free: list[torch.fx.Node]) -> None:
    """Placeholders for ``free`` after the body's own, in that order (all of them, read or not:
    the operator passes the same operands to each callable), the body's reads redirected."""
    graph = body.graph
    last = next(reversed(list(graph.find_nodes(op="placeholder"))), None)
    for outer in free:
        with graph.inserting_before(next(iter(graph.nodes))) if last is None else graph.inserting_after(last):
            last = graph.placeholder(outer.name)
        last.meta["example_value"] = outer.meta["example_value"]
        for user in [u for u in outer.users if u.graph is graph]:
            user.replace_input_with(outer, last)


def _discard(graph: torch.fx.Graph) -> None:
    """Erase an abandoned subgraph's nodes: the enclosing graphs' nodes it read no longer count
    it among their users (else they would look used at the end)."""
    for node in reversed(list(graph.nodes)):
        graph.erase_node(node)


def graph_module(graph: torch.fx.Graph) -> torch.fx.GraphModule:
    """``graph`` as a GraphModule, holding the subgraphs its ``get_attr`` nodes name (each such
    node's example value is its subgraph's module)."""
    root = torch.nn.Module()
    for node in graph.find_nodes(op="get_attr"):
        setattr(root, node.target, node.meta["example_value"])
    return torch.fx.GraphModule(root, graph)


def _get_attr(tx: TracerContext, prefix: str, body: _Body) -> torch.fx.Node:
    """The subgraph as an attribute of the graph being recorded, read by a ``get_attr`` node."""
    graph = tx.trace.graph.graph
    taken = {node.target for node in graph.find_nodes(op="get_attr")}
    name = next(f"{prefix}_{i}" for i in itertools.count() if f"{prefix}_{i}" not in taken)
    node, _ = tx.trace.graph.create_call("get_attr", name, (), {}, example=graph_module(body.graph))
    return node


def _record(tx: TracerContext, op: HigherOrderOperator, args: tuple, operands: list[Any], spec: Any) -> VariableTracker:
    """Record the operator's call; its flat results rebuilt into ``spec``'s structure. A fake
    run that changes an operand (a callable mutating a tensor it read from around it) breaks."""
    versions = [t._version if isinstance(t, torch.Tensor) else None for t in operands]
    try:
        node, example = tx.trace.graph.create_call("call_function", op, args, {})
    except Unsupported:
        for attr in [a for a in args if isinstance(a, torch.fx.Node) and a.op == "get_attr"]:
            tx.trace.graph.remove_node(attr)
        raise
    if any(isinstance(t, torch.Tensor) and t._version != v for t, v in zip(operands, versions)):
        raise Unsupported(f"a callable of {op.name()} mutates a tensor it reads in place",
                          hint="torch raises; CPython runs the call")
    result = wrap_fx_value(tx, node, example)
    if not isinstance(result, (TupleVariable, ListVariable)):
        raise Unsupported(f"{op.name()} returned a {type(example).__name__}")
    return _unflatten(tx, list(result.items), spec)


def _sequence(var: VariableTracker, what: str) -> TupleVariable | ListVariable:
    """A tuple or list argument as a tracker of one (a default ``()`` is a constant)."""
    if isinstance(var, (TupleVariable, ListVariable)):
        return var
    if var.is_python_constant() and type(var.as_python_constant()) in (tuple, list):
        return TupleVariable([ConstantVariable(v) for v in var.as_python_constant()])
    raise Unsupported(f"{what} given as {var.describe()}, not a tuple or a list")


def _tensors(tx: TracerContext, var: VariableTracker, what: str, *, numbers: bool = False) -> list[VariableTracker]:
    """The items of a flat tuple or list of tensors (and SymInts; ``numbers``: and ints, floats,
    bools known while tracing)."""
    var = _sequence(var, what)
    for item in var.items:
        if not (isinstance(item, (TensorVariable, SymNodeVariable))
                or numbers and item.is_python_constant() and type(item.as_python_constant()) in (int, float, bool)):
            raise Unsupported(f"{what} holding {item.describe()}; symexec traces only tensors there")
    return list(var.items)


def _example(var: VariableTracker) -> Any:
    if isinstance(var, TensorVariable):
        return var.example
    if isinstance(var, SymNodeVariable):
        return var.as_proxy().meta["example_value"]
    return var.as_python_constant()


def _trace_all(tx: TracerContext, *traces: Any) -> list[_Body]:
    """Each callable traced (``traces``: what traces each); if one cannot be, the ones traced
    before it are discarded too."""
    bodies: list[_Body] = []
    try:
        for trace in traces:
            bodies.append(trace())
    except BaseException:
        for body in bodies:
            _discard(body.graph)
        raise
    return bodies


def _lift_all(*bodies: _Body) -> list[torch.fx.Node]:
    """What any of the callables reads around it, lifted into every one (the operator passes
    them the same operands)."""
    free = list(dict.fromkeys(node for body in bodies for node in body.free))
    for body in bodies:
        _lift(body, free)
    return free


# -- the operators ---------------------------------------------------------------------------
def _cond(tx: TracerContext, pred: VariableTracker, true_fn: VariableTracker, false_fn: VariableTracker,
          operands: VariableTracker) -> VariableTracker:
    operands = _sequence(operands, "torch.cond's operands")
    if pred.is_python_constant():
        value = pred.as_python_constant()
        if not isinstance(value, (bool, int, float)):
            raise Unsupported(f"torch.cond with a {type(value).__name__} predicate (torch raises)")
        return (true_fn if value else false_fn).call_function(tx, list(operands.items), {})
    leaves, structure = _flatten(tx, operands, None)
    items = _tensors(tx, TupleVariable(leaves), "torch.cond's operands")
    if isinstance(pred, TensorVariable):
        if pred.example.numel() != 1:
            raise Unsupported("torch.cond with a predicate of more than one element (torch raises)")
    elif not isinstance(pred, SymNodeVariable) or not isinstance(pred.as_proxy().meta["example_value"], torch.SymBool):
        raise Unsupported(f"torch.cond with {pred.describe()} as its predicate")
    examples = [_example(v) for v in items]
    true_body, false_body = _trace_all(
        tx, lambda: _trace_body(tx, true_fn, examples, "torch.cond's true_fn", structure=structure),
        lambda: _trace_body(tx, false_fn, examples, "torch.cond's false_fn", structure=structure))
    if true_body.spec != false_body.spec:
        _discard(true_body.graph), _discard(false_body.graph)
        raise Unsupported("torch.cond's branches return different structures", hint="torch raises; CPython runs it")
    free = _lift_all(true_body, false_body)
    args = (pred.as_proxy(), _get_attr(tx, "cond_true", true_body), _get_attr(tx, "cond_false", false_body),
            tuple(v.as_proxy() for v in items) + tuple(free))
    return _record(tx, cond_op, args, examples + [n.meta["example_value"] for n in free], true_body.spec)


def _map(tx: TracerContext, fn: VariableTracker, xs: VariableTracker, pos_args: VariableTracker) -> VariableTracker:
    mapped = _tensors(tx, xs, "map's xs")
    extra = _tensors(tx, pos_args, "map's arguments", numbers=True)
    if not mapped or not all(isinstance(v, TensorVariable) and v.example.dim() > 0 for v in mapped):
        raise Unsupported("map over values that are not tensors of at least one dimension")
    slices = [_slice(tx, v.example) for v in mapped]
    body = _trace_body(tx, fn, slices + [_example(v) for v in extra], "map's function")
    _lift_all(body)
    args = (_get_attr(tx, "map_body", body), [v.as_proxy() for v in mapped],
            [_example(v) if v.is_python_constant() else v.as_proxy() for v in extra] + body.free)
    operands = [_example(v) for v in mapped + extra] + [n.meta["example_value"] for n in body.free]
    return _record(tx, map_impl, args, operands, body.spec)


def _slice(tx: TracerContext, example: torch.Tensor) -> torch.Tensor:
    """What map's function receives of a mapped tensor: one slice along its first dimension."""
    with tx.trace.graph.fake_mode:
        return torch.empty_strided(example.size()[1:], example.stride()[1:], dtype=example.dtype,
                                   device=example.device, requires_grad=example.requires_grad)


def _while_loop(tx: TracerContext, cond_fn: VariableTracker, body_fn: VariableTracker, carried: VariableTracker,
                additional: VariableTracker) -> VariableTracker:
    carried_items = _tensors(tx, carried, "while_loop's carried inputs")
    additional_items = _tensors(tx, additional, "while_loop's additional inputs")
    examples = [_example(v) for v in carried_items + additional_items]
    cond_body, loop_body = _trace_all(
        tx, lambda: _trace_body(tx, cond_fn, examples, "while_loop's cond_fn", single=True),
        lambda: _trace_body(tx, body_fn, examples, "while_loop's body_fn"))
    free = _lift_all(cond_body, loop_body)
    args = (_get_attr(tx, "cond_fn", cond_body), _get_attr(tx, "body_fn", loop_body),
            tuple(v.as_proxy() for v in carried_items), tuple(v.as_proxy() for v in additional_items) + tuple(free))
    return _record(tx, while_loop_op, args, examples + [n.meta["example_value"] for n in free], loop_body.spec)


def _scan(tx: TracerContext, combine_fn: VariableTracker, init: VariableTracker, xs: VariableTracker,
          additional_inputs: VariableTracker) -> VariableTracker:
    carry = _tensors(tx, init, "scan's init")
    scanned = _tensors(tx, xs, "scan's xs")
    extra = _tensors(tx, additional_inputs, "scan's additional inputs")
    if not scanned or not all(isinstance(v, TensorVariable) and v.example.dim() > 0 for v in scanned):
        raise Unsupported("scan over values that are not tensors of at least one dimension")
    body = _trace_body(tx, combine_fn, [_example(v) for v in carry] + [_slice(tx, v.example) for v in scanned]
                       + [_example(v) for v in extra], "scan's combine_fn")
    if len(body.outputs) < len(carry) or any(
            not isinstance(c, TensorVariable) or out.example.dtype != c.example.dtype
            or out.example.size() != c.example.size() for out, c in zip(body.outputs, carry)):
        _discard(body.graph)
        raise Unsupported("scan's combine_fn returns a carry unlike its init", hint="torch raises; CPython runs it")
    _lift_all(body)
    args = (_get_attr(tx, "scan_combine_fn", body), [v.as_proxy() for v in carry], [v.as_proxy() for v in scanned],
            [v.as_proxy() for v in extra] + body.free)
    operands = [_example(v) for v in carry + scanned + extra] + [n.meta["example_value"] for n in body.free]
    # (the operator's results are flat, the carry's leaves then the outputs': as the callable's
    # own (carry, outputs), flattened)
    return _record(tx, scan_op, args, operands, body.spec)


_MODELS = {cond_op: _cond, map_impl: _map, while_loop_op: _while_loop, scan_op: _scan}

