"""Tensors and symbolic numbers: graph values. Every operation on them becomes an FX node.

A ``TensorVariable`` holds the FX node that produces the tensor and its fake example value
(shape, dtype, device, ...). A ``SymNodeVariable`` does the same for a ``torch.SymInt``,
``SymFloat`` or ``SymBool``: an int input traced symbolically, a dynamic size, arithmetic on
them. Operations go through ``record_call``: the node is created in the output graph, its fake
result computed under the fake mode, and the result wrapped back into trackers by
``wrap_fx_value``.
"""

from __future__ import annotations

import keyword
import operator
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

from ..context import TracerContext
from ..exc import AttributeMissing, Unsupported
from ..source import AttrSource, Source
from .base import BoundMethodVariable, Registry, VariableTracker, as_proxy, class_static, only_asking
from .constant import ConstantVariable, is_literal, wrap_constant
from .ctx import set_grad_mode
from .lists import ListVariable, NamedTupleVariable, SizeVariable, TupleVariable

# Tensor attributes that are facts of the fake tensor: constants for the trace. For an input,
# the tensor guard pins dtype, device, requires_grad and the dimensions; every other fact is
# read from the real tensor and guarded when the trace reads it (``input_fact``).
_METADATA_ATTRS = frozenset({
    "dtype", "device", "layout", "ndim", "requires_grad", "is_cuda", "is_cpu", "is_sparse",
    "is_quantized", "is_meta", "is_leaf", "is_complex_attr", "is_nested", "is_mkldnn", "is_mps", "is_xpu",
})
_PINNED_BY_TENSOR_GUARD = frozenset({"dtype", "device", "ndim", "requires_grad", "is_cuda", "is_cpu", "is_mps", "is_xpu", "dim",
                                     "ndimension", "is_floating_point", "is_complex", "is_signed",
                                     "element_size", "get_device", "type"})
# Methods that read a fact no tensor guard pins: read from an input for real, and guarded.
_FACT_METHODS = frozenset({"is_conj", "is_neg", "is_inference", "storage_offset"})
# Tensor attributes that compute a new tensor: recorded as getattr nodes.
_COMPUTED_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag"})
# Methods whose result is a fact of the metadata, computed on the fake tensor.
_METADATA_METHODS = frozenset({
    "dim", "ndimension", "numel", "nelement", "element_size", "is_floating_point", "is_complex",
    "is_contiguous", "get_device", "is_signed", "stride", "storage_offset", "type" ,
})
# Methods that read tensor data or leave the graph's world.
_BREAKING_METHODS = {
    "item": "reads a tensor value into Python",
    "tolist": "reads tensor values into Python",
    "numpy": "converts to NumPy",
    "data_ptr": "reads a memory address",
    # (fake tensors answer these False: their storage is not the real one)
    "is_set_to": "compares two tensors' storages",
    "is_shared": "reads whether the storage is in shared memory",
    "is_pinned": "reads whether the storage is in pinned memory",
    "backward": "runs autograd outside the graph",
    "register_hook": "registers a Python hook",
    "__bool__": "data-dependent control flow",
    "__index__": "reads a tensor value into Python",
    "__int__": "reads a tensor value into Python",
    "__float__": "reads a tensor value into Python",
}


# ``t.numpy()``: the array over the tensor's memory (registered by ndarray.py, whose trackers
# hold tensors: it comes after this module).
NUMPY_CONVERSION: dict[str, Any] = Registry("tensor.NUMPY_CONVERSION")


_OBJECT_CLASS = object.__dict__["__class__"]  # (the getset every object's ``__class__`` is, unless overridden)


