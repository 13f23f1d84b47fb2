"""The ``operator`` module's functions over trackers: arithmetic and comparisons (graph nodes on
tensors, folded on constants, dunder methods of user objects), ``is``, ``in`` and subscripts.
The arithmetic instructions reach them through ``BuiltinVariable(operator.add)``; they are
registered in ``object_protocol.HANDLERS`` when this module is imported (by ``builder.py``).
"""

from __future__ import annotations

import collections
import enum
import operator
import types
from typing import Any

import torch

from ..context import TracerContext
from ..exc import Unsupported
from ..guards import GuardKind
from ..source import display
from .base import VariableTracker
from .builtin_functions import (BINARY_OPERATORS, HANDLERS, INPLACE_OPERATORS, UNARY_OPERATORS, BuiltinVariable, Handler,
                       handler, in_graph, is_tensor)
from .constant import ConstantVariable, is_object_constant
from .dicts import ConstDictVariable, DictViewVariable
from .functions import UserFunctionVariable
from .lists import (BaseListVariable, InputIteratorVariable, IteratorVariable, ListVariable, RangeVariable, SizeVariable,
                    SliceVariable, TupleVariable, items_one_by_one)
from .classes import COMPUTED_ALIAS_TYPES, ClassDictVariable, UserDefinedClassVariable
from .ndarray import NdarrayVariable, array_operator, getitem as array_getitem, setitem as array_setitem
from .number_builtins import RuntimeStrVariable
from .sets import SetVariable
from .tensor import StorageVariable, SymNodeVariable, record_call
from .base import class_static
from .object_protocol import call_operator
from .user_objects import InstanceDictVariable, ObjectVariableBase
from .user_operators import DUNDERS, user_operator

def _type_value(tx: TracerContext, var: VariableTracker) -> Any:
    """The type, alias or union ``var`` stands for (``int``, ``list[int]``, ``typing.Optional``,
    None), its identity guarded; ``_NOT_A_TYPE`` for anything else. Annotations combine them
    (``T | None``, ``Optional[T]``): pure, immutable values."""
    if isinstance(var, UserDefinedClassVariable):
        return var.cls
    if isinstance(var, BuiltinVariable) and type(var.fn) is type:
        return var.fn
    if isinstance(var, ConstantVariable):
        value = var.as_python_constant()
        return value if value is None or type(value) in COMPUTED_ALIAS_TYPES else _NOT_A_TYPE
    value = getattr(var, "value", _NOT_A_TYPE)
    if type(value).__module__ != "typing" or var.source is None:
        return _NOT_A_TYPE
    tx.guards.id_match(var.source, value)  # (a special form's behaviour is its identity's)
    return value


_NOT_A_TYPE = object()


def _sequences_equal(tx: TracerContext, a: BaseListVariable, b: BaseListVariable) -> bool | None:
    """``a == b`` for two lists or two tuples (a ``torch.Size`` is one) holding numbers, some
    symbolic (a shape): item by item, as CPython compares them, each symbolic comparison a guard
    on that relation (``s0 == s1``) instead of both sizes specialised to their values. None
    where this does not decide it (other items, a range): the constant fold, or a break."""
    if isinstance(a, RangeVariable) or isinstance(b, RangeVariable) or not any(
            isinstance(item, SymNodeVariable) for item in (*a.items, *b.items)):
        return None
    if not all(isinstance(item, (SymNodeVariable, ConstantVariable)) for item in (*a.items, *b.items)):
        return None
    if isinstance(a, TupleVariable) is not isinstance(b, TupleVariable):
        return False  # a list never equals a tuple
    if len(a.items) != len(b.items):
        return False
    for x, y in zip(a.items, b.items):
        same = BuiltinVariable(operator.eq).call_function(tx, [_bool_as_int(x), _bool_as_int(y)], {})
        if not same.truth(tx):  # (the ShapeEnv guards on the answer)
            return False
    return True


def _plain_sequence(*operands: VariableTracker) -> type[BaseListVariable]:
    """The tracker of what ``+`` or ``*`` makes of lists or tuples: a plain list or tuple, for a
    subclass's too (a named tuple, a list subclass), as in CPython; ``torch.Size``'s own
    ``__add__``, ``__radd__``, ``__mul__`` and ``__rmul__`` make a Size."""
    if any(isinstance(seq, SizeVariable) for seq in operands):
        return SizeVariable
    return ListVariable if isinstance(operands[0], ListVariable) else TupleVariable


