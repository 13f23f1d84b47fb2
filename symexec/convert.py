"""One frame, from real arguments to a ``CacheEntry``: trace, compile the graph, write the code.

What the tracer cannot model (``Unsupported``) becomes a graph break (``breaks.py``); where
even that is impossible, an entry that runs the original function under the guards gathered
so far: those guards pin every value the trace looked at before it stopped, so the same
inputs would stop at the same place. symexec's own bugs do the same with a warning, unless
``config.raise_on_internal_error`` is set.
"""

from __future__ import annotations

import gc
import inspect
import itertools
import os
import sys
import linecache
import threading
import time
import types
import warnings
import weakref
from typing import Any, Callable

import torch
import torch._guards
from torch.fx.experimental.symbolic_shapes import guarding_hint_or_throw

from . import global_state, logs
from .cache import CacheEntry
from .codegen import GRAPH_OUT, PyCodegen, disassemble, guarded_function
from .config import Config
from .exc import BackendCompilerFailed, InternalError, StoppedAtBreak, SymexecWarning, Unsupported
from .guard_compile import compile_guards, signature_text
from .guards import GuardSet
from .output_graph import OutputGraph, with_assertions
from .trace import Trace
from .source import PrivateObjectSource
from .breaks import BreakPlan
from .callees import with_compiled_callees
from .dynamic import DynamicPolicy
from .torch_api import disabled_by_user
from .translator import InstructionTranslator, Program
from .variables import TensorVariable, VariableTracker
from .variables.tensor import SymNodeVariable

_graph_numbers = itertools.count(1)  # names the compiled graphs in the readable code, like Dynamo
CompileFn = Callable[[types.FunctionType], Callable[..., Any]]


# Called with (function, error) on every internal error while compiling, before it falls back
# or raises: the test suite fails a test on an internal error it did not expect.
internal_error_hooks: list[Callable[[types.FunctionType, BaseException], None]] = []
_warned: "weakref.WeakSet[types.FunctionType]" = weakref.WeakSet()  # warned once about an internal error


def convert_frame(fn: types.FunctionType, args: tuple, kwargs: dict, *, backend: Callable[..., Any],
                  fullgraph: bool, config: Config, index: int, policy: DynamicPolicy,
                  compile_fn: CompileFn, hold_weakly: bool = False) -> CacheEntry:
    """Trace ``fn`` on these arguments into a cache entry. (``hold_weakly``: the entry reaches
    ``fn`` through a weak reference: a callee's cache must not keep it alive.)

    Where the trace meets what it cannot model, it is run again and stopped just before that
    instruction (a clean state: nothing half-done by an inlined callee), and the entry becomes
    a graph break: the graph so far, the instruction run for real, and a continuation.

    However it ends (an entry, an error, a ``KeyboardInterrupt``), torch's global state is as
    it was before: grad mode, autocast, no mode left on the torch-function or dispatch stacks.
    """
    saved = _TorchState()
    progress = _Progress(fn) if logs.enabled("progress") else None
    # No cyclic garbage collection while tracing: a trace allocates much, and in a process
    # holding models each full collection walks all their objects (a tenth of a model's first
    # call); it runs again, if it was on, as soon as the trace ends, however it ends.
    collecting = gc.isenabled()
    gc.disable()
    # The user's saved-tensor hooks (torch.autograd.graph.saved_tensors_hooks) run on what the
    # compiled code saves when it runs, not on the fake tensors of the trace or the backend's
    hooks_tracing = torch._C._autograd._saved_tensors_hooks_set_tracing(True)
    try:
        try:
            return _convert_frame(fn, args, kwargs, backend=backend, fullgraph=fullgraph, config=config, index=index,
                                  policy=policy, compile_fn=compile_fn, hold_weakly=hold_weakly)
        except BackendCompilerFailed:
            if policy.static_floats or not policy.symbolic_floats:
                raise
            # Traced again with its float inputs constants. AOTAutograd turns symbolic floats
            # into tensors where it can and asks for a restart with them constant where it
            # cannot (TensorifyScalarRestartAnalysis, torch.compile's signal); inductor also
            # refuses a float that became a constant as a graph output.
            policy.static_floats = True
            return _convert_frame(fn, args, kwargs, backend=backend, fullgraph=fullgraph, config=config, index=index,
                                  policy=policy, compile_fn=compile_fn, hold_weakly=hold_weakly)
    finally:
        torch._C._autograd._saved_tensors_hooks_set_tracing(hooks_tracing)
        if collecting:
            gc.enable()
        saved.restore()
        if progress is not None:
            progress.end()


