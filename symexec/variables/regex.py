"""``re``: compiled patterns and their matches, run for real while tracing on constant text.

A ``re.Pattern`` is immutable and a ``re.Match`` is too (it holds the text it matched): what a
pattern's or a match's method computes from constant arguments is a constant, so the trace
runs it as eager would and goes on with the answer (``packaging.version.parse`` reads a version
through ``Pattern.fullmatch`` and ``Match.group``). The module's functions (``re.match``,
``re.sub``...) with constant arguments run for real too: their one effect, ``re``'s cache of
compiled patterns, changes nothing a program can tell apart. A function given as ``repl`` of
``sub``, or an argument that is not a constant (a tensor's text...), breaks.
"""

from __future__ import annotations

import re
from typing import Any

from ..context import TracerContext
from ..exc import TracedException, Unsupported
from .base import BoundMethodVariable, RealObjectVariable, VariableTracker
from .builtin_functions import handler
from .constant import ConstantVariable, wrap_constant

# What each class answers from constant arguments: methods, then plain attributes.
_PATTERN_METHODS = frozenset({"match", "fullmatch", "search", "findall", "split", "sub", "subn"})
_PATTERN_ATTRS = frozenset({"pattern", "flags", "groups", "groupindex"})
_MATCH_METHODS = frozenset({"group", "groups", "groupdict", "start", "end", "span", "expand", "__getitem__"})
_MATCH_ATTRS = frozenset({"string", "re", "pos", "endpos", "lastindex", "lastgroup", "regs"})


class _RegexObjectVariable(RealObjectVariable):
    """A pattern or a match, by its real object (immutable): a constant of the trace."""

    models = None  # (an abstract base: its subclasses model re.Pattern and re.Match)
    methods: frozenset[str] = frozenset()
    attrs: frozenset[str] = frozenset()

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        if name in self.methods:
            return BoundMethodVariable(self, name)
        if name in self.attrs:
            return regex_value(getattr(self.value, name))
        raise Unsupported(f"reading attribute {name!r} of {self.describe()}")

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker],
                    kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name not in self.methods:
            raise Unsupported(f"calling the method {name!r} of {self.describe()}")
        return run_regex(tx, getattr(self.value, name), args, kwargs, self.describe())

    def truth(self, tx: TracerContext) -> bool:
        return True  # (neither defines __bool__ nor __len__)


class RegexPatternVariable(_RegexObjectVariable):
    """A compiled ``re.Pattern``: passed in (guarded equal: pattern and flags), or compiled by
    the trace from constants."""

    models = re.Pattern
    methods, attrs = _PATTERN_METHODS, _PATTERN_ATTRS

    def describe(self) -> str:
        return f"the pattern {self.value.pattern!r}"[:80]

    def reconstruct(self, cg: Any) -> None:
        if self.source is not None:
            self.source.emit_load(cg)
        else:
            cg.load_const(self.value)  # (immutable: the one object serves every run)


class RegexMatchVariable(_RegexObjectVariable):
    """A ``re.Match`` the trace made by running a pattern on constant text. Rebuilt in generated
    code by running the same search again (a new match object, equal in everything it holds)."""

    models = re.Match
    methods, attrs = _MATCH_METHODS, _MATCH_ATTRS

    def __init__(self, value: Any, made_by: tuple[Any, tuple, dict]) -> None:
        super().__init__(value)
        self.made_by = made_by  # (the bound method, its arguments, its keyword arguments)

    def describe(self) -> str:
        return f"the match of {self.value.re.pattern!r}"[:80]

    def reconstruct(self, cg: Any) -> None:
        method, args, kwargs = self.made_by
        if kwargs:
            raise Unsupported("re-creating a match made with keyword arguments")
        cg.call_const(method, lambda: [cg.load_const(a) for a in args])


def regex_value(value: Any, made_by: tuple[Any, tuple, dict] | None = None) -> VariableTracker:
    """The tracker of what a pattern or a match answered."""
    if isinstance(value, re.Pattern):
        return RegexPatternVariable(value)
    if isinstance(value, re.Match):
        if made_by is None:
            raise Unsupported("a re.Match the trace cannot make again")
        return RegexMatchVariable(value, made_by)
    return wrap_constant(value)


def run_regex(tx: TracerContext, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker],
              what: str) -> VariableTracker:
    """``fn(*args, **kwargs)`` for real, every argument a constant (text, flags, positions)."""
    if not all(a.is_python_constant() for a in [*args, *kwargs.values()]):
        raise Unsupported(f"{getattr(fn, '__name__', 'calling')}() of {what} with an argument not known while tracing")
    real_args = tuple(a.as_python_constant() for a in args)
    real_kwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
    if any(callable(a) and not isinstance(a, re.Pattern) for a in (*real_args, *real_kwargs.values())):
        raise Unsupported(f"{fn.__name__}() of {what} with a function (its code would run untraced)")
    try:
        value = fn(*real_args, **real_kwargs)
    except Exception as e:  # (re.error, TypeError, IndexError of a group...: eager raises it there)
        raise TracedException(e) from e
    return regex_value(value, (fn, real_args, real_kwargs))


def _module_function(fn: Any) -> Any:
    def run(tx: TracerContext, *args: VariableTracker, **kwargs: VariableTracker) -> VariableTracker | None:
        if not all(a.is_python_constant() for a in [*args, *kwargs.values()]):
            return None  # (the general rules: its Python code is traced, or the call breaks)
        return run_regex(tx, fn, list(args), kwargs, f"re.{fn.__name__}")
    return run


for _fn in (re.compile, re.match, re.fullmatch, re.search, re.findall, re.split, re.sub, re.subn, re.escape):
    handler(_fn)(_module_function(_fn))
