"""Compiling an entry's guards (a ``GuardSet``) into generated functions with the user's
function's signature: ``check``, one flat ``and`` of the guards' predicates rendered from their
data (every source several guards go through computed once, decided from the Source objects),
and its explainer ``first_failure``, compiled the first time a miss is explained."""

from __future__ import annotations

import collections
import math
import os
import types
from typing import Any

import torch

from . import faults
from .guard_code import Code, ShapeCall, sources_under
from .guards import Guard, GuardSet, exact_key, exact_keys, key_shapes
from .source import Source, dereference, dict_key_at, partial_field, peek, remaining, safe_name


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


def _count_uses(guards: list[Guard]) -> tuple[dict[Source, int], dict[ShapeCall, int]]:
    """How often each source is read (through it or its extensions) and each tensor's
    ``size()``/``stride()`` is called, over every guard's predicate (each mention counts: a
    tensor guard reads its source six times)."""
    uses: dict[Source, int] = {}
    calls: dict[ShapeCall, int] = {}
    for guard in guards:
        for part in guard.code.parts:
            if isinstance(part, ShapeCall):
                calls[part] = calls.get(part, 0) + 1
                if calls[part] > 1:
                    continue  # (a shared call reads its tensor once)
                part = part.source
            source: Any = part
            while isinstance(source, Source):
                uses[source] = uses.get(source, 0) + 1
                source = getattr(source, "base", None)
    return uses, calls


class _SharedRenderer:
    """Renders predicates in guard order, every source several guards go through computed
    once: its first use becomes ``(___tN := self.h[1].attn)`` and later ones ``___tN``
    (``x.size()`` likewise ``___sN``).

    A model's guards reach hundreds of parameters through the same module attributes; each
    nn.Module attribute read runs Python code, so sharing them is most of a cache hit's cost.
    In one flat ``and`` chain a later use only runs when the defining one did (a guard that
    stops early makes the whole chain false)."""

    def __init__(self, guards: list[Guard]) -> None:
        self.uses, self.calls = _count_uses(guards)
        self.names: dict[Any, str] = {}
        self.counters: dict[str, int] = {}

    def source(self, source: Source) -> str:
        """``source`` as an expression: its name once defined, else its read over its base."""
        if source in self.names:
            return self.names[source]
        base = getattr(source, "base", None)
        if not isinstance(base, Source) or not hasattr(source, "expr_with"):
            return source.expr()
        return self._share(source, source.expr_with(self.source(base)), self.uses, "___t")

    def shape_call(self, call: ShapeCall) -> str:
        """``x.size()`` or ``x.stride()``: its name once defined, else the call."""
        if call in self.names:
            return self.names[call]
        return self._share(call, f"{self.source(call.source)}.{call.method}()", self.calls, "___s")

    def _share(self, key: Any, text: str, counts: dict, prefix: str) -> str:
        """``text``, bound to a fresh name if ``key`` is read more than once."""
        if counts.get(key, 0) < 2:
            return text
        self.counters[prefix] = self.counters.get(prefix, 0) + 1
        self.names[key] = name = f"{prefix}{self.counters[prefix] - 1}"
        return f"({name} := {text})"

    def render(self, code: Code) -> str:
        """One guard's predicate as text (call in guard order: a first use defines a name)."""
        return "".join(part if isinstance(part, str) else self.shape_call(part) if isinstance(part, ShapeCall)
                       else self.source(part) for part in code.parts)


def shared_expressions(guards: list[Guard]) -> list[str]:
    """The guards' predicates as text, in order, common subexpressions shared."""
    renderer = _SharedRenderer(guards)
    return [renderer.render(guard.code) for guard in guards]


def _entry_constants(guards: list[Guard]) -> dict[int, Any]:
    """``___const`` of one entry: the objects the guards' sources name as ``___const[<id>]``
    (held by the sources they read), held by the entry (freed with it), not by a global table."""
    constants: dict[int, Any] = {}
    for guard in guards:
        for top in (guard.source, guard.other, *guard.more, *guard.code.reads()):
            for source in sources_under(top):
                for box in source.__dict__.get("_const_boxes", ()):
                    constants[id(box.value)] = box.value
    return constants


def compile_guards(guard_set: GuardSet, fn: types.FunctionType) -> CompiledGuards:
    """Compile every guard into one function with ``fn``'s signature, plus its explainer."""
    faults.hit("guards")  # fault injection (tests)
    guards = guard_set.guards
    params = signature_text(fn.__code__)
    shared = shared_expressions(guards)
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
    namespace: dict[str, Any] = {
        "___G": fn.__globals__,
        "___B": fn.__globals__.get("__builtins__", __builtins__),
        "___closure": fn.__closure__,
        # Builtins under names no parameter of the user's function can shadow.
        "___type": type, "___id": id, "___copysign": math.copysign, "___exact": exact_key, "___exact_keys": exact_keys, "___key_shapes": key_shapes, "___addr": object.__hash__, "___str": str, "___len": len, "___list": list, "___hasattr": hasattr,
        "math": math,  # the ShapeEnv's guards may call math.isnan, math.floor...
        "torch": torch,
        "___peek": peek,
        "___getattr": getattr, "___map": map, "___issubclass": issubclass, "___ogetattr": object.__getattribute__,
        "___dgetitem": dict.__getitem__, "___dkey": dict_key_at, "___pfield": partial_field, "___deref": dereference, "___dkeys": dict.keys, "___odkeys": collections.OrderedDict.keys, "___envget": os._Environ.get,
        "___const": _entry_constants(guards),
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
