"""The Jupyter view of ``symexec.explain`` renders in a real browser.

``ExplainOutput._repr_html_()`` for the design document's graph-break example is written to
a temporary .html file and loaded by headless Chromium, whose ``--dump-dom`` prints the DOM
the browser built from it. The test asserts on that DOM, not on the string we wrote: the
table rows, the break marking, the ``<details>`` sections and the graph code must survive
a real HTML parser.

Chromium is an optional test dependency: without it the test is skipped, saying how to install
it (Debian's ``chromium`` package). ``.ci/run`` installs it when ``/usr/bin/chromium`` is missing
and sets ``SYMEXEC_REQUIRE_BROWSER=1``, which turns a missing browser into a failure; so does
pointing ``SYMEXEC_CHROMIUM`` at a binary that is not there.
"""

import html.parser
import os
import shutil
import subprocess

import pytest
import torch

import symexec

CHROMIUM = os.environ.get("SYMEXEC_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
BROWSER_REQUIRED = os.environ.get("SYMEXEC_REQUIRE_BROWSER", "") not in ("", "0") or "SYMEXEC_CHROMIUM" in os.environ


def fn(a):
    b = a + 2
    print("Hi")
    return b + a


def _require_chromium():
    """Skip without a browser, unless one is required (then fail)."""
    if os.access(CHROMIUM, os.X_OK):
        return
    message = (f"headless Chromium not found at {CHROMIUM}: install it (`apt-get install -y chromium` on "
               "Debian/Ubuntu; .ci/run does) or point SYMEXEC_CHROMIUM at a binary")
    if BROWSER_REQUIRED:
        pytest.fail(f"{message} (required: SYMEXEC_REQUIRE_BROWSER or SYMEXEC_CHROMIUM is set)", pytrace=False)
    pytest.skip(f"{message}; set SYMEXEC_REQUIRE_BROWSER=1 to fail instead of skipping")


def _dump_dom(page, profile):
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", "--dump-dom", f"file://{page}"]
    run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    assert run.returncode == 0, f"chromium exited with {run.returncode}:\n{run.stderr[-3000:]}"
    return run.stdout


class _Rows(html.parser.HTMLParser):
    """The rows of the source table as (class, [cell texts]), and the <summary> titles."""

    def __init__(self):
        super().__init__()
        self.rows, self.summaries = [], []
        self._row = self._summary = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self._row = (dict(attrs).get("class") or "", [])
        elif tag == "td" and self._row is not None:
            self._row[1].append("")
        elif tag == "summary":
            self._summary = ""

    def handle_endtag(self, tag):
        if tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None
        elif tag == "summary" and self._summary is not None:
            self.summaries.append(self._summary)
            self._summary = None

    def handle_data(self, data):
        if self._row is not None and self._row[1]:
            self._row[1][-1] += data
        if self._summary is not None:
            self._summary += data


def test_explain_view_renders_in_chromium(tmp_path, capsys):
    _require_chromium()
    out = symexec.explain(fn, torch.randn(4))
    assert capsys.readouterr().out == "Hi\n"
    page = tmp_path / "explain.html"
    page.write_text("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>symexec.explain</title></head>"
                    f"<body>\n{out._repr_html_()}\n</body></html>\n", encoding="utf-8")

    dom = _dump_dom(page, tmp_path / "profile")

    assert 'class="symexec-explain"' in dom
    assert "symexec.explain(<code>fn</code>)" in dom  # the function's name in the heading
    rows = _Rows()
    rows.feed(dom)
    # each row: line number, mark, source line; the row's class is the mark
    marked = {cells[-1].strip(): (css, cells[1]) for css, cells in rows.rows}
    first = fn.__code__.co_firstlineno
    assert rows.rows[0][1] == [str(first), "", "def fn(a):"], rows.rows
    assert marked['print("Hi")'] == ("break", "break"), rows.rows
    assert marked["b = a + 2"] == ("graph", "graph"), rows.rows
    assert marked["return b + a"] == ("graph", "graph"), rows.rows
    assert any(title.startswith("Graph breaks (1)") for title in rows.summaries), rows.summaries
    assert any(title.startswith("Code of __resume_in_") for title in rows.summaries), rows.summaries
    assert not any(title.startswith("Fallbacks") for title in rows.summaries), rows.summaries  # (none: no section)
    # the guards grouped: the global state's once, then each function's
    assert dom.count("torch.is_grad_enabled() == True") == 1
    assert "global state, checked by every entry: 11" in dom and "fn (function): 4" in dom, dom
    assert "l_a_ + 2" in dom  # graph 1's code
    assert "l_b_ + l_a_" in dom  # graph 2's code, in the continuation
    assert "print() writes outside the graph" in dom
