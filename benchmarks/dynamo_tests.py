"""PyTorch's own Dynamo tests as a conformance check: each case eagerly, under torch.compile, under symexec.

    python benchmarks/dynamo_tests.py DIR [--files test_functions,test_misc,test_repros] [-k WORD]
                                          [--jobs 2] [--timeout 60] [--json out.json] [--show 60]

DIR (or $DYNAMO_TESTS_DIR) is PyTorch's ``test/dynamo`` directory of v2.6.0. The files are not
in this repository and must never be committed; get them from Debian's source tarball::

    curl -O http://deb.debian.org/debian/pool/main/p/pytorch/pytorch_2.6.0+dfsg.orig.tar.xz
    tar xf pytorch_2.6.0+dfsg.orig.tar.xz --wildcards '*/test/dynamo/*'
    python benchmarks/dynamo_tests.py pytorch-v2.6.0/test/dynamo

Each test method (``make_test`` cases of test_functions.py included: they call torch's
``standard_test``, which compiles the function with ``optimize_assert`` and checks it with
``same(...)`` on random tensors) runs three times in a worker process
(``dynamo_harness.py``): (a) eagerly, torch.compile and friends returning the function itself;
(b) as written, under torch.compile, its backend wrapped in a counter; (c) under symexec:
``torch.compile``, ``torch._dynamo.optimize``, ``optimize_assert``, ``run``, ``reset``,
``graph_break``, ``allow_in_graph``, ``mark_dynamic`` replaced by symexec's, with the same backend
in the same counter; the ``torch._dynamo.config`` options that have a ``symexec.config`` option
of the same meaning (``capture_scalar_outputs``, ``cache_size_limit``, ``nested_graph_breaks``) are read from
``torch._dynamo.config`` in that run, so a test's ``config.patch(...)`` applies to both. The tests' own assertions (``CompileCounter``, ``same(...)``) then judge
symexec. Cases that use an API symexec has no counterpart for (``torch._dynamo.explain``,
``export``, ``optimize`` as a context manager) are "n/a" under symexec.

A failure under symexec where torch.compile passes is a "wrong result" when the failing
assertion is about values, "counts" when it is about compile counts (frame_count, op_count,
graph text). Under symexec (and eagerly) an assertion about counts whose arguments are plain
numbers or strings does not stop the test: it is recorded (``soft_counts``) and the test goes on,
so its later assertions about values still judge symexec, and the table compares the graphs and
ops each system compiled instead of Dynamo's own expected counts; symexec's internal errors (fallbacks with a warning) and its graph-break reasons
(its ``graph_breaks``/``fallbacks`` log artifacts) are recorded per case.

The table gives per file: cases, torch.compile ok, symexec ok, symexec failures where
torch.compile passes, wrong results, internal errors, op nodes captured (symexec/torch.compile:
the op nodes of each system's distinct graphs, so a recompile of the same graph does not count
twice: graphs are the same when their inputs' names and their ops are; nodes that compute nothing are left out of both: torch's API-usage logging and the grad or
inference mode set at the start of a resumed function, ``dynamo_harness.BOOKKEEPING``, and ops
whose result is their input as it was; counted twice: as the graphs' nodes and in core ATen,
``make_fx`` with torch's core decompositions, where every graph of both systems decomposes; fewer
ops is fewer in both, as one computation recorded two ways differs in one: ``addcdiv`` against its
``div``, ``mul``, ``add``; torch.compile's NumPy wrappers against their casts), cases with fewer ops (< 95% of torch.compile's, in
distinct graphs or, with no more graphs than torch.compile, in all), with more graphs (every compile
counts), and the share of the cases
torch.compile runs correctly where symexec conforms (ok, ops >= 95%, graphs <= torch.compile's
unless torch.compile made none, or symexec's hold more ops in every measure: a frame it skipped
whole, code it ran as Python, is not a bar to capturing it).
Then the non-conforming cases grouped by cause (normalised break reason or failure).
This is a benchmark, not a test: it imports torch._dynamo and takes long (run with
OMP_NUM_THREADS=1).
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import os
import queue
import re
import select
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = ("test_functions", "test_misc", "test_repros")
RECYCLE = 40  # cases per worker process before a fresh one


class Worker:
    """One worker process (``dynamo_harness.worker``) speaking JSON lines."""

    def __init__(self, directory: str, seconds: int) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(HERE), HERE,
                                                          os.environ.get("PYTHONPATH", "")]))
        self.stderr = open(os.devnull, "w")  # noqa: SIM115
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker", directory, "--timeout", str(seconds)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                     env=env, text=True, bufsize=1)
        self.served = 0

    def ask(self, request: dict, seconds: float) -> dict | None:
        """The reply, or None if the worker did not answer in time or died."""
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return None
        ready, _, _ = select.select([self.proc.stdout], [], [], seconds)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        self.served += 1
        return json.loads(line) if line else None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.stderr.close()


def _failed(status: str, message: str) -> dict:
    return {"status": status, "kind": status, "message": message, "line": "", "graphs": 0, "ops": 0,
            "distinct_ops": 0, "graph_ops": [], "breaks": [], "fallbacks": [], "internal": []}


def run_all(directory: str, files: list[str], pattern: str | None, jobs: int, seconds: int) -> tuple[list, list]:
    lister = Worker(directory, seconds)
    tasks: queue.Queue = queue.Queue()
    stubbed: set[str] = set()
    count = 0
    for file in files:
        reply = lister.ask({"list": file}, 600)
        if reply is None or "error" in reply:
            print(f"{file}: cannot list cases: {reply}", file=sys.stderr)
            continue
        stubbed.update(reply["stubbed"])
        for case in reply["cases"]:
            if pattern is None or pattern in case:
                tasks.put({"file": file, "case": case, "modes": ["eager", "dynamo", "symexec"]})
                count += 1
    lister.close()
    results: list[dict] = []
    lock = threading.Lock()
    start = time.time()

    def serve() -> None:
        worker = None
        while True:
            try:
                task = tasks.get_nowait()
            except queue.Empty:
                break
            if worker is None or worker.served >= RECYCLE:
                if worker is not None:
                    worker.close()
                worker = Worker(directory, seconds)
            # three modes, each under its own alarm; the process is killed past them all (imports included)
            reply = worker.ask(task, 3 * seconds + 240)
            if reply is None or "error" in reply:
                alive = worker.proc.poll() is None
                worker.close()
                worker = None
                what = ("timeout" if alive else "crash") if reply is None else "error"
                reply = {"file": task["file"], "case": task["case"]}
                for mode in task["modes"]:
                    reply[mode] = _failed(what, f"worker {what}")
            with lock:
                results.append(reply)
                done = len(results)
                if done % 25 == 0 or done == count:
                    print(f"  {done}/{count} cases, {time.time() - start:.0f} s", file=sys.stderr, flush=True)
        if worker is not None:
            worker.close()

    threads = [threading.Thread(target=serve) for _ in range(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.sort(key=lambda r: (files.index(r["file"]), r["case"]))
    return results, sorted(stubbed)


# ---------------------------------------------------------------------------------------------
# Verdicts and the table


# What a test reads of Dynamo itself (its caches, counters, metrics, config, guards): a failure
# under symexec of a case that reads them is "internals", not a wrong result.
_INTERNALS = re.compile(r"_debug_get_cache_entry_list|get_compilation_metrics|\bcounters\b|torch\._guards|"
                        r"eval_frame\.|GuardManager|guard_manager|_dynamo\.config|only_allow_pt2|"
                        r"register_stack_frame|CacheEntry|\bexplain\(|_dynamo\.utils\.|_dynamo\.exc\.|"
                        r"Unsupported\b|ConstraintViolationError|_orig_mod|OptimizedModule|same_two_models|"
                        r"torch\.fx\.symbolic_trace|_dynamo\.convert_frame|dynamo_timed|set_stance")
_SOURCES: dict[tuple[str, str], dict[str, str]] = {}


def internals(directory: str, file: str, case: str) -> list[str]:
    """The Dynamo internals a case's method reads (its own source, not its helpers')."""
    if (directory, file) not in _SOURCES:
        path = os.path.join(directory, file + ".py")
        with open(path) as f:
            text = f.read()
        _SOURCES[directory, file] = {
            f"{node.name}.{item.name}": ast.get_source_segment(text, item) or ""
            for node in ast.parse(text).body if isinstance(node, ast.ClassDef)
            for item in node.body if isinstance(item, ast.FunctionDef)}
    return sorted(set(_INTERNALS.findall(_SOURCES[directory, file].get(case, ""))))


def tc_ok(r: dict) -> bool:
    return r["dynamo"]["status"] == "pass"


def measures(r: dict) -> list[tuple[int, int, int, int]]:
    """(symexec's ops in distinct graphs, in all; torch.compile's), as the graphs' own op nodes,
    and in core ATen where every graph of both systems decomposed. One computation recorded two
    ways differs in one of them: ``addcdiv`` is one node where torch.compile records three, but
    the same three in core ATen; torch.compile's NumPy wrappers are one node each, but cast and
    broadcast in core ATen. A capture gap (a break, code run as it is) is fewer ops in both."""
    d, s = r["dynamo"], r["symexec"]
    found = [(s["distinct_ops"], s["ops"], d["distinct_ops"], d["ops"])]
    if s.get("aten_ops") is not None and d.get("aten_ops") is not None:
        found.append((s["aten_distinct_ops"], s["aten_ops"], d["aten_distinct_ops"], d["aten_ops"]))
    return found


def _fewer(r: dict, m: tuple[int, int, int, int]) -> bool:
    s_distinct, s_all, d_distinct, d_all = m
    # (distinct graphs leave a recompile of the same graph out; where torch.compile's recompile
    # takes a size as a new input, its graph is distinct and symexec's is not: with no more
    # graphs, all the ops compiled compare too)
    return s_distinct < 0.95 * d_distinct and not (r["symexec"]["graphs"] <= r["dynamo"]["graphs"] and s_all >= 0.95 * d_all)


def measure(r: dict) -> tuple[int, int, int, int]:
    """The measure the case is judged by: the first that does not find fewer ops, else the nodes'."""
    found = measures(r)
    return next((m for m in found if not _fewer(r, m)), found[0])


