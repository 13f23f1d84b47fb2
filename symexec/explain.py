"""``symexec.explain(fn, *args, **kwargs)``: one call through a fresh cache, and everything
it did, for a REPL (``str(out)``) and for Jupyter (``out._repr_html_()``).

Nothing of the user's own compiled copies is touched: explain compiles ``fn`` again with the
same options (backend, dynamic, fullgraph) and a backend wrapper that counts the graphs, makes
the call, then reads the cache entries of the function and of every continuation and callee
its graph breaks compiled.
"""

from __future__ import annotations

import dis
import functools
import html
import inspect
import linecache
import os
import re
import types
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from .api import CompiledModule, _Compiled, _forwarder, _state, _wrap, lookup
from .cache import CacheEntry
from .callees import compiled_original
from .guards import Guard, GuardKind
from .resume import CONTINUATION_PREFIX
from .versions import check_supported


@dataclass
class BreakReason:
    """Why a graph ended early, and where: ``reason`` (what the tracer could not model),
    ``hint`` (what to change, or ""), ``filename``/``lineno``/``source_line`` (the user's line),
    ``user_stack`` (the frames inlined down to it, as (file, line, function, source) tuples) and
    ``function`` (whose code broke). ``str()`` of it is the report's paragraph."""

    reason: str  # what was unsupported, in a user's words
    hint: str  # what to do about it
    filename: str | None
    lineno: int | None
    source_line: str
    user_stack: list[tuple[str, int | None, str, str]]  # outermost first: (file, line, function, code)
    function: str  # the compiled function or continuation whose graph it ended

    def __str__(self) -> str:
        where = f"{self.filename}:{self.lineno}" if self.filename else "unknown location"
        text = f"{self.reason} at {where}"
        if len(self.user_stack) > 1:  # inside inlined calls: say through which
            text += "\n    via " + " -> ".join(f"{fn}:{line}" for _, line, fn, _ in self.user_stack)
        if self.source_line:
            text += f"\n    {self.source_line.strip()}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


@dataclass
class FunctionReport:
    """One traced function (the one explained, a continuation, a callee run at a break)."""

    name: str
    kind: str  # "function", "continuation" or "callee"
    entry: CacheEntry
    original_code: types.CodeType

    @property
    def original_disassembly(self) -> str:
        return dis.Bytecode(self.original_code).dis()

    @property
    def generated_disassembly(self) -> str:
        code = self.entry.replacement_code
        return dis.Bytecode(code).dis() if code is not None else "(runs the original function)"

    @property
    def generated_readable(self) -> str:
        return self.entry.readable_code or "(runs the original function)"


GUARDS_SHOWN = 12  # of each function's guards, in the text report