PROGRESS_AFTER = 1.0  # seconds of one compile before the ``progress`` log says it is compiling


class _Progress:
    """The ``progress`` log of one compile (trace and backend): a line once it has run for
    ``PROGRESS_AFTER`` seconds (from a timer thread: the compile itself never waits), and one when
    it ends, with its time. A shorter compile logs nothing."""

    def __init__(self, fn: types.FunctionType) -> None:
        code = fn.__code__
        self.what = f"{fn.__qualname__} ({code.co_filename}:{code.co_firstlineno})"
        self.start = time.perf_counter()
        self.said = False
        self.timer = threading.Timer(PROGRESS_AFTER, self._say)
        self.timer.daemon = True
        self.timer.start()

    def _say(self) -> None:
        self.said = True
        logs.log("progress", "compiling %s: %.0f s so far...", self.what, time.perf_counter() - self.start)

    def end(self) -> None:
        self.timer.cancel()
        if self.said:
            logs.log("progress", "compiled %s in %.1f s", self.what, time.perf_counter() - self.start)


def _convert_frame(fn: types.FunctionType, args: tuple, kwargs: dict, *, backend: Callable[..., Any],
                   fullgraph: bool, config: Config, index: int, policy: DynamicPolicy,
                   compile_fn: CompileFn, hold_weakly: bool = False) -> CacheEntry:
    start = time.perf_counter()
    break_at: tuple[int, int] | None = None
    break_below: list[tuple[int, int]] = []
    reason: Unsupported | None = None
    state = global_state.read()
    grad_mode = torch.is_grad_enabled()
    for attempt in range(3):
        guards = GuardSet()
        guards.global_state(state)
        guards.function_match(fn, args, kwargs, weak=hold_weakly)
        if reason is not None and getattr(reason, "break_guards", None) is not None:
            reason.break_guards(guards)
        trace = Trace(guards, policy, fullgraph=fullgraph)
        if not global_state.modes_transparent():  # a TorchFunctionMode or dispatch mode is active
            return _fallback_entry(fn, guards, "called under a torch function or dispatch mode", start,
                                   fullgraph=fullgraph, warn=True)
        if torch._C._is_tracing():  # torch.jit.trace records the ops as they run (a guarded state)
            return _fallback_entry(fn, guards, "called inside torch.jit.trace", start, fullgraph=fullgraph, warn=True)
        if global_state.in_functorch_transform():
            return _fallback_entry(fn, guards, "called inside a functorch transform (torch.vmap, torch.func.grad...)",
                                   start, fullgraph=fullgraph, warn=True)
        if getattr(fn, "_symexec_disabled", False):
            return _fallback_entry(fn, guards, "the function is marked symexec.disable", start, fullgraph=fullgraph)
        if disabled_by_user(fn):
            return _fallback_entry(fn, guards, "the function is marked torch.compiler.disable", start, fullgraph=fullgraph)
        try:
            tx = InstructionTranslator.for_function(fn, args, kwargs, trace, config)
            tx.break_at, tx.break_below = break_at, break_below
            stopped = tx
            try:
                tx.run()
            except StoppedAtBreak as stop:  # a nested break: the frame that breaks, inside the call at break_at
                stopped = stop.tx
            finally:
                torch._C._set_grad_enabled(grad_mode)  # a traced `with no_grad()` may have changed it
                while trace.torch.active_contexts:  # and a traced autocast block that did not end
                    torch.amp.autocast_mode._exit_autocast(trace.torch.active_contexts.pop())
                global_state.pop_functorch_levels()  # and a torch.vmap the trace stopped inside
            if any(generator.cleanup_runs_code() for generator in trace.memos.generators):
                raise Unsupported("a generator left suspended inside a try or with block (CPython runs its "
                                  "cleanup when the generator is collected)")
            if stopped.stopped_at_break:
                assert reason is not None
                return _build_entry(fn, stopped, guards, backend, index, start, compile_fn, reason)
            return _build_entry(fn, tx, guards, backend, index, start, compile_fn, None)
        except Unsupported as e:
            if fullgraph:
                raise
            if attempt == 0 and e.break_point is not None and Program.of(fn.__code__).in_loop(e.break_point[0]):
                # As torch.compile skips a frame whose graph breaks in a loop: the frame runs as
                # its code, and what it calls is compiled (a continuation inside the loop would be
                # retraced for every value the loop changes).
                _try_shape_guards(trace.graph)
                e.reason += f"; in a loop, so {fn.__qualname__} runs as its code, what it calls compiled"
                e.in_loop = True
                if e.break_guards is not None:  # (the entry is for the world the break is in)
                    e.break_guards(guards)
                return _fallback_entry(fn, guards, str(e), start, with_compiled_callees(fn, compile_fn),
                                       loop_break=_without_tracebacks(e))
            if attempt == 0 and e.break_point is not None:
                # Kept in the entry: without its traceback, whose frames hold this call's arguments.
                break_at, break_below, reason = e.break_point, e.nested, _without_tracebacks(e)
                continue
            if break_below:  # the nested break could not be made: the frame breaks at the call
                break_below = []
                continue
            _try_shape_guards(trace.graph)
            text = str(e) if reason is None or e is reason else f"{reason}\n  (and the graph break could not be made: {e})"
            return _fallback_entry(fn, guards, text, start, with_compiled_callees(fn, compile_fn))
        except BackendCompilerFailed:
            raise
        except Exception as e:
            where = _location_text(fn, trace)
            for hook in list(internal_error_hooks):
                hook(fn, e)
            if config.raise_on_internal_error:
                raise
            if fullgraph:  # the graph promised cannot be given: say why, never run eagerly in silence
                if isinstance(e, InternalError):
                    raise
                raise InternalError(f"internal error while compiling {fn.__qualname__} (fullgraph=True) at "
                                    f"{where}: {type(e).__name__}: {e}") from e
            text = f"internal error at {where}: {type(e).__name__}: {e}"
            if fn not in _warned:
                _warned.add(fn)
                warnings.warn(f"symexec: {text}; running {fn.__qualname__} eagerly (reported once per function; "
                              f"SYMEXEC_LOGS=fallbacks logs every fallback)", SymexecWarning, stacklevel=user_stacklevel())
            return _fallback_entry(fn, guards, text, start)
        finally:
            trace.release()  # the trace's cycles held this call's arguments until the cycle collector ran
    raise AssertionError("unreachable")


