"""symexec: PyTorch Dynamo's frontend in pure Python.

``symexec.compile(fn)`` captures the torch operations of ``fn`` into FX graphs, guarded by a
cache of generated replacement functions; see README.md.
"""

from ._version import __version__
from .api import allow_in_graph, cache_entries, compile, disable, graph_break, recompile_reasons, run
from .backends import list_backends, register_backend
from .cache import reset
from .config import config
from .dynamic import mark_dynamic, mark_static
from .exc import BackendCompilerFailed, CacheLimitWarning, ConfigWarning, SymexecWarning, Unsupported
from .explain import BreakReason, ExplainOutput, explain
from .logs import set_logs

__all__ = [
    "BackendCompilerFailed", "BreakReason", "CacheLimitWarning", "ConfigWarning", "SymexecWarning", "ExplainOutput", "Unsupported", "allow_in_graph", "explain", "cache_entries", "compile", "config", "disable", "graph_break", "list_backends", "mark_dynamic", "mark_static", "recompile_reasons", "run",
    "register_backend", "reset", "set_logs",
]
