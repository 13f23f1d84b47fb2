"""torch's compiler API as the user's code calls it: ``torch.compiler.*`` and ``torch._dynamo.*``.

Libraries written for torch.compile talk to it through a handful of functions: they end a
graph (``torch._dynamo.graph_break()``), keep a function out of it (``torch.compiler.disable``,
``torch._dynamo.skip``), ask whether they are being compiled (``torch.compiler.is_compiling()``),
mark input sizes (``torch._dynamo.mark_dynamic``), or register a function to be one node
(``torch._dynamo.allow_in_graph``, which einops calls on its own functions when imported with
torch). symexec honours them as it honours its own ``symexec.graph_break``, ``symexec.disable``,
``symexec.mark_dynamic`` and ``symexec.allow_in_graph``.

This module is the one place that recognises them. It never imports ``torch._dynamo`` (that
would load torch.compile's whole frontend and change torch's functions): a function is one of
torch's when its ``__module__`` and ``__qualname__`` name it *and* that module, if it is loaded,
holds this very object under that name (a user's function called ``graph_break`` in a module
of their own is not one). torch's own tracers (``torch.fx.symbolic_trace``, ``torch.jit.trace``,
``torch.export.export``) are recognised here too: tracing a tracer is slow and fragile, so a
call of one breaks the graph at once. What torch stores for the marks it makes is read where it is stored:

- ``disable`` wraps a function in one carrying ``_torchdynamo_disable`` (and ``__wrapped__``);
  ``skip`` sets ``_torchdynamo_disable`` on the function itself;
- ``mark_dynamic`` / ``maybe_mark_dynamic`` / ``mark_static`` add indices to the tensor's
  ``_dynamo_dynamic_indices`` / ``_dynamo_weak_dynamic_indices`` / ``_dynamo_static_indices``
  sets (``dynamic.py`` reads them, with symexec's own marks);
- ``allow_in_graph(fn)`` adds ``id(fn)`` to ``torch._dynamo.trace_rules._allowed_callable_ids``
  (empty until a user or library registers something; an entry is removed when ``fn`` dies),
  read here lazily from ``sys.modules``: if torch._dynamo was never imported nothing was
  registered; ``disallow_in_graph(op)`` adds the op's id to ``_disallowed_callable_ids``.

The registrations are read when a trace meets the function, not guarded: they decide how a
call is captured (one node, traced into, or run at a break), never what it computes, and
torch.compile too reads them when it traces (it asks for ``torch._dynamo.reset()`` after a
change). A function's disable mark is pinned with the function, and the dimension marks are
guarded on each input tensor (``dynamic.MarksCheck``).
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any

import torch

# What each recognised function is, by (module, qualname): the kinds the trackers act on.
GRAPH_BREAK = "graph_break"  # ends the graph, as symexec.graph_break
IS_COMPILING = "is_compiling"  # True while tracing, a constant of the graph
MARKS_OUTSIDE = "marks"  # changes what later traces see (marks, registrations): runs at a break
TRACER = "tracer"  # a tracer of its own (torch.fx.symbolic_trace, torch.jit.trace...): runs at a break
_KINDS: dict[tuple[str, str], str] = {
    ("torch._dynamo.decorators", "graph_break"): GRAPH_BREAK,
    **dict.fromkeys([
        ("torch.compiler", "is_compiling"), ("torch.compiler", "is_dynamo_compiling"),
        ("torch._utils", "is_compiling"), ("torch._dynamo.external_utils", "is_compiling"),
        ("torch._dynamo.eval_frame", "is_compiling"),
    ], IS_COMPILING),
    **dict.fromkeys([
        ("torch._dynamo.decorators", name) for name in (
            "mark_dynamic", "maybe_mark_dynamic", "mark_static", "mark_static_address", "mark_unbacked",
            "allow_in_graph", "disallow_in_graph", "disable", "skip", "assume_constant_result",
            "forbid_in_graph", "nonstrict_trace")
    ] + [("torch.compiler", name) for name in (
        "allow_in_graph", "disable", "assume_constant_result", "set_stance", "reset", "substitute_in_graph")]
        + [("torch._dynamo", "reset")], MARKS_OUTSIDE),
    **dict.fromkeys([
        ("torch.fx._symbolic_trace", "symbolic_trace"), ("torch.jit._trace", "trace"),
        ("torch.jit._trace", "trace_module"), ("torch.jit._script", "script"), ("torch.export", "export"),
        ("torch.fx.experimental.proxy_tensor", "make_fx"),
    ], TRACER),
}


def compiler_api_kind(fn: Any) -> str | None:
    """What ``fn`` is of torch's compiler API (``GRAPH_BREAK``, ``IS_COMPILING``,
    ``MARKS_OUTSIDE``, ``TRACER``), or None: recognised by its module and qualified name, and, its module
    being loaded, by identity with what that module holds under the name."""
    try:
        key = (fn.__module__, fn.__qualname__)
    except Exception:  # noqa: BLE001 - an object whose attributes raise is none of torch's functions
        return None
    if type(key[0]) is not str or type(key[1]) is not str:
        return None
    kind = _KINDS.get(key)
    if kind is None:
        return None
    module = sys.modules.get(key[0])
    if module is None or getattr(module, key[1], None) is not fn:
        return None
    return kind


# The code of the wrapper ``torch._disable_dynamo`` (torch's own spelling of ``disable``, which
# imports torch._dynamo only when the wrapped function is first called) puts around a function.
TORCH_DISABLE_WRAPPER = torch._disable_dynamo(lambda: None).__code__


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


def in_torch_code(code: types.CodeType) -> bool:
    """Whether ``code`` is torch's own (a file of the torch package)."""
    return code.co_filename.startswith(_TORCH_DIR)


