"""Conformance against torch's test databases, in full: symexec vs torch.compile vs eager.

    python benchmarks/conformance.py [--suites op,module,optim] [--forms function,method,inplace,unbound]
                                     [--dynamic both|default|true] [--per-op 2] [--show 40]

Every sample of op_db (each op's function, method, in-place and unbound forms), module_db
(eval mode) and optim_db (optimizer.step()) runs eagerly, under symexec and under
torch.compile (a counting backend for both), as tests/conformance.py describes; the fast slice
of it runs in CI (tests/fuzzers/test_conformance.py). The table gives, per suite and dynamic setting:
samples, how many each system gets right, symexec's wrong results and fallbacks (internal
errors), the samples where symexec does not conform (not ok where torch.compile is, or fewer
ops after a break), and the op nodes each captured. The samples that do not conform are listed
after it with their reason. Expect minutes: torch.compile takes most of the time.
"""

import argparse
import collections
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import conformance  # noqa: E402
from workloads import environment  # noqa: E402


def _samples(suite, forms, per_op):
    if suite == "op":
        return conformance.op_samples(per_op=per_op, forms=forms)
    if suite == "module":
        return conformance.module_samples()
    return conformance.optim_samples()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suites", default="op,module,optim")
    parser.add_argument("--forms", default=",".join(conformance.FORMS))
    parser.add_argument("--dynamic", default="both", choices=["both", "default", "true"])
    parser.add_argument("--per-op", type=int, default=2)
    parser.add_argument("--show", type=int, default=40, help="list at most this many non-conforming samples")
    args = parser.parse_args()
    print(environment())
    settings = {"both": [None, True], "default": [None], "true": [True]}[args.dynamic]
    forms = tuple(args.forms.split(","))
    rows, misses = [], []
    for suite in args.suites.split(","):
        for dynamic in settings:
            start = time.perf_counter()
            count = collections.Counter()
            for sample in _samples(suite, forms, args.per_op):
                try:
                    c = conformance.compare(sample, dynamic)
                except Exception as exc:  # noqa: BLE001 - the harness itself: reported, not fatal
                    count["harness"] += 1
                    misses.append(f"{sample.key} dynamic={dynamic}: harness error {type(exc).__name__}: {exc}"[:300])
                    continue
                count["samples"] += 1
                count["symexec ok"] += c.symexec.status == "ok"
                count["compile ok"] += c.dynamo.status == "ok"
                count["wrong"] += c.symexec.status == "wrong"
                count["fallback"] += c.symexec.status == "fallback"
                count["ops symexec"] += c.symexec.ops
                count["ops compile"] += c.dynamo.ops
                if not c.conforms:
                    count["not conforming"] += 1
                    misses.append(c.describe())
            rows.append((suite, "True" if dynamic else "default", count, time.perf_counter() - start))
    header = ("suite", "dynamic", "samples", "symexec ok", "compile ok", "wrong", "fallback", "not conforming",
              "ops symexec", "ops compile", "seconds")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for suite, dynamic, count, seconds in rows:
        values = [count[h] for h in header[2:-1]]
        print(f"| {suite} | {dynamic} | " + " | ".join(str(v) for v in values) + f" | {seconds:.0f} |")
    if misses:
        print(f"\n{len(misses)} not conforming (first {args.show}):")
        for line in misses[:args.show]:
            print("  " + line)


if __name__ == "__main__":
    main()
