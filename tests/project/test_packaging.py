"""The package as a user installs it (issue 23, point 1): license, version, metadata, typing
marker, dependency bounds and ``python -m symexec``."""

import contextlib
import importlib.metadata
import io
import os
import subprocess
import sys
import typing

import pytest
from packaging.requirements import Requirement

import symexec
from symexec import __main__ as cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_license_file_and_metadata():
    with open(os.path.join(ROOT, "LICENSE")) as f:
        assert f.readline().strip() == "BSD 3-Clause License"
    metadata = importlib.metadata.metadata("symexec")
    assert metadata["License-Expression"] == "BSD-3-Clause"
    assert "LICENSE" in metadata.get_all("License-File")
    assert "Typing :: Typed" in metadata.get_all("Classifier")


def test_version_is_the_installed_distributions():
    assert symexec.__version__ == importlib.metadata.version("symexec")


def test_py_typed_marks_the_package():
    assert os.path.isfile(os.path.join(os.path.dirname(symexec.__file__), "py.typed"))


def test_dependencies_are_bounded_and_met():
    requirements = [Requirement(r) for r in importlib.metadata.requires("symexec") if "extra ==" not in r]
    names = {r.name for r in requirements}
    assert names == {"torch", "bytecode"}  # (typing-extensions was declared and never imported)
    for requirement in requirements:
        assert any(spec.operator == "<" for spec in requirement.specifier), requirement
        assert requirement.specifier.contains(importlib.metadata.version(requirement.name), prereleases=True), requirement


def test_compile_keeps_the_signature_for_type_checkers():
    overloads = typing.get_overloads(symexec.compile)
    assert [str(o.__annotations__["return"]) for o in overloads] == [
        "_M", "Callable[_P, _R]", "Callable[[Callable[_P, _R]], Callable[_P, _R]]"]


def test_python_dash_m_symexec_says_what_is_installed():
    out = subprocess.run([sys.executable, "-m", "symexec"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"symexec {symexec.__version__}"
    assert lines[1].startswith("torch 2.13")
    assert "(supported: 3.11 to 3.13)" in lines[2]
    assert "symexec.explain(fn, *args)" in out.stdout


def test_version_flag():
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == 0
    assert printed.getvalue().strip() == f"symexec {symexec.__version__}"
