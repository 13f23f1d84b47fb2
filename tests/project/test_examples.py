"""Every script under examples/ runs to completion and shows what the design document shows.

Each script runs in its own interpreter (``sys.executable``), as a user would run it, with
stderr (where symexec's logs go) merged into stdout. The scripts compare every compiled result
with eager Python themselves and exit non-zero on a difference; here we check the exit code and
a few strings each one must print. (The suite's workers, one per core, run them side by side.)
"""

import os
import subprocess
import sys

import pytest

from helpers import broad_or

from symexec import versions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")

EXPECTED = {
    "s1_fx_graph.py": [
        "0 cache entries (nothing traced yet)",
        "[symexec.graph_code] TRACED GRAPH of mse",
        "s1_fx_graph.py:", "in mse, code: z = (x - y) ** 2",
        "= l_x_ - l_y_",
        "= sub ** 2",
        "= z.sum()",
        "return (sum_1,)",
        "second call (cache hit): same as eager",
    ],
    "s2_specialisation.py": [
        "mul = 3 * y",
        "the graph takes only x: ['l_x_']",
        "L['n'] == 2",
        "L['mode'] == 'relu'",
        "0: L['scale'] == 0.5",
    ],
    "s3_guards_and_recompiles.py": [
        "type(L['b']) is str",
        "L['b'] == 'Hello'",
        "[symexec.recompiles] Recompiling function fn",
        "- 0: L['b'] == 'Hello'",
        "len(L['l']) == 2",
        "L['l'][0] == 'Hi'",
        "check_tensor(G['scale'].weight, Parameter",
        "check_tensor(G['w'], Tensor",
        "hit the cache size limit (3)",
    ],
    "s5_dynamic_shapes.py": [
        "= l_n_ + 1",
        "= add * y",
        "= y / l_n_",
        "0 <= L['n']",
        "L['n'] <= -1",
        "traces so far: 3",
        "getitem: \"Sym(",
        "L['b'].size()[0] == L['a'].size()[0]",
        "2 <= L['a'].size()[0]",
        "l_a_ (concrete): (8, 3)",
        "8 <= L['a'].size()[0]",
        "fn(randn(20)): reuses the graph: same as eager",
    ],
    "s6_graph_breaks.py": [
        "[symexec.graph_breaks] Graph break in fn",
        "print() writes outside the graph",
        "2 graph(s), 1 graph break(s)",
        "what fn(a) printed: same as eager",
        "= l_a_ + 2",
        "= l_b_ + l_a_",
        "print('Hi')",
        "return __resume_in_",
        "(continuation)",
        "the list after the call: same as eager",
        "data-dependent control flow",
        "MODIFIED BYTECODE __symexec___resume_in_",
    ],
    "s7_debug_output.py": [
        "[symexec.graph_code] TRACED GRAPH of mse",
        "[symexec.guards] GUARDS of fn",
        "[symexec.recompiles] Recompiling function fn",
        "[symexec.bytecode] ORIGINAL BYTECODE of mse",
        "MODIFIED BYTECODE",
        "[symexec.graph_breaks] Graph break in breaks",
        # Where LOAD_GLOBAL's NULL goes differs: below the callable before 3.13, above it on 3.13.
        "[symexec.trace] TRACE LOAD_GLOBAL y [" + ("TorchVariable(any), NULL" if versions.V.null_above_callable
                                                   else "NULL, TorchVariable(any)") + ", TensorVariable(",
        "[symexec.graph_sizes] TRACED GRAPH TENSOR SIZES of scaled_product",
        "symexec.explain(breaks): 2 graph(s), 1 graph break(s)",
    ],
    "tour.py": [
        "§1  mse(x, y)",
        "mul = 3 * y",
        "L['b'] == 'Hello'",
        "0 <= L['n']",
        "return __resume_in_",
        "TRACE LOAD_GLOBAL",
        "tour finished: 6 section(s), every result was the same as eager",
    ],
}


def test_every_example_is_listed():
    scripts = {name for name in os.listdir(EXAMPLES) if name.endswith(".py") and not name.startswith("_")}
    assert scripts == set(EXPECTED)


def _run(script):
    env = {k: v for k, v in os.environ.items() if k != "SYMEXEC_LOGS"}  # the scripts choose their own logs
    env["PYTHONUNBUFFERED"] = "1"
    return subprocess.run([sys.executable, os.path.join(EXAMPLES, script)], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)


# Every script on CPython 3.11; elsewhere the tour (the README's demo) and the one whose output
# differs by version (helpers.BROAD).
SCRIPTS = broad_or(sorted(EXPECTED), {"tour.py", "s7_debug_output.py"})


@pytest.mark.parametrize("script", SCRIPTS)
def test_example(script):
    run = _run(script)
    assert run.returncode == 0, f"{script} exited with {run.returncode}:\n{run.stdout[-4000:]}"
    assert "DIFFERS FROM EAGER" not in run.stdout
    assert "Traceback" not in run.stdout, run.stdout[-4000:]
    assert "SymexecWarning" not in run.stdout, run.stdout[-4000:]  # an internal error ran something eagerly
    missing = [text for text in EXPECTED[script] if text not in run.stdout]
    assert not missing, f"{script} did not print {missing}; its output:\n{run.stdout[-4000:]}"


# (`tour.py s4` and `tour.py --help` ran nothing and said "tour finished")
@pytest.mark.parametrize("args", [["s4"], ["--help"], ["s1", "nonsense"]], ids=["s4", "help", "unknown"])
def test_tour_refuses_what_names_no_section(args, capsys):
    sys.path.insert(0, EXAMPLES)
    try:
        import tour
    finally:
        sys.path.remove(EXAMPLES)
    assert tour.main(args) == 2
    out, err = capsys.readouterr()
    assert "tour finished" not in out and "usage: python examples/tour.py [SECTION ...]" in err


# (each section switched every artifact off when it ended: SYMEXEC_LOGS, as the README shows it,
# added nothing after the first section that used its own)
def test_symexec_logs_from_the_environment_stay_on_through_the_sections():
    env = dict(os.environ, SYMEXEC_LOGS="guards", PYTHONUNBUFFERED="1")
    run = subprocess.run([sys.executable, os.path.join(EXAMPLES, "tour.py"), "s1", "s2"], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-4000:]
    s2 = run.stdout[run.stdout.index("§2"):]
    assert "[symexec.guards]" in s2, run.stdout[-4000:]