class _TorchState:
    """Torch's global state before a trace, put back after it however it ended."""

    def __init__(self) -> None:
        self.grad = torch.is_grad_enabled()
        self.function_modes = torch._C._len_torch_function_stack()
        self.dispatch_modes = torch._C._len_torch_dispatch_stack()
        self.fake = torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE)
        self.tracing = torch._guards.TracingContext.try_get()
        self.autocast_cache = torch.is_autocast_cache_enabled()
        self.autocast = [(d, torch.is_autocast_enabled(d), torch.get_autocast_dtype(d))
                         for d in global_state.AUTOCAST_DEVICES]

    def restore(self) -> None:
        if torch.is_grad_enabled() != self.grad:
            torch._C._set_grad_enabled(self.grad)
        while torch._C._len_torch_function_stack() > self.function_modes:
            torch._C._pop_torch_function_stack()
        if torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE) is not self.fake:
            if self.fake is None:
                torch._C._unset_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE)
            else:
                torch._C._set_dispatch_mode(self.fake)
        while torch._C._len_torch_dispatch_stack() > self.dispatch_modes:
            torch._C._pop_torch_dispatch_stack()
        if torch._guards.TracingContext.try_get() is not self.tracing:
            torch._guards._TLS.tracing_context = self.tracing
        if torch.is_autocast_cache_enabled() != self.autocast_cache:
            torch.set_autocast_cache_enabled(self.autocast_cache)
        for device, enabled, dtype in self.autocast:
            if torch.is_autocast_enabled(device) != enabled:
                torch.set_autocast_enabled(device, enabled)
            if torch.get_autocast_dtype(device) != dtype:
                torch.set_autocast_dtype(device, dtype)


def _without_tracebacks(error: BaseException) -> BaseException:
    """``error`` with no traceback on it or on the exceptions it chains: a traceback holds the
    frames it passed through, and with them the tensors of the call being traced."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [error]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        e.__traceback__ = None
        todo += [e.__cause__, e.__context__]
    return error


def _location_text(fn: types.FunctionType, trace: Trace | None) -> str:
    """The user's file:line where the trace was (the function's first line if it had not begun)."""
    if trace is not None and trace.location[1] is not None:
        filename, lineno, name = trace.location
        return f"{filename}:{lineno} in {name}"
    code = fn.__code__
    return f"{code.co_filename}:{code.co_firstlineno} in {code.co_name}"


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def user_stacklevel() -> int:
    """The ``stacklevel`` of ``warnings.warn`` that points at the user's call: the first frame
    outside the symexec package, however deep symexec's own calls are."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == _PACKAGE_DIR:
        frame, level = frame.f_back, level + 1
    return level


