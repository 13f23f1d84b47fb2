"""docs/architecture.md stays current: it names every module of symexec (issue 21, part 7)."""

import pathlib

import symexec

ROOT = pathlib.Path(symexec.__file__).parent


def test_the_module_map_names_every_module():
    text = (ROOT.parent / "docs" / "architecture.md").read_text()
    missing = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if relative.name == "__init__.py" and relative.parent != pathlib.Path("."):
            continue  # (a package's __init__ is named by the package)
        name = relative.name if relative.parent.name == "variables" else str(relative)
        if f"`{relative}`" not in text and f"{name}`" not in text and f"`{relative.parent}/`" not in text:
            missing.append(str(relative))
    assert not missing, f"docs/architecture.md does not name: {missing}"