def verdict(r: dict) -> str:
    """How symexec does on a case torch.compile runs correctly: ok, or what is wrong."""
    d, s = r["dynamo"], r["symexec"]
    if s["status"] == "n/a":
        return "n/a"
    if s["status"] != "pass":
        if r.get("internals"):
            return "internals"
        e = r.get("eager", {})
        if s["kind"] in ("error", "assertion") and e.get("status") == s["status"] and e.get("kind") == s["kind"] \
                and e.get("message") == s["message"]:
            # the exception eager raises, where torch.compile raises none (it computes something
            # else than CPython: min() of an array, ...), or the test's assertion failing eagerly
            # just so (it asserts what torch.compile does that CPython does not: raising on
            # mark_dynamic inside a compiled function, not warning on a read-only array): symexec
            # is exact, the test is about Dynamo
            return "as eager"
        if s["kind"] == "assertion":
            return "wrong result"
        return "fails"
    if _fewer(r, measure(r)):
        return "fewer ops"
    if s["graphs"] > d["graphs"] and d["graphs"] > 0 and not _more_captured(r):
        # (torch.compile capturing nothing, having skipped the frame, is not a bar: symexec's
        # graphs there are capture where torch.compile has none; nor are graphs of more ops
        # than torch.compile's in every measure: code it ran as Python, symexec compiled)
        return "more graphs"
    return "ok"