@dataclass
class ExplainOutput:
    """What ``symexec.explain`` returns: everything one call did. Printed (or as ``repr`` in a
    REPL) it is the report; in Jupyter it renders as HTML with the source tinted by graph.

    Attributes:
        graphs: the FX graphs compiled, in order (``graph_count`` of them).
        break_reasons: a ``BreakReason`` for each graph break (``graph_break_count``).
        guards: every guard of every entry made (each has a ``text``).
        recompile_reasons: why each retrace happened.
        functions: a report per traced function (the one explained, its continuations, the
            callees compiled at its breaks), with ``generated_readable`` (the code that runs on a
            hit), ``generated_disassembly`` and ``original_disassembly``.
        fallback_reasons: why an entry runs its original function, for each that does
            (``fallbacks`` says whose).
        trace_seconds, compile_seconds: the time spent tracing and in the backend.
        ops_per_graph: the op targets of each graph.
        result: what the call returned.

    ``tree(depth=4)`` says where the ops come from, line by line through the calls that made
    them (``print(out.tree())``).
    """

    graphs: list[torch.fx.GraphModule]
    break_reasons: list[BreakReason]
    guards: list[Guard]
    recompile_reasons: list[str]
    functions: list[FunctionReport]
    fallback_reasons: list[str]
    trace_seconds: float
    compile_seconds: float
    fn_name: str
    source: tuple[list[str], int] | None = field(default=None, repr=False)  # (lines, first line number)
    filename: str | None = None
    result: Any = field(default=None, repr=False)

    @property
    def graph_count(self) -> int:
        return len(self.graphs)

    @property
    def graph_break_count(self) -> int:
        return len(self.break_reasons)

    @property
    def fallbacks(self) -> list[tuple[str, str, str]]:
        """Every entry that runs its original function, in order: (function, kind, reason)."""
        return [(r.name, r.kind, r.entry.fallback_reason) for r in self.functions if r.entry.fallback_reason]

    @property
    def ops_per_graph(self) -> list[list[Any]]:
        return [[n.target for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]
                for gm in self.graphs]

    def tree(self, depth: int = 4) -> str:
        """Where the graphs' ops come from, as a tree of the lines that made them: each line of
        the explained function with its op count, under it the lines of what it called
        (submodules' ``forward``, inlined functions), down to ``depth`` levels (ops deeper are
        counted on their line at that depth). ``print(out.tree())``."""
        root: dict[tuple[str, int, str], Any] = {}
        counts: dict[tuple, int] = {}
        for gm in self.graphs:
            for node in gm.graph.nodes:
                if node.op not in ("call_function", "call_method", "call_module"):
                    continue
                level, path = root, ()
                for frame in node_frames(node)[:depth]:
                    path = (*path, frame)
                    counts[path] = counts.get(path, 0) + 1
                    level = level.setdefault(frame, {})
        total = sum(len(ops) for ops in self.ops_per_graph)
        lines = [f"{self.fn_name}: {total} op(s) in {self.graph_count} graph(s)"]

        def walk(level: dict, path: tuple, indent: str) -> None:
            for frame, below in level.items():
                filename, lineno, name = frame
                code = linecache.getline(filename, lineno).strip()
                here = (*path, frame)
                lines.append(f"{indent}{os.path.basename(filename)}:{lineno} in {name}: {counts[here]} op(s)"
                             + (f"  {code}" if code else ""))
                walk(below, here, indent + "  ")

        walk(root, (), "  ")
        return "\n".join(lines)

    # -- the REPL view ---------------------------------------------------------------------------
    def __str__(self) -> str:
        ops = sum(len(o) for o in self.ops_per_graph)
        lines = [f"symexec.explain({self.fn_name}): {self.graph_count} graph(s), {self.graph_break_count} graph "
                 f"break(s), {ops} op(s); traced in {self.trace_seconds * 1e3:.1f} ms, compiled in "
                 f"{self.compile_seconds * 1e3:.1f} ms"]
        for i, gm in enumerate(self.graphs, 1):
            names = ", ".join(_op_name(t) for t in self.ops_per_graph[i - 1])
            lines.append(f"  graph {i}: {len(self.ops_per_graph[i - 1])} op(s): {names}")
        for i, reason in enumerate(self.break_reasons, 1):
            lines.append(f"  break {i}: " + str(reason).replace("\n", "\n    "))
        fallbacks = self.fallbacks
        if fallbacks or self.fallback_reasons:
            lines.append(f"  Fallbacks ({len(fallbacks) or len(self.fallback_reasons)}): ran as the original function")
            listed = fallbacks or [("?", "", reason) for reason in self.fallback_reasons]
            lines += [f"    {name} ({kind}): " + reason.replace("\n", "\n      ") if kind else
                      "    " + reason.replace("\n", "\n      ") for name, kind, reason in listed]
        lines += self._guard_lines()
        if self.recompile_reasons:
            lines.append("  recompiles:")
            lines += [f"    {r}" for r in self.recompile_reasons]
        lines.append("  (out.graphs, out.break_reasons, out.guards, out.functions[i].generated_readable, "
                     "and out in Jupyter, for more)")
        return "\n".join(lines)

    __repr__ = __str__

    def _guard_groups(self) -> tuple[list[Guard], list[tuple[FunctionReport, list[Guard]]]]:
        """The global state's guards, once (every entry checks the same), and each function's
        own: how both views show them."""
        shared = list({g.text: g for g in self.guards if g.kind is GuardKind.GLOBAL_STATE}.values())
        return shared, [(r, [g for g in r.entry.guards if g.kind is not GuardKind.GLOBAL_STATE]) for r in self.functions]

    def _guard_lines(self) -> list[str]:
        """The guards grouped, at most ``GUARDS_SHOWN`` of each function's: a model's hundreds
        stay readable."""
        shared, own = self._guard_groups()
        lines = [f"  guards ({len(self.guards)}; out.guards has them all):"]
        if shared:
            lines.append(f"    global state, checked by every entry ({len(shared)}):")
            row = ""
            for guard in shared:  # (packed in rows, no guard cut in two)
                if row and len(row) + len(guard.text) > 96:
                    lines.append(f"      {row};")
                    row = ""
                row = f"{row}; {guard.text}" if row else guard.text
            lines.append(f"      {row}")
        for number, (report, guards) in enumerate(own):
            lines.append(f"    {report.name} ({report.kind}): {len(guards)}")
            lines += [f"      {g.text}" for g in guards[:GUARDS_SHOWN]]
            if len(guards) > GUARDS_SHOWN:
                lines.append(f"      ... {len(guards) - GUARDS_SHOWN} more: out.functions[{number}].entry.guards")
        return lines

    # -- the Jupyter view ------------------------------------------------------------------------
    def _repr_html_(self) -> str:
        graph_lines: set[int] = set()
        for gm in self.graphs:
            for node in gm.graph.nodes:  # (a line that calls what made the op counts too)
                graph_lines.update(line for filename, line, _ in node_frames(node) if filename == self.filename)
        break_lines = {r.lineno for r in self.break_reasons if r.filename == self.filename}
        esc = html.escape
        parts = [_STYLE, '<div class="symexec-explain">',
                 f"<h3>symexec.explain(<code>{esc(self.fn_name)}</code>)</h3>",
                 f"<p>{self.graph_count} graph(s), {self.graph_break_count} graph break(s), "
                 f"{sum(len(o) for o in self.ops_per_graph)} op(s) &middot; traced in "
                 f"{self.trace_seconds * 1e3:.1f} ms, compiled in {self.compile_seconds * 1e3:.1f} ms</p>"]
        if self.source is not None:
            lines, first = self.source
            rows = []
            for number, line in enumerate(lines, first):
                marks = []
                if number in graph_lines:
                    marks.append("graph")
                if number in break_lines:
                    marks.append("break")
                label = " ".join(marks)
                rows.append(f'<tr class="{label}"><td class="n">{number}</td><td class="m">{esc(label)}</td>'
                            f"<td><pre>{esc(line.rstrip())}</pre></td></tr>")
            parts.append('<table class="src">' + "".join(rows) + "</table>")
            parts.append('<p class="legend"><span class="graph">graph</span> a line whose torch operations are in '
                         'a graph &nbsp; <span class="break">break</span> a line where the graph breaks</p>')
        parts.append(_details(f"Graph breaks ({self.graph_break_count})", "".join(
            f"<div class='reason'><b>{esc(r.reason)}</b><br>at <code>{esc(str(r.filename))}:{r.lineno}</code>"
            f"<pre>{esc(r.source_line.strip())}</pre>"
            + (f"<i>hint: {esc(r.hint)}</i>" if r.hint else "")
            + ("<br>user stack:<pre>" + esc("\n".join(f"{f}:{n} in {fn}: {c}" for f, n, fn, c in r.user_stack)) + "</pre>"
               if len(r.user_stack) > 1 else "")
            + "</div>" for r in self.break_reasons) or "<p>none</p>", open_=bool(self.break_reasons)))
        for i, gm in enumerate(self.graphs, 1):
            parts.append(_details(f"Graph {i} ({len(self.ops_per_graph[i - 1])} ops)",
                                  f"<pre>{esc(gm.print_readable(print_output=False))}</pre>"))
        shared, own = self._guard_groups()
        groups = [("global state, checked by every entry", shared)] + [(f"{r.name} ({r.kind})", gs) for r, gs in own]
        parts.append(_details(f"Guards ({len(self.guards)})", "".join(
            f"<p>{esc(title)}: {len(guards)}</p><pre>" + esc("\n".join(
                g.text + (f"    # {g.filename}:{g.lineno}" if g.lineno else "") for g in guards)) + "</pre>"
            for title, guards in groups if guards)))
        for report in self.functions:
            parts.append(_details(f"Code of {report.name} ({report.kind})",
                                  "<p>generated, readable:</p><pre>" + esc(report.generated_readable) + "</pre>"
                                  + "<p>generated bytecode:</p><pre>" + esc(report.generated_disassembly) + "</pre>"
                                  + "<p>original bytecode:</p><pre>" + esc(report.original_disassembly) + "</pre>"))
        fallbacks = self.fallbacks or [("?", "", reason) for reason in self.fallback_reasons]
        if fallbacks:  # (a section only where there is one)
            parts.append(_details(f"Fallbacks ({len(fallbacks)})", "".join(
                f"<div class='reason'><b>{esc(name)}</b>" + (f" ({esc(kind)})" if kind else "")
                + f" ran as the original function:<pre>{esc(reason)}</pre></div>" for name, kind, reason in fallbacks),
                open_=True))
        if self.recompile_reasons:
            parts.append(_details(f"Recompiles ({len(self.recompile_reasons)})", "<pre>" + esc(
                "\n".join(self.recompile_reasons)) + "</pre>"))
        parts.append("</div>")
        return "".join(parts)


