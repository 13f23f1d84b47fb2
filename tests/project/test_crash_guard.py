"""The suite's own guard: a test that crashes the interpreter or hangs fails alone, and the run
goes on (pytest-xdist's worker, pytest-timeout's thread method; pyproject.toml's addopts)."""

import os
import subprocess
import sys
import textwrap
import tomllib

import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.broad  # (pytest-xdist's and pytest-timeout's machinery: symexec is not involved)
def test_a_segfault_and_a_hang_fail_their_own_tests_only(tmp_path):
    with open(os.path.join(_ROOT, "pyproject.toml"), "rb") as f:
        addopts = tomllib.load(f)["tool"]["pytest"]["ini_options"]["addopts"].split()
    addopts[addopts.index("--timeout") + 1] = "5"  # the suite's own options, a shorter limit
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = " + " ".join(addopts) + "\n")
    (tmp_path / "test_inner.py").write_text(textwrap.dedent("""
        import ctypes, time
        def test_before(): pass
        def test_segfault(): ctypes.string_at(0)
        def test_between(): pass
        def test_hang(): time.sleep(600)
        def test_after(): pass
    """))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_inner.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "FAILED test_inner.py::test_segfault" in run.stdout
    assert "FAILED test_inner.py::test_hang" in run.stdout
    assert "2 failed, 3 passed" in run.stdout, run.stdout
