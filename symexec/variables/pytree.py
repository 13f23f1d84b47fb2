"""``torch.utils._pytree``'s ``tree_map``, ``tree_flatten``, ``tree_unflatten`` and
``tree_leaves`` over trackers.

The real pytree functions decide the structure: the traced value becomes a skeleton of real
containers of the same types (lists, tuples, named tuples, dicts) whose leaves are markers
holding the trackers, and constants themselves; the real ``tree_flatten`` of the skeleton gives
the leaves in pytree's order and the real ``TreeSpec``, and the real ``tree_unflatten`` of
markers gives the structure to turn back into trackers. What pytree does with a type depends on
its registry of node types, which only grows: its size is guarded. Values whose type the
skeleton cannot stand for (a registered class of the user's, a defaultdict) break the graph.
"""

from __future__ import annotations

import collections
from typing import Any

import torch.utils._pytree as pytree

from ..context import TracerContext
from ..exc import Unsupported
from ..guards import GuardKind
from ..source import PrivateObjectSource, value_of
from .base import Identity, VariableTracker, class_static
from .builtin_functions import handler
from .constant import ConstantVariable, is_literal
from .deques import DequeVariable
from .dicts import ConstDictVariable
from .lists import ListVariable, NamedTupleVariable, TupleVariable
from .tensor import SymNodeVariable, TensorVariable


class _Leaf:
    """A leaf of a skeleton: the tracker it stands for (an object pytree has no node type for)."""

    __slots__ = ("var",)

    def __init__(self, var: VariableTracker) -> None:
        self.var = var


def _guard_registry(tx: TracerContext) -> None:
    nodes = pytree.SUPPORTED_NODES
    name = tx.guards.constant(nodes)
    tx.guards.add(GuardKind.EQUALS_MATCH, f"len(torch.utils._pytree.SUPPORTED_NODES) == {len(nodes)}",
                  f"{name}.__len__() == {len(nodes)}")


def _skeleton(tx: TracerContext, var: VariableTracker) -> Any:
    """A real value with ``var``'s pytree structure."""
    if isinstance(var, ConstantVariable) and is_literal(var.as_python_constant()):
        return var.as_python_constant()
    if isinstance(var, NamedTupleVariable):
        children = [_skeleton(tx, v) for v in var.items]
        return var.cls._make(children) if isinstance(class_static(tx, var.cls, "_fields"), tuple) else var.cls(children)
    if type(var) in (ListVariable, TupleVariable):
        return var.python_type()(_skeleton(tx, v) for v in var.items)
    if type(var) is DequeVariable:
        return collections.deque((_skeleton(tx, v) for v in var.items), var.maxlen)
    if type(var) is ConstDictVariable and var.user_cls in (dict, collections.OrderedDict) and not any(
            isinstance(k, Identity) for k in var.items):
        return var.user_cls((k, _skeleton(tx, v)) for k, v in var.items.items())
    if isinstance(var, (TensorVariable, SymNodeVariable)):
        return _Leaf(var)
    cls = var.python_type()
    if cls in pytree.SUPPORTED_NODES or issubclass(cls, (list, tuple, dict)):
        raise Unsupported(f"torch.utils._pytree over a {cls.__qualname__}")
    return _Leaf(var)  # (an object of a type pytree has no node for: a leaf)


def _tracker(tx: TracerContext, value: Any) -> VariableTracker:
    """The tracker of a real structure made of skeleton parts."""
    if isinstance(value, _Leaf):
        return value.var
    if is_literal(value):
        return ConstantVariable(value)
    if type(value) in (list, tuple):
        items = [_tracker(tx, v) for v in value]
        return ListVariable(items) if type(value) is list else TupleVariable(items)
    if isinstance(value, tuple) and (isinstance(class_static(tx, type(value), "_fields"), tuple)
                                     or type(class_static(tx, type(value), "n_fields")) is int):  # (a structseq)
        return NamedTupleVariable([_tracker(tx, v) for v in value], type(value))
    if type(value) is collections.deque:
        return DequeVariable([_tracker(tx, v) for v in value], value.maxlen)
    if type(value) in (dict, collections.OrderedDict):
        return ConstDictVariable({k: _tracker(tx, v) for k, v in value.items()}, user_cls=type(value))
    raise Unsupported(f"torch.utils._pytree made a {type(value).__qualname__}")


def _flatten(tx: TracerContext, tree: VariableTracker, is_leaf: VariableTracker | None) -> tuple[list[VariableTracker], Any]:
    if is_leaf is not None and not (is_leaf.is_python_constant() and is_leaf.as_python_constant() is None):
        raise Unsupported("torch.utils._pytree with is_leaf")
    _guard_registry(tx)
    leaves, spec = pytree.tree_flatten(_skeleton(tx, tree))
    return [_tracker(tx, leaf) for leaf in leaves], spec


def _spec(tx: TracerContext, var: VariableTracker) -> Any:
    """The real TreeSpec behind a tracker: one the trace made (private to it)."""
    if var.source is None or not isinstance(var.source.root(), PrivateObjectSource):
        raise Unsupported("tree_unflatten with a TreeSpec not made in the trace")
    spec = value_of(var.source)
    if not isinstance(spec, pytree.TreeSpec):
        raise Unsupported(f"tree_unflatten with a {type(spec).__qualname__}")
    return spec


def _unflatten(tx: TracerContext, leaves: list[VariableTracker], spec: Any) -> VariableTracker:
    if len(leaves) != spec.num_leaves:
        raise Unsupported("tree_unflatten with a wrong number of leaves (pytree raises)")
    return _tracker(tx, pytree.tree_unflatten([_Leaf(v) for v in leaves], spec))


@handler(pytree.tree_flatten)
def _tree_flatten(tx: TracerContext, tree: VariableTracker, is_leaf: VariableTracker | None = None) -> VariableTracker:
    leaves, spec = _flatten(tx, tree, is_leaf)
    return TupleVariable([ListVariable(leaves), tx.wrap(spec, PrivateObjectSource.of(spec))])


@handler(pytree.tree_leaves)
def _tree_leaves(tx: TracerContext, tree: VariableTracker, is_leaf: VariableTracker | None = None) -> VariableTracker:
    return ListVariable(_flatten(tx, tree, is_leaf)[0])


@handler(pytree.tree_unflatten)
def _tree_unflatten(tx: TracerContext, leaves: VariableTracker, treespec: VariableTracker) -> VariableTracker:
    return _unflatten(tx, leaves.unpack(tx), _spec(tx, treespec))


@handler(pytree.tree_map)
def _tree_map(tx: TracerContext, func: VariableTracker, tree: VariableTracker, *rests: VariableTracker,
              is_leaf: VariableTracker | None = None) -> VariableTracker:
    leaves, spec = _flatten(tx, tree, is_leaf)
    # (the other trees flattened up to the first's structure, by pytree itself: it raises
    # where they do not fit, and what is deeper in them is one argument)
    try:
        others = [[_tracker(tx, v) for v in spec.flatten_up_to(_skeleton(tx, rest))] for rest in rests]
    except (ValueError, TypeError) as e:
        raise Unsupported(f"tree_map over trees of other structures (pytree raises {type(e).__name__})") from e
    return _unflatten(tx, [func.call_function(tx, list(args), {}) for args in zip(leaves, *others)], spec)

