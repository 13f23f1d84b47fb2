"""symexec + inductor vs torch.compile + inductor, end to end (issue 19, point 6).

    python benchmarks/inductor.py [--models mlp,cnn,gpt2,llama] [--repeats 2] [--rounds 15]
                                  [--round-ms 20] [--threads 1] [--report all|steady|first]

For each model (the builders of benchmarks/models.py: an MLP, a small CNN, GPT-2 and LLaMA
from tiny configs, batch 2, eval mode, torch.no_grad()), both systems compile with the
inductor backend (symexec: backend="inductor", symexec/backends.py; torch.compile:
backend="inductor"), and three things are measured:

Steady per call (one child process per model, a fresh inductor cache): eager, symexec and
torch.compile interleaved as in models.py (every round times `calls` calls of each, the order
rotating; the median over rounds). Two more contenders split a compiled call into what the
frontend adds and what the graph costs: "graph" is the callable the backend returned (AOTAutograd's
runtime wrapper around inductor's code), called directly on the graph's inputs, as a recording
backend around the same compile_fx caught them. sym - graph is symexec's hit path (guards,
the generated function, the module wrapper); tc - graph is Dynamo's. The same child compares
what the two compiled: graphs and op nodes of the traced FX graphs, and the code inductor
generated (every output-code module the compile loaded): C++ kernels, their sources with
names normalised, and the calls of the wrapper (extern kernels, aten fallbacks).

Time to first result, cold and warm: every measurement is a child process of its own, one
system in it, so nothing in memory helps. Cold: a new, empty TORCHINDUCTOR_CACHE_DIR (inductor's
FX graph cache, AOTAutograd's cache under it, compiled kernels, the ISA probe), one per system
and repeat. Warm: a second process on the cache directory the cold one filled. Inductor's FX
graph cache (torch._inductor.config.fx_graph_cache) and AOTAutograd's cache
(torch._functorch.config.enable_autograd_cache) are on by default and forced on here
(TORCHINDUCTOR_FX_GRAPH_CACHE=1, TORCHINDUCTOR_AUTOGRAD_CACHE=1). Each child reports, from
torch._dynamo.utils.counters (read after the first result; torch's own counters, which
inductor and AOTAutograd fill for both systems), the FX graph cache hits and misses and the
AOTAutograd cache hits, misses and bypasses.

"First result" is timed from after `import torch` and the model's construction (untimed, the
same for both) to the first output: it includes importing symexec / what torch.compile imports
(torch._dynamo, inductor), tracing, the backend and the call. The table also shows the first
call alone (after the import and the wrapping) and the whole process, start to first result.
Ratios are symexec / torch.compile; targets (issue 19): steady <= 1.0, warm first result <= 0.5.

Torch runs single-threaded by default (--threads), as in models.py; the thread count is part
of inductor's cache key, and is the same in the cold and warm processes.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

_PROCESS_START = time.perf_counter()

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before transformers is imported: never download

HERE = os.path.dirname(os.path.abspath(__file__))
SYSTEMS = ("symexec", "torch.compile")
DEFAULT_MODELS = ("mlp", "cnn", "gpt2", "llama")


# ---------------------------------------------------------------------------------------------
# Models: benchmarks/models.py's builders, repeated here because that module imports
# torch._dynamo at its top, and a child timing symexec's first result must not import it first.

def _ids(*shape):
    import torch

    return torch.randint(0, 100, shape)


def _hf(kind):
    import transformers

    transformers.logging.set_verbosity_error()  # tiny vocabularies make configs complain
    if kind == "gpt2":
        model = transformers.GPT2Model(transformers.GPT2Config(
            n_layer=2, n_head=2, n_embd=32, vocab_size=100, n_positions=64))
    elif kind == "llama":
        model = transformers.LlamaModel(transformers.LlamaConfig(
            num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2, hidden_size=32,
            intermediate_size=64, vocab_size=100, max_position_embeddings=64))
    elif kind == "bert":
        model = transformers.BertModel(transformers.BertConfig(
            num_hidden_layers=2, num_attention_heads=2, hidden_size=32, intermediate_size=64,
            vocab_size=100, max_position_embeddings=64))
    else:
        raise ValueError(kind)
    return model.eval(), (), {"input_ids": _ids(2, 16)}


def _mlp():
    import torch
    from torch import nn

    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32))
    return model.eval(), (torch.randn(2, 16, 32),), {}


def _cnn():
    import torch
    from torch import nn

    class SmallCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
            self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
            self.pool = nn.MaxPool2d(2)
            self.fc = nn.Linear(16 * 4 * 4, 10)

        def forward(self, x):
            x = self.pool(torch.relu(self.conv1(x)))
            x = self.pool(torch.relu(self.conv2(x)))
            return self.fc(torch.flatten(x, 1))

    return SmallCNN().eval(), (torch.randn(2, 3, 16, 16),), {}


MODELS = {"mlp": _mlp, "cnn": _cnn, "gpt2": lambda: _hf("gpt2"), "llama": lambda: _hf("llama"),
          "bert": lambda: _hf("bert")}


def build(name):
    import torch

    torch.manual_seed(0)
    return MODELS[name]()


def tensors(value):
    """Every tensor of a model output, in order (ModelOutputs, tuples, caches)."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if hasattr(value, "to_tuple"):
        return tensors(value.to_tuple())
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors(v)]
    if hasattr(value, "layers"):  # a transformers Cache
        return [t for layer in value.layers for t in tensors([getattr(layer, "keys", None), getattr(layer, "values", None)])]
    return []


