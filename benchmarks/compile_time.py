"""First-call (compile) time: symexec vs torch.compile(backend="eager").

    python benchmarks/compile_time.py [--repeats 5] [--threads 1]

A first call traces the function, builds its guards and replacement code, and hands the graph
to the eager backend. Both systems are warmed up first (each compiles an unrelated function),
then every repeat, for each workload, empties both caches (symexec.reset(),
torch._dynamo.reset()), wraps the function afresh and times its first call, alternating the
two systems. The figure reported is the median over repeats; the target is a
symexec / torch.compile ratio of at most 0.25. A third column, the fake run, times torch's
share alone: the function run on fake tensors (``fake_run_ms``).

Torch runs single-threaded by default (--threads), as in models.py: the first call also runs
the graph once, and on a small machine with any other load an OpenMP pool makes a tiny
matmul's time jump by 10-100x from one call to the next.
"""

import argparse
import statistics
import sys
import time

import torch
import torch._dynamo  # only for torch._dynamo.reset() between measurements, and the fake run's sources
from torch._dynamo.source import LocalSource
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext
from torch._dispatch.python import enable_python_dispatcher

import symexec
from workloads import DYNAMIC, HELPERS, MANY_ARGS, MATMUL, MSE, NUMPY, UNRELATED, check_symexec, environment, options, same

SYSTEMS = {
    "symexec": (symexec.reset, lambda fn, **kw: symexec.compile(fn, backend="eager", **kw)),
    "torch.compile": (torch._dynamo.reset, lambda fn, **kw: torch.compile(fn, backend="eager", **kw)),
}


def first_call_ms(system, workload):
    """Time the first call of a freshly wrapped function; return (ms, wrapper)."""
    reset, wrap = SYSTEMS[system]
    _, fn, make_args = workload[:3]
    args = make_args()
    reset()
    compiled = wrap(fn, **options(workload))
    start = time.perf_counter()
    result = compiled(*args)
    elapsed = time.perf_counter() - start
    expected = fn(*args)
    if not same(result, expected):
        sys.exit(f"{workload[0]}: {system} returned a different result from eager")
    return elapsed * 1e3, compiled


def fake_run_ms(workload):
    """Torch's share of a first call, as both systems build on torch's fake tensors and
    ShapeEnv: the function run once on fake tensors of its inputs (symbolic ones under
    ``dynamic=True``, made as both systems make them), then, if symbolic, the ShapeEnv's guards
    produced. No bytecode is interpreted, no graph, guard function or code is built. (symexec's
    shape rules make some fake results without torch's meta functions: it can go below this.)"""
    _, fn, make_args = workload[:3]
    args = make_args()
    dynamic = options(workload).get("dynamic") is True
    start = time.perf_counter()
    shape_env = ShapeEnv() if dynamic else None
    mode = FakeTensorMode(shape_env=shape_env)
    mode.cache_enabled = mode.cache_enabled and not dynamic
    sources = [LocalSource(f"a{i}") for i in range(len(args))]
    fakes = []
    for arg, source in zip(args, sources):
        if not isinstance(arg, torch.Tensor):
            fakes.append(arg)
        elif dynamic:
            context = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DUCK] * arg.dim())
            fakes.append(mode.from_tensor(arg, source=source, symbolic_context=context))
        else:
            fakes.append(mode.from_tensor(arg, static_shapes=True))
    with mode, enable_python_dispatcher():
        fn(*fakes)
    if dynamic:
        tensors = [(fake, source) for fake, source in zip(fakes, sources) if isinstance(fake, torch.Tensor)]
        shape_env.produce_guards([f for f, _ in tensors], [s for _, s in tensors], ignore_static=False)
    return (time.perf_counter() - start) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    options = parser.parse_args()
    print(environment(), flush=True)
    torch.set_num_threads(options.threads)

    for system in SYSTEMS:
        first_call_ms(system, UNRELATED)

    workloads = (MSE, MANY_ARGS, MATMUL, HELPERS, DYNAMIC, NUMPY)
    times = {(workload[0], system): [] for workload in workloads for system in (*SYSTEMS, "fake run")}
    notes = set()
    for repeat in range(options.repeats):
        systems = list(SYSTEMS) if repeat % 2 == 0 else list(reversed(SYSTEMS))
        for workload in workloads:
            for system in systems:
                ms, compiled = first_call_ms(system, workload)
                times[workload[0], system].append(ms)
                if system == "symexec":
                    notes.update(f"{workload[0]}: {p}" for p in check_symexec(compiled))
            times[workload[0], "fake run"].append(fake_run_ms(workload))
    symexec.reset()
    torch._dynamo.reset()

    print(f"{torch.get_num_threads()} threads; first call, median of {options.repeats} repeats")
    header = f"{'workload':<24}{'symexec':>11}{'t.compile':>12}{'ratio':>8}{'fake run':>10}{'ratio':>8}"
    print(header)
    print("-" * len(header))
    for workload in workloads:
        name = workload[0]
        ours = statistics.median(times[name, "symexec"])
        theirs = statistics.median(times[name, "torch.compile"])
        fake = statistics.median(times[name, "fake run"])
        print(f"{name:<24}{ours:>9.1f}ms{theirs:>10.1f}ms{ours / theirs:>8.2f}{fake:>8.1f}ms{fake / theirs:>8.2f}")
    print("(ratio = symexec / torch.compile, target <= 0.25; fake run = torch's share: the function run\n"
          " once on fake tensors, the ShapeEnv's guards produced if symbolic (fake_run_ms), and its ratio)")
    for note in sorted(notes):
        print("WARNING:", note)


if __name__ == "__main__":
    main()