def _base_operand(tx: TracerContext, var: VariableTracker, fn: Any) -> VariableTracker:
    """An operand that is an instance of a user subclass of int, float, str... (not an enum) as
    its builtin value, where its class leaves the operator to the builtin (the lookups guarded):
    torch's symbolic numbers do not take a subclass (``s0 == Int(1)`` would be False). One whose
    class defines the operator in Python breaks the graph: CPython runs it."""
    if not isinstance(var, ConstantVariable) or not is_object_constant(var.peek()) or \
            isinstance(var.peek(), enum.Enum):
        return var
    cls = var.python_type()
    for name in DUNDERS.get(fn.__name__, ()):
        if isinstance(class_static(tx, cls, name), types.FunctionType):
            raise Unsupported(f"{cls.__qualname__}.{name}, the user's, on a constant")
    value = var.as_python_constant()
    for base in (bool, int, float, complex, str, bytes):
        if isinstance(value, base):
            return ConstantVariable(base(value) if base is bool else getattr(base, f"__{base.__name__}__")(value))
    return var


def _bool_as_int(var: VariableTracker) -> VariableTracker:
    """A bool constant as the int it is in arithmetic and comparisons (``s0 == True`` is
    ``s0 == 1``), for an operation with a symbolic number."""
    if isinstance(var, ConstantVariable) and type(var.peek()) is bool:
        return ConstantVariable(int(var.as_python_constant()))
    return var


def _specialised_beside(var: VariableTracker, other: VariableTracker) -> VariableTracker:
    """A symbolic number beside a constant torch's symbolic numbers do not take (a complex, a
    str, None): its value, guarded, as CPython compares or combines the two ints it has."""
    if isinstance(var, SymNodeVariable) and isinstance(other, ConstantVariable) and \
            type(other.peek()) not in (int, float, bool):
        return ConstantVariable(var.as_python_constant())
    return var


def _make_binary(fn: Any) -> Handler:
    def binary(tx: TracerContext, a: VariableTracker, b: VariableTracker) -> VariableTracker | None:
        if isinstance(a, NdarrayVariable) or isinstance(b, NdarrayVariable):
            return array_operator(tx, fn, a, b)
        a, b = _base_operand(tx, a, fn), _base_operand(tx, b, fn)
        if isinstance(a, SymNodeVariable) or isinstance(b, SymNodeVariable):
            a, b = _bool_as_int(a), _bool_as_int(b)  # (sympy takes no True beside a symbol)
            a, b = _specialised_beside(a, b), _specialised_beside(b, a)
        if fn.__name__ in DUNDERS and (isinstance(a, ObjectVariableBase) or isinstance(b, ObjectVariableBase)):
            return user_operator(tx, fn.__name__, a, b, lambda: identical(a, b, tx))
        if in_graph(a) or in_graph(b):
            return record_call(tx, "call_function", fn, [a, b], {})
        if fn is operator.or_:
            left, right = _type_value(tx, a), _type_value(tx, b)
            if left is not _NOT_A_TYPE and right is not _NOT_A_TYPE and (left, right) != (None, None):
                return ConstantVariable(left | right)
        if isinstance(a, BaseListVariable) and isinstance(b, BaseListVariable) and fn is operator.add:
            if not (isinstance(a, TupleVariable) and isinstance(b, TupleVariable)) and \
                    not (isinstance(a, ListVariable) and isinstance(b, ListVariable)):
                raise Unsupported(f"can only concatenate {a.python_type().__name__} to the same type")
            return _plain_sequence(a, b)([*a.items, *b.items])
        if fn is operator.mul and isinstance(a, (ListVariable, TupleVariable)) and isinstance(b, ConstantVariable):
            return _plain_sequence(a)(a.items * b.as_python_constant())
        if fn is operator.mul and isinstance(b, (ListVariable, TupleVariable)) and isinstance(a, ConstantVariable):
            return _plain_sequence(b)(b.items * a.as_python_constant())
        if fn in _SET_ALGEBRA and isinstance(a, SetVariable) and isinstance(b, SetVariable):
            return a.call_method(tx, _SET_ALGEBRA[fn], [b], {})  # (the left operand's type, as the method's)
        if fn in (operator.eq, operator.ne) and isinstance(a, BaseListVariable) and isinstance(b, BaseListVariable):
            equal = _sequences_equal(tx, a, b)
            if equal is not None:
                return ConstantVariable(equal is (fn is operator.eq))
        if fn in _KEYS_VIEW_DUNDERS and isinstance(a, DictViewVariable) and a.kind == "keys" and \
                isinstance(b, DictViewVariable) and b.kind == "keys":
            # two keys views: by their keys alone (the values may be anything)
            return a.call_method(tx, _KEYS_VIEW_DUNDERS[fn], [b], {})
        if fn in (operator.eq, operator.ne) and not (a.is_python_constant() and b.is_python_constant()):
            if isinstance(a, (SetVariable, DictViewVariable)) or isinstance(b, (SetVariable, DictViewVariable)):
                return None  # a set equals a frozenset, dict_keys a set: by value, or unsupported
            if isinstance(a, RuntimeStrVariable) or isinstance(b, RuntimeStrVariable):
                return None  # (a str known only when the code runs: it may equal any str)
            if type(a) is not type(b) and not any(isinstance(a, family) and isinstance(b, family)
                                                  for family in (BaseListVariable, ConstDictVariable)):
                # Different families never compare equal (tensors were handled above).
                return ConstantVariable(fn is operator.ne)
        return None
    return binary