def _try_shape_guards(output: OutputGraph) -> None:
    """A fallback entry keeps the symbolic conditions met so far, when they can be rendered."""
    try:
        output.install_shape_guards()
    except Exception as e:  # noqa: BLE001 - a fallback entry is correct with fewer guards
        logs.log("debug", "no shape guards for a fallback entry: %s", e)


def _fallback_entry(fn: types.FunctionType, guards: GuardSet, reason: str, start: float,
                    runs: types.FunctionType | None = None, *, fullgraph: bool = False, warn: bool = False,
                    loop_break: Unsupported | None = None) -> CacheEntry:
    """An entry that runs the original code (``runs``: a copy whose callees are compiled).
    ``warn``: the whole frame runs uncompiled for a reason of the call's world (a mode, a
    transform): said once per function with a ``SymexecWarning``, as an internal error is.
    ``loop_break``: the graph breaks in a loop, the frame's own code runs by design: it is
    the entry's graph break (logged and explained as one), not a failure.

    Under ``fullgraph=True`` there is none: ``Unsupported`` names why, at the function's line."""
    code = inspect.unwrap(fn).__code__  # (symexec.disable's wrapper: the user's own function)
    if fullgraph:
        error = Unsupported(f"fullgraph=True, but {fn.__qualname__} would run as the original function: {reason}")
        error.add_location(code.co_filename, code.co_firstlineno,
                           linecache.getline(code.co_filename, code.co_firstlineno), code.co_name)
        raise error
    if warn and fn not in _warned:
        _warned.add(fn)
        warnings.warn(f"symexec: {fn.__qualname__} was {reason}; it runs uncompiled there (reported once per "
                      f"function; SYMEXEC_LOGS=fallbacks logs every fallback)", SymexecWarning,
                      stacklevel=user_stacklevel())
    logs.log("debug", "running %s as the original function: %s", fn.__qualname__, reason)
    if logs.enabled("fallbacks") and loop_break is None:
        logs.log("fallbacks", "Running %s (%s:%s) as the original function: %s", fn.__qualname__,
                 code.co_filename, code.co_firstlineno, reason)
    try:
        compiled = compile_guards(guards, fn)
        check, guard_list, first_failure = compiled.check, compiled.guards, compiled.first_failure
    except Exception as e:  # noqa: BLE001 - the original function is right under any guards
        for hook in list(internal_error_hooks):
            hook(fn, e)
        logs.log("fallbacks", "no guards for the fallback entry of %s (%s: %s): it runs for every call",
                 fn.__qualname__, type(e).__name__, e)
        check, guard_list, first_failure = _always, [], _never_fails
    entry = CacheEntry(check, runs or fn, guard_list, first_failure, fallback_reason=reason,
                       trace_seconds=time.perf_counter() - start, break_reason=loop_break)
    if loop_break is not None:
        _log_entry(fn, entry)
    return entry


def _always(*args: Any, **kwargs: Any) -> bool:
    return True


def _never_fails(*args: Any, **kwargs: Any) -> int:
    return -1


def _graph_values(var: VariableTracker, found: dict[torch.fx.Node, VariableTracker], seen: set[int] | None = None) -> None:
    """Graph values (tensors, symbolic numbers) that ``var`` holds, in order: outputs."""
    seen = set() if seen is None else seen
    if id(var) in seen:
        return
    seen.add(id(var))
    if isinstance(var, (TensorVariable, SymNodeVariable)):
        if var.source is None:
            found.setdefault(var.node, var)
        return
    for sub in var.subvalues():  # (a container from the inputs may hold new values too)
        _graph_values(sub, found, seen)