class TensorVariable(VariableTracker):
    """A tensor: its graph node and its fake tensor (``example``).

    An input tensor reached through a container or an object (``kw['mask']``) is lazy: it
    becomes a graph input, with its tensor guard, the first time the trace reads its node or
    its fake tensor (every operation and every fact of it does). One the trace only passes
    along is re-fetched from its source and guarded by nothing but its class, as torch.compile's
    lazy trackers leave it: its size changing does not retrace."""

    models = torch.Tensor

    _realize: Any = None  # () -> (node, fake): the input not yet made

    def __init__(self, node: torch.fx.Node, example: torch.Tensor, cls: type = torch.Tensor, source: Source | None = None) -> None:
        super().__init__(source)
        self._node = node
        self._example = example  # fake tensor
        self.cls = cls

    @classmethod
    def lazy(cls, kind: type, source: Source, realize: Any) -> "TensorVariable":
        var = cls(None, None, kind, source)  # type: ignore[arg-type]
        var._realize = realize
        return var

    def make(self) -> None:
        """A lazy input: made now (its placeholder, its tensor guard). Any other: nothing."""
        if self._realize is not None:
            realize, self._realize = self._realize, None
            self._node, self._example = realize()

    @property
    def node(self) -> torch.fx.Node:
        self.make()
        return self._node

    @property
    def example(self) -> torch.Tensor:
        self.make()
        return self._example

    def python_type(self) -> type:
        return self.cls

    def describe(self) -> str:
        return f"a tensor ({self.source.name})" if self.source else "a tensor"

    def as_proxy(self) -> torch.fx.Node:
        return self.node

    def is_callable(self, tx: TracerContext) -> bool:
        return False

    def truth(self, tx: TracerContext) -> bool:
        raise Unsupported(
            "data-dependent control flow: the branch depends on a tensor's value",
            hint="use torch.where or torch.cond, or move the condition out of the compiled function",
        )

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        if name == "shape":
            return self.call_method(tx, "size", [], {})
        if name == "__class__" and class_static(tx, self.python_type(), "__class__") is _OBJECT_CLASS:
            return tx.wrap(self.python_type(), None)  # (its exact type: pinned by the tensor's guard)
        if name in _METADATA_ATTRS:
            if self.source is not None and name not in _PINNED_BY_TENSOR_GUARD:
                return self.input_fact(tx, name, f".{name}", lambda t: getattr(t, name))
            return ConstantVariable(getattr(self.example, name))
        if name in _COMPUTED_ATTRS:
            return record_call(tx, "call_function", getattr, [self, ConstantVariable(name)], {})
        if name == "grad" and self.source is not None:
            return self.grad(tx)
        if name in ("grad", "_grad") and not self.is_input_object(tx):
            # a tensor the trace made has no gradient: only backward(), which breaks, fills one,
            # and assigning one to a tensor of the trace breaks too
            return ConstantVariable(None)
        if name == "data":
            # the tensor's data without its autograd history: a node, as torch.compile records it
            return record_call(tx, "call_function", torch._C._autograd._get_data_attr, [self], {})
        if name in ("grad", "_base", "grad_fn"):
            raise Unsupported(f"reading tensor.{name}")
        if callable(getattr(torch.Tensor, name, None)):
            return BoundMethodVariable(self, name)
        if hasattr(torch.Tensor, name):
            raise Unsupported(f"reading attribute {name!r} of a tensor")
        return self.python_attribute(tx, name)

    def is_input_object(self, tx: TracerContext) -> bool:
        """Whether this may be an input tensor object itself (reached through an operation that
        returns its argument, ``torch.relu_(x)``): its fake tensor is an input's."""
        return self.source is not None or any(
            node.meta.get("example_value") is self.example for node in tx.trace.graph.graph.find_nodes(op="placeholder"))

    def real_value(self, tx: TracerContext) -> torch.Tensor:
        """The input tensor of this call (only for a tracker with a source)."""
        self.make()  # (its real tensor is the graph input's)
        real = tx.trace.graph.real_input(self.source)
        if real is None:
            raise Unsupported(f"the real tensor behind {self.source.name} is gone")  # type: ignore[union-attr]
        return real

    def input_fact(self, tx: TracerContext, text: str, suffix: str, read: Any) -> VariableTracker:
        """A fact of an input tensor that no tensor guard pins (``is_leaf``, ``is_conj()``,
        ``storage_offset()``): read from the real tensor, and guarded in the same call."""
        value = read(self.real_value(tx))
        if not is_literal(value):
            raise Unsupported(f"tensor.{text} gave a {type(value).__name__}")
        tx.guards.tensor_fact(self.source, suffix, value)
        return ConstantVariable(value)

    def grad(self, tx: TracerContext) -> VariableTracker:
        """``x.grad`` of an input: an input itself, reached by ``x.grad`` (a tensor, with its
        tensor guard, or None, guarded when used), or what the trace assigned to it. Only
        ``backward()``, which breaks the graph, and an assignment change it."""
        written = tx.trace.side_effects.pending_attr(self, "grad")
        if written is not None:
            return written
        return tx.wrap(self.real_value(tx).grad, AttrSource(self.source, "grad"))

    def store_attr(self, tx: TracerContext, name: str, value: VariableTracker | None) -> None:
        """``x.grad = g`` on an input (``None``, or a tensor torch accepts), replayed after the
        graph; torch's own error for any other value is CPython's to raise."""
        if name == "data" and value is not None:
            return self.set_data(tx, value)
        if name == "requires_grad" and value is not None and value.is_python_constant() \
                and value.as_python_constant() is self.example.requires_grad and self.example.is_leaf:
            return None  # a leaf given the flag it has (torch.testing.make_tensor's): nothing changes
        if name != "grad" or self.source is None or value is None:
            super().store_attr(tx, name, value)
        if isinstance(value, TensorVariable) and not self.accepts_grad(tx, value):
            raise Unsupported("assigning tensor.grad a tensor torch may reject (or of a dynamic size)")
        if not isinstance(value, TensorVariable) and not (value.is_python_constant() and value.as_python_constant() is None):
            raise Unsupported(f"assigning tensor.grad {value.describe()}")
        tx.trace.side_effects.store_attr(self, "grad", value)

    def set_data(self, tx: TracerContext, value: VariableTracker) -> None:
        """``x.data = y`` on an input, as torch.compile models it: ``x.set_(y)`` with grad
        off (x takes y's memory and metadata, keeps its autograd identity), then x's version
        counter put back (``.data =`` bumps none, ``set_`` one). A view, another dtype, device
        or layout (torch changes x's dtype or refuses), a tensor of the trace: broken."""
        if self.source is None:
            raise Unsupported("setting tensor.data of a tensor made in the compiled function")
        if not isinstance(value, TensorVariable):
            raise Unsupported(f"setting tensor.data to {value.describe()}")
        mine, theirs = self.example, value.example
        if (mine.dtype, mine.device, mine.layout) != (theirs.dtype, theirs.device, theirs.layout) \
                or mine.layout != torch.strided or mine._is_view() or type(mine) is not type(theirs):
            raise Unsupported("setting tensor.data of a view, or to a tensor of another dtype, device or layout")
        grad_enabled = tx.trace.torch.grad_enabled
        set_grad_mode(tx, False)
        node, _ = tx.trace.graph.create_call("call_function", torch.Tensor.set_, (self.node, value.node), {})
        set_grad_mode(tx, grad_enabled)
        tx.trace.graph.create_call("call_function", _lower_version, (node,), {})

    def accepts_grad(self, tx: TracerContext, grad: "TensorVariable") -> bool:
        """What torch checks of a new ``.grad``: another tensor, of this one's device, layout,
        size (static) and ``grad_dtype`` (read from the input, guarded)."""
        fake, mine = grad.example, self.example
        if grad is self or is_symbolic(fake.size()) or is_symbolic(mine.size()):
            return False
        if (fake.device, fake.layout, fake.size()) != (mine.device, mine.layout, mine.size()):
            return False
        return self.input_fact(tx, "grad_dtype", ".grad_dtype", lambda t: t.grad_dtype).as_python_constant() == fake.dtype

    def python_attribute(self, tx: TracerContext, name: str) -> VariableTracker:
        """An attribute user code set on a tensor (``x.scale = 2``): the input's own, read
        and guarded through its source; absent is guarded too (``getattr(x, "scale", 1)``)."""
        if self.source is None:  # made by an operation of the trace: no attributes of its own
            raise AttributeMissing(f"AttributeError: 'Tensor' object has no attribute {name!r}")
        real = self.real_value(tx)
        if name in getattr(real, "__dict__", {}):
            return tx.wrap(real.__dict__[name], AttrSource(self.source, name))
        tx.guards.hasattr_match(self.source, name, False)
        raise AttributeMissing(f"AttributeError: 'Tensor' object has no attribute {name!r}")

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name in ("item", "tolist") and not args and not kwargs and self.captures_scalars(tx):
            return self.scalars(tx) if name == "tolist" else record_call(tx, "call_method", "item", [self], {})
        if name == "untyped_storage" and not args and not kwargs and self.source is not None:
            return StorageVariable(self)
        if name in NUMPY_CONVERSION:
            return NUMPY_CONVERSION[name](tx, self, args, kwargs)
        if name in _BREAKING_METHODS:
            raise Unsupported(f"Tensor.{name}() {_BREAKING_METHODS[name]}", hint="move it out of the compiled function")
        if name in _FACT_METHODS and self.source is not None and not (
                name == "storage_offset" and is_symbolic(self.example.storage_offset())):
            const_args = [a.as_python_constant() for a in args]
            const_kwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
            if not const_args and not const_kwargs:
                return self.input_fact(tx, f"{name}()", f".{name}()", lambda t: getattr(t, name)())
        if name in _METADATA_METHODS and not (name == "type" and (args or kwargs)) or name == "size":  # (x.type(dtype) converts)
            value = getattr(self.example, name)(*[a.as_python_constant() for a in args],
                                                **{k: v.as_python_constant() for k, v in kwargs.items()})
            if not is_symbolic(value):
                value = _plain_numbers(value)  # (a symbol a guard fixed, x.is_contiguous(): its number)
            if isinstance(value, torch.Size) and not is_symbolic(value):
                return wrap_constant(value)
            if isinstance(value, tuple) and not is_symbolic(value):  # stride(): a plain tuple
                return TupleVariable([ConstantVariable(v) for v in value])
            if is_literal(value):
                return ConstantVariable(value)
            if not is_symbolic(value):
                raise Unsupported(f"Tensor.{name}() with these arguments")
            # A dynamic size, numel or stride: recorded (size = l_a_.size(); getitem = size[0]).
        if not hasattr(torch.Tensor, name):
            raise Unsupported(f"tensors have no method {name!r}")
        if name != "type":  # (x.type(float) is torch's ValueError)
            args, kwargs = python_types_as_dtypes(args, kwargs, positional=name == "to")
        elif len(args) == 1 and not kwargs:
            args = [self.legacy_type_as_dtype(args[0])]
        if name == "new" and len(args) == 1 and isinstance(args[0], SizeVariable):
            # The legacy constructor reads a Size as sizes (a tuple as data), and FX writes a
            # Size as a tuple: the empty tensor of that size, by name.
            name = "new_empty"
        result = record_call(tx, "call_method", name, [self, *args], kwargs)
        if isinstance(result, TensorVariable) and result.example is self.example:
            return self  # an in-place method returns the same object, mutated: keep identity and source
        return result

    def legacy_type_as_dtype(self, arg: VariableTracker) -> VariableTracker:
        """``x.type(torch.HalfTensor)`` of a CPU tensor is ``x.type(torch.float16)`` (the graph's
        code cannot spell the class); a CUDA or sparse class moves or converts it: kept, it breaks."""
        cls = arg.as_python_constant() if arg.is_python_constant() else None
        if type(cls) is not type(torch.FloatTensor) or cls.is_cuda or cls.is_sparse or self.example.device.type != "cpu" \
                or self.example.layout != torch.strided:
            return arg
        return ConstantVariable(cls.dtype)

    def captures_scalars(self, tx: TracerContext) -> bool:
        """Whether ``item()``/``tolist()`` stay in the graph as numbers known only at run time
        (unbacked symbols), as under torch.compile: with ``capture_scalar_outputs``, or under
        ``fullgraph`` (where torch.compile captures them too rather than fail)."""
        return tx.config.capture_scalar_outputs or tx.trace.fullgraph

    def scalars(self, tx: TracerContext) -> VariableTracker:
        """``tolist()``: each element read with ``item()``, in nested lists by dimension."""
        if self.example.dim() == 0:
            return record_call(tx, "call_method", "item", [self], {})
        if free_unbacked_symbols(self.example.size(0)):
            raise Unsupported("Tensor.tolist() of a tensor whose length is known only at run time")
        rows = self.unpack(tx)
        return ListVariable([row.scalars(tx) for row in rows])  # type: ignore[attr-defined]

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        if self.example.dim() == 0:
            raise Unsupported("iterating over a 0-d tensor")
        return [
            record_call(tx, "call_function", operator.getitem, [self, ConstantVariable(i)], {})
            for i in range(int(self.example.size(0)))  # a dynamic length specialises: the loop unrolls
        ]

    def __repr__(self) -> str:
        if self._realize is not None:  # (a repr guards nothing)
            return f"TensorVariable({self.source.name}, not yet read)"  # type: ignore[union-attr]
        shape = tuple(self.example.shape)
        return f"TensorVariable({self.node.name}: {str(self.example.dtype).removeprefix('torch.')}{list(shape)})"


