"""NumPy's ufuncs (``np.sqrt``, ``np.lcm``) called on constant numbers while tracing.

A ufunc is a pure function of its arguments: on Python or NumPy numbers the trace knows (a
config's sizes), it runs now and its scalar result is a constant of the trace, as torch.compile
folds it. It runs with every floating-point error raised, so that a result never depends on
NumPy's error settings (``np.seterr``), which no guard pins: a call that would warn or raise
for one runs at a graph break instead. A call with an array is NumPy through
torch (``ndarray.call_ufunc``); anything else (a tensor, ``out=``) is unsupported: CPython runs it.
"""

from __future__ import annotations


from ..context import TracerContext
from ..exc import TracedException, Unsupported
from .base import VariableTracker
from .builtin_functions import BuiltinVariable
from .ndarray import NdarrayVariable, call_ufunc
from .constant import NUMPY_SCALAR_TYPES, ConstantVariable, is_literal

try:
    import numpy
except ImportError:  # pragma: no cover - numpy missing
    numpy = None

_NUMBER_TYPES: tuple[type, ...] = (int, float, bool, complex, *NUMPY_SCALAR_TYPES)


class NumpyUfuncVariable(BuiltinVariable):
    """A ``numpy.ufunc`` object (pinned by identity by the builder): a builtin whose calls fold
    as below, never through the builtins' handlers."""

    models = numpy.ufunc if numpy is not None else ()  # (without numpy, none exist)

    def describe(self) -> str:
        return f"numpy.{self.fn.__name__}"

    def call_function(self, tx: TracerContext, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if any(isinstance(a, NdarrayVariable) for a in (*args, *kwargs.values())):
            return call_ufunc(tx, self.fn, args, kwargs)  # (an array: torch operations)
        values = [a.as_python_constant() for a in args if a.is_python_constant()]
        if kwargs or len(values) != len(args) or not all(isinstance(v, _NUMBER_TYPES) for v in values):
            raise Unsupported(f"calling {self.describe()} on anything but constant numbers",
                              hint="the graph breaks; CPython runs it")
        try:
            with numpy.errstate(all="raise"):
                result = self.fn(*values)
        except FloatingPointError:
            raise Unsupported(f"{self.describe()} on these numbers warns or raises by NumPy's error settings",
                              hint="the graph breaks; CPython runs it") from None
        except Exception as e:  # (a TypeError of the user's call: eager raises it too)
            raise TracedException(e) from e
        if not is_literal(result):
            raise Unsupported(f"{self.describe()} returned a {type(result).__name__}")
        return ConstantVariable(result)
