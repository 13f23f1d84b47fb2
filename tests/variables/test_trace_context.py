"""Issue 21 (2): a typed trace context. What a tracker may use of ``tx`` is
``context.TracerContext``, what an instruction handler may use is ``context.HandlerContext``
(a frame of the trace walked or resumed is a ``context.Frame``); per-trace state lives in the
named parts of ``trace.Trace``. These tests keep the Protocols the whole surface: no ``tx`` is
left untyped, and every ``tx.<name>`` (``tx.trace.<part>.<name>``...) the code reads or writes
is declared on the Protocol its function names, down through the parts' own classes."""

import ast
import functools
import inspect
import pathlib
import textwrap
import types
import typing

import pytest
from bytecode import Label

import symexec
from symexec.config import Config
from symexec.context import Frame, HandlerContext, TracerContext
from symexec.guards import GuardSet
from symexec.output_graph import OutputGraph
from symexec.side_effects import SideEffects
from symexec.source import Source
from symexec.trace import Memos, Trace, TorchState
from symexec.translator import InstructionTranslator, Program

pytestmark = pytest.mark.broad  # (symexec's own source read statically: the same on every Python)
from symexec.variables.base import VariableTracker

PACKAGE = pathlib.Path(symexec.__file__).parent
PROTOCOLS = {"TracerContext": TracerContext, "Frame": Frame, "HandlerContext": HandlerContext}
# The names the Protocols' and the parts' annotations use (some imported for typing only).
NAMES = {"Trace": Trace, "GuardSet": GuardSet, "Config": Config, "Source": Source, "Label": Label,
         "VariableTracker": VariableTracker, "OutputGraph": OutputGraph, "SideEffects": SideEffects,
         "Memos": Memos, "TorchState": TorchState, "Frame": Frame, "Program": Program}


@functools.cache  # (parsed once: the tests read the trees without changing them)
def _sources() -> list[tuple[pathlib.Path, ast.Module]]:
    return [(path, ast.parse(path.read_text())) for path in sorted(PACKAGE.rglob("*.py"))]


