"""Per-call overhead of a cache hit: eager vs symexec vs torch.compile(backend="eager").

    python benchmarks/overhead.py [--rounds 21] [--calls 2000]

All three run in one process on the same inputs, interleaved: after a warm-up, every round
times `calls` calls of each in turn (the order rotates each round), and the figure reported
is the median over rounds. The overhead of a compiled function is its time per call minus
eager's; the target (issue 12) is symexec's overhead at most 1/4 of torch.compile's.

A fourth contender, the floor, bounds what any guard written in Python can reach: it reads
each fact a cache entry must check once, compares nothing, and calls symexec's replacement
(``floor_function``). Where its ratio is above a target, no Python guard meets the target.
"""

import argparse
import gc
import statistics
import sys
import time

import torch

import symexec
from symexec import global_state
from workloads import DYNAMIC, MANY_ARGS, MSE, NUMPY, check_symexec, environment, options, same


def time_per_call_us(fn, args, calls):
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        elapsed = time.perf_counter() - start
    finally:
        if gc_was_enabled:
            gc.enable()
    return elapsed / calls * 1e6


def floor_function(compiled, args):
    """A lower bound on any Python guard's hit: straight-line code that reads each fact a cache
    entry must check on these arguments, once, compares nothing, and calls symexec's
    replacement (its compiled graph).

    The facts are what torch.compile's guards check too: torch's global state (symexec's list
    of readers), each tensor's type, dtype, device, requires_grad, sizes and contiguity, each
    other argument's type (that inputs are distinct objects needs no read). Read in Python,
    every tensor fact is a call into torch's C getters (about 30 ns each on this machine)."""
    entry, = symexec.cache_entries(compiled)
    names = [f"a{i}" for i in range(len(args))]
    lines = [f"def floor({', '.join(names)}):"]
    lines += [f"    state{i}()" for i in range(len(global_state.STATE))]
    for name, value in zip(names, args):
        if isinstance(value, torch.Tensor):
            lines.append(f"    type({name}); {name}.dtype; {name}.is_cpu; {name}.requires_grad; "
                         f"{name}.shape; {name}.is_contiguous()")
        else:
            lines.append(f"    type({name})")
    lines.append(f"    return replacement({', '.join(names)})")
    scope = {f"state{i}": reader for i, (_, reader) in enumerate(global_state.STATE)}
    scope["replacement"] = entry.replacement
    exec("\n".join(lines), scope)
    return scope["floor"]


def bench(workload, rounds, calls):
    name, fn, make_args = workload[:3]
    args = make_args()
    compiled = symexec.compile(fn, backend="eager", **options(workload))
    compiled(*args)
    contenders = {
        "eager": fn,
        "symexec": compiled,
        "torch.compile": torch.compile(fn, backend="eager", **options(workload)),
        "floor": floor_function(compiled, args),
    }
    expected = fn(*args)
    for label, impl in contenders.items():
        for _ in range(max(10, calls // 10)):
            result = impl(*args)
        if not same(result, expected):
            sys.exit(f"{name}: {label} returned a different result from eager")

    times = {label: [] for label in contenders}
    order = list(contenders)
    for round_number in range(rounds):
        shift = round_number % len(order)
        for label in order[shift:] + order[:shift]:
            times[label].append(time_per_call_us(contenders[label], args, calls))

    problems = check_symexec(contenders["symexec"])
    return name, {label: statistics.median(ts) for label, ts in times.items()}, problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--calls", type=int, default=2000)
    options = parser.parse_args()

    print(environment(), flush=True)
    print(f"{torch.get_num_threads()} threads; median of {options.rounds} rounds "
          f"x {options.calls} calls")
    header = (f"{'workload':<24}{'eager':>9}{'symexec':>9}{'t.compile':>10}"
              f"{'symexec ovh':>13}{'t.compile ovh':>15}{'ovh ratio':>11}{'floor ratio':>13}")
    print(header)
    print("-" * len(header))
    notes = []
    for workload in (MSE, MANY_ARGS, DYNAMIC, NUMPY):
        name, us, problems = bench(workload, options.rounds, options.calls)
        symexec_overhead = us["symexec"] - us["eager"]
        compile_overhead = us["torch.compile"] - us["eager"]
        floor_overhead = us["floor"] - us["eager"]
        ratio, floor_ratio = ((symexec_overhead / compile_overhead, floor_overhead / compile_overhead)
                              if compile_overhead > 0 else (float("nan"), float("nan")))
        print(f"{name:<24}{us['eager']:>7.1f}us{us['symexec']:>7.1f}us"
              f"{us['torch.compile']:>8.1f}us{symexec_overhead:>11.1f}us"
              f"{compile_overhead:>13.1f}us{ratio:>11.2f}{floor_ratio:>13.2f}")
        notes += [f"{name}: {problem}" for problem in problems]
    print("(ovh = time per call minus eager's; ovh ratio = symexec ovh / torch.compile ovh, "
          "target <= 0.25;\n floor ratio = the same for straight-line Python that only reads what a "
          "guard must check, then calls the replacement: no Python guard can go below it)")
    for note in notes:
        print("WARNING:", note)


if __name__ == "__main__":
    main()
