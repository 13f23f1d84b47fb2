"""torch's own namespace: functions that become graph nodes, and modules that lead to them.

Any callable that lives in torch (``torch.add``, ``torch.nn.functional.relu``,
``torch.Tensor.add``) is recorded as a ``call_function`` node and its result computed on fake
tensors. A call whose arguments hold no tensor and whose result holds none either is a
constant (``torch.is_grad_enabled()``, ``torch.finfo(...)``, ``torch.device("cpu")``) and runs
while tracing, unless it changes global state, which is unsupported.
"""

from __future__ import annotations

import types
from typing import Any, Callable

import torch

from ..context import TracerContext
from ..exc import AttributeMissing, Unsupported
from ..source import AttrSource, CallSource, ConstSource, Source
from ..torch_api import IS_COMPILING, compiler_api_kind, disallowed_in_graph_by_torch
from .base import RealObjectVariable, Registry, VariableTracker, as_proxy, class_static, subclass_check
from .constant import ConstantVariable, is_literal, wrap_constant
from .ctx import AutocastVariable, GradModeVariable, RecordFunctionVariable
from .functions import UserFunctionVariable
from .functorch import FORWARD_AD, TRACED_INTO, forward_ad_call
from .lists import NamedTupleVariable
from .higher_order import WRAPPERS as HIGHER_ORDER_WRAPPERS
from .classes import CLASS_DATA_ATTRS, PythonModuleVariable, UserDefinedClassVariable, construct
from .new_modules import construct_torch_module
from .lists import ListVariable, SizeVariable, TupleVariable
from .dicts import ConstDictVariable
from .user_objects import ObjectVariableBase
from .object_protocol import by_class_statement
from .tensor import SymNodeVariable, TensorVariable, python_types_as_dtypes, record_call

# Functions that change global state or leave the graph's world.
_STATEFUL = frozenset({
    torch.manual_seed, torch.seed, torch.set_default_dtype,
    torch.set_default_device, torch.use_deterministic_algorithms, torch.set_printoptions,
    torch.save, torch.load, torch.set_num_threads, torch.set_rng_state, torch.get_rng_state,
    torch.compile, torch.autograd.grad, torch.autograd.backward,
})
# Operations a graph cannot hold for every backend: the fused optimizer kernels update five
# lists of tensors in place, which AOTAutograd's functionalization refuses (an internal assert:
# "mutating a non-functional tensor with a functional tensor"). CPython runs them at a break.
_NOT_IN_GRAPHS = frozenset(getattr(torch, name) for name in (
    "_fused_adam_", "_fused_adamw_", "_fused_sgd_", "_fused_adagrad_") if hasattr(torch, name))
# Classes whose construction from constants is a pure value.
_VALUE_CLASSES = (torch.Size, torch.device, torch.finfo, torch.iinfo)
# Context managers and other classes whose objects tracing cannot hold yet.
_UNSUPPORTED_CLASSES = (torch.inference_mode,)


# Private functions of torch that are nodes all the same, reached by their name from torch:
# torch._check_is_size (a check on a data-dependent size, which torch.compile records as a node;
# inlined, its deprecation wrapper's warnings.warn broke the graph).
_PRIVATE_OPERATIONS = frozenset(getattr(torch, name) for name in ("_check_is_size",) if hasattr(torch, name))


# The namespaces of torch's operations, whose functions may live in a private module.
_OPERATOR_NAMESPACES = frozenset({"torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special",
                                  "torch.masked", "torch.sparse"})


