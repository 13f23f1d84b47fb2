"""HF generate() (issue 19, point 5): total time of greedy decoding, eager vs symexec vs torch.compile.

    python benchmarks/generate.py [--models gpt2,llama,gpt2-4x256,llama-4x256] [--backend eager|aot_eager|inductor]
                                  [--patterns forward,call[,generate]] [--new-tokens 20] [--repeats 7] [--threads 1]

Each model (HF GPT-2 / LLaMA causal LMs built from configs with random weights, nothing
downloaded: `gpt2` and `llama` are the tiny ones of tests/models/test_generate.py, 2 layers of 32 and
a vocabulary of 100; `gpt2-4x256` and `llama-4x256` are somewhat bigger, 4 layers of 256, a
vocabulary of 1000) runs `model.generate(ids, attention_mask=mask, max_new_tokens=20,
do_sample=False)` on a batch of 2 with the second row left-padded, three prompts in turn:
length 8 (the first generate: prefill and decoding steps compiled, the cache length turning
symbolic), length 12 (a new prefill length: one recompile) and length 5 (cache hits only).

Patterns, each run on a fresh model (the same weights) after both caches are emptied:
- forward: `model.forward = compile(model.forward)` (HF's documented torch.compile pattern);
- call: the whole module compiled in place: torch's `model.compile()`, and for symexec (which
  has no `model.compile()`) `model._compiled_call_impl = symexec.compile(model._call_impl)`,
  what `model.compile()` does. (`compile(model).generate(...)` compiles nothing with either
  system: the wrapper's `generate` is the original module's; tests/models/test_generate.py checks it.)
- generate (only with --patterns generate): `model.generate = compile(model.generate)`, the
  decoding loop itself traced (graph breaks around its Python, the forward calls compiled).

Both systems get the same backend (`--backend`, default eager: symexec's named backend and
torch.compile's), wrapped to count the graphs each generate() call compiles. Which system runs
first alternates from row to row. With inductor, its caches are disabled
(`force_disable_caches`): otherwise the system compiling second reuses the first one's kernels
(some in-process reuse may remain: compare rows of both orders).

Columns: `1st`, `2nd` = time of the first generate (prompt 8) and of the second (prompt 12),
compiling included; `hit` = median over --repeats rounds of a generate on prompt 5 after those,
when nothing compiles (each round runs eager, symexec and torch.compile in turn, the order
rotating, as benchmarks/models.py's per-call rounds); `total` = 1st + 2nd + one hit; `graphs` =
graphs compiled by each of the three calls (each graph past the first is a recompile); `tok` =
every call's tokens equal eager's. Ratios: symexec / torch.compile of the total and of a hit, and of a hit vs eager.
Before measuring, each system compiles an unrelated small module and eager runs generate
once, to pay one-time start-up costs. Everything runs in one process.
"""

import argparse
import functools
import os
import statistics
import time
import warnings

os.environ["HF_HUB_OFFLINE"] = "1"  # before transformers is imported: never download

import torch
import torch._dynamo  # the reference: torch.compile, reset between runs
import torch._inductor.config
import transformers
from torch import nn
from torch._dynamo.backends.registry import lookup_backend
from workloads import environment

import symexec
from symexec.backends import BACKENDS

transformers.logging.set_verbosity_error()  # tiny vocabularies make configs complain

PAD, BOS, EOS = 0, 1, 2
PROMPTS = ((8, 1), (12, 2), (5, 3))  # (length, seed): first generate, new prefill length, hits


# ---------------------------------------------------------------------------------------------
# Models: (builder, vocabulary)

def _gpt2(layers, width, heads, vocab):
    config = transformers.GPT2Config(n_layer=layers, n_head=heads, n_embd=width, vocab_size=vocab,
                                     n_positions=128, pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS)
    return transformers.GPT2LMHeadModel(config)


def _llama(layers, width, heads, vocab):
    config = transformers.LlamaConfig(num_hidden_layers=layers, num_attention_heads=heads,
                                      num_key_value_heads=heads, hidden_size=width,
                                      intermediate_size=2 * width, vocab_size=vocab, max_position_embeddings=128,
                                      pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS)
    return transformers.LlamaForCausalLM(config)


