"""A tour of symexec on the examples of the design document (spec §1-§3).

Run it with ``python examples/tour.py``. Each section compiles one small function, calls it,
and prints what symexec built for that call: the FX graph and the guards of each cache
entry, and the reasons for recompiling.

For the same artifacts as logs, run ``SYMEXEC_LOGS=graph_code,guards,recompiles python
examples/tour.py`` (or call ``symexec.set_logs("graph_code,guards,recompiles")``).
"""

import sys

import torch

import symexec


def heading(title):
    print()
    print("=" * 78)
    print(title)
    print("=" * 78)


def show_entry(entry):
    """Print one cache entry: its graph (or why it has none) and its guards."""
    if entry.fallback_reason is not None:
        print(f"(runs the original function: {entry.fallback_reason})")
    if entry.graph is None:
        print("(no graph)")
    else:
        print(entry.graph.print_readable(print_output=False).rstrip())
    print("guards:")
    for guard in entry.guards:
        print(f"    {guard.text}")


def show_cache(compiled_fn):
    entries = symexec.cache_entries(compiled_fn)
    print(f"{len(entries)} cache entr{'y' if len(entries) == 1 else 'ies'} (newest first)")
    for number, entry in enumerate(entries):
        print(f"--- entry {number} ---")
        show_entry(entry)


def check(label, got, expected):
    """Compare symexec's result with eager's, so the tour also shows it is correct."""
    same = torch.allclose(got, expected) if isinstance(got, torch.Tensor) else got == expected
    print(f"{label}: {'same as eager' if same else 'DIFFERS FROM EAGER'}")


# --- §1: the tracer records torch operations into an FX graph ---------------------------

def mse(x, y):
    z = (x - y) ** 2
    return z.sum()


def tour_tracer():
    heading("§1  mse(x, y): a linear FX graph of the torch operations that ran")
    compiled = symexec.compile(mse)
    print("decorating compiles nothing:", len(symexec.cache_entries(compiled)), "entries")
    x, y = torch.randn(200), torch.randn(200)
    check("mse(x, y)", compiled(x, y), mse(x, y))
    show_cache(compiled)


# --- §2: non-tensor values are constants of the trace ---------------------------------

def specialised(x, n):
    y = x ** 2
    if n >= 0:
        return (n + 1) * y
    else:
        return y / n


def tour_specialisation():
    heading("§2  fn(x, 2): the `if` disappears and (n + 1) is recorded as the constant 3")
    compiled = symexec.compile(specialised)
    x = torch.randn(200)
    check("fn(x, 2)", compiled(x, 2), specialised(x, 2))
    show_cache(compiled)


# --- §3: guards, sources and the cache --------------------------------------------------

def times_len(a, b):
    return a * len(b)


def tour_recompile():
    heading("§3  fn(t, 'Hello') then fn(t, 'Hi'): a failed guard triggers a recompile")
    compiled = symexec.compile(times_len)
    t = torch.arange(10)
    check("fn(t, 'Hello')", compiled(t, "Hello"), times_len(t, "Hello"))
    check("fn(t, 'Hi')", compiled(t, "Hi"), times_len(t, "Hi"))
    check("fn(t, 'Hello') again (cache hit)", compiled(t, "Hello"), times_len(t, "Hello"))
    show_cache(compiled)
    print("recompile reasons:")
    for reason in symexec.recompile_reasons(compiled):
        print(f"    {reason}")


def first_len(x, l):
    return x * len(l[0])


def tour_sources():
    heading("§3  fn(x, ['Hi', 'Hello']): guards on a list and its items, through sources")
    compiled = symexec.compile(first_len)
    x, l = torch.randn(8), ["Hi", "Hello"]
    check("fn(x, l)", compiled(x, l), first_len(x, l))
    show_cache(compiled)


def tour_logs():
    heading("logs: the same artifacts through symexec.set_logs (printed to stderr)")
    sys.stdout.flush()
    symexec.reset()
    symexec.set_logs("graph_code,guards")
    try:
        compiled = symexec.compile(mse)
        compiled(torch.randn(200), torch.randn(200))
    finally:
        symexec.set_logs(None)


def main():
    tour_tracer()
    tour_specialisation()
    tour_recompile()
    tour_sources()
    tour_logs()


if __name__ == "__main__":
    main()