def disabled_by_user(fn: Any) -> bool:
    """Whether ``fn`` carries torch's disable mark (``torch.compiler.disable``,
    ``torch._dynamo.disable`` with ``recursive`` either way, ``torch._dynamo.skip``) on a
    function that is not torch's own: a user's or a library's function that torch.compile runs
    as plain Python at a graph break. (torch marks its own functions too, ``Optimizer.zero_grad``,
    an optimizer's ``_init_group``: those only keep torch.compile's frame hook out of code
    symexec models itself; ``disabled_by_torch`` names them.)"""
    marks = getattr(fn, "__dict__", None)
    if not isinstance(marks, dict):
        return False
    if marks.get("_torchdynamo_disable") is True:
        original = marks.get("_torchdynamo_orig_callable", fn)
    elif getattr(fn, "__code__", None) is TORCH_DISABLE_WRAPPER:
        original = marks.get("__wrapped__")
    else:
        return False
    owner = getattr(original, "__self__", None)  # a bound method: its object's class decides
    module = type(owner).__module__ if owner is not None and not isinstance(owner, type) else \
        getattr(getattr(original, "__func__", original), "__module__", None)
    return not (type(module) is str and (module == "torch" or module.startswith("torch.")))


def disabled_by_torch(fn: types.FunctionType) -> bool:
    """Whether ``fn`` is torch's wrapper that keeps torch.compile out of one of torch's own
    functions: ``torch._disable_dynamo``'s, or ``torch._dynamo.disable``'s (a user's function
    so marked runs as plain Python: ``disabled_by_user``). It only switches torch.compile's
    frame hook off around the call: symexec traces the function it wraps (``__wrapped__``), and
    where the call itself runs at a break, runs the wrapper as it is."""
    return (fn.__code__ is TORCH_DISABLE_WRAPPER or fn.__dict__.get("_torchdynamo_disable") is True) and \
        callable(fn.__dict__.get("__wrapped__")) and not disabled_by_user(fn)


def disable_reason(fn: Any) -> str | None:
    """The ``reason`` given to ``torch._dynamo.disable(fn, reason=...)``, for the break's reason."""
    reason = getattr(fn, "__dict__", {}).get("_torchdynamo_disable_msg")
    return reason if isinstance(reason, str) and reason else None


def skipped_frame(fn: Any) -> Any:
    """The function whose own frame ``fn`` keeps out of compilation while what it calls is
    still compiled (``torch._dynamo.disable(fn, recursive=False)``: the function it wraps;
    ``torch._dynamo.skip(fn)``: ``fn`` itself), or None (not so marked, or a recursive disable,
    whose callees run as plain Python too)."""
    if not disabled_by_user(fn):
        return None
    marks = fn.__dict__
    if marks.get("_torchdynamo_disable_recursive") is False:
        original = marks.get("_torchdynamo_orig_callable")
    elif "_torchdynamo_disable_recursive" not in marks and "_torchdynamo_orig_callable" not in marks \
            and getattr(fn, "__code__", None) is not TORCH_DISABLE_WRAPPER:
        original = fn  # skip's mark, on the function itself
    else:
        return None
    return original if isinstance(original, types.FunctionType) else None


def allowed_in_graph_by_torch(fn: Any) -> bool:
    """Whether ``torch._dynamo.allow_in_graph(fn)`` (or ``torch.compiler.allow_in_graph``)
    registered ``fn``: its id is in torch's allow list, read where torch keeps it if
    torch._dynamo was imported. Only the registration is read, never made."""
    return _in_torch_list("_allowed_callable_ids", fn)


def disallowed_in_graph_by_torch(fn: Any) -> bool:
    """Whether ``torch._dynamo.disallow_in_graph(fn)`` took one of torch's operations out of
    torch.compile's graphs (a call of it breaks the graph there)."""
    return _in_torch_list("_disallowed_callable_ids", fn)


def _in_torch_list(name: str, fn: Any) -> bool:
    rules = sys.modules.get("torch._dynamo.trace_rules")
    ids = getattr(getattr(rules, name, None), "function_ids", None)  # (None until first used)
    return isinstance(ids, set) and id(fn) in ids


def tensor_marks(t: Any) -> tuple[set[int], set[int], set[int]]:
    """The dimensions torch's ``mark_dynamic``, ``maybe_mark_dynamic`` and ``mark_static``
    marked on ``t`` (normalised to ``0 <= d < t.dim()``; a mark out of range is left out, as
    torch.compile ignores it)."""
    ndim = t.dim()
    own = getattr(t, "__dict__", None) or {}  # (what torch set: no class's __getattr__ asked)
    return tuple(  # type: ignore[return-value]
        {d % ndim for d in _index_set(own.get(attr)) if type(d) is int and -ndim <= d < ndim} if ndim else set()
        for attr in ("_dynamo_dynamic_indices", "_dynamo_weak_dynamic_indices", "_dynamo_static_indices"))


def _index_set(value: Any) -> Any:
    """What torch stores as a mark (a set of indices), or nothing for anything else."""
    return value if isinstance(value, (set, frozenset)) else ()