def is_torch_operation(fn: Any) -> bool:
    """Whether a callable of torch's namespace becomes one graph node: anything torch implements
    in C (builtins, descriptors, ops), and a Python function of torch's public API, reachable
    by its name (``torch.nn.functional.relu``, ``torch.functional.einsum``). Any other Python
    function there (a lambda or helper of ``torch.testing._internal``, a private module's
    function, ``F._canonical_mask``) is inlined like a user's: a node must be something the
    graph can call by name and that is a real operation."""
    if not isinstance(fn, types.FunctionType) or fn in _PRIVATE_OPERATIONS or fn in _SPECIAL_CALLS:
        return True  # (a private function the trace answers itself: _SPECIAL_CALLS)
    wrapped = getattr(fn, "__wrapped__", None)
    if wrapped is not None and getattr(wrapped, "__name__", None) == fn.__name__ and is_torch_object(wrapped):
        # torch's own wrapper of an operation (importing torch._dynamo replaces torch.manual_seed
        # with a functools.wraps wrapper that only turns Dynamo off): what it wraps decides.
        return is_torch_operation(wrapped)
    parts = (fn.__module__ or "").split(".")
    if fn.__name__.startswith("_") or parts[0] != "torch":
        return False
    # Reached from ``torch`` by public attributes, as the graph's code will call it: through
    # its module's path, or re-exported by the public package above a private module
    # (torch.masked.norm, defined in torch.masked._ops). torch.optim.sgd is a module
    # torch.optim does not keep as an attribute: its sgd is inlined.
    public = parts[1:]
    if any(part.startswith("_") for part in public):
        public = public[:next(i for i, part in enumerate(public) if part.startswith("_"))]
        if ".".join(["torch", *public]) not in _OPERATOR_NAMESPACES:
            return False  # (torch.jit.script, torch.testing.assert_close: tools, not operations)
    value: Any = torch
    for part in (*public, fn.__name__):
        value = getattr(value, part, None)
    return value is fn


def is_torch_object(value: Any) -> bool:
    if isinstance(value, types.MethodType):
        return False  # a bound method of some object: the object decides
    if isinstance(value, types.ModuleType):  # (its __dict__: a module's __getattr__ is the user's code)
        module = object.__getattribute__(value, "__dict__").get("__name__")
        return type(module) is str and (module == "torch" or module.startswith("torch."))
    module = getattr(value, "__module__", None) or ""
    if isinstance(value, (types.MethodDescriptorType, types.WrapperDescriptorType)):
        module = getattr(value.__objclass__, "__module__", "")  # torch.Tensor.add: of torch._C.TensorBase
    return module == "torch" or module.startswith("torch.")


