"""The one configuration object of symexec. Handlers read it through the translator."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, fields
from typing import Any


@dataclass
class Config:
    """symexec's options: one object, ``symexec.config`` (as ``torch._dynamo.config``). Set an
    option by assignment, or for a block with ``symexec.config.patch(...)``; a misspelt option
    raises ``AttributeError`` naming the options, a value of the wrong type ``TypeError``, a
    negative count ``ValueError``.

    Options (defaults): ``cache_size_limit`` (8) entries per function before it runs
    uncompiled; ``capture_scalar_outputs`` (False) ``item()``/``tolist()`` in the graph as
    numbers known at run time; ``nested_graph_breaks`` (False) a break inside a called function
    goes on in it; ``raise_on_internal_error`` (False) symexec's own errors raise instead of
    falling back; ``max_inline_depth`` (32), ``max_generator_items`` (10000),
    ``max_resume_depth`` (64), ``trace_repr_limit`` (80): the tracer's bounds.
    """

    # Entries kept per compiled function; past it symexec warns once and runs the original.
    cache_size_limit: int = 8
    # Make symexec's own bugs raise instead of falling back to eager (for our tests).
    raise_on_internal_error: bool = False
    # How deep user functions are inlined before the tracer gives up.
    max_inline_depth: int = 32
    # Most items an inlined generator may yield before the tracer gives up.
    max_generator_items: int = 10_000
    # Nested calls of one continuation (a loop whose body breaks) before the rest runs eagerly.
    max_resume_depth: int = 64
    # Longest repr of a tracker in the instruction trace.
    trace_repr_limit: int = 80
    # Tensor.item() and .tolist() in the graph as symbolic numbers known only at run time
    # (torch.compile's capture_scalar_outputs); off, they break the graph, as under Dynamo.
    capture_scalar_outputs: bool = False
    # A graph break inside an inlined call goes on in the callee (torch.compile's
    # nested_graph_breaks): the graph before the break spans the caller and the callee, and so
    # does the one after it (the callee's rest, then the caller's). Off, the caller breaks at the
    # call and the callee's frame is compiled on its own (graphs of its own), as under Dynamo's
    # default.
    nested_graph_breaks: bool = False

    def __setattr__(self, name: str, value: Any) -> None:
        # A misspelt option would otherwise be a new attribute nobody reads, silently.
        kinds = _kinds()
        if name not in kinds:
            raise AttributeError(f"symexec.config has no option {name!r}; the options are: {', '.join(kinds)}")
        kind = kinds[name]
        if type(value) is not kind and not (kind is float and type(value) is int):
            raise TypeError(f"symexec.config.{name} must be {kind.__name__}, not {type(value).__name__} ({value!r})")
        if kind is int and value < 0:
            raise ValueError(f"symexec.config.{name} must be >= 0, not {value}"
                             + (" (0 runs every compiled function without compiling it)"
                                if name == "cache_size_limit" else ""))
        object.__setattr__(self, name, value)

    def patch(self, changes: dict[str, Any] | None = None, **options: Any) -> "_Patch":
        """The options given set for the length of a ``with`` block or of each call of a
        decorated function, then put back as they were, even on an exception (as
        ``torch._dynamo.config.patch``). Checked as an assignment is: a misspelt option raises
        ``AttributeError``, a value of the wrong type ``TypeError``, before anything changes.

        Example::

            with symexec.config.patch(cache_size_limit=2, capture_scalar_outputs=True):
                compiled(x)

            @symexec.config.patch(nested_graph_breaks=True)
            def test_nested(): ...
        """
        options = {**(changes or {}), **options}
        probe = Config()
        for name, value in options.items():  # (the same checks as an assignment, on a copy)
            setattr(probe, name, value)
        return _Patch(self, options)


class _Patch(contextlib.ContextDecorator):
    """What ``Config.patch`` returns: a context manager and a decorator."""

    def __init__(self, config: Config, options: dict[str, Any]) -> None:
        self._config = config
        self._options = options
        self._saved: list[dict[str, Any]] = []

    def __enter__(self) -> Config:
        self._saved.append({name: getattr(self._config, name) for name in self._options})
        for name, value in self._options.items():
            setattr(self._config, name, value)
        return self._config

    def __exit__(self, *exc_info: Any) -> None:
        for name, value in self._saved.pop().items():
            setattr(self._config, name, value)


def _kinds() -> dict[str, type]:
    """Each option's type: the type of its default (``bool`` and ``int`` kept apart)."""
    return {f.name: type(f.default) for f in fields(Config)}


config = Config()
