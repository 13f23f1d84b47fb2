"""Compiling an entry's guards (a ``GuardSet``) into generated functions with the user's
function's signature: ``check``, one flat ``and`` of the guards' expressions (every source
several guards go through computed once), and its explainer ``first_failure``, compiled from
the same text the first time a miss is explained."""

from __future__ import annotations

import collections
import math
import os
import re
import types
from typing import Any

import torch

from . import faults
from .guards import Guard, GuardSet, exact_key, exact_keys
from .source import _CONSTANTS, Source, peek, remaining, safe_name


class CompiledGuards:
    """The guards of an entry as generated functions with the user's function's signature:
    ``check`` -> bool (a guard that raises is a failed one), whose code codegen.guarded_function
    splices in front of the replacement so that a cache hit is one call, and ``first_failure``
    -> the index of the first failing guard or -1. Only ``check`` is compiled with the entry;
    ``first_failure``, from the same text, the first time a miss is explained: the first call
    of a model does not pay for compiling its hundreds of guards twice."""

    def __init__(self, check: types.FunctionType, guards: list[Guard], sources: dict[str, str],
                 namespace: dict[str, Any], filename: str, parameters: tuple) -> None:
        self.check, self.guards, self.namespace = check, guards, namespace
        self._sources, self._filename = sources, filename
        self.parameters = parameters  # the function's code and defaults as the entry takes them
        self._compiled: dict[str, types.FunctionType] = {}

    def _compile(self, name: str) -> types.FunctionType:
        if name not in self._compiled:
            scope = dict(self.namespace)
            exec(compile(self._sources[name], self._filename, "exec"), scope)
            generated = scope[name]
            generated.__defaults__, generated.__kwdefaults__ = self.parameters[1:]
            self._compiled[name] = generated
        return self._compiled[name]

    def first_failure(self, *args: Any, **kwargs: Any) -> int:
        return self._compile("___first_failure")(*args, **kwargs)


def signature_text(code: types.CodeType) -> str:
    """The parameter list of ``code`` without defaults (they are attached afterwards)."""
    names = [safe_name(n) for n in code.co_varnames]
    npos, nposonly, nkw = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
    params = list(names[:npos])
    if nposonly:
        params.insert(nposonly, "/")
    idx = npos + nkw
    if code.co_flags & 0x04:  # CO_VARARGS
        params.append("*" + names[idx])
        idx += 1
    elif nkw:
        params.append("*")
    params.extend(names[npos : npos + nkw])
    if code.co_flags & 0x08:  # CO_VARKEYWORDS
        params.append("**" + names[idx])
    return ", ".join(params)


def _shared_subexpressions(guards: list[Guard]) -> list[str]:
    """The guard expressions, with every source that several guards go through computed once:
    its first use becomes ``(___tN := self.h[1].attn)`` and later ones ``___tN``.

    A model's guards reach hundreds of parameters through the same module attributes; each
    nn.Module attribute read runs Python code, so sharing them is most of a cache hit's cost.
    In one flat ``and`` chain a later use only runs when the defining one did (a guard that
    stops early makes the whole chain false).
    """
    def sources_of(guard: Guard) -> list[Source]:
        return [s for s in (guard.source, guard.other, *guard.more) if s is not None]

    uses: dict[Source, int] = {}
    for guard in guards:
        for top in sources_of(guard):
            # Each mention counts (a tensor guard reads its source six times).
            mentions = max(1, len(_uses(top.expr(), guard.expr)))
            source: Any = top
            while isinstance(source, Source):
                uses[source] = uses.get(source, 0) + mentions
                source = getattr(source, "base", None)
    names: dict[Source, str] = {}
    defined: set[Source] = set()

    def render(source: Source) -> str:
        if source in defined:
            return names[source]
        base = getattr(source, "base", None)
        if not isinstance(base, Source):
            return source.expr()
        if hasattr(source, "expr_with"):  # a call over its base (object.__getattribute__(b, n))
            text = source.expr_with(render(base))
        elif source.expr().startswith(base.expr()):
            text = render(base) + source.expr()[len(base.expr()):]
        else:
            return source.expr()  # not a chain (peek(it, 0)): left as it is
        if uses.get(source, 0) < 2:
            return text
        names[source] = f"___t{len(names)}"
        defined.add(source)
        return f"({names[source]} := {text})"

    exprs = []
    for guard in guards:
        expr = guard.expr
        for source in sources_of(guard):
            if not isinstance(getattr(source, "base", None), Source):
                continue
            spans = _uses(source.expr(), expr)
            if spans:
                rendered = render(source)
                reuse = names.get(source, rendered)
                for i, (start, end) in reversed(list(enumerate(spans))):
                    expr = expr[:start] + (reuse if i else rendered) + expr[end:]
        exprs.append(expr)
    return _shared_size_calls(exprs)


# The string literals of a guard expression (escaped reprs of exact str and bytes): a source's
# text inside one is data, not a use of the source.
_STRING_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'" r'|"(?:[^"\\]|\\.)*"', re.S)


_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _uses(text: str, expr: str) -> list[tuple[int, int]]:
    """Where the source expression ``text`` is used in ``expr``: not inside a longer name or
    after a dot, and not in a string literal (found with ``str.find``: a regex per source
    compiled per trace cost more than the rest of compiling the guards)."""
    spans, start = [], expr.find(text)
    literals = None
    while start >= 0:
        end = start + len(text)
        if (start == 0 or (expr[start - 1] not in _NAME_CHARS and expr[start - 1] != ".")) and \
                (end == len(expr) or expr[end] not in _NAME_CHARS):
            if literals is None:
                literals = [m.span() for m in _STRING_LITERAL.finditer(expr)] if ("'" in expr or '"' in expr) else []
            if not any(a <= start < b for a, b in literals):
                spans.append((start, end))
                start = expr.find(text, end)
                continue
        start = expr.find(text, start + 1)
    return spans


