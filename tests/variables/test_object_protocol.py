"""Issue 21 (1): a floor under the tracker families. The generic object protocol sits low
(``variables/object_protocol.py``), families register per-type hooks in registries that refuse
a duplicate, ``builder.py`` is the one module that imports every family, and no module reaches
up through an import-time slot or a function-local import: symexec's modules form no import
cycle. The behaviours that moved (``callable``, operators on symbolic sizes, attributes of
object constants, torch's ``nn.Module.__init__`` on a module the trace made, ModelOutput
construction) are checked against eager."""

import ast
import enum
import pathlib

import pytest
import torch

import symexec
from helpers import check

PACKAGE = pathlib.Path(symexec.__file__).parent


def _modules() -> dict[str, pathlib.Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


MODULES = _modules()


def _type_checking_only(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def _imports(module: str) -> list[tuple[str, ast.stmt, bool]]:
    """(imported symexec module, the statement, whether it sits inside a function) for every
    import in ``module``, ``TYPE_CHECKING`` blocks left out."""
    path = MODULES[module]
    tree = ast.parse(path.read_text())
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or _type_checking_only(node, parents):
            continue
        local = any(isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))
                    for p in _ancestors(node, parents))
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                if target in MODULES and target != module:
                    found.append((target, node, local))
        else:
            found += [(alias.name, node, local) for alias in node.names if alias.name in MODULES]
    return found


def _ancestors(node: ast.AST, parents: dict[ast.AST, ast.AST]):
    while node in parents:
        node = parents[node]
        yield node


@pytest.mark.broad  # (symexec's source read statically)
def test_no_function_local_import_of_a_symexec_module():
    local = [f"{module}:{node.lineno} imports {target}" for module in MODULES
             for target, node, inside in _imports(module) if inside]
    assert not local, "a function-local import means a layer is missing:\n" + "\n".join(local)


def test_symexec_modules_form_no_import_cycle():
    graph = {module: {target for target, _, _ in _imports(module)} for module in MODULES}
    # A package's __init__ is run before any of its modules: it may import them (that is how
    # the package is assembled), so its edges down into its own modules do not count.
    for package in graph:
        graph[package] = {t for t in graph[package] if not t.startswith(package + ".")}
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = "open"
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                cycle = path[path.index(target):] + [target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target)
        path.pop()
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module)


def test_the_builder_imports_every_family():
    floor = {"symexec.variables." + m for m in ("base", "object_protocol", "snapshots", "builder")}  # (no trackers)
    families = {m for m in MODULES if m.startswith("symexec.variables.")} - floor
    imported = {target for target, _, _ in _imports("symexec.variables.builder")}
    # (through another family is not enough: what a family registers must not depend on that)
    assert families - imported == set()


def test_what_a_module_fills_in_another_is_a_registry():
    """No import-time slot: a family writes into another module's table only where that table
    is a ``Registry`` (a key registered twice refused), never a list or a one-element box."""
    import importlib

    from symexec.variables.base import Registry
    offenders = []
    for module in (m for m in MODULES if m.startswith("symexec.variables.")):
        tree = ast.parse(MODULES[module].read_text())
        own = {t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
               for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)}
        loaded = importlib.import_module(module)
        for node in tree.body:  # (module level: what runs at import)
            for sub in ast.walk(node):
                target = None
                if isinstance(sub, ast.Subscript) and isinstance(sub.ctx, ast.Store) and isinstance(sub.value, ast.Name):
                    target = sub.value.id
                elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and \
                        sub.func.attr in ("append", "extend", "update", "insert", "add", "setdefault") and \
                        isinstance(sub.func.value, ast.Name):
                    target = sub.func.value.id
                if target is None or target in own or isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    continue
                table = getattr(loaded, target, None)
                if table is not None and not isinstance(table, Registry) and not isinstance(table, type(ast)):
                    offenders.append(f"{module}:{sub.lineno} fills {target} ({type(table).__name__})")
    assert not offenders, offenders


def test_the_slots_are_gone():
    from symexec.variables import functions, user_objects
    assert not hasattr(functions, "CALL_HOOKS")
    assert not hasattr(user_objects, "SPECIAL_CONSTRUCTORS")


def test_no_symexec_module_is_over_800_lines():
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text().splitlines())) > 800}
    assert not long, long


# -- the behaviours that moved, against eager ------------------------------------------------

class Callable_:
    def __call__(self, x):
        return x + 1


class NotCallable:
    pass


class CallableList(list):
    def __call__(self):
        return len(self)


def _gen():
    yield 1


