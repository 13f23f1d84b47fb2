"""§6 — graph breaks and continuation functions.

The design document's example::

    def fn(a):
        b = a + 2
        print("Hi")
        return b + a

``print`` writes outside the graph, so the tracer cannot record it. It does not fail: it
compiles the graph of everything before (``a + 2``), lets CPython run ``print("Hi")`` for
real, and continues in a continuation function (``__resume_in_<function>_at_<line>``) that is traced
on its first call and holds the second graph (``b + a``). The generated code of ``fn``:

1. calls the first compiled graph;
2. rebuilds the Python stack and locals as they would be at the break, replaying every side
   effect made so far (here: none; see ``logged`` below for a mutated list);
3. runs the instruction that broke the graph (``print("Hi")``);
4. calls the continuation with the live stack values and locals, and returns its result.

``symexec.explain`` shows both graphs, the break, and the generated code of each function as
readable pseudo-Python (``functions[i].generated_readable``).

Run: ``python examples/s6_graph_breaks.py``
"""

import contextlib
import io

import torch

import symexec
from _show import check, heading, logs, sub_heading


def fn(a):
    b = a + 2
    print("Hi")
    return b + a


def logged(a, log):
    log.append("before")
    b = a * 2
    print("Hi from logged")
    log.append("after")
    return b + 1


def helper(x):
    y = x * 2
    if y.sum() > 0:  # the branch depends on a tensor's value: a graph break inside a callee
        return y
    return -y


def outer(a):
    b = a + 1
    return helper(b) + 1


def run_capturing(compiled, *args):
    """Call ``compiled``; return its result and what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = compiled(*args)
    return result, out.getvalue()


def main():
    heading("§6  b = a + 2; print('Hi'); return b + a: two graphs around a graph break")
    symexec.reset()
    compiled = symexec.compile(fn)
    a = torch.randn(4)
    with logs("graph_breaks"):
        got, printed = run_capturing(compiled, a)
    expected, expected_printed = run_capturing(fn, a)
    check("fn(a)", got, expected)
    check("what fn(a) printed", printed, expected_printed)
    got, printed = run_capturing(compiled, a)
    check("fn(a) again (cache hits, 'Hi' printed once more)", (got, printed), (expected, expected_printed))

    sub_heading("symexec.explain(fn, a)")
    out = symexec.explain(fn, a)  # runs fn(a) once: prints "Hi"
    print(out)
    assert out.graph_count == 2 and out.graph_break_count == 1
    check("explain's result", out.result, fn(a))
    for number, graph in enumerate(out.graphs, 1):
        sub_heading(f"graph {number}")
        print(graph.print_readable(print_output=False).rstrip())
    for report in out.functions:
        sub_heading(f"generated code of {report.name} ({report.kind})")
        print(report.generated_readable)
    continuation = next(r for r in out.functions if r.kind == "continuation")
    assert continuation.name.startswith("__resume_in_"), continuation.name

    heading("§6  side effects before a break are replayed: a list mutated in the graph's frame")
    symexec.reset()
    compiled = symexec.compile(logged)
    mine, theirs = [], []
    got, printed = run_capturing(compiled, a, mine)
    expected, expected_printed = run_capturing(logged, a, theirs)
    check("logged(a, log)", got, expected)
    check("the list after the call", mine, theirs)
    check("what it printed", printed, expected_printed)
    out = symexec.explain(logged, a, [])
    for report in out.functions:
        sub_heading(f"generated code of {report.name} ({report.kind})")
        print(report.generated_readable)

    heading("§6  a break inside an inlined call: the user stack names both frames")
    symexec.reset()
    compiled = symexec.compile(outer)
    for sign in (1, -1):
        x = sign * torch.ones(3)
        check(f"outer({sign} * ones(3))", compiled(x), outer(x))
    out = symexec.explain(outer, torch.ones(3))
    for reason in out.break_reasons:
        print(f"break in {reason.function}: {reason.reason} at {reason.filename}:{reason.lineno}")
        for filename, lineno, function, code in reason.user_stack:
            print(f"    {function} ({filename}:{lineno}): {code}")
        print(f"    hint: {reason.hint}")

    heading("§6  the bytecode log: the original and the rewritten code of fn and its continuation")
    symexec.reset()
    compiled = symexec.compile(fn)
    with logs("bytecode"):
        got, printed = run_capturing(compiled, a)
    check("fn(a)", got, fn(a))


if __name__ == "__main__":
    main()