_SET_ALGEBRA = {operator.or_: "union", operator.and_: "intersection", operator.sub: "difference",
                operator.xor: "symmetric_difference"}
_KEYS_VIEW_DUNDERS = {operator.eq: "__eq__", operator.ne: "__ne__", operator.or_: "__or__", operator.and_: "__and__",
                      operator.sub: "__sub__", operator.xor: "__xor__", operator.lt: "__lt__", operator.le: "__le__",
                      operator.gt: "__gt__", operator.ge: "__ge__"}

for _fn in BINARY_OPERATORS:
    HANDLERS[_fn] = _make_binary(_fn)


def _make_inplace(inplace: Any, plain: Any) -> Handler:
    def inplace_op(tx: TracerContext, a: VariableTracker, b: VariableTracker) -> VariableTracker | None:
        if isinstance(a, NdarrayVariable) or isinstance(b, NdarrayVariable):
            return array_operator(tx, inplace, a, b)
        if is_tensor(a):
            result = record_call(tx, "call_function", inplace, [a, b], {})
            # x += 1 mutates x and keeps its identity; x @= y has no in-place form and rebinds.
            return a if getattr(result, "example", None) is a.example else result
        if isinstance(a, ListVariable):  # (a subclass's own __iadd__ makes it an object)
            if inplace in (operator.iadd, operator.iconcat):
                return a.call_method(tx, "__iadd__", [b], {})
            if inplace is operator.imul:
                return a.call_method(tx, "__imul__", [b], {})
        elif isinstance(a, SetVariable) and not a.frozen and inplace in _SET_INPLACE:
            if not isinstance(b, SetVariable):
                raise Unsupported(f"{inplace.__name__} of a set and {b.describe()}")
            a.call_method(tx, _SET_INPLACE[inplace], [b], {})
            return a
        elif isinstance(a, ConstDictVariable) and inplace is operator.ior:
            if a.python_type() not in (dict, collections.OrderedDict, collections.defaultdict) or not isinstance(
                    b, ConstDictVariable):
                raise Unsupported(f"|= of {a.describe()} and {b.describe()}")
            a.call_method(tx, "update", [b], {})
            return a
        dunder = "__i" + inplace.__name__.removeprefix("i").rstrip("_") + "__"
        if isinstance(a, ObjectVariableBase):
            if a.has_python_method(tx, dunder):
                result = a.call_method(tx, dunder, [b], {})
                if not (result.is_python_constant() and result.as_python_constant() is NotImplemented):
                    return result
            elif class_static(tx, a.python_type(), dunder) is not None:
                raise Unsupported(f"{a.describe()} has a builtin {dunder}")
        elif not isinstance(a, (ConstantVariable, TupleVariable, RangeVariable, SymNodeVariable)) or (
                isinstance(a, ConstantVariable) and getattr(type(a.as_python_constant()), dunder, None) is not None):
            # A mutable value whose in-place form is not modelled: `a = a + b` would be wrong.
            raise Unsupported(f"{inplace.__name__} of {a.describe()}")
        if inplace is operator.iconcat:
            return BuiltinVariable(operator.concat).call_function(tx, [a, b], {})
        return BuiltinVariable(plain).call_function(tx, [a, b], {})
    return inplace_op


