"""The API reference (issue 23, point 2): every public name has a docstring that documents its
arguments, and docs/api.md is what those docstrings say."""

import inspect
import os
import subprocess
import sys

import pytest

import symexec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _public():
    for name in symexec.__all__:
        obj = getattr(symexec, name)
        yield name, type(obj) if name == "config" else obj


@pytest.mark.parametrize("name", sorted(symexec.__all__))
def test_public_name_has_a_docstring_naming_its_arguments(name):
    obj = dict(_public())[name]
    doc = inspect.getdoc(obj)
    assert doc and len(doc.split()) >= 12, f"symexec.{name} needs a docstring that says what it is"
    if inspect.isfunction(obj):
        params = [p for p in inspect.signature(obj).parameters.values() if p.name not in ("self",)]
        if params:
            assert "Args:" in doc, f"symexec.{name}: no Args: section"
            for p in params:
                shown = {"VAR_POSITIONAL": f"*{p.name}", "VAR_KEYWORD": f"**{p.name}"}.get(p.kind.name, p.name)
                assert f"{shown}:" in doc or f"{shown}," in doc, f"symexec.{name}: argument {shown} is not documented"


@pytest.mark.broad  # (inspect's rendering of signatures may differ between Pythons: written on 3.11)
def test_api_reference_page_is_current():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "docs", "make_api.py"), "--check"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