def _more_captured(r: dict) -> bool:
    """More ops than torch.compile's in distinct graphs, in every measure."""
    return all(s_distinct > d_distinct for s_distinct, _, d_distinct, _ in measures(r))


_NUMBERS = re.compile(r"\b0x[0-9a-f]+\b|\b\d+\b")
_PATHS = re.compile(r"(/[\w.+-]+)+\.py(:\d+)?|<eval_with_key>[.\d]*")
_WHERE = re.compile(r"\s+at (\S+:\d+|unknown location).*$")
_SOURCES_TEXT = re.compile(r"\b[LG]\[[^\]]*\]|<file>\[[^\]]*\]")
_LOCAL = re.compile(r"[\w.]*<locals>\.([\w.]*<locals>\.)*")
_SYMBOL = re.compile(r"\b(s|zf|u)\d+\b")


def normalise(text: str) -> str:
    """One line of a break reason or failure, without what differs from case to case."""
    text = text.strip().splitlines()[0] if text.strip() else ""
    text = re.sub(r"^Graph break in \S+ \([^)]*\): ", "", text)
    text = re.sub(r"^Running \S+ \([^)]*\) as the original function: ", "", text)
    text = re.sub(r"^(\w+\.)*Unsupported: ", "", text)
    text = re.sub(r"; in a loop, so .*$", " (in a loop)", text)
    text = _WHERE.sub("", text)
    text = _PATHS.sub("<file>", text)
    text = _SOURCES_TEXT.sub("x", text)
    text = _LOCAL.sub("", text)
    text = _SYMBOL.sub("s", text)
    text = _NUMBERS.sub("N", text)
    return text[:160]