def _build_entry(fn: types.FunctionType, tx: InstructionTranslator, guards: GuardSet, backend: Callable[..., Any],
                 index: int, start: float, compile_fn: CompileFn, reason: Unsupported | None) -> CacheEntry:
    """The replacement code: call the graph, replay side effects, then return (or, at a graph
    break, run the breaking instruction and call the continuation)."""
    output, side_effects = tx.trace.graph, tx.trace.side_effects
    lineno = fn.__code__.co_firstlineno
    body = PyCodegen(lineno)
    private = list({id(root.value): root.value for i in output.inputs
                    if isinstance(root := i.source.root(), PrivateObjectSource)}.values())
    body.share_private(private)
    if reason is None:
        live: list[VariableTracker] = [tx.return_value]  # type: ignore[list-item]
    else:
        plan = BreakPlan(tx, reason)
        live = plan.live_values()
    side_effects.drop_unreachable_private(live)
    outputs: dict[torch.fx.Node, VariableTracker] = {}
    for var in [*live, *side_effects.values()]:
        _graph_values(var, outputs)
    body.graph_outputs = {node: (GRAPH_OUT, i) for i, node in enumerate(outputs)}
    writes = side_effects.build(body)
    if reason is None:
        result = body.new_temp()
        body.reconstruct(tx.return_value)  # type: ignore[arg-type]
        body.store_fast(result)
        side_effects.apply(body, writes)
        body.load_fast(result)
        body.emit("RETURN_VALUE")
    else:
        plan.emit(body, fn, compile_fn, lambda: side_effects.apply(body, writes))

    name = f"__symexec_{fn.__code__.co_name}_{index}"
    cg = PyCodegen(lineno)
    cg.share_private(private)
    cg.make_private(private)
    gm = compiled = None
    trace_seconds = time.perf_counter() - start
    compile_start = time.perf_counter()
    grad_mode = output.grad_mode_only() if not outputs else None
    if grad_mode is not None:  # (a graph that only sets the grad mode: set here, as torch.compile drops it)
        cg.call_const(torch._C._set_grad_enabled, lambda: [cg.load_const(grad_mode)])
        cg.emit("POP_TOP")
    elif output.call_node_count() or outputs:
        gm, examples = output.finish(list(outputs.values()))
        if not outputs and not output.call_node_count():
            gm = None  # (only pure nodes no value uses, dropped: no graph to compile, as under Dynamo)
    if gm is not None:
        if output.numbers_only(gm):
            compiled = gm
        else:
            try:
                # Backends that re-trace (aot_autograd, inductor) find our fake mode, and with
                # it the symbolic sizes of the inputs, in the tracing context, as under Dynamo.
                with torch._guards.tracing(torch._guards.TracingContext(output.fake_mode)):
                    compiled = backend(gm, examples)
            except Exception as e:
                raise BackendCompilerFailed(backend, e) from e
            if output.assertions:
                compiled = with_assertions(compiled, output.assertions)
        del examples
        cg.push_callable(lambda: cg.load_const(compiled, name=f"__compiled_fn_{next(_graph_numbers)}"))
        for graph_input in output.inputs:
            graph_input.source.emit_load(cg)
        cg.call(len(output.inputs))
        cg.store_fast(GRAPH_OUT)
    # After the backend: AOTAutograd may specialise what the trace left symbolic (a float it
    # cannot turn into a tensor), and the guards must pin that too.
    output.install_shape_guards()
    checks = compile_guards(guards, fn)
    instructions = [*cg.instructions, *body.instructions]
    code = cg.assemble(fn.__code__, name, instructions)
    readable = body.readable(f"def {name}({signature_text(fn.__code__)}):", other=cg)
    _, defaults, kwdefaults = checks.parameters  # as the entry takes them (guarded; the function's may change)
    replacement = types.FunctionType(code, fn.__globals__, name, defaults, fn.__closure__)
    replacement.__kwdefaults__ = kwdefaults
    replacement.__qualname__ = fn.__qualname__  # a call that does not fit reads like eager's TypeError

    # The guards spliced in front of the replacement's code, now: every hit is one call, which
    # returns MISS when they fail (None where they cannot be spliced: a hit then calls both).
    merged = guarded_function(replacement, checks.check, held=(fn,))
    entry = CacheEntry(checks.check, replacement, checks.guards, checks.first_failure, graph=gm, merged=merged,
                       compiled_graph=compiled, replacement_code=code, trace_seconds=trace_seconds,
                       compile_seconds=time.perf_counter() - compile_start, break_reason=reason,
                       render_readable=readable)
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
    if logs.enabled("graph_breaks") and entry.break_reason is not None:
        logs.log("graph_breaks", "Graph break in %s: %s", title, entry.break_reason)
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