def _tx_parameters(tree: ast.Module):
    """(function, its ``tx`` parameter) for every function and lambda that takes one."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            arguments = node.args
            for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                if arg.arg == "tx":
                    yield node, arg


def test_no_tx_is_typed_any():
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}" for path in PACKAGE.rglob("*.py")
             for line, text in enumerate(path.read_text().splitlines(), 1) if "tx: Any" in text]
    assert not found, "tx typed Any:\n" + "\n".join(found)


def test_every_tx_parameter_names_its_context():
    """A function's ``tx`` is a context Protocol (or the translator itself, for the modules above
    it that drive a trace); only a lambda of a handler table goes without (its table's type
    says what it takes)."""
    allowed = {*PROTOCOLS, "InstructionTranslator"}
    wrong = []
    for path, tree in _sources():
        for function, arg in _tx_parameters(tree):
            if isinstance(function, ast.Lambda):
                continue
            names = {n.id if isinstance(n, ast.Name) else n.value for n in ast.walk(arg.annotation)
                     if isinstance(n, ast.Name) or isinstance(n, ast.Constant) and isinstance(n.value, str)
                     } if arg.annotation is not None else set()
            names = {part.strip(" '\"") for name in names for part in name.split("|")}
            if not names & allowed:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{arg.lineno} {function.name}"
                             f"(tx: {ast.unparse(arg.annotation) if arg.annotation else '<none>'})")
    assert not wrong, "tx without its context type:\n" + "\n".join(wrong)


@functools.cache
def _members(cls: type) -> set[str]:
    """What ``cls`` declares: class attributes and methods, annotations, and the attributes its
    methods set on ``self``."""
    names = set(dir(cls))
    for klass in cls.__mro__:
        names |= set(vars(klass).get("__annotations__", {}))
        if klass.__module__.startswith("symexec"):
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
            names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                      and isinstance(n.value, ast.Name) and n.value.id == "self" and isinstance(n.ctx, ast.Store)}
    return names


@functools.cache
def _hints(cls: type) -> dict[str, typing.Any]:
    try:
        return typing.get_type_hints(cls, localns=NAMES)
    except Exception:  # noqa: BLE001 - a class whose annotations do not resolve: no part types
        return {}


def _undeclared(cls: type, chain: list[str]) -> str | None:
    """The first name of ``chain`` that ``cls`` (then the type of that part) does not declare."""
    for i, name in enumerate(chain):
        if name not in _members(cls):
            return ".".join(chain[: i + 1])
        hint = _hints(cls).get(name)
        if (hint is typing.Any or not isinstance(hint, type) or hint.__module__ == "builtins"
                or isinstance(hint, types.GenericAlias)):
            return None  # a method, a plain value, a generic container: its own API, not ours
        cls = hint
    return None


def _chains(body: ast.AST, root: str):
    """Every maximal attribute chain ``root.a.b...`` read or written in ``body``: (line, names)."""
    inner: set[int] = set()
    for node in ast.walk(body):
        if isinstance(node, ast.Attribute):
            inner.add(id(node.value))
    for node in ast.walk(body):
        if isinstance(node, ast.Attribute) and id(node) not in inner:
            names, value = [], node
            while isinstance(value, ast.Attribute):
                names.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id == root:
                yield node.lineno, names[::-1]


def _protocol_of(function: ast.AST, arg: ast.arg, path: pathlib.Path) -> type | None:
    if arg.annotation is None:  # a handler table's lambda: its layer's context
        return HandlerContext if path.parent.name == "instructions" else TracerContext
    text = ast.unparse(arg.annotation)
    for name, protocol in PROTOCOLS.items():
        if name in text:
            return protocol
    return None  # the concrete translator: the modules above the trace drive it


def test_every_attribute_read_from_tx_is_declared_on_its_protocol():
    undeclared = []
    checked = 0
    for path, tree in _sources():
        for function, arg in _tx_parameters(tree):
            protocol = _protocol_of(function, arg, path)
            if protocol is None:
                continue
            for line, chain in _chains(function, "tx"):
                checked += 1
                missing = _undeclared(protocol, chain)
                if missing is not None:
                    undeclared.append(f"{path.relative_to(PACKAGE.parent)}:{line} tx.{'.'.join(chain)}: "
                                      f"{protocol.__name__} has no tx.{missing}")
    assert checked > 200  # (the walk found the code it is meant to check)
    assert not undeclared, "read from tx but not declared on its Protocol:\n" + "\n".join(sorted(set(undeclared)))


@pytest.mark.parametrize("name, cls", [("frame", Frame), ("trace", Trace)])
def test_frames_and_traces_held_by_name_are_used_as_declared(name, cls):
    """Trackers that walk every frame of the trace (``for frame in tx.trace.translators``),
    resume a generator's frame, or hold the trace (``trace = tx.trace``) use only what ``Frame``
    and ``Trace`` declare."""
    undeclared = []
    for path, tree in _sources():
        if path.parent.name not in ("variables", "instructions"):
            continue
        for line, chain in _chains(tree, name):
            missing = _undeclared(cls, chain)
            if missing is not None:
                undeclared.append(f"{path.relative_to(PACKAGE.parent)}:{line} {name}.{'.'.join(chain)}")
    assert not undeclared, "\n".join(undeclared)


def test_the_translator_is_every_context():
    """The running translator provides every member the Protocols declare."""
    translator = _members(InstructionTranslator)
    for protocol in PROTOCOLS.values():
        declared = {n for k in protocol.__mro__ if k.__module__ == "symexec.context"
                    for n in [*vars(k).get("__annotations__", {}), *(m for m, v in vars(k).items()
                                                                      if inspect.isfunction(v))]}
        assert declared <= translator, f"{protocol.__name__}: {sorted(declared - translator)}"


def test_trace_parts_and_release():
    """The trace's parts are named; ``release`` empties every memo without naming them."""
    trace = Trace(GuardSet())
    assert isinstance(trace.graph, OutputGraph) and trace.graph.guards is trace.guards
    for name in ("side_effects", "memos", "torch", "translators", "location"):
        assert hasattr(trace, name)
    for name in ("side_effects", "translators", "location", "input_trackers", "getattribute_memo", "real_cells",
                 "grad_enabled", "active_contexts", "generators", "objects_by_id", "input_values"):
        assert not hasattr(trace.graph, name), f"OutputGraph.{name}: per-trace state, not the graph's"
    memos = trace.memos
    for name, memo in vars(memos).items():
        memo.append(name) if isinstance(memo, list) else memo.__setitem__(name, name)
    trace.release()
    assert all(not memo for memo in vars(memos).values())


@pytest.mark.parametrize("protocol", list(PROTOCOLS.values()))
def test_protocols_are_documented(protocol):
    assert protocol.__doc__ and typing.get_type_hints(protocol, localns=NAMES) is not None
