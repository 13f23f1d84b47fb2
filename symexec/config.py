"""The one configuration object of symexec. Handlers read it through the translator."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Config:
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


config = Config()