def differences(actual, expected):
    import torch

    a, b = tensors(actual), tensors(expected)
    if len(a) != len(b) or not a:
        return [f"{len(a)} tensors vs {len(b)}"]
    problems = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x.shape != y.shape or x.dtype != y.dtype:
            problems.append(f"tensor {i}: {x.dtype}{list(x.shape)} vs {y.dtype}{list(y.shape)}")
        elif not torch.allclose(x, y, rtol=1e-4, atol=1e-5):
            problems.append(f"tensor {i}: max abs difference {(x - y).abs().max().item():.3g}")
    return problems


def cache_counters():
    """Inductor's and AOTAutograd's cache counters (torch's own; inductor imported them already)."""
    from torch._dynamo.utils import counters

    inductor, aot = counters["inductor"], counters["aot_autograd"]
    return {"fx_hit": inductor["fxgraph_cache_hit"], "fx_miss": inductor["fxgraph_cache_miss"],
            "fx_bypass": inductor["fxgraph_cache_bypass"],
            "aot_hit": aot["autograd_cache_hit"], "aot_miss": aot["autograd_cache_miss"],
            "aot_bypass": aot["autograd_cache_bypass"], "aot_saved": aot["autograd_cache_saved"]}


# ---------------------------------------------------------------------------------------------
# Child: time to first result, one system, one process.

class _Clock:
    """Where a first result's time goes, without changing what runs: the time inside top-level
    import statements (builtins.__import__, outermost only), and inside inductor's compile_fx,
    which both systems call as torch._inductor.compile_fx.compile_fx (symexec's "inductor"
    backend and torch.compile's inductor wrapper both import it by name at call time), with the
    imports made inside it."""

    def __init__(self):
        import builtins

        self.imports = 0.0
        self.backend = 0.0
        self.backend_imports = 0.0
        self._depth = 0
        self._in_backend = 0
        self._original = builtins.__import__
        builtins.__import__ = self._import

    def stop(self):
        import builtins

        builtins.__import__ = self._original

    def _import(self, *args, **kwargs):
        if self._depth:
            return self._original(*args, **kwargs)
        self._depth += 1
        start = time.perf_counter()
        try:
            return self._original(*args, **kwargs)
        finally:
            elapsed = time.perf_counter() - start
            self.imports += elapsed
            if self._in_backend:
                self.backend_imports += elapsed
            self._depth -= 1
            self._patch()

    def _patch(self):
        module = sys.modules.get("torch._inductor.compile_fx")
        if module is None or getattr(module.compile_fx, "_clocked", False):
            return
        compile_fx = module.compile_fx

        def clocked(*args, **kwargs):
            self._in_backend += 1
            start = time.perf_counter()
            try:
                return compile_fx(*args, **kwargs)
            finally:
                self._in_backend -= 1
                if not self._in_backend:
                    self.backend += time.perf_counter() - start

        clocked._clocked = True
        module.compile_fx = clocked