_SET_INPLACE = {operator.ior: "update", operator.iand: "intersection_update", operator.isub: "difference_update",
                operator.ixor: "symmetric_difference_update"}
for _inplace, _plain in INPLACE_OPERATORS.items():
    HANDLERS[_inplace] = _make_inplace(_inplace, _plain)


def _make_unary(fn: Any) -> Handler:
    def unary(tx: TracerContext, a: VariableTracker) -> VariableTracker | None:
        if isinstance(a, NdarrayVariable):
            return array_operator(tx, fn, a)
        if in_graph(a):
            return record_call(tx, "call_function", operator.abs if fn is abs else fn, [a], {})
        return None
    return unary


for _fn in UNARY_OPERATORS:
    HANDLERS[_fn] = _make_unary(_fn)


@handler(operator.not_)
def _not(tx: TracerContext, a: VariableTracker) -> VariableTracker:
    return ConstantVariable(not a.truth(tx))


@handler(operator.truth, bool)
def _bool(tx: TracerContext, a: VariableTracker | None = None) -> VariableTracker:
    return ConstantVariable(False if a is None else a.truth(tx))


def identical(a: VariableTracker, b: VariableTracker, tx: TracerContext | None = None) -> bool:
    """``a is b`` for trackers: the same tracker, the same source, or constants that are."""
    if isinstance(a, StorageVariable) or isinstance(b, StorageVariable):
        raise Unsupported("`is` on a tensor's storage (views share one; the trace may replace it)")
    if a is b or (a.source is not None and a.source == b.source):
        return True
    real = _real_identity(a, b, tx)
    if real is not None:
        return real
    if isinstance(a, ConstantVariable) and isinstance(b, ConstantVariable):
        return a.as_python_constant() is b.as_python_constant()
    if isinstance(a, (ConstantVariable, UserDefinedClassVariable, BuiltinVariable)) and isinstance(
        b, (ConstantVariable, UserDefinedClassVariable, BuiltinVariable)
    ):
        return a.as_python_constant() is b.as_python_constant()
    if not (_identity_pinned(a) and _identity_pinned(b)) and isinstance(a, UserFunctionVariable) and \
            isinstance(b, UserFunctionVariable):  # a function made per call: its identity not guarded yet
        if tx is None:
            raise Unsupported("`is` on a function made per call, where its identity cannot be guarded")
        same = a.fn is b.fn
        if a.source is not None and b.source is not None:
            (tx.guards.alias if same else tx.guards.not_identical)(a.source, b.source)
        else:
            for var in (a, b):
                if not var.identity_pinned:
                    tx.guards.id_match(var.source, var.fn)
        return same
    # Trackers of different objects: tensors inputs are deduplicated by identity when wrapped,
    # and everything else without a shared source was created separately.
    if not isinstance(a, BaseListVariable | ConstDictVariable | SetVariable) and a.is_python_constant() and b.is_python_constant():
        return a.as_python_constant() is b.as_python_constant()
    if a.source is not None and b.source is not None:  # two inputs, distinct now: pinned so
        if tx is None:
            raise Unsupported("`is` between two inputs whose identity cannot be guarded here")
        tx.guards.not_identical(a.source, b.source)
    return False


_MISSING = object()
_SINGLETONS = (type(None), bool, type(Ellipsis), type(NotImplemented), enum.Enum)  # guarded by identity already