_STYLE = """<style>
.symexec-explain { font-family: sans-serif; font-size: 13px; }
.symexec-explain pre { margin: 0; font-family: monospace; white-space: pre-wrap; }
.symexec-explain table.src { border-collapse: collapse; }
.symexec-explain table.src td { padding: 0 6px; vertical-align: top; }
.symexec-explain td.n { color: #888; text-align: right; }
.symexec-explain td.m { color: #555; font-size: 11px; }
.symexec-explain tr.graph { background: #e6f4ea; }
.symexec-explain tr.break, .symexec-explain tr.graph.break { background: #fde7e9; }
.symexec-explain span.graph { background: #e6f4ea; }
.symexec-explain span.break { background: #fde7e9; }
.symexec-explain details { margin: 6px 0; }
.symexec-explain summary { cursor: pointer; font-weight: bold; }
.symexec-explain div.reason { margin: 4px 0 8px 12px; }
</style>"""


def _details(title: str, body: str, open_: bool = False) -> str:
    return f"<details{' open' if open_ else ''}><summary>{html.escape(title)}</summary>{body}</details>"


def _op_name(target: Any) -> str:
    return target if isinstance(target, str) else getattr(target, "__name__", str(target))


_FRAME_LINE = re.compile(r'^  File "(.*)", line (\d+), in (.*)$', re.M)