def child_first(system, name, threads):
    import torch

    torch.set_num_threads(threads)
    after_torch = time.perf_counter()
    model, args, kwargs = build(name)
    dynamo_before = "torch._dynamo" in sys.modules
    inductor_before = "torch._inductor.compile_fx" in sys.modules
    clock = _Clock()
    start = time.perf_counter()
    with torch.no_grad():
        if system == "symexec":
            import symexec

            compiled = symexec.compile(model, backend="inductor")
        else:
            compiled = torch.compile(model, backend="inductor")
        wrapped = time.perf_counter()
        result = compiled(*args, **kwargs)
        first = time.perf_counter()
    clock.stop()
    with torch.no_grad():
        expected = model(*args, **kwargs)
    problems = differences(result, expected)
    if system == "symexec":
        import symexec

        entries = symexec.cache_entries(compiled)
        graphs = sum(entry.graph is not None for entry in entries)
        problems += [f"fallback: {e.fallback_reason}" for e in entries if e.fallback_reason is not None]
        problems += [f"graph break: {str(e.break_reason).splitlines()[0]}" for e in entries
                     if e.break_reason is not None]
    else:
        from torch._dynamo.utils import counters

        graphs = counters["stats"]["unique_graphs"]
    report = {"import_torch": after_torch - _PROCESS_START, "first": first - start, "call": first - wrapped,
              "process": first - _PROCESS_START, "graphs": graphs, "problems": problems,
              "imports": clock.imports, "backend": clock.backend, "backend_imports": clock.backend_imports,
              "dynamo_before": dynamo_before, "inductor_before": inductor_before, **cache_counters()}
    print("RESULT " + json.dumps(report), flush=True)


# ---------------------------------------------------------------------------------------------
# Child: steady state and what was compiled, both systems in one process.

def _recording_backend(record):
    """compile_fx(gm, example_inputs), as symexec's "inductor" does; keeps the graph, the
    compiled callable and the inputs of its first call."""
    from torch._inductor.compile_fx import compile_fx

    def backend(gm, example_inputs):
        compiled = compile_fx(gm, example_inputs)
        record["graphs"].append(gm)

        def run(*inputs):
            if "call" not in record:
                record["call"] = (compiled, list(inputs))
            return compiled(*inputs)

        return run

    return backend


def _op_count(gm):
    return sum(node.op in ("call_function", "call_method", "call_module") for node in gm.graph.nodes)


_KERNEL = re.compile(r"^(cpp_fused_\w+) = async_compile\.cpp_pybinding\(\[.*?\], r'''(.*?)'''\)", re.S | re.M)


def output_code_summary(paths):
    """What inductor generated: C++ kernels (sources with kernel names normalised) and the
    wrapper's calls, from the output-code modules a compile loaded."""
    kernels, calls = [], []
    for path in paths:
        with open(path) as f:
            text = f.read()
        if "def call(" not in text:
            continue
        found = _KERNEL.findall(text)
        names = {kernel_name: f"K{i}" for i, (kernel_name, _) in enumerate(found)}
        for _, source in found:
            for old, new in names.items():
                source = source.replace(old, new)
            kernels.append(source)
        body = text[text.index("def call("):]
        body = body[:body.find("\n\n\n")] if "\n\n\n" in body else body
        calls += re.findall(r"(extern_kernels\.\w+|torch\.ops\.\w+\.\w+(?:\.\w+)?|cpp_fused_\w+\()", body)
    return {"kernels": kernels, "launches": sum(c.startswith("cpp_fused_") for c in calls),
            "extern": sorted(c for c in calls if c.startswith("extern_kernels")),
            "aten": sorted(c for c in calls if c.startswith("torch.ops")), "modules": len(paths)}