def _real_identity(a: VariableTracker, b: VariableTracker, tx: TracerContext) -> bool | None:
    """``a is b`` where one of them is an immutable input (an int, a str, a tuple: equal values
    need not be one object), answered from the real objects and guarded as identity; None
    where neither is one."""
    if tx is None:
        return None
    values = tx.trace.memos.input_values
    real_a = values.get(a.source, _MISSING) if a.source is not None else _MISSING
    real_b = values.get(b.source, _MISSING) if b.source is not None else _MISSING
    if real_a is _MISSING and real_b is _MISSING:
        return None
    if real_a is _MISSING or real_b is _MISSING:  # an input and a constant of the trace
        var, real, other = (b, real_b, a) if real_a is _MISSING else (a, real_a, b)
        if not isinstance(other, ConstantVariable) or isinstance(real, _SINGLETONS) or \
                isinstance(other.as_python_constant(), _SINGLETONS):
            return None
        constant = other.as_python_constant()
        same = real is constant
        shown = display(constant)
        name = tx.guards.constant(constant)
        tx.guards.add(GuardKind.ID_MATCH, f"{var.source.name} {'is' if same else 'is not'} {shown}",
                      tx.guards.code(var.source, f" {'is' if same else 'is not'} {name}"), var.source)
        return same
    same = real_a is real_b
    (tx.guards.alias if same else tx.guards.not_identical)(a.source, b.source)  # (whatever comes next time)
    return same


def _identity_pinned(var: VariableTracker) -> bool:
    return getattr(var, "identity_pinned", True)


HANDLERS[operator.is_] = lambda tx, a, b: ConstantVariable(identical(a, b, tx))
HANDLERS[operator.is_not] = lambda tx, a, b: ConstantVariable(not identical(a, b, tx))


@handler(operator.contains)
def _contains(tx: TracerContext, container: VariableTracker, item: VariableTracker) -> VariableTracker | None:
    if isinstance(container, ObjectVariableBase) and container.has_python_method(tx, "__contains__"):
        return ConstantVariable(container.call_method(tx, "__contains__", [item], {}).truth(tx))
    if isinstance(container, (ConstDictVariable, SetVariable, DictViewVariable, InstanceDictVariable, ClassDictVariable)):
        return container.call_method(tx, "__contains__", [item], {})
    if is_tensor(container) or is_tensor(item) and not isinstance(container, BaseListVariable):
        return None
    if isinstance(container, BaseListVariable) and not isinstance(container, RangeVariable):
        return ConstantVariable(_search(tx, container.items, item))
    if isinstance(container, IteratorVariable) and type(container) in (IteratorVariable, InputIteratorVariable):
        # CPython's search of an iterator: its items taken one by one until one equals ``item``
        return ConstantVariable(_search(tx, items_one_by_one(tx, container), item))
    return None


def _search(tx: TracerContext, candidates: Any, item: VariableTracker) -> bool:
    """Whether one of ``candidates`` is ``item`` or equals it (CPython's ``candidate == item``)."""
    for candidate in candidates:
        if identical(candidate, item, tx):
            return True
        if is_tensor(candidate) or is_tensor(item):
            raise Unsupported("`in` compares a tensor by value: data-dependent")
        if isinstance(candidate, SymNodeVariable) or isinstance(item, SymNodeVariable):
            if call_operator(tx, operator.eq, candidate, item).truth(tx):  # (a condition, not a value)
                return True
            continue
        if candidate.is_python_constant() and item.is_python_constant():
            if candidate.as_python_constant() == item.as_python_constant():
                return True
        elif call_operator(tx, operator.eq, candidate, item).truth(tx):  # (objects: their __eq__, or identity)
            return True
    return False


@handler(operator.getitem)
def _getitem(tx: TracerContext, obj: VariableTracker, index: VariableTracker) -> VariableTracker | None:
    if isinstance(obj, NdarrayVariable):
        return array_getitem(tx, obj, index)
    if is_tensor(obj):
        view = _symbolic_basic_index(tx, obj, index)
        if view is not None:
            return view
        return record_call(tx, "call_function", operator.getitem, [obj, index], {})
    if isinstance(obj, BaseListVariable):
        return obj.getitem(tx, index)
    if isinstance(obj, ConstDictVariable):  # a subclass's own __getitem__ runs
        return obj.call_method(tx, "__getitem__", [index], {})
    if isinstance(obj, ConstantVariable):
        return None  # fold: "abc"[1]
    typing_form = _type_value(tx, obj) if not isinstance(obj, (UserDefinedClassVariable, BuiltinVariable)) else _NOT_A_TYPE
    if typing_form is not _NOT_A_TYPE and typing_form is not None and index.is_python_constant():
        return ConstantVariable(typing_form[index.as_python_constant()])  # typing.Optional[int]
    if isinstance(obj, BuiltinVariable) and isinstance(obj.fn, type) and type(obj.fn) is type:
        # list[int], dict[str, int]: a builtin class (never replaced) makes a generic alias
        return UserDefinedClassVariable(obj.fn).call_method(tx, "__getitem__", [index], {})
    return obj.call_method(tx, "__getitem__", [index], {})


