"""A guard's predicate as data: the code around the values it reads, each read kept as its
``Source`` (or a tensor's ``size()``/``stride()`` call on one), so that the guard function can
share what several guards read (``guard_compile``) and hold every constant they name, decided
from these objects and rendered to text once: nothing reads guard text back.

``code("___len(", source, ") == 2")`` is ``len(L['l']) == 2`` as the guard function evaluates
it; plain strings are code written by symexec (never user data: that goes in as escaped
literals or named constants).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Union

from .source import Source


@dataclass(frozen=True)
class ShapeCall:
    """``source.size()`` or ``source.stride()`` of a tensor: computed once per tensor when
    several guards read it."""
    source: Source
    method: str  # "size" or "stride"


Part = Union[str, Source, ShapeCall]


@dataclass(frozen=True)
class Code:
    """A guard's expression: a tuple of parts (code text, a Source read, a ShapeCall)."""
    parts: tuple[Part, ...]

    def text(self) -> str:
        """The expression with every read written out (no sharing): the explainer's form."""
        return "".join(_plain(part) for part in self.parts)

    def reads(self) -> Iterator[Source]:
        """Every Source this expression reads, in order, once per mention."""
        for part in self.parts:
            if isinstance(part, Source):
                yield part
            elif isinstance(part, ShapeCall):
                yield part.source

    def __add__(self, other: Any) -> "Code":
        return code(self, other)

    def __radd__(self, other: Any) -> "Code":
        return code(other, self)


def _plain(part: Part) -> str:
    """One part as text, its reads written out."""
    if isinstance(part, str):
        return part
    if isinstance(part, ShapeCall):
        return f"{part.source.expr()}.{part.method}()"
    return part.expr()


def code(*pieces: Any) -> Code:
    """A Code from strings, Sources, ShapeCalls and Codes, in order (adjacent text joined)."""
    parts: list[Part] = []
    for piece in pieces:
        for part in piece.parts if isinstance(piece, Code) else (piece,):
            if not isinstance(part, (str, Source, ShapeCall)):
                raise TypeError(f"not a part of guard code: {part!r}")
            if isinstance(part, str) and parts and isinstance(parts[-1], str):
                parts[-1] += part
            elif part != "":
                parts.append(part)
    return Code(tuple(parts))


def join(separator: str, codes: list[Any]) -> Code:
    """``separator.join`` over Codes (and strings)."""
    pieces: list[Any] = []
    for i, item in enumerate(codes):
        pieces.extend((separator, item) if i else (item,))
    return code(*pieces)


def sources_under(source: Any) -> Iterator[Source]:
    """``source`` and every source it is read through (its bases, a dict item's key)."""
    while isinstance(source, Source):
        yield source
        for inner in (getattr(source, "key", None), getattr(source, "fn", None)):
            if isinstance(inner, Source):  # (a dict item's key, a call's function)
                yield from sources_under(inner)
        source = getattr(source, "base", None)