def child_steady(name, threads, rounds, round_ms):
    import gc

    import torch
    import torch._dynamo
    from torch._inductor.codecache import PyCodeCache

    import symexec

    torch.set_num_threads(threads)
    model, args, kwargs = build(name)
    loaded = {"paths": None}
    original_load = PyCodeCache.load_by_key_path.__func__

    def load_by_key_path(cls, key, path, *rest, **options):
        if loaded["paths"] is not None:
            loaded["paths"].append(path)
        return original_load(cls, key, path, *rest, **options)

    PyCodeCache.load_by_key_path = classmethod(load_by_key_path)
    notes, code, records, counters = [], {}, {}, {}

    def compile_and_call(label, wrap):
        loaded["paths"] = []
        before = cache_counters()
        compiled = wrap()
        compiled(*args, **kwargs)
        after = cache_counters()
        counters[label] = {k: after[k] - before[k] for k in after}
        code[label] = output_code_summary(loaded["paths"])
        loaded["paths"] = None
        return compiled

    with torch.no_grad():
        expected = model(*args, **kwargs)
        contenders = {"eager": model}
        contenders["symexec"] = compile_and_call("symexec", lambda: symexec.compile(model, backend="inductor"))
        # torch.compile's graphs and callable first, from a compile of its own, then a reset:
        # the measured wrapper's code object then holds one cache entry, as it would alone.
        records["torch.compile"] = {"graphs": []}
        compile_and_call("tc-record", lambda: torch.compile(model, backend=_recording_backend(records["torch.compile"])))
        torch._dynamo.reset()
        contenders["torch.compile"] = compile_and_call("torch.compile", lambda: torch.compile(model, backend="inductor"))
        records["symexec"] = {"graphs": []}
        compile_and_call("sym-record", lambda: symexec.compile(model, backend=_recording_backend(records["symexec"])))
        for label, system in (("sym graph", "symexec"), ("tc graph", "torch.compile")):
            record = records[system]
            if "call" in record and len(record["graphs"]) == 1:
                graph_fn, inputs = record["call"]
                contenders[label] = (lambda graph_fn=graph_fn, inputs=inputs: lambda *a, **k: graph_fn(*inputs))()
            else:
                notes.append(f"{label}: {len(record['graphs'])} graphs, no direct call timed")
        for label, impl in contenders.items():
            for _ in range(10):
                result = impl(*args, **kwargs)
            if label in SYSTEMS:  # (a graph's outputs are its own flat tuple, not the model's)
                notes += [f"{label} output differs from eager: {d}" for d in differences(result, expected)]
        for entry in symexec.cache_entries(contenders["symexec"]):
            if entry.fallback_reason is not None:
                notes.append(f"symexec fallback: {entry.fallback_reason}")
            elif entry.break_reason is not None:
                notes.append(f"symexec graph break: {str(entry.break_reason).splitlines()[0]}")

        once = _time_calls(model, args, kwargs, 10)
        calls = max(5, int(round_ms * 1e3 / once))
        times = {label: [] for label in contenders}
        order = list(contenders)
        for round_number in range(rounds):
            shift = round_number % len(order)
            for label in order[shift:] + order[:shift]:
                times[label].append(_time_calls(contenders[label], args, kwargs, calls))
        gc.collect()

    sym_entries = [e for e in symexec.cache_entries(contenders["symexec"]) if e.graph is not None]
    graphs = {"symexec": [_op_count(e.graph) for e in sym_entries],
              "torch.compile": [_op_count(gm) for gm in records["torch.compile"]["graphs"]]}
    report = {"us": {label: statistics.median(ts) for label, ts in times.items()},
              "us_range": {label: [min(ts), max(ts)] for label, ts in times.items()}, "calls": calls,
              "graphs": graphs, "code": code, "counters": counters, "notes": notes}
    print("RESULT " + json.dumps(report), flush=True)


def _time_calls(fn, args, kwargs, calls):
    import gc

    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args, **kwargs)
        elapsed = time.perf_counter() - start
    finally:
        if gc_was_enabled:
            gc.enable()
    return elapsed / calls * 1e6


# ---------------------------------------------------------------------------------------------
# Parent: runs the children, prints the tables.