def _symbolic_basic_index(tx: TracerContext, obj: Any, index: VariableTracker, value: Any = None) -> VariableTracker | None:
    """``t[i]``, ``t[:, i]``, ``t[i, 1:j]`` where ``i`` is a symbolic int: the view as the chain
    of ``torch.select`` (an int), slicing (a slice), ``unsqueeze`` (None) and ``...`` that basic
    indexing is. torch's own indexing reads a symbolic int in an int position with
    ``__index__``, which specialises it (a loop over indices would retrace every turn); select
    takes it symbolic, as torch.compile records a bare one. None where it does not apply:
    no symbolic int, advanced indexing, more indices than dimensions (torch's error), or a value
    ``copy_`` would broadcast differently from setitem (more dimensions than the view)."""
    items = index.items if type(index) is TupleVariable else [index]

    if not any(isinstance(item, SymNodeVariable) and item.python_type() is int for item in items):
        return None
    kinds = [item.python_type() if isinstance(item, (SymNodeVariable, ConstantVariable)) else
             slice if isinstance(item, SliceVariable) else None for item in items]
    if not all(kind in (int, slice, type(None), type(Ellipsis)) for kind in kinds):
        return None
    consuming = [kind in (int, slice) for kind in kinds]
    if kinds.count(type(Ellipsis)) > 1 or sum(consuming) > obj.example.dim():
        return None
    if is_tensor(value) and value.example.dim() > obj.example.dim() - kinds.count(int) + kinds.count(type(None)):
        return None  # (setitem drops leading 1s of the value first; copy_ would refuse)
    view, dim = obj, 0
    for position, (item, kind) in enumerate(zip(items, kinds)):
        if kind is int:
            view = record_call(tx, "call_function", torch.select, [view, ConstantVariable(dim), item], {})
        elif kind is slice:
            full = all(isinstance(part, ConstantVariable) and part.python_type() is type(None) for part in item.parts)
            if not full:
                prefix = [SliceVariable(*[ConstantVariable(None)] * 3)] * dim
                view = record_call(tx, "call_function", operator.getitem, [view, TupleVariable([*prefix, item])], {})
            dim += 1
        elif kind is type(None):
            view = record_call(tx, "call_method", "unsqueeze", [view, ConstantVariable(dim)], {})
            dim += 1
        else:  # ...: the dimensions the indices after it do not consume
            dim = view.example.dim() - sum(consuming[position + 1:])
    return view


@handler(operator.setitem)
def _setitem(tx: TracerContext, obj: VariableTracker, index: VariableTracker, value: VariableTracker) -> VariableTracker:
    if isinstance(obj, NdarrayVariable):
        return array_setitem(tx, obj, index, value)
    if is_tensor(obj):
        number = isinstance(value, SymNodeVariable) or (
            isinstance(value, ConstantVariable) and value.python_type() in (int, float, bool, complex))
        view = _symbolic_basic_index(tx, obj, index, value) if number or is_tensor(value) else None
        if view is not None:  # what torch's setitem does for basic indexing: fill or copy into the view
            record_call(tx, "call_method", "copy_" if is_tensor(value) else "fill_", [view, value], {})
            return ConstantVariable(None)
        record_call(tx, "call_function", operator.setitem, [obj, index, value], {})
        return ConstantVariable(None)
    return obj.call_method(tx, "__setitem__", [index, value], {})


@handler(operator.delitem)
def _delitem(tx: TracerContext, obj: VariableTracker, index: VariableTracker) -> VariableTracker:
    return obj.call_method(tx, "__delitem__", [index], {})