class StorageVariable(VariableTracker):
    """``x.untyped_storage()`` of an input tensor, for its size: ``size()`` and ``nbytes()``
    read from the real storage and guarded (a view's storage is its base's, which no tensor
    guard pins), while the trace has not changed it (its fake tensor's storage is as large).
    Anything else, or keeping the storage, breaks."""

    models = torch.UntypedStorage

    def __init__(self, tensor: TensorVariable) -> None:
        super().__init__()
        self.tensor = tensor

    def python_type(self) -> type:
        return torch.UntypedStorage

    def describe(self) -> str:
        return f"the storage of {self.tensor.describe()}"

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name not in ("size", "nbytes") or args or kwargs:
            raise Unsupported(f"calling {name}() of {self.describe()}")
        size = self.tensor.input_fact(tx, f"untyped_storage().{name}()", f".untyped_storage().{name}()",
                                      lambda t: t.untyped_storage().nbytes())
        traced = self.tensor.example.untyped_storage().nbytes()
        if is_symbolic(traced) or traced != size.as_python_constant():
            raise Unsupported(f"the size of {self.describe()}, which the trace changed or made dynamic")
        return size

    def reconstruct(self, cg: Any) -> None:
        raise Unsupported(f"keeping {self.describe()}")


class SymNodeVariable(VariableTracker):
    """A symbolic int, float or bool: computed in the graph, known only as an expression.

    Using it where Python needs a concrete value (``range(n)``, an index into a list)
    specialises it: the ShapeEnv records ``n == 5`` as a guard and the value is a constant from
    then on. Branching on it records the condition (``0 <= L['n']``).
    """

    models = (int, float, bool)  # a symbolic int, float or bool of the ShapeEnv

    def __init__(self, node: torch.fx.Node, example: Any, source: Source | None = None) -> None:
        super().__init__(source)
        self.node = node
        self.example = example  # torch.SymInt / SymFloat / SymBool

    def python_type(self) -> type:
        return {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}[type(self.example)]

    def describe(self) -> str:
        return f"the symbolic {self.python_type().__name__} {self.example}"

    def as_proxy(self) -> torch.fx.Node:
        return self.node

    def is_python_constant(self) -> bool:
        return False  # asking must not specialise

    guards: Any = None  # a float input's GuardSet: its specialisation is guarded exactly

    def as_python_constant(self) -> Any:
        if only_asking():
            raise Unsupported("a symbolic value is not a constant (asked, not specialised)")
        if isinstance(self.example, torch.SymFloat):
            # The ShapeEnv's guard on a specialised float (``s0 == 0.0``) accepts -0.0; a float
            # input is guarded on its exact value instead, a computed one breaks the graph.
            if self.guards is None:
                raise Unsupported("using the exact value of a float computed from a dynamic float")
            value = float(self.example)
            self.guards.equals_match(self.source, value)
            return value
        return self.python_type()(self.example)  # specialises, with a guard

    def truth(self, tx: TracerContext) -> bool:
        return bool(self.example)  # the ShapeEnv guards on the branch taken

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if name in _VALUE_METHODS and not args and not kwargs and hasattr(self.python_type(), name):
            if name == "conjugate" and self.python_type() is not bool:
                return self  # (an int's or float's conjugate is itself, of its type)
            if name == "as_integer_ratio" and self.python_type() is int:
                return TupleVariable([self, ConstantVariable(1)])  # (an int's is (itself, 1): no value read)
            if name in ("is_integer", "bit_length") and hasattr(type(self.example), name):
                # answered by the ShapeEnv, symbolically: a node of the graph, as torch.compile's
                return record_call(tx, "call_method", name, [self], {})
            # A question about the exact value (``is_integer``, ``hex``...): the value
            # specialised, guarded, and the method run on it.
            return wrap_constant(getattr(self.as_python_constant(), name)())
        return super().call_method(tx, name, args, kwargs)

    def __repr__(self) -> str:
        return f"SymNodeVariable({self.node.name}: {self.example})"


