"""One frame, from real arguments to a ``CacheEntry``: trace, compile the graph, write the code.

Whatever the tracer cannot model (``Unsupported``) becomes an entry that runs the original
function under the guards gathered so far: those guards pin every value the trace looked at
before it stopped, so the same inputs would stop at the same place. symexec's own bugs do the
same with a warning, unless ``config.raise_on_internal_error`` is set.
"""

from __future__ import annotations

import time
import types
import warnings
from typing import Any, Callable

import torch
import torch._guards
from torch.fx.experimental.symbolic_shapes import guarding_hint_or_throw

from . import logs
from .cache import CacheEntry
from .codegen import PyCodegen, disassemble
from .config import Config
from .exc import BackendCompilerFailed, Unsupported
from .guards import GuardSet, compile_guards
from .output_graph import OutputGraph
from .translator import InstructionTranslator
from .dynamic import DynamicPolicy
from .variables import TensorVariable, VariableTracker
from .variables.tensor import SymNodeVariable
from .variables.dicts import ConstDictVariable

GRAPH_OUT = "___graph_out"


def convert_frame(fn: types.FunctionType, args: tuple, kwargs: dict, *, backend: Callable[..., Any],
                  fullgraph: bool, config: Config, index: int, policy: DynamicPolicy) -> CacheEntry:
    start = time.perf_counter()
    guards = GuardSet()
    guards.grad_mode(torch.is_grad_enabled())
    output = OutputGraph(guards, policy)
    try:
        tx = InstructionTranslator.for_function(fn, args, kwargs, output, config)
        tx.run()
        assert tx.return_value is not None
        entry = _build_entry(fn, tx.return_value, output, guards, backend, index, start)
    except Unsupported as e:
        if fullgraph:
            raise
        _try_shape_guards(output)
        return _fallback_entry(fn, guards, str(e), start)
    except BackendCompilerFailed:
        raise
    except Exception as e:
        if config.raise_on_internal_error:
            raise
        warnings.warn(f"symexec: internal error while compiling {fn.__qualname__}; running it eagerly: "
                      f"{type(e).__name__}: {e}", RuntimeWarning, stacklevel=4)
        return _fallback_entry(fn, guards, f"internal error: {type(e).__name__}: {e}", start)
    return entry


def _try_shape_guards(output: OutputGraph) -> None:
    """A fallback entry keeps the symbolic conditions met so far, when they can be rendered."""
    try:
        output.install_shape_guards()
    except Exception as e:  # noqa: BLE001 - a fallback entry is correct with fewer guards
        logs.log("debug", "no shape guards for a fallback entry: %s", e)


def _fallback_entry(fn: types.FunctionType, guards: GuardSet, reason: str, start: float) -> CacheEntry:
    logs.log("debug", "running %s as the original function: %s", fn.__qualname__, reason)
    compiled = compile_guards(guards, fn)
    return CacheEntry(compiled.check, fn, compiled.guards, compiled.first_failure, fallback_reason=reason,
                      trace_seconds=time.perf_counter() - start)


def _graph_tensors(var: VariableTracker, found: dict[torch.fx.Node, VariableTracker]) -> None:
    """Graph values (tensors, symbolic numbers) that the return value holds, in order."""
    if isinstance(var, (TensorVariable, SymNodeVariable)):
        if var.source is None:
            found.setdefault(var.node, var)
    elif isinstance(var, ConstDictVariable):
        for item in var.items.values():
            _graph_tensors(item, found)
    elif isinstance(getattr(var, "items", None), list) and var.source is None:
        for item in var.items:
            _graph_tensors(item, found)


def _build_entry(fn: types.FunctionType, result: VariableTracker, output: OutputGraph, guards: GuardSet,
                 backend: Callable[..., Any], index: int, start: float) -> CacheEntry:
    outputs: dict[torch.fx.Node, VariableTracker] = {}
    _graph_tensors(result, outputs)
    lineno = fn.__code__.co_firstlineno
    body = PyCodegen(lineno)
    body.graph_outputs = {node: (GRAPH_OUT, i) for i, node in enumerate(outputs)}
    body.reconstruct(result)
    body.emit("RETURN_VALUE")

    name = f"__symexec_{fn.__code__.co_name}_{index}"
    cg = PyCodegen(lineno)
    gm = compiled = None
    trace_seconds = time.perf_counter() - start
    compile_start = time.perf_counter()
    output.install_shape_guards()
    if output.call_node_count() or outputs:
        gm, examples = output.finish(list(outputs.values()))
        try:
            # Backends that re-trace (aot_autograd, inductor) find our fake mode, and with it
            # the symbolic sizes of the inputs, in the tracing context, as under Dynamo.
            with torch._guards.tracing(torch._guards.TracingContext(output.fake_mode)):
                compiled = backend(gm, examples)
        except Exception as e:
            raise BackendCompilerFailed(backend, e) from e
        del examples
        cg.push_null()
        cg.load_const(compiled)
        for graph_input in output.inputs:
            graph_input.source.emit_load(cg)
        cg.call(len(output.inputs))
        cg.store_fast(GRAPH_OUT)
    code = cg.assemble(fn.__code__, name, cg.instructions + body.instructions)
    replacement = types.FunctionType(code, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    replacement.__kwdefaults__ = fn.__kwdefaults__
    checks = compile_guards(guards, fn)
    entry = CacheEntry(checks.check, replacement, checks.guards, checks.first_failure, graph=gm,
                       compiled_graph=compiled, replacement_code=code, trace_seconds=trace_seconds,
                       compile_seconds=time.perf_counter() - compile_start)
    _log_entry(fn, entry)
    return entry


def graph_sizes(gm: torch.fx.GraphModule) -> str:
    """Each tensor node's shape, and where it is symbolic, its concrete shape in this call."""
    lines = []
    for node in gm.graph.nodes:
        example = node.meta.get("example_value")
        if not isinstance(example, torch.Tensor):
            continue
        shape = tuple(example.shape)
        lines.append(f"{node.name}: ({', '.join(str(d) for d in shape)}{',' if len(shape) == 1 else ''})")
        if any(isinstance(d, torch.SymInt) for d in shape):
            concrete = tuple(guarding_hint_or_throw(d) for d in shape)
            lines.append(f"{node.name} (concrete): {concrete}")
    return "\n".join(lines)


def _log_entry(fn: types.FunctionType, entry: CacheEntry) -> None:
    title = f"{fn.__qualname__} ({fn.__code__.co_filename}:{fn.__code__.co_firstlineno})"
    if logs.enabled("graph_code"):
        text = entry.graph.print_readable(print_output=False) if entry.graph is not None else "(no graph: no torch operations)"
        logs.log("graph_code", "TRACED GRAPH of %s\n%s", title, text)
    if logs.enabled("graph_sizes") and entry.graph is not None:
        logs.log("graph_sizes", "TRACED GRAPH TENSOR SIZES of %s\n%s", title, graph_sizes(entry.graph))
    if logs.enabled("guards"):
        logs.log("guards", "GUARDS of %s\n%s", title, "\n".join(f"  {g.text}" for g in entry.guards))
    if logs.enabled("bytecode") and entry.replacement_code is not None:
        logs.log("bytecode", "ORIGINAL BYTECODE of %s\n%s\nMODIFIED BYTECODE %s\n%s", title,
                 disassemble(fn.__code__), entry.replacement_code.co_name, disassemble(entry.replacement_code))
