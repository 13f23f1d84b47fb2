"""One trace's state, in named parts.

A ``Trace`` is everything that lives as long as one trace of one frame and is shared by all
its translators (the root frame and every inlined callee):

- ``graph``: the ``OutputGraph`` (the FX graph, its fake mode and ShapeEnv, its placeholders
  and inputs, its outputs);
- ``guards``: the ``GuardSet`` of the cache entry being built;
- ``side_effects``: mutations of pre-existing objects, replayed after the graph;
- ``memos``: what the trace remembers so that one object is one tracker (``Memos``), cleared
  together when the trace ends;
- ``torch``: the torch state the traced code has set so far (``TorchState``);
- ``translators`` and ``location``: every frame of the trace, the root first, and the user's
  ``(file, line, function)`` being traced.

Trackers and handlers reach it as ``tx.trace`` (``context.TracerContext``); ``release`` drops
what it holds of the call being traced (its trackers hold the call's arguments).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from .dynamic import DynamicPolicy
from .guards import GuardSet
from .output_graph import OutputGraph
from .side_effects import SideEffects
from .source import Source

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .context import Frame
    from .variables.base import VariableTracker

_NOWHERE: tuple[str, int | None, str] = ("<unknown>", None, "<unknown>")


def _nowhere() -> list[tuple[str, int | None, str]]:
    return [_NOWHERE]


class Memos:
    """What one trace remembers so that one real object is one tracker. Every attribute is a
    memo (a dict or a list) and ``clear`` empties them all: a new memo is one line here."""

    def __init__(self) -> None:
        self.input_trackers: dict[Source, VariableTracker] = {}  # the builder's: one tracker per source
        # Mutable inputs reached through several sources: id -> (object, its tracker).
        self.objects_by_id: dict[int, tuple[Any, VariableTracker]] = {}
        # The value each input was read as (a tuple, an int, a str): what `a is b` between two
        # of them, or one and a constant, asks of the real objects (operators.py).
        self.input_values: dict[Any, Any] = {}
        # Reads through a class's Python __getattribute__, traced: (object id, name, side-effect
        # version) -> the tracker (or AttributeMissing) found (user_objects._through_getattribute).
        self.getattribute: dict[tuple, Any] = {}
        self.real_cells: dict[int, Any] = {}  # closure cells met while tracing, one tracker each
        self.generators: list[Any] = []  # every generator the trace made (generators.py)
        # Classes the trace made (``collections.namedtuple``): id -> their one tracker, which
        # generated code rebuilds once per run (classes.NewClassVariable).
        self.made_classes: dict[int, VariableTracker] = {}

    def clear(self) -> None:
        for memo in vars(self).values():
            memo.clear()


class TorchState:
    """Torch's global state as the traced code has set it so far: what a traced ``no_grad`` or
    ``autocast`` changed (the real state is put back when the trace ends, convert.py)."""

    grad_enabled: bool
    active_contexts: list[Any]

    def __init__(self) -> None:
        self.grad_enabled = torch.is_grad_enabled()
        self.active_contexts = []  # autocast modes entered for real while tracing


class Trace:
    """The state of one trace, by part (see the module's docstring)."""

    graph: OutputGraph
    guards: GuardSet
    side_effects: SideEffects
    memos: Memos
    torch: TorchState
    translators: list[Frame]
    location: tuple[str, int | None, str]
    fullgraph: bool

    def __init__(self, guards: GuardSet, policy: DynamicPolicy | None = None, *, fullgraph: bool = False) -> None:
        self.guards = guards
        # compiled with fullgraph=True: a break is an error, so what may stay in the graph does
        # (Tensor.item() as a number known only at run time, as torch.compile does)
        self.fullgraph = fullgraph
        self.torch = TorchState()
        self.memos = Memos()
        self.side_effects = SideEffects()
        self.translators = []
        self.location = _NOWHERE
        self.frame: Frame | None = None  # the frame running now (its parents: the inlining callers)
        # (the graph stamps each node with the line being traced, and runs fake ops in the
        # torch state the trace has set)
        self.graph = OutputGraph(guards, policy, torch_state=self.torch, where=self._where)

    def _where(self) -> list[tuple[str, int | None, str]]:
        """Where the trace is: the frame running and the callers that inlined it, outermost
        first (each at its call), as a traceback lists them."""
        stack = [self.location]
        frame = self.frame
        while frame is not None and frame.parent is not None:
            frame = frame.parent
            stack.append(frame.location())
        return stack[::-1]

    def release(self) -> None:
        """Drop the trackers of this trace (they hold the call's arguments): what the entry
        keeps (the graph, its examples' metadata) does not need them."""
        self.memos.clear()
        self.graph.release()
        self.graph.where = _nowhere  # (the graph no longer refers back to this trace)
        self.frame = None
        self.side_effects = SideEffects()
        for frame in self.translators:
            frame.release()
        self.translators.clear()