def run_child(arguments, cache_dir, timeout=1800):
    # TMPDIR too: inductor keeps its precompiled headers in tempfile.gettempdir(), out of
    # TORCHINDUCTOR_CACHE_DIR (they are global by design); a cold process must not find them.
    tmp = os.path.join(cache_dir, "tmp")
    os.makedirs(tmp, exist_ok=True)
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir, TORCHINDUCTOR_FX_GRAPH_CACHE="1",
               TORCHINDUCTOR_AUTOGRAD_CACHE="1", TMPDIR=tmp)
    for variable in ("TORCH_LOGS", "TORCH_COMPILE_DEBUG", "TORCHINDUCTOR_FORCE_DISABLE_CACHES", "SYMEXEC_LOGS"):
        env.pop(variable, None)
    src = os.path.dirname(HERE)
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, os.path.abspath(__file__), *arguments], env=env, capture_output=True,
                          text=True, timeout=timeout)
    wall = time.perf_counter() - start
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT "):])
            result["wall"] = wall
            return result
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
    raise RuntimeError(f"child {' '.join(arguments)} exited with {done.returncode} and no result:\n{tail}")


def _range(values, unit="s", digits=2):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    median = statistics.median(values)
    if len(values) == 1:
        return f"{median:.{digits}f}{unit}"
    return f"{median:.{digits}f}{unit} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def _hits(result):
    """fx h/m, aot h/m (b = bypass) of one child."""
    text = f"fx {result['fx_hit']}/{result['fx_miss']} aot {result['aot_hit']}/{result['aot_miss']}"
    if result["fx_bypass"] or result["aot_bypass"]:
        text += f" bypass {result['fx_bypass']}/{result['aot_bypass']}"
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help=f"comma-separated, from {','.join(MODELS)}")
    parser.add_argument("--repeats", type=int, default=2, help="cold/warm process pairs per system and model")
    parser.add_argument("--rounds", type=int, default=15, help="steady: timing rounds (median)")
    parser.add_argument("--round-ms", type=float, default=20.0, help="steady: ms of eager calls per round")
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    parser.add_argument("--report", default="all", choices=("all", "steady", "first"))
    parser.add_argument("--keep", action="store_true", help="keep the cache directories (printed)")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    options = parser.parse_args()

    if options.child:
        kind, *rest = options.child
        if kind == "first":
            system, name = rest
            child_first(system, name, options.threads)
        else:
            (name,) = rest
            child_steady(name, options.threads, options.rounds, options.round_ms)
        return

    names = [n.strip() for n in options.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {','.join(unknown)}; choose from {','.join(MODELS)}")
    import platform

    import torch

    print(f"{platform.python_implementation()} {platform.python_version()}, torch {torch.__version__}, "
          f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs; {options.threads} thread(s); "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    root = tempfile.mkdtemp(prefix="symexec-inductor-")
    steady, first, notes = {}, {}, []
    try:
        for name in names:
            if options.report in ("all", "steady"):
                try:
                    steady[name] = run_child(["--child", "steady", name, "--threads", str(options.threads),
                                              "--rounds", str(options.rounds), "--round-ms", str(options.round_ms)],
                                             tempfile.mkdtemp(dir=root, prefix=f"{name}-steady-"))
                    notes += [f"{name}: {n}" for n in steady[name]["notes"]]
                except Exception as error:  # reported, the other models go on
                    notes.append(f"{name}: steady: {error}")
                print(f"  {name}: steady done", flush=True)
            if options.report in ("all", "first"):
                first[name] = {system: {"cold": [], "warm": []} for system in SYSTEMS}
                for repeat in range(options.repeats):
                    systems = SYSTEMS if repeat % 2 == 0 else tuple(reversed(SYSTEMS))
                    for system in systems:
                        cache_dir = tempfile.mkdtemp(dir=root, prefix=f"{name}-{system}-{repeat}-")
                        arguments = ["--child", "first", system, name, "--threads", str(options.threads)]
                        try:
                            for state in ("cold", "warm"):
                                result = run_child(arguments, cache_dir)
                                first[name][system][state].append(result)
                                notes += [f"{name}: {system} ({state}): {p}" for p in result["problems"]]
                        except Exception as error:
                            notes.append(f"{name}: {system}: {error}")
                        if not options.keep:
                            shutil.rmtree(cache_dir, ignore_errors=True)
                    print(f"  {name}: first-result repeat {repeat + 1} done", flush=True)
    finally:
        if options.keep:
            print(f"cache directories kept under {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    if steady:
        print_steady(steady, names)
    if first:
        print_first(first, names)
    for note in notes:
        print("WARNING:", note)


def print_steady(steady, names):
    width = max(8, *(len(n) + 1 for n in names))
    print()
    print("Steady per call (us, median of rounds [min-max]; graph = the backend's callable called directly)")
    header = (f"{'model':<{width}}{'eager':>9}{'symexec':>20}{'t.compile':>20}{'sym/tc':>8}{'of mins':>9}"
              f"{'sym graph':>11}{'tc graph':>10}{'sym-graph':>11}{'tc-graph':>10}")
    print(header)
    print("-" * len(header))
    for name in names:
        if name not in steady:
            print(f"{name:<{width}}  failed (see WARNING below)")
            continue
        us, spread = steady[name]["us"], steady[name]["us_range"]

        def cell(label, w):
            if label not in us:
                return f"{'-':>{w}}"
            return f"{us[label]:>{w - 12}.1f} [{spread[label][0]:.0f}-{spread[label][1]:.0f}]".rjust(w)

        sym_graph, tc_graph = us.get("sym graph"), us.get("tc graph")
        print(f"{name:<{width}}{us['eager']:>9.1f}{cell('symexec', 20)}{cell('torch.compile', 20)}"
              f"{us['symexec'] / us['torch.compile']:>8.2f}"
              f"{spread['symexec'][0] / spread['torch.compile'][0]:>9.2f}"
              f"{sym_graph if sym_graph is not None else float('nan'):>11.1f}"
              f"{tc_graph if tc_graph is not None else float('nan'):>10.1f}"
              f"{us['symexec'] - sym_graph if sym_graph is not None else float('nan'):>11.1f}"
              f"{us['torch.compile'] - tc_graph if tc_graph is not None else float('nan'):>10.1f}")
    print("(sym/tc = ratio of the medians, target <= 1.0; of mins = ratio of the fastest rounds, steadier on a "
          "loaded machine; sym-graph, tc-graph = what each frontend's hit path adds to the compiled graph)")
    print()
    print("What was compiled (FX graphs and op nodes; inductor's output code: C++ kernels, extern and aten calls)")
    header = (f"{'model':<{width}}{'sym ops':>12}{'tc ops':>12}{'kernels (calls)':>17}{'same src':>10}"
              f"{'extern':>8}{'aten':>6}  caches (hit/miss) in that process: sym | tc")
    print(header)
    print("-" * len(header))
    for name in names:
        if name not in steady:
            continue
        report = steady[name]
        graphs, code = report["graphs"], report["code"]
        sym_code, tc_code = code["symexec"], code["tc-record"]
        same = sorted(sym_code["kernels"]) == sorted(tc_code["kernels"])
        sym_ops = "+".join(map(str, graphs["symexec"])) or "-"
        tc_ops = "+".join(map(str, graphs["torch.compile"])) or "-"
        kernels = (f"{len(sym_code['kernels'])}/{len(tc_code['kernels'])} "
                   f"({sym_code['launches']}/{tc_code['launches']})")
        extern = f"{len(sym_code['extern'])}/{len(tc_code['extern'])}"
        aten = f"{len(sym_code['aten'])}/{len(tc_code['aten'])}"
        extern_same = sym_code["extern"] == tc_code["extern"] and sym_code["aten"] == tc_code["aten"]
        counters = report["counters"]
        caches = (f"fx {counters['symexec']['fx_hit']}/{counters['symexec']['fx_miss']} aot "
                  f"{counters['symexec']['aot_hit']}/{counters['symexec']['aot_miss']} | fx "
                  f"{counters['tc-record']['fx_hit']}/{counters['tc-record']['fx_miss']} aot "
                  f"{counters['tc-record']['aot_hit']}/{counters['tc-record']['aot_miss']}")
        print(f"{name:<{width}}{sym_ops:>12}{tc_ops:>12}{kernels:>17}{('yes' if same else 'NO'):>10}"
              f"{extern:>8}{aten:>6}{'' if extern_same else ' (calls differ)'}  {caches}")
    print("(ops = op nodes per graph, symexec / torch.compile; kernels = C++ kernels defined (called), extern, "
          "aten = calls of extern kernels and aten fallbacks, each symexec/torch.compile; "
          "same src = the C++ kernel sources are identical, names normalised)")


def print_first(first, names):
    width = max(8, *(len(n) + 1 for n in names))
    print()
    print("Time to first result (s, median [min-max] over repeats; from after `import torch` and the model's "
          "construction to the first output)")
    header = (f"{'model':<{width}}{'state':<6}{'symexec':>20}{'t.compile':>20}{'ratio':>7}"
              f"{'call sym':>10}{'call tc':>9}{'process sym':>13}{'process tc':>12}  caches sym | tc")
    print(header)
    print("-" * len(header))
    warm_ratios = []
    for name in names:
        for state in ("cold", "warm"):
            runs = {system: first[name][system][state] for system in SYSTEMS}
            if not runs["symexec"] or not runs["torch.compile"]:
                print(f"{name:<{width}}{state:<6}  failed (see WARNING below)")
                continue
            median = {s: statistics.median(r["first"] for r in runs[s]) for s in SYSTEMS}
            ratio = median["symexec"] / median["torch.compile"]
            if state == "warm":
                warm_ratios.append(ratio)
            caches = " ".join(sorted({_hits(r) for r in runs["symexec"]})) + " | " + \
                " ".join(sorted({_hits(r) for r in runs["torch.compile"]}))
            print(f"{name:<{width}}{state:<6}{_range([r['first'] for r in runs['symexec']]):>20}"
                  f"{_range([r['first'] for r in runs['torch.compile']]):>20}{ratio:>7.2f}"
                  f"{statistics.median(r['call'] for r in runs['symexec']):>9.2f}s"
                  f"{statistics.median(r['call'] for r in runs['torch.compile']):>8.2f}s"
                  f"{statistics.median(r['process'] for r in runs['symexec']):>12.2f}s"
                  f"{statistics.median(r['process'] for r in runs['torch.compile']):>11.2f}s  {caches}")
    if warm_ratios:
        print(f"warm ratio: median {statistics.median(warm_ratios):.2f}, max {max(warm_ratios):.2f} (target <= 0.5)")
    print("(ratio = symexec / torch.compile of the medians; call = the first call alone, after the import and the "
          "wrapping; process = interpreter start to first result; caches = fx graph cache hit/miss, AOTAutograd "
          "cache hit/miss in that process)")
    preloaded = [name for name in names if any(r.get("dynamo_before") for s in SYSTEMS
                                               for state in ("cold", "warm") for r in first[name][s][state])]
    if preloaded:
        print(f"({', '.join(preloaded)}: building the model (transformers) imports torch._dynamo already, outside "
              f"the timed region of both systems)")
    print()
    print("Where the first result's time goes (s, medians): imports = inside import statements (torch._dynamo, "
          "inductor, symexec...); backend = inside inductor's compile_fx, its imports excluded; frontend = the rest "
          "(wrapping, tracing, guards, code, the call)")
    header = (f"{'model':<{width}}{'state':<6}{'imports sym':>12}{'tc':>7}{'backend sym':>13}{'tc':>7}"
              f"{'frontend sym':>14}{'tc':>7}{'ratio':>7}{'floor':>7}")
    print(header)
    print("-" * len(header))
    for name in names:
        for state in ("cold", "warm"):
            runs = {system: first[name][system][state] for system in SYSTEMS}
            if not runs["symexec"] or not runs["torch.compile"] or "imports" not in runs["symexec"][0]:
                continue
            parts = {}
            for system in SYSTEMS:
                imports = statistics.median(r["imports"] for r in runs[system])
                backend = statistics.median(r["backend"] - r["backend_imports"] for r in runs[system])
                frontend = statistics.median(r["first"] - r["imports"] - (r["backend"] - r["backend_imports"])
                                             for r in runs[system])
                parts[system] = (imports, backend, frontend)
            (si, sb, sf), (ti, tb, tf) = parts["symexec"], parts["torch.compile"]
            tc_first = statistics.median(r["first"] for r in runs["torch.compile"])
            print(f"{name:<{width}}{state:<6}{si:>11.2f}s{ti:>6.2f}s{sb:>12.2f}s{tb:>6.2f}s{sf:>13.2f}s{tf:>6.2f}s"
                  f"{sf / tf:>7.2f}{(si + sb) / tc_first:>7.2f}")
    print("(ratio = frontend symexec / torch.compile; floor = symexec's imports and backend alone over torch.compile's "
          "whole first result: the ratio a frontend taking no time at all would reach)")


if __name__ == "__main__":
    main()