def cause(r: dict) -> str:
    s = r["symexec"]
    if verdict(r) == "internals":
        return "the test reads Dynamo internals: " + ", ".join(r["internals"])
    if verdict(r) == "as eager":
        return "as eager (eager fails so too; torch.compile does not): " + normalise(s["message"])
    if s["internal"]:
        return "internal error: " + normalise(s["internal"][0].split(": ", 1)[-1])
    if s["status"] == "timeout":
        return "timeout"
    if s["status"] not in ("pass", "n/a"):
        if s["kind"] == "counts" and (s["breaks"] or s["fallbacks"]):
            return normalise((s["breaks"] or s["fallbacks"])[0])
        if s["kind"] == "error":
            return normalise(s["message"])
        return f"{s['kind']}: " + normalise(s["message"])
    if s["breaks"] or s["fallbacks"]:
        return normalise((s["breaks"] or s["fallbacks"])[0])
    if s["graphs"] < r["dynamo"]["graphs"]:
        return "no symexec break; fewer graphs than torch.compile (it recompiled or broke more)"
    return "no symexec break; fewer op nodes in the same graphs (a decomposition or traced helper differs)"


def table(results: list[dict], files: list[str]) -> list[str]:
    head = ("file", "cases", "tc ok", "sx ok", "sx fail|tc ok", "wrong", "internal", "ops sx/tc", "fewer ops",
            "more graphs", "n/a", "internals", "as eager", "conform")
    rows = [head]
    for file in files + ["total"]:
        rs = [r for r in results if file in ("total", r["file"])]
        good = [r for r in rs if tc_ok(r)]
        verdicts = collections.Counter(verdict(r) for r in good)
        judged = [r for r in good if verdict(r) not in ("n/a", "internals", "as eager")]
        ops_s = sum(r["symexec"]["distinct_ops"] for r in judged)  # (the graphs' own nodes)
        ops_t = sum(r["dynamo"]["distinct_ops"] for r in judged)
        conform = sum(verdict(r) == "ok" for r in judged)
        rows.append((file, len(rs), len(good), sum(r["symexec"]["status"] == "pass" for r in rs),
                     verdicts["fails"] + verdicts["wrong result"], verdicts["wrong result"],
                     sum(bool(r["symexec"]["internal"]) for r in rs),
                     f"{ops_s}/{ops_t} ({ops_s / ops_t:.1%})" if ops_t else f"{ops_s}/0",
                     verdicts["fewer ops"], verdicts["more graphs"], verdicts["n/a"], verdicts["internals"], verdicts["as eager"],
                     f"{conform}/{len(judged)} ({conform / len(judged):.1%})" if judged else "-"))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(head))]
    return ["  ".join(str(cell).rjust(width) for cell, width in zip(row, widths)) for row in rows]


