"""NumPy arrays traced through torch: an ``ndarray`` is the tensor holding its data.

A ``numpy.ndarray`` (an input, ``t.numpy()``, or what NumPy functions make) is traced as the
tensor ``torch.from_numpy`` would make of it: the same memory, so a write through either is seen
through the other, as in eager. Every operation on it is a torch operation in the graph, computed
by NumPy's rules, not torch's: the result's dtype is what NumPy itself answers for operands of
these dtypes (``ufunc.resolve_dtypes``, or the function run on a one-element array of each
dtype: ``dtype_oracle``), the operands cast to the dtypes NumPy's loop computes in, and a 0-d
result of a ufunc, a reduction or an integer index is a NumPy scalar (``numpy.float64``), as
eager returns, not a 0-d array. At the graph's edges the tensor becomes an ndarray again
(``tensor.numpy()``; ``[()]`` for a scalar): an input array returned unchanged is the same object.

An input array is a graph input through ``ndarray_tensor(L['a'])`` (``torch.from_numpy``), with
the tensor guard on it: shape, strides, dtype, as a tensor input is guarded. One torch cannot
take as it is (read-only, not native byte order, object dtype) makes ``ndarray_tensor`` answer
None, which fails the guard; the trace then breaks on it.

Not modelled (the graph breaks, CPython runs it): reading values into Python (``item``,
``tolist``, ``bool`` of an array, ``float()`` of a NumPy scalar), an array beside a tensor in
one operation (torch and NumPy disagree on the result), integer ``//``, ``%`` and negative
powers (NumPy gives 0 and warns where torch raises), subclasses of ndarray, ``out=``, and every
NumPy function not in ``numpy_functions.FUNCTIONS``. NumPy's floating-point warnings (a division
by zero) are not raised from a graph: the values (inf, nan) are the same.
"""

from __future__ import annotations

import contextlib
import operator
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import torch

from ..context import TracerContext
from ..exc import Unsupported
from ..source import LoadEmitter, Source, const_expr, keep_named
from .base import BoundMethodVariable, Registry, VariableTracker
from .constant import ConstantVariable, is_literal
from .lists import BaseListVariable, ListVariable, SliceVariable, TupleVariable
from .tensor import NUMPY_CONVERSION, SymNodeVariable, TensorVariable, record_call

try:
    import numpy
except ImportError:  # pragma: no cover - numpy missing: no array is ever wrapped
    numpy = None

# NumPy's dtypes torch.from_numpy takes, and the torch dtype of each.
TORCH_DTYPES: dict[Any, torch.dtype] = {}
if numpy is not None:
    for _name in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
                  "complex64", "complex128"):
        TORCH_DTYPES[numpy.dtype(_name)] = torch.from_numpy(numpy.zeros(0, _name)).dtype
NUMPY_DTYPES = {t: d for d, t in TORCH_DTYPES.items()}


def ndarray_tensor(value: Any) -> torch.Tensor | None:
    """The tensor sharing an input array's memory, or None where torch cannot take the array
    as it is (then the tensor guard on it fails). Guards and generated code call it."""
    if type(value) is not numpy.ndarray or value.dtype not in TORCH_DTYPES or not value.flags.writeable \
            or not value.flags.aligned or not value.dtype.isnative:
        return None
    return torch.from_numpy(value)


@dataclass(frozen=True)
class NdarrayTensorSource(Source):
    """The tensor of an input array: ``ndarray_tensor(L['a'])``."""

    base: Source

    def __post_init__(self) -> None:
        keep_named(self, ndarray_tensor)

    @property
    def name(self) -> str:
        return f"ndarray_tensor({self.base.name})"

    def expr(self) -> str:
        return self.expr_with(self.base.expr())

    def expr_with(self, base: str) -> str:
        """The expression over ``base`` (its expression, or a name bound to it: guards share
        one ``ndarray_tensor`` call among the tensor guard's reads)."""
        return f"{const_expr(ndarray_tensor)}({base})"

    def emit_load(self, cg: LoadEmitter) -> None:
        cg.call_const(ndarray_tensor, lambda: [self.base.emit_load(cg)])  # type: ignore[attr-defined]

    def root(self) -> Source:
        return self.base.root()


