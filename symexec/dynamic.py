"""Which input values are traced symbolically: automatic dynamic, ``dynamic=True/False``,
``mark_dynamic`` and ``mark_static``.

Per compiled function, a ``FrameState`` remembers the value each int input and each tensor
dimension had in the traces so far, keyed by source. In automatic mode (``dynamic=None``) a
value starts specialised; a later trace that sees it changed marks it dynamic for good, and
that trace and the ones after it make it a ``torch.SymInt`` (an int input) or a ShapeEnv
symbol of its own (a tensor dimension). With ``dynamic=True`` the other dimensions are symbols
too, duck-sized as under torch.compile: sizes of one value share a symbol (fewer symbols, fewer
relations for the ShapeEnv to prove), and the shape guards check that they are still equal.
The ShapeEnv still specialises sizes and ints equal to 0 or 1, as torch.compile does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch.fx.experimental.symbolic_shapes import DimDynamic

from .source import Source
from .torch_api import tensor_marks

DYNAMIC = None  # what FrameState records for a value seen changing


@dataclass
class FrameState:
    """What the traces of one compiled function have seen, by source name."""

    ints: dict[str, int | None] = field(default_factory=dict)
    sizes: dict[str, list[int | None]] = field(default_factory=dict)
    strides: dict[str, list[int | None]] = field(default_factory=dict)

    def empty(self) -> bool:
        return not (self.ints or self.sizes or self.strides)

    def clear(self) -> None:
        self.ints.clear()
        self.sizes.clear()
        self.strides.clear()


class DynamicPolicy:
    """Decides, while wrapping inputs for one trace, what is symbolic."""

    def __init__(self, mode: bool | None, state: FrameState) -> None:
        self.mode = mode
        self.state = state
        # Floats kept constants in this trace: set when the backend asked for it (AOTAutograd's
        # pass that turns symbolic floats into tensors restarts where it cannot).
        self.static_floats = False
        self.symbolic_floats = False  # whether this trace made a float input symbolic

    def number_is_dynamic(self, source: Source, value: int | float, changed_only: bool = False) -> bool:
        """An int or float input: symbolic if it changed since an earlier trace (or always,
        with ``dynamic=True``, unless ``changed_only``; floats only once they change)."""
        if self.mode is False:
            return False
        if self.static_floats and type(value) is float:
            return False
        name = source.name
        seen = self.state.ints.get(name, value)
        changed = name in self.state.ints and (seen is DYNAMIC or seen != value)
        self.state.ints[name] = DYNAMIC if changed else value
        dynamic = changed or (self.mode is True and type(value) is int and not changed_only)
        self.symbolic_floats = self.symbolic_floats or dynamic and type(value) is float
        return dynamic

    def dynamic_dims(self, source: Source, tensor: torch.Tensor) -> list[DimDynamic]:
        """For each dimension of an input tensor: ``STATIC`` (specialised), ``DYNAMIC`` (a
        symbol of its own: seen changing, or marked) or ``DUCK`` (``dynamic=True`` alone: a
        symbol shared with every other such size of the same value, as torch.compile does;
        the ShapeEnv guards the sizes that share one to stay equal)."""
        size = list(tensor.size())
        marked, static = resolved_marks(tensor)
        seen = self.state.sizes.get(source.name)
        if seen is None or len(seen) != len(size):
            merged: list[int | None] = list(size)
            changed = [False] * len(size)
        else:
            changed = [old is DYNAMIC or old != new for old, new in zip(seen, size)]
            merged = [DYNAMIC if c else new for c, new in zip(changed, size)]
        self.state.sizes[source.name] = merged
        self._stride_changes(source, tensor)
        if self.mode is False:
            return [DimDynamic.STATIC] * len(size)
        return [
            DimDynamic.STATIC if i in static else
            DimDynamic.DYNAMIC if changed[i] or i in marked else
            DimDynamic.DUCK if self.mode is True else DimDynamic.STATIC
            for i in range(len(size))
        ]


    def _stride_changes(self, source: Source, tensor: torch.Tensor) -> None:
        stride = list(tensor.stride())
        seen = self.state.strides.get(source.name)
        if seen is None or len(seen) != len(stride):
            self.state.strides[source.name] = list(stride)
        else:
            self.state.strides[source.name] = [DYNAMIC if old is DYNAMIC or old != new else new
                                               for old, new in zip(seen, stride)]

    def dynamic_strides(self, source: Source, tensor: torch.Tensor) -> list[DimDynamic] | None:
        """For each dimension of an input tensor, after ``dynamic_dims``: ``DYNAMIC`` where its
        stride was seen changing (a slice of another width: ``x[:, 0:1]`` of a wider ``x``), as
        torch.compile's automatic dynamic does; else ``INFER_STRIDE`` (the ShapeEnv's own
        strides from the sizes). None when no stride is dynamic."""
        if self.mode is False:
            return None
        seen = self.state.strides.get(source.name)
        if seen is None or DYNAMIC not in seen:
            return None
        return [DimDynamic.DYNAMIC if s is DYNAMIC else DimDynamic.INFER_STRIDE for s in seen]

    def marks_check(self, tensor: torch.Tensor, static_dims: tuple[bool, ...]) -> "MarksCheck | None":
        """What a later call's tensor at this input must not be marked, for this trace's
        choice of static and symbolic dimensions to still be the one its marks ask for (as
        torch.compile: an entry with a static dimension refuses a tensor now marked dynamic
        there, one with a symbolic dimension a tensor now marked static); None when no mark
        can change the choice (``dynamic=False``: marks are not read)."""
        if self.mode is False:
            return None
        marked, static = resolved_marks(tensor)
        no_dynamic = frozenset(i for i, st in enumerate(static_dims) if st and i not in marked)
        no_static = frozenset(i for i, st in enumerate(static_dims) if not st and i not in static)
        return MarksCheck(no_dynamic, no_static) if no_dynamic or no_static else None


@dataclass(frozen=True)
class MarksCheck:
    """The guard on an input tensor's dimension marks: ``check(t)`` is False when ``t`` is
    marked dynamic at a dimension this entry specialised (``no_dynamic``) or static at one it
    traced symbolically (``no_static``)."""

    no_dynamic: frozenset[int]
    no_static: frozenset[int]

    def __call__(self, t: torch.Tensor) -> bool:
        marked, static = resolved_marks(t)
        return not (marked & self.no_dynamic or static & self.no_static)

    def __str__(self) -> str:
        return f"not marked dynamic={sorted(self.no_dynamic)}, not marked static={sorted(self.no_static)}"


def resolved_marks(t: torch.Tensor) -> tuple[set[int], set[int]]:
    """(dimensions marked dynamic, dimensions marked static) of ``t``: symexec's
    ``mark_dynamic``/``mark_static`` and torch's ``torch._dynamo.mark_dynamic``,
    ``maybe_mark_dynamic`` and ``mark_static`` (what torch stores on the tensor, read by
    ``torch_api.tensor_marks``). symexec's ``mark_static`` wins over any dynamic mark; torch's
    ``mark_static`` is below its dynamic marks, as its documentation says."""
    own = getattr(t, "__dict__", None) or {}
    torch_dynamic, torch_weak, torch_static = tensor_marks(t)
    static = set(own.get("_symexec_static_dims", ()))
    marked = (set(own.get("_symexec_dynamic_dims", ())) | torch_dynamic | torch_weak) - static
    return marked, static | (torch_static - marked)


def mark_dynamic(t: torch.Tensor, dim: int | list[int]) -> None:
    """Trace dimension ``dim`` of ``t`` as a symbol from the first call on (as
    ``torch._dynamo.mark_dynamic``): the first trace is already general in that size, where
    automatic dynamic would wait for the size to change.

    Args:
        t: a tensor the compiled function will be called with (the mark is on this object).
        dim: a dimension, negative counted from the end, or a list or tuple of them.

    Raises:
        TypeError: ``t`` is not a tensor or a dimension is not an int.
        ValueError: a dimension is out of range for ``t``.

    Example::

        x = torch.randn(8, 3)
        symexec.mark_dynamic(x, 0)
        compiled(x)              # the graph takes s0 x 3; a call with 16 x 3 reuses it
    """
    _mark(t, dim, "_symexec_dynamic_dims", "mark_dynamic")


def mark_static(t: torch.Tensor, dim: int | list[int]) -> None:
    """Keep dimension ``dim`` of ``t`` specialised, whatever automatic dynamic would do (as
    ``torch._dynamo.mark_static``): a call with another size in it retraces.

    Args:
        t: a tensor the compiled function will be called with.
        dim: a dimension, a list or tuple of them, or None for every dimension.

    Raises:
        TypeError: ``t`` is not a tensor or a dimension is not an int.
        ValueError: a dimension is out of range for ``t``.
    """
    _mark(t, dim, "_symexec_static_dims", "mark_static")


def _mark(t: Any, dim: Any, attr: str, api: str) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{api}() takes a tensor as its first argument, not {type(t).__name__}")
    if dim is None and api == "mark_static":  # as torch._dynamo.mark_static: every dimension
        dim = list(range(t.dim()))
    if _is_dim(dim):
        dims = [dim]
    elif isinstance(dim, (list, tuple)):
        dims = list(dim)
        for d in dims:
            if not _is_dim(d):
                raise TypeError(f"{api}(): a dimension must be an int, not {type(d).__name__} ({d!r}) in {dim!r}")
    else:
        raise TypeError(f"{api}(): dim must be an int or a list or tuple of ints, not {type(dim).__name__} ({dim!r})")
    for d in dims:
        if not -t.dim() <= d < t.dim():
            raise ValueError(f"{api}(): dimension {d} is out of range for a {t.dim()}-d tensor "
                             f"(expected one in [{-t.dim()}, {t.dim() - 1}])")
    marks = set(getattr(t, attr, set()))
    marks.update(d % t.dim() for d in dims)
    setattr(t, attr, marks)


def _is_dim(d: Any) -> bool:
    """An int, bools excluded (``mark_dynamic(t, True)`` is a mistake, not dimension 1)."""
    return isinstance(d, int) and not isinstance(d, bool)