# Methods of int and float that take no argument and read only the value.
_VALUE_METHODS = frozenset({"is_integer", "as_integer_ratio", "bit_length", "bit_count", "conjugate", "hex"})


def tensor_method(tx: TracerContext, method: Any, source: Source | None) -> VariableTracker:
    """``x.sum`` read before a graph break and handed to the continuation: the method of that
    name of the tensor it is bound to (its type and name guarded, the tensor wrapped as any)."""
    if source is None:
        raise Unsupported(f"the method {method.__name__!r} of a tensor without a source")
    tx.guards.type_match(source, method)
    tx.guards.equals_match(AttrSource(source, "__name__"), method.__name__)
    return BoundMethodVariable(tx.wrap(method.__self__, AttrSource(source, "__self__")), method.__name__)


def is_symbolic(value: Any) -> bool:
    """Does ``value`` (a number, a size, a tuple of them) hold a symbolic number?"""
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return not value.node.expr.is_number
    if isinstance(value, (tuple, list)):
        return any(is_symbolic(v) for v in value)
    return False


def _plain_numbers(value: Any) -> Any:
    """``value`` with each symbolic number whose expression is a number (a symbol the guards
    fixed) made that Python number: a result handed to the program holds no SymInt."""
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        expr = value.node.expr
        return int(expr) if isinstance(value, torch.SymInt) else float(expr) if isinstance(value, torch.SymFloat) \
            else bool(expr)
    if isinstance(value, tuple):
        items = [_plain_numbers(v) for v in value]
        return torch.Size(items) if isinstance(value, torch.Size) else tuple(items)
    return value