def node_frames(node: torch.fx.Node) -> list[tuple[str, int, str]]:
    """The user's frames of a graph node, outermost first: (file, line, function); a caller's
    line is that of its call of the next (the node's ``stack_trace``)."""
    return [(f, int(n), fn) for f, n, fn in _FRAME_LINE.findall(node.meta.get("stack_trace") or "")]


def explain(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run ``fn(*args, **kwargs)`` once through a fresh symexec cache and report its graphs,
    graph breaks, guards, recompiles and generated code.

    Args:
        fn: anything ``symexec.compile`` takes (a function, a bound method, a
            ``functools.partial``, a callable object, an ``nn.Module``) or what it returned
            (its options, backend included, are kept).
        *args, **kwargs: the call to explain. Given none, ``explain(fn)`` returns a function
            that explains ``fn`` called with what it is given: ``explain(fn)(x)``, torch's
            spelling (``torch._dynamo.explain``).

    Returns:
        An ``ExplainOutput`` (printed, or shown in Jupyter, it is the report); with no
        arguments, the function above.

    Raises:
        TypeError: ``fn`` is not callable. Whatever the call itself raises propagates.

    Example::

        out = symexec.explain(model.generate_step, x)   # a bound method, as compile takes it
        out.graph_count, out.graph_break_count          # (and ``out`` itself shows the report)
        symexec.explain(model)(x)                       # the same, torch's way
    """
    if not args and not kwargs:
        if not callable(fn):
            raise TypeError(f"symexec.explain expects a function, an nn.Module or a compiled function, "
                            f"not {type(fn).__name__}")
        return _Explainer(fn)
    return _explain(fn, *args, **kwargs)


class _Explainer:
    """``explain(fn)``: call it with ``fn``'s arguments to explain that call."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> ExplainOutput:
        return _explain(self.fn, *args, **kwargs)

    def __repr__(self) -> str:
        name = getattr(self.fn, "__qualname__", type(self.fn).__name__)
        return f"<symexec.explain of {name}: call it with its arguments to explain that call>"


def _explain(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> ExplainOutput:
    check_supported()
    backend: Any = "eager"
    fullgraph, dynamic = False, None
    target = fn
    state = getattr(fn, "_symexec", None)
    if isinstance(fn, CompiledModule):
        original = _state(fn)
        fn, backend, fullgraph, dynamic = fn._orig_mod, original.backend, original.fullgraph, original.dynamic
        target = fn
    elif isinstance(fn, types.MethodType) and compiled_original(fn.__func__) is not None:
        # A compiled function bound as a method: the original, bound to the same object.
        original = _state(fn.__func__)
        target = types.MethodType(original.fn, fn.__self__)
        backend, fullgraph, dynamic = original.backend, original.fullgraph, original.dynamic
    elif state is not None and compiled_original(fn) is not None:  # (not a user's wrapper of one)
        original = _state(fn)
        target, backend, fullgraph, dynamic = original.fn, original.backend, original.fullgraph, original.dynamic
    module = None
    if isinstance(target, torch.nn.Module):
        module = target
        target = type(target).forward
        args = (module, *args)
    if not callable(target):
        raise TypeError(f"symexec.explain expects a function, an nn.Module or a compiled function, "
                        f"not {type(fn).__name__}")
    shown = _shown_function(target)  # whose source the report shows
    if not isinstance(target, types.FunctionType):  # a bound method, a partial...: as compile takes it
        target = _forwarder(target)
    compiled_graphs: list[torch.fx.GraphModule] = []
    inner = lookup(backend)

    def counting(gm: torch.fx.GraphModule, example_inputs: list) -> Callable[..., Any]:
        compiled_graphs.append(gm)
        return inner(gm, example_inputs)

    root = _Compiled(target, counting, fullgraph, dynamic)
    wrapper = _wrap(root)
    result = wrapper(*args, **kwargs)
    reports = _reports(root)
    entries = [r.entry for r in reports]
    return ExplainOutput(
        graphs=compiled_graphs,
        break_reasons=_unique_breaks(reports),
        guards=[g for e in entries for g in e.guards],
        recompile_reasons=[r for s in _states(root) for r in s.cache.recompile_reasons],
        functions=reports,
        fallback_reasons=[e.fallback_reason for e in entries if e.fallback_reason],
        trace_seconds=sum(e.trace_seconds for e in entries),
        compile_seconds=sum(e.compile_seconds for e in entries),
        fn_name=getattr(module, "__class__", type(None)).__name__ if module is not None else target.__qualname__,
        source=_source(shown),
        filename=shown.__code__.co_filename,
        result=result,
    )


def _user_function(target: Any) -> types.FunctionType:
    """The Python function a call of ``target`` runs first: a bound method's, a partial's, a
    callable object's ``__call__`` (else ``target`` made a forwarder, whose code it is)."""
    while not isinstance(target, types.FunctionType):
        if isinstance(target, types.MethodType):
            target = target.__func__
        elif isinstance(target, functools.partial):
            target = target.func
        elif isinstance(getattr(type(target), "__call__", None), types.FunctionType):
            target = type(target).__call__
        else:
            return _forwarder(target)
    return target


def _shown_function(target: Any) -> types.FunctionType:
    """The function whose source the report shows: the one a call of ``target`` runs first,
    past the ``functools.wraps`` decorators around it (transformers wraps a model's forward
    twice: the forward is what the user reads), where the wrapped one is a Python function."""
    fn = _user_function(target)
    try:
        unwrapped = inspect.unwrap(fn)
    except ValueError:  # (a cycle of __wrapped__)
        return fn
    return unwrapped if isinstance(unwrapped, types.FunctionType) and compiled_original(fn) is None else fn


def _states(root: _Compiled) -> list[_Compiled]:
    # (a generator or coroutine function run at a break has an untraced wrapper: no state)
    states = [root] + [w._symexec for w in root.related.values() if hasattr(w, "_symexec")]
    return list({id(s): s for s in states}.values())  # (the root is its own callee too: recursion)


def _reports(root: _Compiled) -> list[FunctionReport]:
    reports = []
    for state in _states(root):
        code = state.fn.__code__
        kind = "function" if state is root else ("continuation" if code.co_name.startswith(CONTINUATION_PREFIX) else "callee")
        for entry in state.cache.entries:
            reports.append(FunctionReport(code.co_name if kind != "callee" else state.fn.__qualname__, kind, entry, code))
    reports.sort(key=lambda r: r.entry.serial)
    return reports


def _break_reason(report: FunctionReport) -> BreakReason:
    e = report.entry.break_reason
    return BreakReason(e.reason, e.hint, e.filename, e.lineno, e.source_line, list(e.user_stack), report.name)


def _unique_breaks(reports: list[FunctionReport]) -> list[BreakReason]:
    """Each graph break once. A break inside an inlined call also ends the graph of every
    frame it unwinds through, each of which then runs its callee compiled, where the same break
    comes back one frame shorter: ``fn -> middle -> leaf: print`` is one break, reported by the
    frame it is in (``leaf``), with the longest user stack that led to it."""
    reasons = [_break_reason(r) for r in reports if r.entry.break_reason is not None]
    stacks = [[frame[:3] for frame in r.user_stack] for r in reasons]  # (file, line, function)
    deeper = {i: _same_break_deeper(i, reasons, stacks) for i in range(len(reasons))}
    for i in sorted(deeper, key=lambda i: -len(stacks[i])):  # outermost first: along a chain
        j = deeper[i]
        if j is not None and len(reasons[i].user_stack) > len(reasons[j].user_stack):
            reasons[j].user_stack = reasons[i].user_stack
    return [r for i, r in enumerate(reasons) if deeper[i] is None]


def _same_break_deeper(i: int, reasons: list[BreakReason], stacks: list[list[tuple]]) -> int | None:
    """The report of break ``i`` by the nearest frame it passed through: the same reason at the
    same place, its user stack a tail of break ``i``'s."""
    frames = stacks[i]
    for depth in range(1, len(frames)):
        for j in range(len(reasons)):
            if reasons[j].reason == reasons[i].reason and stacks[j] == frames[depth:]:
                return j
    return None


def _source(fn: types.FunctionType) -> tuple[list[str], int] | None:
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    return lines, first