def report(results: list[dict], files: list[str], stubbed: list[str], show: int) -> list[str]:
    lines = table(results, files)
    lines += ["", "tc ok: torch.compile passes; sx: symexec; conform: symexec ok with ops >= 95% and graphs <= "
              "torch.compile's (unless torch.compile made none, or symexec's graphs hold more ops in every "
              "measure: code torch.compile ran as Python), over the tc-ok cases (n/a, internals and as eager excluded)",
              "n/a: an API with no symexec counterpart; internals: fails under symexec and reads Dynamo's own "
              "caches/counters/config/errors",
              "as eager: symexec fails the case as eager does (the exception eager raises where torch.compile "
              "raises none, or the same failed assertion: the test asserts what torch.compile does that CPython "
              "does not); listed below, not judged",
              "acceptance: 'sx fail|tc ok' = 0 and conform >= 97%"]
    if stubbed:
        lines.append(f"names the 2.6 test files import that this torch lacks (stubbed): {', '.join(stubbed)}")
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for r in results:
        if tc_ok(r) and verdict(r) not in ("ok", "n/a"):
            groups[cause(r)].append(f"{r['file']}::{r['case']} [{verdict(r)}]")
    lines += ["", f"Cases where symexec fails or captures less, by cause ({sum(map(len, groups.values()))} cases):"]
    for text, cases in sorted(groups.items(), key=lambda item: -len(item[1])):
        lines.append(f"\n[{len(cases)}] {text}")
        lines += [f"    {case}" for case in cases[:show]]
        if len(cases) > show:
            lines.append(f"    ... {len(cases) - show} more")
    soft = [r for r in results if tc_ok(r) and r["symexec"]["status"] == "pass" and r["symexec"].get("soft_counts")]
    if soft:
        fewer = sum(r["symexec"]["graphs"] < r["dynamo"]["graphs"] for r in soft)
        lines += ["", f"symexec passes {len(soft)} cases whose assertions about Dynamo's counts fail under it "
                  f"(judged by graphs and ops instead; {fewer} with fewer graphs than torch.compile):"]
        lines += [f"    {r['file']}::{r['case']} [{verdict(r)}] graphs {r['symexec']['graphs']} vs {r['dynamo']['graphs']}: "
                  f"{r['symexec']['soft_counts'][0][:100]}" for r in soft[:show]]
    na = collections.Counter(r["symexec"]["message"] for r in results if r["symexec"]["status"] == "n/a")
    if na:
        lines += ["", "n/a under symexec (no symexec counterpart of the API): "
                  + ", ".join(f"{msg} ({n})" for msg, n in na.most_common())]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", nargs="?", default=os.environ.get("DYNAMO_TESTS_DIR"))
    parser.add_argument("--files", default=",".join(FILES))
    parser.add_argument("-k", dest="pattern", default=None, help="only cases whose Class.method contains this")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=60, help="seconds per case and mode")
    parser.add_argument("--json", default=None, help="write every case's record here")
    parser.add_argument("--show", type=int, default=60, help="cases listed per cause")
    parser.add_argument("--report-from", default=None, help="print the report of a --json file, run nothing")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.directory or not os.path.isdir(args.directory):
        parser.error("give PyTorch's test/dynamo directory (or set DYNAMO_TESTS_DIR); the docstring says how")
    directory = os.path.abspath(args.directory)
    if args.worker:
        import dynamo_harness  # noqa: PLC0415 - torch and symexec load in the workers only

        dynamo_harness.worker(directory, args.timeout)
        return
    if args.report_from:
        with open(args.report_from) as f:
            saved = json.load(f)
        for r in saved["cases"]:
            r["internals"] = internals(directory, r["file"], r["case"])
        print("\n".join(report(saved["cases"], saved["files"], saved["stubbed"], args.show)))
        return
    files = args.files.split(",")
    results, stubbed = run_all(directory, files, args.pattern, args.jobs, args.timeout)
    for r in results:
        r["internals"] = internals(directory, r["file"], r["case"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"files": files, "stubbed": stubbed, "cases": results}, f, indent=1)
    print("\n".join(report(results, files, stubbed, args.show)))


if __name__ == "__main__":
    main()
