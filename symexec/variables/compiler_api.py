"""torch's compiler API called inside a compiled function (``torch_api.py`` recognises it).

- ``torch._dynamo.graph_break()``: the graph ends there, as at ``symexec.graph_break()``; the
  call itself then runs (a no-op). Called by torch's own code (an optimizer's ``step``), it is
  not honoured: see ``CompilerApiVariable.call_function``.
- ``torch.compiler.is_compiling()``, ``torch.compiler.is_dynamo_compiling()``,
  ``torch._dynamo.is_compiling()``: True, a constant of the graph (the same call in eager
  code is False), so the code takes its compile-friendly path as under torch.compile.
- Everything that changes what later calls see (``mark_dynamic``, ``maybe_mark_dynamic``,
  ``mark_static``, ``mark_static_address``, ``allow_in_graph``, ``disable``, ``skip``,
  ``assume_constant_result``, ``reset``, ``set_stance``...): the graph breaks and CPython runs the
  call, so the tensor or function is marked as in eager code. (torch.compile raises on
  ``mark_dynamic`` inside a compiled function and turns ``mark_static`` into a specialisation
  without marking the tensor; symexec keeps eager's result. Called by torch's own code, which
  does so only under ``is_compiling()``, ``mark_static`` specialises as under torch.compile.)
- torch's own tracers (``torch.fx.symbolic_trace``, ``torch.jit.trace``, ``torch.export.export``,
  ``make_fx``): the graph breaks at the call, and CPython runs the tracer.

A function ``torch.compiler.disable`` marked, one torch's allow list holds, and the marks torch
puts on tensors are read where the function or tensor is met (``callees.py``, the builder,
``dynamic.py``), not here.
"""

from __future__ import annotations

import types
from typing import Any

from ..context import TracerContext
from ..exc import Unsupported
from ..source import Source
from ..torch_api import GRAPH_BREAK, IS_COMPILING, TRACER, in_torch_code
from .base import VariableTracker
from .constant import ConstantVariable
from .tensor import TensorVariable


class CompilerApiVariable(VariableTracker):
    """One of torch's compiler-API functions (``torch._dynamo.graph_break``,
    ``torch.compiler.is_compiling``, ``torch._dynamo.mark_dynamic``...). Only calls are modelled:
    its attributes are not read."""

    models = types.FunctionType  # torch.compiler's and torch._dynamo's functions

    def __init__(self, fn: Any, kind: str, source: Source | None = None) -> None:
        super().__init__(source)
        self.fn = fn
        self.kind = kind

    def python_type(self) -> type:
        return type(self.fn)

    def as_python_constant(self) -> Any:
        return self.fn

    def describe(self) -> str:
        return f"{self.fn.__module__}.{self.fn.__qualname__}"

    def reconstruct(self, cg: Any) -> None:
        cg.load_const(self.fn)

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        name = self.fn.__qualname__
        if self.kind == GRAPH_BREAK:
            if in_torch_code(tx.code):
                # torch's own code asks torch.compile for a break where Dynamo resumes inside
                # the torch function (``Optimizer``'s ``_use_grad``); symexec runs a torch
                # function called at a break as it is, uncompiled, so it would lose the graph:
                # a no-op here, as the call is in eager code.
                return ConstantVariable(None)
            raise Unsupported(f"torch._dynamo.{name}() was called", hint="remove the call to keep one graph")
        if self.kind == IS_COMPILING:
            if args or kwargs:
                raise Unsupported(f"{self.describe()}() called with arguments (CPython raises its TypeError)")
            return ConstantVariable(True)
        if self.fn.__name__ == "mark_static" and in_torch_code(tx.code):
            result = _force_static(args, kwargs)
            if result is not None:
                return result
        if self.kind == TRACER:
            raise Unsupported(f"{self.describe()}() inside a compiled function: a tracer of its own",
                              hint="the graph breaks at once; CPython runs the tracer")
        raise Unsupported(f"{self.describe()}() inside a compiled function: it marks a value or changes "
                          f"torch.compile's settings for later calls", hint="CPython runs it at a graph break")

    def __repr__(self) -> str:
        return f"CompilerApiVariable({self.fn.__qualname__})"


def _force_static(args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    """``torch._dynamo.mark_static(t, index)`` in torch's own code under ``is_compiling()``
    (flex_attention pins its head dimensions): what torch.compile does there, the sizes
    specialised (a ShapeEnv guard each), the tensor not marked; None where the call is not
    that plain form."""
    index = args[1] if len(args) > 1 else kwargs.get("index", ConstantVariable(None))
    if len(args) < 1 or len(args) > 2 or set(kwargs) - {"index"} or not isinstance(args[0], TensorVariable) \
            or not isinstance(index, ConstantVariable):
        return None
    example, dim = args[0].example, index.as_python_constant()
    if dim is not None and (type(dim) is not int or not -example.dim() <= dim < example.dim()):
        return None
    for size in example.size() if dim is None else [example.size(dim)]:
        int(size)  # (a SymInt: specialised, its guard recorded by the ShapeEnv)
    return ConstantVariable(None)