def _code_matches(pattern: re.Pattern, expr: str) -> list[re.Match]:
    """The matches of ``pattern`` (a size or stride call) in ``expr`` that start outside its
    string literals."""
    if ".size()" not in expr and ".stride()" not in expr:
        return []
    literals = [m.span() for m in _STRING_LITERAL.finditer(expr)] if ("'" in expr or '"' in expr) else []
    return [m for m in pattern.finditer(expr) if not any(a <= m.start() < b for a, b in literals)]


# (an index may itself be a constant: ``d[___const[140...]]``)
_SIZE_CALL = re.compile(r"(?<![\w.\]])((?:\(___t\d+ := [^()]*\)|[A-Za-z_][\w.]*(?:\[(?:[^\[\]]|\[[^\[\]]*\])*\])*)\.(?:size|stride)\(\))")


def _shared_size_calls(exprs: list[str]) -> list[str]:
    """``a.size()`` and ``a.stride()`` computed once for all the shape guards that read them."""
    counts: dict[str, int] = {}
    for expr in exprs:
        for match in _code_matches(_SIZE_CALL, expr):
            counts[match.group(1)] = counts.get(match.group(1), 0) + 1
    names: dict[str, str] = {}
    result = []
    for expr in exprs:
        def share(match: re.Match) -> str:
            call = match.group(1)
            if counts.get(call, 0) < 2:
                return call
            if call in names:
                return names[call]
            names[call] = f"___s{len(names)}"
            return f"({names[call]} := {call})"
        replaced = [(match, share(match)) for match in _code_matches(_SIZE_CALL, expr)]  # in order
        for match, text in reversed(replaced):
            expr = expr[: match.start()] + text + expr[match.end():]
        result.append(expr)
    return result


def _entry_constants(guards: list[Guard], text: str) -> dict[int, Any]:
    """``___const`` of one entry: the objects its text names as ``___const[<id>]``, held by
    the entry (freed with it), not by a global table."""
    constants: dict[int, Any] = {}
    for guard in guards:  # what the guards' sources name
        for source in (guard.source, guard.other, *guard.more):
            while isinstance(source, Source):
                for box in source.__dict__.get("_const_boxes", ()):
                    constants[id(box.value)] = box.value
                source = getattr(source, "base", None)
    for key in map(int, re.findall(r"___const\[([0-9]+)\]", text)):  # and any other source's
        if key not in constants:
            missing = constants  # (a sentinel: ids are never dicts here)
            value = _CONSTANTS.get(key, missing)
            if value is not missing:
                constants[key] = value
    return constants


def compile_guards(guard_set: GuardSet, fn: types.FunctionType) -> CompiledGuards:
    """Compile every guard into one function with ``fn``'s signature, plus its explainer."""
    faults.hit("guards")  # fault injection (tests)
    guards = guard_set.guards
    params = signature_text(fn.__code__)
    shared = _shared_subexpressions(guards)
    condition = " and ".join(f"({e})" for e in shared) or "True"
    # (___i kept current, so that a guard that raises is the one reported)
    checks = "".join(f"        ___i += 1\n        if not ({g.expr}): return {i}\n" for i, g in enumerate(guards))
    check_source = f"def ___guard({params}):\n    try:\n        return {condition}\n    except Exception:\n        return False\n"
    failure_source = (
        f"def ___first_failure({params}):\n"
        f"    ___i = -1\n"
        f"    try:\n{checks or '        pass'}\n"
        f"    except Exception:\n        return ___i\n"
        f"    return -1\n"
    )
    sources = {"___first_failure": failure_source}
    source = check_source + failure_source
    namespace: dict[str, Any] = {
        "___G": fn.__globals__,
        "___B": fn.__globals__.get("__builtins__", __builtins__),
        "___closure": fn.__closure__,
        # Builtins under names no parameter of the user's function can shadow.
        "___type": type, "___id": id, "___copysign": math.copysign, "___exact": exact_key, "___exact_keys": exact_keys, "___addr": object.__hash__, "___str": str, "___len": len, "___list": list, "___hasattr": hasattr,
        "math": math,  # the ShapeEnv's guards may call math.isnan, math.floor...
        "torch": torch,
        "___peek": peek,
        "___getattr": getattr, "___map": map, "___issubclass": issubclass, "___ogetattr": object.__getattribute__,
        "___dgetitem": dict.__getitem__, "___dkeys": dict.keys, "___odkeys": collections.OrderedDict.keys, "___envget": os._Environ.get,
        "___const": _entry_constants(guards, source),
        "___remaining": remaining,
        **guard_set.namespace,
    }
    if isinstance(namespace["___B"], types.ModuleType):
        namespace["___B"] = namespace["___B"].__dict__
    filename = f"<symexec guards of {fn.__qualname__}>"
    exec(compile(check_source, filename, "exec"), namespace)
    check = namespace.pop("___guard")
    parameters = guard_set.parameters or (fn.__code__, fn.__defaults__, fn.__kwdefaults__)
    check.__defaults__, check.__kwdefaults__ = parameters[1:]
    return CompiledGuards(check, list(guards), sources, namespace, filename, parameters)