# The dtype torch's argument parser reads a Python number type as (``x.to(float)``: float64).
_PYTHON_TYPE_DTYPES = {bool: torch.bool, int: torch.int64, float: torch.float64, complex: torch.complex128}


def python_types_as_dtypes(args: list[VariableTracker], kwargs: dict[str, VariableTracker], *,
                           positional: bool) -> tuple[list[VariableTracker], dict[str, VariableTracker]]:
    """A Python number type given to one of torch's own operations as a dtype (``dtype=int``;
    ``positional``: any argument, as ``Tensor.to`` takes it) as the dtype torch's parser makes of
    it: the graph's code cannot spell the class."""
    def convert(var: VariableTracker) -> VariableTracker:
        value = var.as_python_constant() if var.is_python_constant() else None
        return ConstantVariable(_PYTHON_TYPE_DTYPES[value]) if type(value) is type and value in _PYTHON_TYPE_DTYPES else var

    if positional:
        args = [convert(a) for a in args]
    if "dtype" in kwargs:
        kwargs = {**kwargs, "dtype": convert(kwargs["dtype"])}
    return args, kwargs


def _lower_version(tensor: torch.Tensor) -> torch.Tensor:
    """The version counter as it was before the ``set_`` of ``x.data = y`` (a graph node)."""
    torch._C._autograd._unsafe_set_version_counter((tensor,), (max(tensor._version - 1, 0),))
    return tensor