def test_callable_asks_the_type():
    def fn(x, obj, other, items, plain, module):
        answers = (callable(x), callable(obj), callable(other), callable(items), callable(plain),
                   callable(module), callable(len), callable(fn_const), callable(3), callable(_gen()),
                   callable(lambda: 1), callable({}), callable(torch.sin))
        return x * sum(answers)

    fn_const = abs
    check(fn, torch.ones(2), Callable_(), NotCallable(), CallableList([1]), [1], torch.nn.ReLU())


def test_callable_of_an_instance_whose_class_gains_call_between_calls():
    class Late:
        pass

    def fn(x, obj):
        return x + callable(obj)

    compiled = symexec.compile(fn)
    obj = Late()
    assert torch.equal(compiled(torch.ones(1), obj), fn(torch.ones(1), obj))
    Late.__call__ = lambda self: 1
    assert torch.equal(compiled(torch.ones(1), obj), fn(torch.ones(1), obj))


def test_numel_of_symbolic_sizes():
    def fn(x):
        return x.reshape(-1) * x.size().numel()

    compiled = symexec.compile(fn, dynamic=True)
    for n in (2, 3, 5):
        x = torch.ones(n, 4)
        assert torch.equal(compiled(x), fn(x))


class Tagged(int):
    scale = 3

    def twice(self):
        return self * 2


class Color(enum.Enum):
    RED = 1
    BLUE = 2

    @property
    def doubled(self):
        return self.value * 2


def test_attributes_of_object_constants():
    def fn(x, n, color):
        return x * n.scale + n.twice() + color.doubled + len(color.name) + n.real

    check(fn, torch.ones(2), Tagged(4), Color.BLUE)


def test_attribute_of_an_object_constant_the_trace_made_breaks_not_wrong():
    def fn(x, n):
        m = Tagged(n + 1)  # made by the trace: no real object to read through
        return x * m.real, m + 1

    check(fn, torch.ones(2), 4)


def test_module_init_runs_for_real_on_a_module_the_trace_made():
    class Scale(torch.nn.Module):
        def __init__(self, k):
            super().__init__()
            self.k = k

        def forward(self, x):
            return x * self.k

    class Stack(torch.nn.Sequential):
        def __init__(self):
            super().__init__(torch.nn.ReLU(), torch.nn.Tanh())

    def fn(x):
        return Scale(3)(x) + Stack()(x)

    check(fn, torch.randn(3))


# -- each tracker names the type it models (issue 21, part 5) -------------------------------

def _tracker_classes():
    import importlib
    import inspect

    from symexec.variables.base import VariableTracker
    for module in sorted(m for m in MODULES if m.startswith("symexec.variables.")):
        for _, cls in inspect.getmembers(importlib.import_module(module), inspect.isclass):
            if issubclass(cls, VariableTracker) and cls.__module__ == module:
                yield cls


def test_every_tracker_names_the_type_it_models_and_is_documented():
    from symexec.variables.base import VariableTracker
    missing = [c.__qualname__ for c in _tracker_classes() if c is not VariableTracker and "models" not in vars(c)]
    undocumented = [c.__qualname__ for c in _tracker_classes() if not (c.__doc__ or "").strip()]
    assert not missing and not undocumented, (missing, undocumented)


def test_the_trackers_of_real_values_model_their_types(monkeypatch):
    """Values the builder wraps while tracing: each tracker's Python type is one its class says
    it models."""
    import collections
    import functools
    import types

    from symexec.variables.base import VariableTracker
    from symexec.variables.builder import VariableBuilder

    class Plain:
        pass

    class Config(dict):
        pass

    def gen():
        yield 1

    values = [1, 2.5, "s", None, (1, 2), [1, 2], {"a": 1}, collections.OrderedDict(a=1), {1, 2}, frozenset({3}),
              range(3), slice(1, 2), torch.ones(2), torch.nn.Linear(2, 2), Plain(), Plain, types, Tagged(3), Color.RED,
              len, functools.partial(max, 1), lambda: 1, Plain.__init__, Config(a=1), CallableList([1]), gen(),
              iter([1, 2]), torch.Size([2, 3]), ValueError("x"), torch.sin, torch]
    wrapped = []
    original = VariableBuilder.__call__

    def recording(self, value, source):
        var = original(self, value, source)
        wrapped.append((value, var))
        return var

    monkeypatch.setattr(VariableBuilder, "__call__", recording)

    def fn(x, *args):
        return x + len(args)  # every argument is wrapped on entry

    compiled = symexec.compile(fn)
    compiled(torch.ones(1), *values)
    wrong = []
    for value, var in wrapped:
        models = type(var).models
        assert isinstance(var, VariableTracker)
        if models is None or not issubclass(var.python_type(), models):
            wrong.append((type(value).__name__, type(var).__name__, models))
    assert not wrong, wrong
    assert len({type(var) for _, var in wrapped}) > 15
