"""Small helpers shared by the example scripts: headings, the eager comparison, log switches.

Every example compares what the compiled function returns with what plain Python returns
for the same inputs (``check``), and stops with an AssertionError if they differ, so the
examples double as end-to-end tests (``tests/test_examples.py`` runs each one).
"""

from __future__ import annotations

import contextlib
import sys

import torch

import symexec

# symexec's logs go to stderr, the examples' own output to stdout. Flushing stdout at every
# line keeps the two in order when both are piped to the same place (a file, a pager, a test).
if hasattr(sys.stdout, "reconfigure"):  # not in Jupyter, whose stdout is its own stream
    sys.stdout.reconfigure(line_buffering=True)


def heading(title: str) -> None:
    print()
    print("=" * 78)
    print(title)
    print("=" * 78)


def sub_heading(title: str) -> None:
    print()
    print(f"--- {title} " + "-" * max(0, 73 - len(title)))


def same(got, expected) -> bool:
    """Equal values, tensors compared with allclose, containers item by item."""
    if isinstance(expected, torch.Tensor):
        return (isinstance(got, torch.Tensor) and got.shape == expected.shape
                and got.dtype == expected.dtype and torch.allclose(got, expected, equal_nan=True))
    if isinstance(expected, (list, tuple)):
        return (type(got) is type(expected) and len(got) == len(expected)
                and all(same(g, e) for g, e in zip(got, expected)))
    if isinstance(expected, dict):
        return got.keys() == expected.keys() and all(same(got[k], expected[k]) for k in expected)
    return got == expected


def check(label: str, got, expected) -> None:
    """Print whether symexec agreed with eager Python, and fail loudly if it did not."""
    ok = same(got, expected)
    print(f"{label}: {'same as eager' if ok else 'DIFFERS FROM EAGER'}")
    assert ok, f"{label}: symexec returned {got!r}, eager Python returned {expected!r}"


def show_graph(entry) -> None:
    """The FX graph of one cache entry, with its `# File: ..., code: ...` comments."""
    if entry.graph is None:
        print(f"(no graph: {entry.fallback_reason})")
    else:
        print(entry.graph.print_readable(print_output=False).rstrip())


def show_guards(entry, indent: str = "    ") -> None:
    for guard in entry.guards:
        print(indent + guard.text)


def show_cache(compiled_fn) -> None:
    """Every cache entry of a compiled function, newest first: graph, then guards."""
    entries = symexec.cache_entries(compiled_fn)
    print(f"{len(entries)} cache entr{'y' if len(entries) == 1 else 'ies'} (newest first)")
    for number, entry in enumerate(entries):
        sub_heading(f"entry {number}")
        show_graph(entry)
        print("guards:")
        show_guards(entry)


@contextlib.contextmanager
def logs(spec: str):
    """Switch symexec log artifacts on for the body of the ``with`` (beside those already on,
    ``SYMEXEC_LOGS``'s), then back to what was on before."""
    print(f"[symexec.set_logs({spec!r})]")
    sys.stdout.flush()
    before = symexec.logs.active()
    symexec.set_logs(before + [name for name in spec.split(",") if name not in before])
    try:
        yield
    finally:
        sys.stderr.flush()
        symexec.set_logs(before)