def _as_array(t: torch.Tensor) -> Any:
    return t.numpy()


def _as_scalar(t: torch.Tensor) -> Any:
    return t.numpy()[()]


def _as_read_only(t: torch.Tensor) -> Any:
    array = t.numpy()
    array.flags.writeable = False
    return array


class NdarrayVariable(VariableTracker):
    """A ``numpy.ndarray``, or a NumPy scalar (``scalar``: what a reduction returns), as the
    tensor holding its data (``tensor``, a TensorVariable: torch's operations run on it).
    Not modelled: see the module's docstring."""

    models = (numpy.ndarray, numpy.generic) if numpy is not None else ()

    def __init__(self, tensor: TensorVariable, scalar: bool = False, source: Source | None = None, keep: Any = None) -> None:
        super().__init__(source)
        self.tensor = tensor
        self.scalar = scalar
        self._keep = keep  # (an input's tensor, held while the trace runs: the graph input holds it weakly)
        self.writeable = True  # (False: one NumPy makes read-only, ``a.imag`` of a real array)

    @property
    def dtype(self) -> Any:
        return NUMPY_DTYPES[self.tensor.example.dtype]

    @property
    def ndim(self) -> int:
        return self.tensor.example.dim()

    def python_type(self) -> type:
        return self.dtype.type if self.scalar else numpy.ndarray

    def describe(self) -> str:
        kind = f"a numpy.{self.dtype.name}" if self.scalar else "a NumPy array"
        return f"{kind} ({self.source.name})" if self.source is not None else kind

    def subvalues(self) -> list[VariableTracker]:
        return [self.tensor]

    def is_callable(self, tx: TracerContext) -> bool:
        return False

    def truth(self, tx: TracerContext) -> bool:
        raise Unsupported(f"data-dependent control flow: the branch depends on the value of {self.describe()}",
                          hint="use numpy.where, or move the condition out of the compiled function")

    def reconstruct(self, cg: Any) -> None:
        if self.source is not None:
            self.source.emit_load(cg)
            return
        convert = _as_scalar if self.scalar else _as_array if self.writeable else _as_read_only
        cg.call_const(convert, lambda: [cg.reconstruct(self.tensor)])

    def unpack(self, tx: TracerContext) -> list[VariableTracker]:
        if self.ndim == 0:
            raise Unsupported("TypeError: iteration over a 0-d array")
        size = self.tensor.example.size(0)
        if not isinstance(size, int):
            raise Unsupported("iterating over an array of a dynamic length")
        return [getitem(tx, self, ConstantVariable(i)) for i in range(size)]

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        attribute = ATTRIBUTES.get(name)
        if attribute is not None:
            return attribute(tx, self)
        if name in METHODS or hasattr(numpy.ndarray, name) and callable(getattr(numpy.ndarray, name)):
            return BoundMethodVariable(self, name)
        raise Unsupported(f"reading ndarray.{name}", hint="the graph breaks; CPython reads it")

    def call_method(self, tx: TracerContext, name: str, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        method = METHODS.get(name)
        if method is None:
            raise Unsupported(f"ndarray.{name}() is not translated to torch", hint="the graph breaks; CPython runs it")
        try:
            return method(tx, self, *args, **kwargs)
        except TypeError as e:  # (arguments NumPy's signature does not take: eager raises its own error)
            raise Unsupported(f"ndarray.{name}() with these arguments ({e})") from e

    def __repr__(self) -> str:
        return f"NdarrayVariable({self.tensor!r}{', scalar' if self.scalar else ''})"


# ndarray attributes and methods: filled here and by numpy_functions.py.
ATTRIBUTES: dict[str, Callable[[TracerContext, NdarrayVariable], VariableTracker]] = Registry("ndarray.ATTRIBUTES")
METHODS: dict[str, Callable[..., VariableTracker]] = Registry("ndarray.METHODS")


def is_array(var: VariableTracker) -> bool:
    return isinstance(var, NdarrayVariable)


def read_only(array: NdarrayVariable) -> NdarrayVariable:
    array.writeable = False
    return array


def writable(array: NdarrayVariable) -> NdarrayVariable:
    """``array``, refusing a write into a read-only one (eager raises ValueError)."""
    if not array.writeable:
        raise Unsupported("writing into a read-only NumPy array (eager raises ValueError)")
    return array


def wrap_array(tensor: VariableTracker, scalar: bool = False) -> NdarrayVariable:
    if not isinstance(tensor, TensorVariable):
        raise Unsupported(f"a NumPy operation gave {tensor.describe()}")
    if tensor.example.dtype not in NUMPY_DTYPES:
        raise Unsupported(f"a NumPy operation gave a {tensor.example.dtype} tensor, which NumPy has no dtype for")
    return NdarrayVariable(tensor, scalar and tensor.example.dim() == 0)


def torch_dtype(dtype: Any) -> torch.dtype:
    dtype = numpy.dtype(dtype)
    if dtype not in TORCH_DTYPES:
        raise Unsupported(f"the NumPy dtype {dtype} in torch")
    return TORCH_DTYPES[dtype]


def cast(tx: TracerContext, tensor: TensorVariable, dtype: Any) -> TensorVariable:
    """``tensor`` in the NumPy ``dtype`` (the same tracker when it already is)."""
    wanted = torch_dtype(dtype)
    if tensor.example.dtype == wanted:
        return tensor
    return record_call(tx, "call_method", "to", [tensor, ConstantVariable(wanted)], {})  # type: ignore[return-value]


# -- what NumPy answers for these dtypes -------------------------------------------------------
@contextlib.contextmanager
def _quiet() -> Any:
    with numpy.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def stand_in(var: VariableTracker) -> Any:
    """What NumPy is asked about in place of ``var``: an array of one element of its dtype and
    number of dimensions, a NumPy scalar of its dtype, the constant itself, a Python number's
    type for a symbolic one (weak, as NumPy takes a Python number)."""
    if isinstance(var, NdarrayVariable):
        return var.dtype.type(0) if var.scalar else numpy.zeros((1,) * var.ndim, var.dtype)
    if isinstance(var, SymNodeVariable):
        return var.python_type()(1)
    if isinstance(var, BaseListVariable) and not isinstance(var, SliceVariable):
        items = [stand_in(item) for item in var.items]
        return items if isinstance(var, ListVariable) else tuple(items)
    if isinstance(var, TensorVariable):
        raise Unsupported("a tensor in a NumPy function (NumPy would convert it to an array)",
                          hint="convert it with .numpy() first, or use the torch function")
    return var.as_python_constant()


def dtype_oracle(fn: Callable[..., Any], args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> Any:
    """What ``fn`` returns on stand-ins of these arguments (its dtype, whether a scalar): NumPy
    answers its own rules. Where NumPy raises for them, so would eager: the graph breaks and
    CPython raises it."""
    try:
        with _quiet():
            return fn(*[stand_in(a) for a in args], **{k: stand_in(v) for k, v in kwargs.items()})
    except Unsupported:
        raise
    except Exception as e:  # noqa: BLE001 - NumPy's own error for these arguments
        raise Unsupported(f"{getattr(fn, '__name__', fn)} raises on these arguments ({type(e).__name__}: {e})") from e


def result_kind(result: Any) -> tuple[Any, bool]:
    """The dtype and scalar-ness of what ``dtype_oracle`` returned."""
    if isinstance(result, numpy.generic):
        return result.dtype, True
    if isinstance(result, numpy.ndarray):
        return result.dtype, False
    raise Unsupported(f"a NumPy function returned a {type(result).__name__}")


def operand(tx: TracerContext, var: VariableTracker, dtype: Any) -> VariableTracker:
    """An operand of a torch operation computing in NumPy's loop dtype ``dtype``: an array's
    tensor cast to it; a Python or NumPy number as the Python number torch takes beside it."""
    if isinstance(var, NdarrayVariable):
        return cast(tx, var.tensor, dtype)
    if isinstance(var, SymNodeVariable):
        return var
    value = var.as_python_constant()
    if isinstance(value, numpy.generic):
        return ConstantVariable(value.item())
    if type(value) in (int, float, bool, complex):
        return var
    raise Unsupported(f"{var.describe()} as an operand of a NumPy operation")


# -- ufuncs: NumPy's elementwise functions, and the operators that are them ---------------------
def _integer_loop(dtypes: tuple) -> bool:
    return any(d.kind in "iub" for d in dtypes)


def _int_power_ok(args: list[VariableTracker]) -> bool:
    exponent = args[1]
    return exponent.is_python_constant() and isinstance(exponent.as_python_constant(), (int, numpy.integer)) and \
        exponent.as_python_constant() >= 0


def _no_int(args: list[VariableTracker]) -> bool:
    return False


# ufunc name -> (the torch function, a check of its arguments for integer loops where NumPy and
# torch differ: None when the integer loop is fine)
_NO_INT = _no_int
UFUNCS: dict[str, tuple[Any, Any]] = {
    "add": (torch.add, None), "subtract": (torch.sub, None), "multiply": (torch.mul, None),
    "true_divide": (torch.true_divide, None), "divide": (torch.true_divide, None),
    "floor_divide": (torch.floor_divide, _NO_INT), "remainder": (torch.remainder, _NO_INT),
    "mod": (torch.remainder, _NO_INT), "fmod": (torch.fmod, _NO_INT), "power": (torch.pow, _int_power_ok),
    "float_power": (torch.float_power, None), "maximum": (torch.maximum, None), "minimum": (torch.minimum, None),
    "fmax": (torch.fmax, None), "fmin": (torch.fmin, None), "arctan2": (torch.atan2, None),
    "hypot": (torch.hypot, None), "copysign": (torch.copysign, None), "greater": (torch.gt, None),
    "greater_equal": (torch.ge, None), "less": (torch.lt, None), "less_equal": (torch.le, None),
    "equal": (torch.eq, None), "not_equal": (torch.ne, None), "logical_and": (torch.logical_and, None),
    "logical_or": (torch.logical_or, None), "logical_xor": (torch.logical_xor, None),
    "bitwise_and": (torch.bitwise_and, None), "bitwise_or": (torch.bitwise_or, None),
    "bitwise_xor": (torch.bitwise_xor, None), "logaddexp": (torch.logaddexp, None),
    "logaddexp2": (torch.logaddexp2, None), "heaviside": (torch.heaviside, None),
    "negative": (torch.neg, None), "positive": (torch.positive, None), "absolute": (torch.abs, None),
    "fabs": (torch.abs, None), "sqrt": (torch.sqrt, None), "exp": (torch.exp, None), "exp2": (torch.exp2, None),
    "expm1": (torch.expm1, None), "log": (torch.log, None), "log2": (torch.log2, None), "log10": (torch.log10, None),
    "log1p": (torch.log1p, None), "sin": (torch.sin, None), "cos": (torch.cos, None), "tan": (torch.tan, None),
    "arcsin": (torch.asin, None), "arccos": (torch.acos, None), "arctan": (torch.atan, None),
    "sinh": (torch.sinh, None), "cosh": (torch.cosh, None), "tanh": (torch.tanh, None),
    "arcsinh": (torch.asinh, None), "arccosh": (torch.acosh, None), "arctanh": (torch.atanh, None),
    "floor": (torch.floor, None), "ceil": (torch.ceil, None), "trunc": (torch.trunc, None),
    "rint": (torch.round, None), "sign": (torch.sign, None), "square": (torch.square, None),
    "reciprocal": (torch.reciprocal, _NO_INT), "logical_not": (torch.logical_not, None),
    "isnan": (torch.isnan, None), "isinf": (torch.isinf, None), "isfinite": (torch.isfinite, None),
    "signbit": (torch.signbit, None), "conjugate": (torch.conj_physical, None),
    "invert": (torch.bitwise_not, None), "degrees": (torch.rad2deg, None), "radians": (torch.deg2rad, None),
    "rad2deg": (torch.rad2deg, None), "deg2rad": (torch.deg2rad, None),
}


def call_ufunc(tx: TracerContext, ufunc: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker],
               asked: Callable[..., Any] | None = None) -> VariableTracker:
    """``ufunc(*args)`` where an argument is an array: one torch operation in NumPy's loop
    dtypes, its result in NumPy's output dtype (a NumPy scalar when 0-d). ``asked``: what the
    user called, when it is not the ufunc itself (``a ** 2`` is ``np.square(a)`` for NumPy,
    whose dtype may differ from ``np.power``'s)."""
    out = kwargs.get("out")
    if out is not None and set(kwargs) == {"out"}:
        return _into(tx, ufunc, out, call_ufunc(tx, ufunc, args, {}, asked))
    entry = UFUNCS.get(ufunc.__name__)
    if entry is None or kwargs or ufunc.nout != 1 or len(args) != ufunc.nin:
        raise Unsupported(f"numpy.{ufunc.__name__} with these arguments is not translated to torch",
                          hint="the graph breaks; CPython runs it")
    fn, int_check = entry
    if any(isinstance(a, TensorVariable) for a in args):
        raise Unsupported(f"numpy.{ufunc.__name__} of a tensor (NumPy would convert it to an array)")
    result = dtype_oracle(asked or ufunc, args, {})
    out_dtype, scalar = result_kind(result)
    try:
        loop = ufunc.resolve_dtypes(tuple(_operand_dtype(a) for a in args) + (None,))
    except Exception as e:  # noqa: BLE001 - no loop: eager's TypeError, at the break
        raise Unsupported(f"numpy.{ufunc.__name__} has no loop for these dtypes ({e})") from e
    if int_check is not None and _integer_loop(loop[:-1]) and not int_check(args):
        raise Unsupported(f"numpy.{ufunc.__name__} on integers (NumPy gives 0 and warns where torch raises)",
                          hint="the graph breaks; CPython runs it")
    if any(d.kind == "b" for d in loop) and fn not in _BOOL_KERNELS:
        if ufunc.__name__ not in ("absolute", "fabs", "positive") or loop[0].kind != "b":
            raise Unsupported(f"numpy.{ufunc.__name__} on booleans (torch has no such kernel)")
        fn = torch.clone  # (|b| and +b of a boolean: itself)
    for a, d in zip(args, loop[:-1]):
        if isinstance(a, SymNodeVariable) and d.itemsize < 8 and d.kind in "iu":
            # (NumPy refuses a Python int out of the loop dtype's range: the stand-in of 1 cannot tell)
            raise Unsupported(f"a symbolic int beside a {d} array (NumPy checks its value against {d})")
    operands = [operand(tx, a, d) for a, d in zip(args, loop[:-1])]
    if fn in _TENSORS_ONLY:  # (a number as the 0-d tensor of its loop dtype: NumPy casts it so too)
        operands = [o if isinstance(o, TensorVariable) else record_call(
            tx, "call_function", torch.tensor, [o], {"dtype": ConstantVariable(torch_dtype(d))})
            for o, d in zip(operands, loop[:-1])]
    if not any(isinstance(o, TensorVariable) for o in operands):  # (numbers only: a NumPy scalar's 0-d tensor)
        operands[0] = record_call(tx, "call_function", torch.tensor, [operands[0]],
                                  {"dtype": ConstantVariable(torch_dtype(loop[0]))})
    out = record_call(tx, "call_function", fn, operands, {})
    if ufunc.__name__ in _NAN_IN_NAN_OUT and loop[0].kind in "fc":  # (torch says 0 where NumPy keeps a nan)
        first = operands[0]
        nan = record_call(tx, "call_function", torch.isnan, [first], {})
        out = record_call(tx, "call_function", torch.where, [nan, first, out], {})
    return wrap_array(cast(tx, out, out_dtype), scalar=scalar)  # type: ignore[arg-type]


def _into(tx: TracerContext, ufunc: Any, out: VariableTracker, value: VariableTracker) -> VariableTracker:
    """``ufunc(..., out=out)``: the result written into ``out`` (broadcast to its shape), which is
    returned (``np.sin(x, out=o) is o``). Only where the result already has ``out``'s dtype: with
    another, NumPy may pick another loop."""
    if type(out) is TupleVariable and len(out.items) == 1:
        out = out.items[0]
    if not isinstance(out, NdarrayVariable) or out.scalar or not isinstance(value, NdarrayVariable):
        raise Unsupported(f"numpy.{ufunc.__name__} with out={out.describe()}")
    if value.dtype != out.dtype:
        raise Unsupported(f"numpy.{ufunc.__name__} into an array of {out.dtype} from {value.dtype}")
    record_call(tx, "call_method", "copy_", [writable(out).tensor, value.tensor], {})
    return out


# torch's elementwise functions that have boolean kernels (NumPy's boolean loops of the others
# have none in torch: they break).
_BOOL_KERNELS = frozenset({torch.add, torch.mul, torch.maximum, torch.minimum, torch.fmax, torch.fmin, torch.gt, torch.ge,
                           torch.lt, torch.le, torch.eq, torch.ne, torch.logical_and, torch.logical_or,
                           torch.logical_xor, torch.logical_not, torch.bitwise_and, torch.bitwise_or,
                           torch.bitwise_xor, torch.bitwise_not, torch.isnan, torch.isinf, torch.isfinite,
                           torch.true_divide, torch.sqrt, torch.exp, torch.log, torch.sin, torch.cos})


# torch's functions that take no number in place of a tensor.
_TENSORS_ONLY = frozenset({torch.maximum, torch.minimum, torch.fmax, torch.fmin, torch.atan2, torch.hypot,
                           torch.logaddexp, torch.logaddexp2, torch.heaviside, torch.logical_and, torch.logical_or,
                           torch.logical_xor})


# ufuncs that give nan for a nan first operand where torch's function gives 0.
_NAN_IN_NAN_OUT = frozenset({"sign", "heaviside"})


def _operand_dtype(var: VariableTracker) -> Any:
    if isinstance(var, NdarrayVariable):
        return var.dtype
    value = stand_in(var)
    if isinstance(value, numpy.generic):
        return value.dtype
    if type(value) in (int, float, complex, bool):
        return type(value)  # (a Python number: weak, by NEP 50)
    raise Unsupported(f"{var.describe()} as an operand of a NumPy ufunc")


BINARY_UFUNCS = {
    operator.add: "add", operator.sub: "subtract", operator.mul: "multiply", operator.truediv: "true_divide",
    operator.floordiv: "floor_divide", operator.mod: "remainder", operator.pow: "power",
    operator.and_: "bitwise_and", operator.or_: "bitwise_or", operator.xor: "bitwise_xor",
    operator.lt: "less", operator.le: "less_equal", operator.gt: "greater", operator.ge: "greater_equal",
    operator.eq: "equal", operator.ne: "not_equal",
}
INPLACE_UFUNCS = {operator.iadd: "add", operator.isub: "subtract", operator.imul: "multiply",
                  operator.itruediv: "true_divide", operator.ifloordiv: "floor_divide", operator.imod: "remainder",
                  operator.ipow: "power", operator.iand: "bitwise_and", operator.ior: "bitwise_or",
                  operator.ixor: "bitwise_xor"}
UNARY_UFUNCS = {operator.neg: "negative", operator.pos: "positive", operator.abs: "absolute", abs: "absolute",
                operator.invert: "invert", operator.inv: "invert"}


def array_operator(tx: TracerContext, fn: Any, *operands: VariableTracker) -> VariableTracker:
    """An operator with an array among its operands (``a + 1``, ``-a``, ``a @ b``, ``a += b``)."""
    if any(isinstance(o, TensorVariable) for o in operands):
        # (eager's answer depends on both libraries' versions: torch's __array_priority__,
        # NumPy's deferral rules; in torch 2.13 with NumPy 2.4 `a - t` raises, `t == a` is True)
        raise Unsupported("an operation between a tensor and a NumPy array", hint="the graph breaks; CPython runs it")
    if fn in (operator.matmul, operator.imatmul):
        return FUNCTION_HANDLERS[numpy.matmul](tx, *operands)
    if fn in INPLACE_UFUNCS:
        return _inplace(tx, getattr(numpy, INPLACE_UFUNCS[fn]), *operands)
    name = BINARY_UFUNCS.get(fn) or UNARY_UFUNCS.get(fn)
    if name is None:
        raise Unsupported(f"{getattr(fn, '__name__', fn)} of a NumPy array")
    if fn in (operator.eq, operator.ne) and not all(_numeric(o) for o in operands):
        raise Unsupported(f"comparing a NumPy array with {operands[1].describe()}")
    return call_ufunc(tx, getattr(numpy, name), list(operands), {}, asked=fn)


def _numeric(var: VariableTracker) -> bool:
    if isinstance(var, (NdarrayVariable, SymNodeVariable)):
        return True
    return var.is_python_constant() and type(var.as_python_constant()) in (int, float, bool, complex) or \
        var.is_python_constant() and isinstance(var.as_python_constant(), numpy.generic)


def _inplace(tx: TracerContext, ufunc: Any, target: VariableTracker, other: VariableTracker) -> VariableTracker:
    """``a += b``: NumPy computes in its loop dtype and casts back into ``a`` (refusing a cast
    that is not 'same_kind', as eager raises)."""
    if not isinstance(target, NdarrayVariable) or target.scalar:
        return call_ufunc(tx, ufunc, [target, other], {})  # (a NumPy scalar is immutable: rebinds)
    writable(target)
    value = call_ufunc(tx, ufunc, [target, other], {})
    assert isinstance(value, NdarrayVariable)
    if not numpy.can_cast(value.dtype, target.dtype, "same_kind"):
        raise Unsupported(f"numpy.{ufunc.__name__} in place from {value.dtype} into {target.dtype} (eager raises)")
    record_call(tx, "call_method", "copy_", [target.tensor, value.tensor], {})
    return target


# -- indexing --------------------------------------------------------------------------------
def _index(tx: TracerContext, index: VariableTracker) -> tuple[VariableTracker, bool]:
    """The index as torch takes it (arrays as their tensors), and whether it is integers only."""
    items = index.items if type(index) is TupleVariable else [index]
    converted, integers = [], True
    for item in items:
        if isinstance(item, NdarrayVariable):
            if item.dtype.kind not in "iub":
                raise Unsupported(f"indexing with an array of {item.dtype}")
            if item.dtype.kind == "b":
                raise Unsupported("indexing with a boolean mask (the result's size depends on the values)")
            converted.append(item.tensor)
            integers = False
        elif isinstance(item, TensorVariable):
            raise Unsupported("indexing a NumPy array with a tensor")
        else:
            kind = item.python_type() if isinstance(item, (ConstantVariable, SymNodeVariable)) else None
            integers = integers and kind is int
            converted.append(item)
    whole = TupleVariable(converted) if type(index) is TupleVariable else converted[0]
    return whole, integers


def getitem(tx: TracerContext, array: NdarrayVariable, index: VariableTracker) -> VariableTracker:
    if array.scalar:
        raise Unsupported(f"indexing {array.describe()}")
    torch_index, integers = _index(tx, index)
    view = record_call(tx, "call_function", operator.getitem, [array.tensor, torch_index], {})
    return wrap_array(view, scalar=integers)


def setitem(tx: TracerContext, array: NdarrayVariable, index: VariableTracker, value: VariableTracker) -> VariableTracker:
    if array.scalar:
        raise Unsupported(f"assigning into {array.describe()}")
    writable(array)
    torch_index, _ = _index(tx, index)
    if isinstance(value, NdarrayVariable):
        value = cast(tx, value.tensor, array.dtype)  # (NumPy casts what it stores to the array's dtype)
    elif isinstance(value, TensorVariable):
        raise Unsupported("storing a tensor into a NumPy array")
    elif not _numeric(value):
        raise Unsupported(f"storing {value.describe()} into a NumPy array")
    else:
        number = value.as_python_constant() if value.is_python_constant() else None
        if number is not None and not numpy.can_cast(numpy.result_type(number), array.dtype, "unsafe"):
            raise Unsupported(f"storing {value.describe()} into a {array.dtype} array")
        value = operand(tx, value, array.dtype)
    record_call(tx, "call_function", operator.setitem, [array.tensor, torch_index, value], {})
    return ConstantVariable(None)


# -- conversions between tensors and arrays ------------------------------------------------------
def tensor_numpy(tx: TracerContext, tensor: TensorVariable, args: list[VariableTracker],
                 kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """``t.numpy()``: the array over ``t``'s memory. ``force=True`` as torch does it:
    ``t.detach().cpu().resolve_conj().resolve_neg()`` first (over the same memory unless a
    conjugate or negative bit makes a copy; another device breaks)."""
    force = kwargs.get("force", args[0] if args else None)
    if len(args) > 1 or set(kwargs) - {"force"} or force is not None and not (
            force.is_python_constant() and isinstance(force.as_python_constant(), bool)):
        raise Unsupported("Tensor.numpy() with arguments it does not take")
    if force is not None and force.as_python_constant() and tensor.example.device.type == "cpu":
        for needed, method in ((tensor.example.requires_grad, "detach"), (tensor.example.is_conj(), "resolve_conj"),
                               (tensor.example.is_neg(), "resolve_neg")):
            if needed:
                tensor = record_call(tx, "call_method", method, [tensor], {})  # type: ignore[assignment]
    fake = tensor.example
    if fake.requires_grad or fake.device.type != "cpu" or fake.dtype not in NUMPY_DTYPES or fake.is_conj() or \
            fake.is_neg() or type(fake) is not torch._subclasses.fake_tensor.FakeTensor and tensor.cls is not torch.Tensor:
        raise Unsupported("Tensor.numpy() of a tensor that requires grad, is not on the CPU, or has no NumPy dtype",
                          hint="the graph breaks; CPython converts it (or raises)")
    if tensor.cls is not torch.Tensor:
        raise Unsupported(f"Tensor.numpy() of a {tensor.cls.__name__}")
    return NdarrayVariable(tensor)


NUMPY_CONVERSION["numpy"] = tensor_numpy


def array_input(tx: TracerContext, value: Any, source: Source) -> VariableTracker:
    """An input ``numpy.ndarray``: a graph input through ``ndarray_tensor``, guarded as a
    tensor is (its class first: the tensor guard's read would fail on another)."""
    tensor = ndarray_tensor(value)
    if tensor is None:
        raise Unsupported(f"a NumPy array torch cannot take as it is ({type(value).__name__}, {value.dtype}, "
                          f"writeable={value.flags.writeable})")
    tx.guards.type_match(source, value)
    var = tx.trace.graph.add_tensor_input(tensor, NdarrayTensorSource(source), lazy=True)
    return NdarrayVariable(var, source=source, keep=tensor)


FUNCTION_HANDLERS: dict[Any, Callable[..., VariableTracker]] = Registry("ndarray.FUNCTION_HANDLERS")


def is_literal_number(var: VariableTracker) -> bool:
    return var.is_python_constant() and is_literal(var.as_python_constant())
