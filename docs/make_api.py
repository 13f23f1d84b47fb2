"""Write docs/api.md, the API reference, from the docstrings of everything in ``symexec.__all__``.

    python docs/make_api.py          # rewrites docs/api.md
    python docs/make_api.py --check  # exits 1 if docs/api.md is not what the docstrings say

tests/project/test_api_docs.py runs the check: the page never drifts from the code.
"""

from __future__ import annotations

import inspect
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PAGE = os.path.join(HERE, "api.md")

GROUPS = [
    ("Compiling", ["compile", "disable", "allow_in_graph", "graph_break", "run", "reset"]),
    ("Dynamic shapes", ["mark_dynamic", "mark_static"]),
    ("Looking inside", ["explain", "ExplainOutput", "BreakReason", "cache_entries", "recompile_reasons", "set_logs"]),
    ("Backends and options", ["list_backends", "register_backend", "config"]),
    ("Errors and warnings", ["Unsupported", "BackendCompilerFailed", "SymexecWarning", "CacheLimitWarning",
                             "ConfigWarning"]),
]


class _Written(str):
    """An annotation as its source text (symexec's are strings: ``from __future__ import
    annotations``), shown without quotes."""

    def __repr__(self) -> str:
        return str(self)


def _signature(obj: object, name: str) -> str:
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return f"class symexec.{name}"
    try:
        signature = inspect.signature(obj)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return f"symexec.{name}"

    def written(annotation: object) -> object:
        return _Written(annotation) if isinstance(annotation, str) else annotation

    signature = signature.replace(
        parameters=[p.replace(annotation=written(p.annotation)) for p in signature.parameters.values()],
        return_annotation=written(signature.return_annotation))
    return f"symexec.{name}{signature}"


def render() -> str:
    import symexec

    listed = [name for _, names in GROUPS for name in names]
    missing = sorted(set(symexec.__all__) - set(listed))
    if missing:
        raise SystemExit(f"docs/make_api.py: put {missing} in a group")
    lines = [
        "# API reference",
        "",
        f"symexec {symexec.__version__}. Generated from the docstrings by `docs/make_api.py`; "
        "`help(symexec.<name>)` shows the same text.",
        "",
    ]
    for title, names in GROUPS:
        lines += [f"## {title}", ""]
        for name in names:
            obj = getattr(symexec, name)
            if name == "config":
                shown, doc = "symexec.config", inspect.getdoc(type(obj))
            else:
                shown, doc = _signature(obj, name), inspect.getdoc(obj)
            lines += [f"### `{name}`", "", "```text", shown, "", doc or "", "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        with open(PAGE) as f:
            if f.read() != text:
                print("docs/api.md is out of date: run python docs/make_api.py", file=sys.stderr)
                return 1
        return 0
    with open(PAGE, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