MODELS = {
    "gpt2": (lambda: _gpt2(2, 32, 2, 100), 100),
    "llama": (lambda: _llama(2, 32, 2, 100), 100),
    "gpt2-4x256": (lambda: _gpt2(4, 256, 4, 1000), 1000),
    "llama-4x256": (lambda: _llama(4, 256, 4, 1000), 1000),
}


def build(name):
    """A fresh model in eval mode, seed 0: every run of one model has the same weights."""
    torch.manual_seed(0)
    return MODELS[name][0]().eval()


def prompt(vocab, length, seed):
    ids = torch.randint(3, vocab, (2, length), generator=torch.Generator().manual_seed(seed))
    mask = torch.ones_like(ids)
    ids[1, :2] = PAD  # left padding on the second row
    mask[1, :2] = 0
    return ids, mask


def generate(model, inputs, new_tokens):
    ids, mask = inputs
    return model.generate(ids, attention_mask=mask, max_new_tokens=new_tokens, do_sample=False, pad_token_id=PAD)


# ---------------------------------------------------------------------------------------------
# Systems and patterns

class Counting:
    """A backend that counts the graphs it is given and hands them to `backend`."""

    def __init__(self, backend):
        self.backend = backend
        self.graph_count = 0

    def __call__(self, gm, example_inputs):
        self.graph_count += 1
        return self.backend(gm, example_inputs)


def compile_for_generate(system, pattern, model, backend):
    """Compile `model` by `pattern`; return the symexec-compiled function (for its cache) or None."""
    compile_ = functools.partial(symexec.compile if system == "symexec" else torch.compile, backend=backend)
    if pattern == "forward":
        model.forward = compile_(model.forward)
        return model.forward if system == "symexec" else None
    if pattern == "generate":  # (an instance attribute: generate(model, ...) calls it)
        model.generate = compile_(model.generate)
        return model.generate if system == "symexec" else None
    if system == "symexec":
        model._compiled_call_impl = compile_(model._call_impl)
        return model._compiled_call_impl
    model.compile(backend=backend)
    return None


def named_backend(system, name):
    return BACKENDS[name] if system == "symexec" else lookup_backend(name)


SYSTEMS = {"symexec": symexec.reset, "torch.compile": torch._dynamo.reset}
PATTERNS = ("forward", "call")
EXTRA_PATTERNS = ("generate",)  # (on request only)


class Unrelated(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x):
        return torch.tanh(self.linear(x)).sum() * 2


def warm_up(backend):
    """Pay each system's one-time costs (and the backend's) on an unrelated module."""
    module = Unrelated().eval()
    x = torch.randn(4, 8)
    symexec.compile(module, backend=named_backend("symexec", backend))(x)
    torch.compile(module, backend=named_backend("torch.compile", backend))(x)
    symexec.reset()
    torch._dynamo.reset()