class TorchVariable(VariableTracker):
    """A callable from torch's namespace."""

    models = object  # torch's functions, classes and operator objects, of many kinds

    def __init__(self, fn: Any, source: Source | None = None, owner: type | None = None) -> None:
        super().__init__(source)
        self.fn = fn
        self.owner = owner  # the tensor class a Python method was read from (torch.Tensor.split)

    def python_type(self) -> type:
        return type(self.fn)

    def as_python_constant(self) -> Any:
        return self.fn

    def describe(self) -> str:
        return f"torch function {getattr(self.fn, '__qualname__', self.fn)}"

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        if isinstance(self.fn, type) and name in CLASS_DATA_ATTRS:
            return UserDefinedClassVariable(self.fn, self.source).var_getattr(tx, name)  # (its __name__...)
        if isinstance(self.fn, type):
            # ``torch.Tensor.add``, a class attribute: what the class holds, pinned by the
            # builder (a method replaced on the class retraces).
            if class_static(tx, self.fn, name) is None:  # (on its metaclass, or missing: CPython says which)
                raise Unsupported(f"reading {name!r} of {self.fn.__qualname__}, which its class does not hold")
            value = getattr(self.fn, name)
            var = tx.wrap(value, AttrSource(self.source or ConstSource.of(self.fn), name))
            if issubclass(self.fn, torch.Tensor) and isinstance(value, types.FunctionType) and is_torch_object(value):
                # A method torch writes in Python (Tensor.split, Tensor.unique): called on a
                # tensor it is that tensor's method call, like the ones written in C.
                return TorchVariable(value, var.source, owner=self.fn)
            return var
        return super().var_getattr(tx, name)

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        fn = self.fn
        if args and (self.owner is not None or isinstance(fn, (types.MethodDescriptorType, types.WrapperDescriptorType))):
            return _unbound_tensor_method(tx, fn, getattr(fn, "__objclass__", self.owner), args, kwargs)
        if fn in _STATEFUL or isinstance(fn, types.FunctionType) and getattr(fn, "__wrapped__", None) in _STATEFUL:
            raise Unsupported(f"{self.describe()} changes global state")
        if disallowed_in_graph_by_torch(fn):
            raise Unsupported(f"{self.describe()} was taken out of graphs by torch._dynamo.disallow_in_graph",
                              hint="the graph breaks; CPython runs it")
        if fn in FORWARD_AD:
            return forward_ad_call(tx, *args, **kwargs)
        if fn in _NOT_IN_GRAPHS:
            raise Unsupported(f"{self.describe()}, a fused optimizer kernel, in a graph (AOTAutograd cannot "
                              f"functionalize it)", hint="the graph breaks; CPython runs it")
        if compiler_api_kind(fn) == IS_COMPILING:  # (torch_api.py: the one list of them)
            return ConstantVariable(True)  # code that asks takes its compile-friendly path
        special = _SPECIAL_CALLS.get(fn)  # (fn is hashable: it was looked up in _STATEFUL)
        if special is not None:
            result = special(tx, fn, args, kwargs)
            if result is not None:
                return result
        if isinstance(fn, type):
            if issubclass(fn, _VALUE_CLASSES):
                value = fn(*[a.as_python_constant() for a in args], **{k: v.as_python_constant() for k, v in kwargs.items()})
                return _Opaque(value) if isinstance(value, (torch.finfo, torch.iinfo)) else wrap_constant(value)
            if issubclass(fn, _UNSUPPORTED_CLASSES):
                raise Unsupported(f"using {fn.__qualname__} inside a compiled function")
            if issubclass(fn, torch.nn.Module):
                return construct_torch_module(tx, fn, args, kwargs)
            if _plain_python_class(tx, fn):
                # A class torch writes in Python for its values (torch.distributions.Normal):
                # made as a user's class is, its __init__ traced.
                return construct(tx, fn, args, kwargs)
            if _is_structseq(fn) and len(args) == 1 and not kwargs:
                # ``torch.return_types.qr((a, b))``: an immutable tuple of its items
                items = args[0].unpack(tx)
                if len(items) == fn.n_fields == fn.n_sequence_fields:
                    return NamedTupleVariable(items, fn)
            if type(fn) is type(torch.FloatTensor) and not fn.is_cuda and not fn.is_sparse and len(args) == 1 \
                    and not kwargs and type(args[0]) in (ListVariable, TupleVariable):
                # ``torch.LongTensor([1, 2])``: the data as torch.tensor takes it, in the class's
                # dtype, on the CPU (``torch.LongTensor(2, 3)``, sizes, still breaks)
                return TorchVariable(torch.tensor).call_function(
                    tx, [args[0]], {"dtype": ConstantVariable(fn.dtype), "device": ConstantVariable(torch.device("cpu"))})
            if fn not in (torch.Tensor,) and not issubclass(fn, torch.Tensor):
                # A torch class made for its effect (an RAII guard like _InferenceMode): never
                # run while tracing.
                raise Unsupported(f"constructing torch's {fn.__qualname__} inside a compiled function",
                                  hint="the graph breaks; CPython makes it")
        if isinstance(fn, types.FunctionType) and (fn in TRACED_INTO or fn in HIGHER_ORDER_WRAPPERS or not _graph_can_hold(args, kwargs)):
            # A public Python function of torch given what a graph cannot hold (a module or a
            # function as the distance of triplet_margin_with_distance_loss, an options
            # object): traced into, as a user's function, with its code pinned.
            tx.guards.id_match(AttrSource(self.source or ConstSource.of(fn), "__code__"), fn.__code__)
            inlined = UserFunctionVariable(fn, self.source)
            inlined.traced_into = True
            return inlined.call_function(tx, args, kwargs)
        if isinstance(fn, types.BuiltinFunctionType) and is_torch_object(fn):  # (torch's parser reads dtype=float)
            overridden = _torch_function_override(tx, self, args, kwargs)
            if overridden is not None:
                return overridden
            args, kwargs = python_types_as_dtypes(args, kwargs, positional=False)
        # Even a call on constants is recorded: its fake result says whether it made a tensor
        # (a factory such as torch.ones) or a constant, whose node is then dropped.
        outs = _input_outs(kwargs.get("out"))
        shapes = [out.example.shape for out in outs]
        result = record_call(tx, "call_function", fn, args, kwargs)
        if any(out.example.shape != shape for out, shape in zip(outs, shapes)):
            # An out= tensor of the caller's that the op resizes: a backend's graph (AOTAutograd's
            # functionalized copy) cannot change an input's size. CPython runs it, as torch.compile.
            raise Unsupported(f"{self.describe()} resizing its out= tensor, an input of the graph",
                              hint="the graph breaks; CPython runs it")
        if (isinstance(result, ConstantVariable) and result.source is None and result.as_python_constant() is not None
                and all(_plain_constant(a) for a in (*args, *kwargs.values()))):
            # A query of torch's state (torch.get_num_threads()): guarded, as any value read,
            # by calling it again, once the trace uses it.
            return tx.wrap(result.as_python_constant(), CallSource(
                ConstSource.of(fn), tuple(a.as_python_constant() for a in args),
                tuple((k, v.as_python_constant()) for k, v in kwargs.items())))
        return result

    def reconstruct(self, cg: Any) -> None:
        cg.load_const(self.fn)

    def __repr__(self) -> str:
        return f"TorchVariable({getattr(self.fn, '__name__', self.fn)})"


