"""The README's REPL session under "Exploring a call" is run as written and must print what the
README shows (issue 23, point 3): the sample output cannot go stale.

The session's ``example.py`` block is written to a directory named ``demo``, the ``>>>`` lines are
run in one namespace as the interactive interpreter runs them (an expression's value is shown
with ``repr``), and what they print is compared with the README's text, line by line, after
the parts that differ from run to run are masked: times (``traced in 12.3 ms``), the compiled
graphs' serial numbers (``__compiled_fn_3``) and the directory (``/tmp/demo``).

    python tests/project/test_readme_session.py   # prints the session as it runs now
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECTION = "## Exploring a call: `symexec.explain`"


def _blocks() -> tuple[str, str]:
    """(example.py, the REPL session) as the README has them."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    section = text[text.index(SECTION):]
    blocks = re.findall(r"```(\w*)\n(.*?)```", section, flags=re.S)
    (kind, source), (_, session) = blocks[0], blocks[1]
    assert kind == "python" and session.startswith(">>> "), "the README's section changed its layout"
    return source, session


def _steps(session: str) -> list[tuple[str, list[str]]]:
    """The session as (command, expected output lines)."""
    steps: list[tuple[str, list[str]]] = []
    for line in session.rstrip("\n").split("\n"):
        if line.startswith(">>> "):
            steps.append((line[4:], []))
        elif line.startswith("... ") or line == "...":
            command, out = steps[-1]
            steps[-1] = (command + "\n" + line[4:], out)
        else:
            steps[-1][1].append(line)
    return steps


def _masked(lines: list[str], directory: str) -> list[str]:
    text = "\n".join(line.rstrip() for line in lines).replace(directory, "/tmp/demo")
    text = re.sub(r"\d+\.\d+ ms", "N ms", text)
    text = re.sub(r"__compiled_fn_\d+", "__compiled_fn_N", text)
    return text.strip("\n").split("\n")


def run_session() -> tuple[list[tuple[str, list[str], list[str]]], str]:
    """Each step's (command, README's output, this run's output), and the directory used."""
    source, session = _blocks()
    with tempfile.TemporaryDirectory() as parent:
        directory = os.path.join(parent, "demo")
        os.mkdir(directory)
        with open(os.path.join(directory, "example.py"), "w") as f:
            f.write(source)
        sys.path.insert(0, directory)
        namespace: dict = {"__name__": "__main__"}
        results = []
        try:
            for command, expected in _steps(session):
                printed = io.StringIO()
                shown = []
                hook = sys.displayhook
                sys.displayhook = lambda value: value is None or shown.append(repr(value))
                try:
                    with contextlib.redirect_stdout(printed):
                        exec(compile(command + "\n", "<stdin>", "single"), namespace)
                finally:
                    sys.displayhook = hook
                got = printed.getvalue() + "".join(s + "\n" for s in shown)
                results.append((command, expected, got.rstrip("\n").split("\n") if got else []))
        finally:
            sys.path.remove(directory)
            sys.modules.pop("example", None)
        return results, directory


def test_readme_session_prints_what_the_readme_shows():
    results, directory = run_session()
    for command, expected, got in results:
        assert _masked(got, directory) == _masked(expected, directory), (
            f"README session, after >>> {command}\n--- README shows:\n" + "\n".join(expected)
            + "\n--- it prints:\n" + "\n".join(got))


if __name__ == "__main__":
    steps, where = run_session()
    for command, _, got in steps:
        print(">>> " + command.replace("\n", "\n... "))
        print("\n".join(_masked(got, where)) if got else "", end="\n" if got else "")


def test_readme_usage_blocks_run_as_a_user_pastes_them():
    """The README's Python blocks before the session, run in turn in one namespace (as pasted
    into a REPL): no error, and what their comments claim."""
    import textwrap

    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    usage = text[:text.index(SECTION)]
    blocks = [textwrap.dedent(b) for kind, b in re.findall(r"```(\w*)\n(.*?)```", usage, flags=re.S) if kind == "python"]
    assert len(blocks) >= 3, "the README's Usage section changed its layout"
    namespace: dict = {"__name__": "__main__"}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for block in blocks:
            exec(compile(block, "README.md", "exec"), namespace)
    out = printed.getvalue()
    assert "L['b'] == 'Hello'" in out  # the guard of the first entry, and the recompile it caused
    assert any("L['b'] == 'Hello'" in reason for reason in namespace["symexec"].recompile_reasons(namespace["fn"]))
    assert len(namespace["symexec"].cache_entries(namespace["mse"])) == 1  # the second call was a hit