def timed(fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    return (time.perf_counter() - start) * 1e3, result


def run(system, pattern, name, prompts, expected, options, notes):
    """The compiling calls of one run: a fresh model compiled by `pattern`, generate on the
    first two prompts; return (the model, the symexec-compiled function or None, the counting
    backend, the row's numbers so far)."""
    SYSTEMS[system]()
    counting = Counting(named_backend(system, options.backend))
    model = build(name)
    compiled = compile_for_generate(system, pattern, model, counting)
    times, graphs, equal = [], [], True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for inputs, want in zip(prompts, expected):
            before = counting.graph_count
            ms, tokens = timed(generate, model, inputs, options.new_tokens)
            times.append(ms)
            graphs.append(counting.graph_count - before)
            equal = equal and torch.equal(tokens, want)
    label = f"{name} {pattern} {system}"
    notes += [f"{label}: {w.category.__name__}: {str(w.message)[:300]}" for w in caught
              if issubclass(w.category, symexec.SymexecWarning) or str(w.message).startswith("symexec")]
    return model, compiled, counting, {"first": times[0], "second": times[1], "graphs": graphs, "equal": equal}


def hit_rounds(contenders, inputs, expected, options, notes, label):
    """Median time of a generate on cache hits for each contender (name -> model), in rounds
    whose order rotates, as benchmarks/models.py's per-call times."""
    times = {system: [] for system in contenders}
    order = list(contenders)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for number in range(options.repeats):
            shift = number % len(order)
            for system in order[shift:] + order[:shift]:
                ms, tokens = timed(generate, contenders[system], inputs, options.new_tokens)
                times[system].append(ms)
                if not torch.equal(tokens, expected):
                    notes.append(f"{label} {system}: a cache-hit generate's tokens differ from eager's")
    notes += [f"{label}: {w.category.__name__}: {str(w.message)[:300]}" for w in caught
              if issubclass(w.category, symexec.SymexecWarning) or str(w.message).startswith("symexec")]
    return {system: statistics.median(t) for system, t in times.items()}


def compare(pattern, name, prompts, expected, eager_model, options, notes, order):
    """Both systems' runs for one model and pattern, then their cache hits beside eager's;
    return {"eager": ..., "symexec": ..., "torch.compile": ...} (None for a failed system)."""
    results, contenders, counters = {}, {"eager": eager_model}, {}
    for system in order:
        try:
            model, compiled, counting, results[system] = run(system, pattern, name, prompts, expected, options, notes)
        except Exception as error:  # reported, the table goes on
            notes.append(f"{name} {pattern} {system}: {type(error).__name__}: {str(error).splitlines()[0]}")
            results[system] = None
            continue
        contenders[system], counters[system] = model, (counting, counting.graph_count, compiled)
    label = f"{name} {pattern}"
    hits = hit_rounds(contenders, prompts[-1], expected[-1], options, notes, label)
    for system, (counting, before, compiled) in counters.items():
        if counting.graph_count != before:
            notes.append(f"{label} {system}: {counting.graph_count - before} graph(s) compiled on cache hits")
        results[system]["hit"] = hits[system]
        results[system]["total"] = results[system]["first"] + results[system]["second"] + hits[system]
        if not results[system]["equal"]:
            notes.append(f"{label} {system}: tokens differ from eager's")
        if compiled is not None:
            for entry in symexec.cache_entries(compiled):
                if entry.fallback_reason is not None:
                    notes.append(f"{label} symexec: fallback: {str(entry.fallback_reason).splitlines()[0]}")
                if entry.break_reason is not None and pattern != "generate":  # (generate's Python breaks)
                    notes.append(f"{label} symexec: graph break: {str(entry.break_reason).splitlines()[0]}")
    for reset in SYSTEMS.values():
        reset()
    return {system: results[system] for system in SYSTEMS}, hits["eager"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="gpt2,llama,gpt2-4x256,llama-4x256",
                        help=f"comma-separated, from {','.join(MODELS)}")
    parser.add_argument("--backend", default="eager", choices=("eager", "aot_eager", "inductor"))
    parser.add_argument("--patterns", default=",".join(PATTERNS),
                        help="comma-separated, from forward,call,generate (default forward,call)")
    parser.add_argument("--new-tokens", type=int, default=20, help="max_new_tokens (default 20)")
    parser.add_argument("--repeats", type=int, default=7, help="rounds of cache-hit generate calls (median)")
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    options = parser.parse_args()
    names = [n.strip() for n in options.models.split(",") if n.strip()]
    patterns = [p.strip() for p in options.patterns.split(",") if p.strip()]
    if any(n not in MODELS for n in names) or any(p not in PATTERNS + EXTRA_PATTERNS for p in patterns):
        parser.error(f"models from {','.join(MODELS)}, patterns from {','.join(PATTERNS + EXTRA_PATTERNS)}")

    print(environment(), flush=True)
    torch.set_num_threads(options.threads)
    if options.backend == "inductor":
        # The second system to compile a graph would find the first's kernels in inductor's caches.
        torch._inductor.config.force_disable_caches = True
        warnings.filterwarnings("ignore", message="dynamo_pgo force disabled")  # (no profile across runs: fine)
    print(f"{torch.get_num_threads()} threads; backend {options.backend}; generate(max_new_tokens={options.new_tokens}, "
          f"do_sample=False) on prompts of length {', '.join(str(n) for n, _ in PROMPTS)}, batch 2", flush=True)
    notes = []
    rows = []
    with torch.no_grad():
        warm_up(options.backend)
        for name in names:
            vocab = MODELS[name][1]
            prompts = [prompt(vocab, n, seed) for n, seed in PROMPTS]
            model = build(name)
            generate(model, prompts[0], options.new_tokens)  # (eager's own first-call costs)
            expected = [generate(model, p, options.new_tokens) for p in prompts]
            eager_first = [statistics.median(timed(generate, model, p, options.new_tokens)[0] for _ in range(3))
                           for p in prompts[:2]]  # (eager: nothing to compile; the median of 3)
            for pattern in patterns:
                order = list(SYSTEMS) if len(rows) % 2 == 0 else list(reversed(SYSTEMS))
                results, eager_hit = compare(pattern, name, prompts, expected, model, options, notes, order)
                eager = {"first": eager_first[0], "second": eager_first[1], "hit": eager_hit,
                         "total": sum(eager_first) + eager_hit}
                rows.append((name, pattern, eager, results))
                _print_row(name, pattern, eager, results, header=len(rows) == 1)

    print("(times in ms; 1st, 2nd = first and second generate, compiling included; hit = median generate on "
          "cache hits; total = 1st + 2nd + hit; graphs = compiled by each of the three generate calls; "
          "sym/tc = symexec / torch.compile of the total and of a hit; hit/eager = a hit vs an eager generate)")
    _print_summary(rows)
    for note in notes:
        print("WARNING:", note)


def _columns():
    return f"{'model':<13}{'pattern':<9}{'system':<15}{'1st':>9}{'2nd':>9}{'hit':>8}{'total':>9}{'graphs':>8}{'tok':>5}"


def _print_row(name, pattern, eager, results, header):
    if header:
        line = _columns() + f"{'sym/tc total':>14}{'sym/tc hit':>12}{'hit/eager':>11}"
        print(line)
        print("-" * len(line))
    print(f"{name:<13}{pattern:<9}{'eager':<15}{eager['first']:>9.1f}{eager['second']:>9.1f}{eager['hit']:>8.1f}"
          f"{eager['total']:>9.1f}")
    ours, theirs = results.get("symexec"), results.get("torch.compile")
    for system, r in results.items():
        if r is None:
            print(f"{'':<22}{system:<15}  failed (see WARNING below)")
            continue
        line = (f"{'':<22}{system:<15}{r['first']:>9.1f}{r['second']:>9.1f}{r['hit']:>8.1f}{r['total']:>9.1f}"
                f"{'/'.join(map(str, r['graphs'])):>8}{'yes' if r['equal'] else 'NO':>5}")
        if system == "symexec" and theirs is not None:
            line += (f"{r['total'] / theirs['total']:>14.2f}{r['hit'] / theirs['hit']:>12.2f}"
                     f"{r['hit'] / eager['hit']:>11.2f}")
        elif system == "torch.compile":
            line += f"{'':>26}{r['hit'] / eager['hit']:>11.2f}"
        print(line, flush=True)


def _print_summary(rows):
    more = []
    for name, pattern, _, results in rows:
        ours, theirs = results.get("symexec"), results.get("torch.compile")
        if ours and theirs and any(a > b for a, b in zip(ours["graphs"], theirs["graphs"])):
            more.append(f"{name} {pattern}")
    ratios = [r["symexec"]["total"] / r["torch.compile"]["total"] for *_, r in rows
              if r.get("symexec") and r.get("torch.compile")]
    if ratios:
        print(f"total time symexec / torch.compile: median {statistics.median(ratios):.2f}, max {max(ratios):.2f}; "
              f"recompiles above torch.compile's: {', '.join(more) if more else 'none'}")


if __name__ == "__main__":
    main()