class _Probe:
    """Stands, while tracing, for a user's object whose class defines ``__torch_function__``:
    torch's own argument parser, called with it, says whether and how it dispatches."""

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        raise _Dispatched(args, kwargs)


class _Dispatched(Exception):
    """What torch handed a ``_Probe``'s ``__torch_function__``: the arguments as it passes them."""

    def __init__(self, args: Any, kwargs: Any) -> None:
        super().__init__()
        self.args_given, self.kwargs_given = args, kwargs


def _torch_function_override(tx: TracerContext, fn_var: TorchVariable, args: list[VariableTracker],
                             kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    """A torch builtin given a user's (non-tensor) object whose class defines ``__torch_function__``
    (``torch.max(obj)``): that method traced, as torch calls it, or None when no argument is one.
    Whether torch dispatches at all is asked of torch itself, with a stand-in object in its place;
    only one such class per call (the order among several is torch's to decide)."""
    overloaded: dict[int, VariableTracker] = {}

    def real(var: VariableTracker) -> Any:
        if isinstance(var, TensorVariable):
            # (a plain tensor: never overloaded; the parser reads types only)
            return torch.empty(0) if var.python_type() is torch.Tensor else _NO_VALUE
        if isinstance(var, ObjectVariableBase) and class_static(tx, var.python_type(), "__torch_function__") is not None:
            probe = _Probe()
            overloaded[id(probe)] = var
            return probe
        if isinstance(var, (ListVariable, TupleVariable)) and var.python_type() in (list, tuple):
            items = [real(item) for item in var.items]
            return _NO_VALUE if any(i is _NO_VALUE for i in items) else var.python_type()(items)
        return var.as_python_constant() if _plain_constant(var) else _NO_VALUE

    given = [real(a) for a in args]
    given_kwargs = {k: real(v) for k, v in kwargs.items()}
    if not overloaded:
        return None
    if len({v.python_type() for v in overloaded.values()}) != 1:
        raise Unsupported(f"{fn_var.describe()} given objects of several classes that define __torch_function__")
    if any(g is _NO_VALUE for g in (*given, *given_kwargs.values())):
        raise Unsupported(f"{fn_var.describe()} given an object whose class defines __torch_function__, "
                          f"with arguments torch's dispatch cannot be asked about while tracing")
    enabled = tx.wrap(torch._C._is_torch_function_enabled(),
                      CallSource(ConstSource.of(torch._C._is_torch_function_enabled), (), ()))
    if not enabled.as_python_constant():
        return None
    try:
        # (without ``**{}``, which torch passes on as kwargs={} where a plain call gives None)
        fn_var.fn(*given, **given_kwargs) if given_kwargs else fn_var.fn(*given)
    except _Dispatched as d:
        dispatched = d
    except Exception:
        return None  # (torch's parser refuses it: the call raises, as it does in CPython)
    else:
        return None
    # torch passes the objects it was given (a list of tensors as the list itself)
    given_vars = {**{id(r): v for r, v in zip((*given, *given_kwargs.values()), (*args, *kwargs.values()))},
                  **overloaded}

    def traced(value: Any) -> VariableTracker:
        if id(value) not in given_vars:
            raise Unsupported(f"{fn_var.describe()} passed __torch_function__ an argument it was not given")
        return given_vars[id(value)]

    passed_args = TupleVariable([traced(a) for a in dispatched.args_given])
    passed_kwargs = ConstantVariable(None) if dispatched.kwargs_given is None else \
        ConstDictVariable({k: traced(v) for k, v in dispatched.kwargs_given.items()})
    cls_var = tx.wrap(next(iter(overloaded.values())).python_type(), None)
    method = cls_var.var_getattr(tx, "__torch_function__")
    result = method.call_function(tx, [fn_var, TupleVariable([cls_var]), passed_args, passed_kwargs], {})
    if result.is_python_constant() and result.as_python_constant() is NotImplemented:
        raise Unsupported(f"{cls_var.describe()}.__torch_function__ gave NotImplemented for {fn_var.describe()}",
                          hint="the graph breaks; CPython raises torch's TypeError")
    return result


_NO_VALUE = object()  # an argument the stand-in call cannot be given


def _input_outs(out: VariableTracker | None) -> list[TensorVariable]:
    """The tensors of an ``out=`` argument that come from outside the graph (have a source)."""
    items = out.items if isinstance(out, (ListVariable, TupleVariable)) else [out]
    return [item for item in items if isinstance(item, TensorVariable) and item.source is not None]


def _annotate(tx: TracerContext, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    # a type hint for TorchScript: the value itself, as under torch.compile
    return args[1] if len(args) == 2 and not kwargs else None


def _is_tensor(tx: TracerContext, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    # isinstance(obj, torch.Tensor)
    if len(args) != 1 or kwargs:
        return None
    return ConstantVariable(subclass_check(tx, args[0].python_type(), torch.Tensor))


def _size(tx: TracerContext, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    # torch.Size(items) of ints some of which are symbolic: a Size of them, not specialised
    # (only of exact ints; anything else is made for real from constants, raising as torch does)
    if len(args) != 1 or kwargs or args[0].is_python_constant() or not isinstance(args[0], (ListVariable, TupleVariable)):
        return None
    items = list(args[0].items)
    if not all(isinstance(i, SymNodeVariable) or (isinstance(i, ConstantVariable) and type(i.as_python_constant()) is int)
               for i in items) or not all(i.python_type() is int for i in items):
        return None
    return SizeVariable(items)


def _guarded_state(tx: TracerContext, text: str, read: Callable[[], Any]) -> VariableTracker:
    """A fact of torch's state read where the code reads it, and guarded as the global state is
    (``global_state.py``: those read by every entry), for the entries that read it."""
    value = read()
    tx.guards.global_state([(text, read, value)])
    return ConstantVariable(value)


# torch callables the trace answers itself, each by one handler ``(tx, fn, args, kwargs)``
# (None: not this call, the general rules apply). Asked after the checks for what never goes in
# a graph (global state changes, fused kernels), before torch's classes and functions are made
# or recorded.
_SPECIAL_CALLS: dict[Any, Callable[..., VariableTracker | None]] = Registry("torch._SPECIAL_CALLS")
_SPECIAL_CALLS.update({
    torch.jit.annotate: _annotate,
    torch.is_tensor: _is_tensor,
    torch.Size: _size,
    # every entry guards the mode at entry
    torch.is_grad_enabled: lambda tx, fn, args, kwargs: ConstantVariable(tx.trace.torch.grad_enabled),
    # symexec traces only with no dispatch mode (``global_state.modes_transparent``, guarded):
    # the trace's own fake mode is not the user's
    torch._C._len_torch_dispatch_stack: lambda tx, fn, args, kwargs: None if args or kwargs else ConstantVariable(0),
    # no torch.jit.trace is running (global_state: guarded by every entry)
    torch._C._get_tracing_state: lambda tx, fn, args, kwargs: None if args or kwargs else ConstantVariable(None),
    torch.autograd._is_checkpoint_valid: lambda tx, fn, args, kwargs: None if args or kwargs else _guarded_state(
        tx, "torch.autograd._is_checkpoint_valid()", torch.autograd.variable.Variable._execution_engine.is_checkpoint_valid),
    **dict.fromkeys((torch.no_grad, torch.enable_grad, torch.set_grad_enabled),
                    lambda tx, fn, args, kwargs: GradModeVariable.create(tx, fn, args)),
    **dict.fromkeys({torch.autocast, torch.amp.autocast},
                    lambda tx, fn, args, kwargs: AutocastVariable.create(tx, args, kwargs)),
    torch.autograd.profiler.record_function: lambda tx, fn, args, kwargs: RecordFunctionVariable.create(tx, args, kwargs),
})


def _is_structseq(cls: type) -> bool:
    """A torch structseq class (``torch.return_types.max``): a tuple with its fields counted."""
    return issubclass(cls, tuple) and type(getattr(cls, "n_fields", None)) is int and \
        type(getattr(cls, "n_sequence_fields", None)) is int


def _plain_python_class(tx: TracerContext, cls: type) -> bool:
    """A class whose every base but ``object`` is written in Python (a heap type) and that is
    not a context manager: an object made for its values, not for an effect (an RAII guard,
    ``inference_mode``, is made to be entered)."""
    if class_static(tx, cls, "__enter__") is not None or class_static(tx, cls, "__exit__") is not None:
        return False  # (the lookups guard the MRO read below)
    return not issubclass(cls, torch.Tensor) and all(map(by_class_statement, cls.__mro__[:-1]))


def _plain_constant(var: VariableTracker) -> bool:
    """A literal argument: the same call with it again gives the same answer unless torch's
    state changed."""
    return isinstance(var, ConstantVariable) and is_literal(var.as_python_constant())


def _graph_can_hold(args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> bool:
    """Whether every argument can be an argument of a graph node (a tensor, a number, a
    constant, containers of them)."""
    try:
        for value in (*args, *kwargs.values()):
            as_proxy(value)
    except Unsupported:
        return False
    return True


def _unbound_tensor_method(tx: TracerContext, fn: Any, owner: type, args: list[VariableTracker],
                           kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """``torch.Tensor.add(x, y)``: ``x.add(y)``, where ``x``'s class does not override it (a
    subclass's own method would run instead of this one)."""
    self_var = args[0]
    if not isinstance(self_var, TensorVariable) or not isinstance(self_var.example, owner):
        raise Unsupported(f"{fn.__qualname__} called on {self_var.describe()}")
    if class_static(tx, self_var.python_type(), fn.__name__) is not fn:
        raise Unsupported(f"{fn.__qualname__} on a {self_var.python_type().__qualname__}, which overrides it")
    return self_var.call_method(tx, fn.__name__, args[1:], kwargs)


class _Opaque(RealObjectVariable):
    """A constant object made by torch (finfo, iinfo), read through its attributes."""

    models = (torch.finfo, torch.iinfo)

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        return wrap_constant(getattr(self.value, name))

    def reconstruct(self, cg: Any) -> None:
        cg.load_const(self.value)


def _pinned_by_identity(value: Any) -> bool:
    """Values of torch's modules that the identity guard (``module_attribute``) pins whole:
    functions, classes, modules, immutable constants and torch's own callables (ops)."""
    if is_literal(value) or isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type, types.ModuleType,
                                               types.MethodDescriptorType, types.WrapperDescriptorType)):
        return True
    return callable(value) and type(value).__module__.startswith("torch.")


class TorchModuleVariable(PythonModuleVariable):
    """``torch``, ``torch.nn.functional``, ...: attribute reads lead to torch functions, each
    read guarded by the module's attribute (one check per module)."""

    models = types.ModuleType

    def var_getattr(self, tx: TracerContext, name: str) -> VariableTracker:
        try:
            value = getattr(self.module, name)
        except AttributeError as e:
            raise AttributeMissing(f"module {self.module.__name__} has no attribute {name!r}") from e
        # A user may replace a torch function (or flip a flag such as
        # torch.backends.cudnn.enabled): guarded, one check per module.
        tx.guards.module_attribute(self.module, name, value)
        if not _pinned_by_identity(value):
            # A container or other object whose contents can change (a registry dict): read
            # through a source, its contents guarded like any input's.
            return tx.wrap(value, AttrSource(self.source or ConstSource.of(self.module), name))
        try:
            var = tx.wrap(value, None)
        except Unsupported:
            # A callable of torch's the builder holds only with a source (a custom op's
            # CustomOpDef): pinned by that guard, loaded as a constant.
            var = tx.wrap(value, ConstSource.of(value))
        if isinstance(var, UserFunctionVariable) and var.source is None and var.fn is value:
            # A Python function of torch's, traced into (a private one): pinned by that guard,
            # generated code loads it as a constant (a local that holds it across a break).
            var.source = ConstSource.of(value)
        return var

    def __repr__(self) -> str:
        return f"TorchModuleVariable({self.module.__name__})"


# TorchScript's types of the parameters an argument is passed to as it is, by what the trace
# holds: a tensor for a Tensor, a constant of these Python types for a number or a str.
_SCRIPT_CONSTANTS = {"float": (float, int), "int": (int,), "bool": (bool,), "str": (str,)}


class ScriptFunctionVariable(VariableTracker):
    """A ``torch.jit.script``ed function: the Python function it was made from traced (torch
    keeps it as ``_torchdynamo_inline`` for compilers, and torch.compile traces it too), where
    every argument is one TorchScript takes as it is: a tensor for a ``Tensor`` parameter, a
    number or str of the annotated type. Not modelled: an argument TorchScript converts or
    refuses (a tensor for a float, True for an int, a list): the graph breaks and CPython calls
    the scripted function."""

    models = torch.jit.ScriptFunction

    def __init__(self, fn: Any, source: Source | None = None) -> None:
        super().__init__(source)
        self.fn = fn

    def python_type(self) -> type:
        return type(self.fn)

    def describe(self) -> str:
        return f"the scripted function {self.fn.name}"

    def reconstruct(self, cg: Any) -> None:
        cg.load_const(self.fn)

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        params = self.fn.schema.arguments
        given = [*zip(params, args), *((p, kwargs[p.name]) for p in params if p.name in kwargs)]
        if len(args) > len(params) or set(kwargs) - {p.name for p in params}:
            raise Unsupported(f"calling {self.describe()} with arguments its schema does not take")
        for param, var in given:
            kind = str(param.type)
            if kind == "Tensor":
                taken = isinstance(var, TensorVariable)
            else:
                taken = kind in _SCRIPT_CONSTANTS and var.is_python_constant() and \
                    type(var.as_python_constant()) in _SCRIPT_CONSTANTS[kind]
            if not taken:
                raise Unsupported(f"{self.describe()} given {var.describe()} for its {kind} parameter "
                                  f"{param.name!r} (TorchScript converts or refuses it)", hint="CPython calls it")
        original = self.fn._torchdynamo_inline
        source = AttrSource(self.source, "_torchdynamo_inline") if self.source is not None else ConstSource.of(original)
        return UserFunctionVariable(original, source).call_function(tx, args, kwargs)