def record_call(tx: TracerContext, op: str, target: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """Record ``target(*args, **kwargs)`` in the graph and wrap its result."""
    if isinstance(target, type) and issubclass(target, torch.nn.Parameter):
        # (a backend may return a plain tensor for it: only CPython makes a real Parameter)
        raise Unsupported("making a torch.nn.Parameter inside the graph", hint="make it outside the compiled function")
    wants_grad = kwargs.get("requires_grad")
    if op == "call_function" and wants_grad is not None and wants_grad.is_python_constant() and \
            wants_grad.as_python_constant():
        # a new leaf: made in the graph, it is an output of the backend's graph (under
        # AOTAutograd one that does not require grad), not a leaf; as torch.compile, made eagerly
        raise Unsupported("creating a tensor that requires grad (a new leaf) inside the graph",
                          hint="create it outside the compiled function")
    if any(keyword.iskeyword(k) for k in kwargs):
        args, kwargs = _keywords_by_position(target, args, kwargs)
    fx_args = tuple(as_proxy(a) for a in args)
    fx_kwargs = {k: as_proxy(v) for k, v in kwargs.items()}
    node, example = tx.trace.graph.create_call(op, target, fx_args, fx_kwargs)
    return wrap_fx_value(tx, node, example)


def _keywords_by_position(target: Any, args: list[VariableTracker],
                          kwargs: dict[str, VariableTracker]) -> tuple[list[VariableTracker], dict[str, VariableTracker]]:
    """An op's arguments named by a Python keyword (``x.random_(**{"from": 0, "to": 9})``)
    passed by position instead: the graph's code cannot spell ``from=``. The positions are
    those of the aten schema whose positional parameters take them."""
    name = target if isinstance(target, str) else getattr(target, "__name__", "")
    named = [k for k in kwargs if keyword.iskeyword(k)]
    for schema in torch._C._jit_get_schemas_for_operator(f"aten::{name}") if name.isidentifier() else ():
        params = [a.name for a in schema.arguments if not a.kwarg_only][len(args):]
        if not set(named) <= set(params):
            continue
        moved = params[:max(params.index(k) for k in named) + 1]
        if all(k in kwargs for k in moved):
            return [*args, *(kwargs[k] for k in moved)], {k: v for k, v in kwargs.items() if k not in moved}
    raise Unsupported(f"calling {name} with the keyword argument {named[0]!r}, which graph code cannot spell")


def wrap_fx_value(tx: TracerContext, node: torch.fx.Node, example: Any) -> VariableTracker:
    """Wrap the fake result of a recorded node into trackers."""
    if isinstance(example, torch.Tensor):
        return TensorVariable(node, example)
    if isinstance(example, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        if is_symbolic(example):
            return SymNodeVariable(node, example)
        tx.trace.graph.remove_node(node)
        return ConstantVariable({torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}[type(example)](example))
    if isinstance(example, (tuple, list)) and (is_symbolic(example) or not isinstance(example, torch.Size)):
        items = []
        for i, item in enumerate(example):
            item_node, _ = tx.trace.graph.create_call("call_function", operator.getitem, (node, i), {}, example=item)
            items.append(wrap_fx_value(tx, item_node, item))
        if isinstance(example, torch.Size):
            return SizeVariable(items)
        if isinstance(example, list):
            return ListVariable(items)
        if hasattr(type(example), "n_fields") or hasattr(type(example), "_fields"):
            return NamedTupleVariable(items, type(example))
        return TupleVariable(items)
    if example is None:
        # An operation for its effect (x[0] = 5, torch.optim.sgd.sgd updating its tensors in
        # place): it stays in the graph.
        return ConstantVariable(None)
    # A Python value computed from metadata only: a constant, and the node is not needed.
    if is_literal(example) or isinstance(example, torch.Size):
        tx.trace.graph.remove_node(node)
        return wrap_constant(example) if isinstance(example, torch.Size) else ConstantVariable(example)
    raise Unsupported(f"an operation returned a {type(example).__name__}")
