"""A second differential fuzzer, independent of tests/fuzz.py: random *programs* over the Python
data model and torch, called in sequences where the world changes between calls.

tests/fuzz.py varies the arguments and the world of fixed templates, one guard kind each. This
one composes each program from fragments of many kinds at once, so that facts of one kind meet
values of another (a set of -0.0 passed where a dict key of True was traced; an int subclass
where an enum member was). Its dimensions, drawn from the data model and from torch:

- the numeric tower and equality vs identity: True / 1 / 1.0 / 1+0j, 0.0 / -0.0, nans of both
  signs, infinities, large ints and strings equal but not identical, one tuple passed twice;
- subclasses of builtins (int, float, str, tuple, dict, list) with attributes and their own
  ``__eq__``; enum members with attributes;
- descriptors (properties reading class state, a Python data descriptor, ``__getattr__``
  counting its calls), metaclasses (``__instancecheck__`` reading a flag), ABC registration
  (``isinstance``, ``match``), ``functools.partial`` and a subclass with its own ``__call__``;
- ordered containers (``OrderedDict.move_to_end``, ``popitem``), ranges and slices by their
  fields, dict keys and set elements of every numeric kind;
- iterators and generators consumed partly (``next``, ``any``, ``zip``, ``in``, a loop that
  breaks, ``list.extend(map(...))``), with a log that shows when each item was computed;
- torch: views and storage sharing between arguments, in-place ops through views, a tensor
  passed twice, global module hooks, grad mode, default dtype, autocast.

A world is a fresh module made by exec'ing ``WORLD``: the eager calls and the compiled calls
each get their own, so mutations between calls (``Mut``) happen in both. Arguments are
Python expressions evaluated in each world (``"W.Int(1)"``), or ``Same(i)`` for the i-th
argument object again. Every call is compared with helpers' ``_compare``: result (exact: type,
sign, key types), exception, printed output, arguments after the call; and torch's global
state after it.

Run:  python tests/datamodel_fuzz.py --minutes N [--seed S]   (prints findings, a count of
sequences by ``dynamic`` setting, and exits 1 on a finding). CI runs a fixed-seed slice
(tests/test_datamodel_fuzz.py).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import re
import sys
import textwrap
import time
import traceback
import types
import warnings
from dataclasses import dataclass
from functools import partial as functools_partial

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import symexec  # noqa: E402
from helpers import _check_aliasing, _run, assert_same  # noqa: E402

WORLD = '''
import collections, collections.abc, enum, functools, torch

LOG = []

def note(v):
    LOG.append(v)
    return v

class Int(int):
    scale = 2
class EqAll(str):
    def __eq__(self, other):
        return True
    __hash__ = str.__hash__
class EqNone(int):
    def __eq__(self, other):
        return False
    __hash__ = int.__hash__
class Float(float):
    factor = 2.0
    @property
    def doubled(self):
        return float(self) * type(self).factor
class Str(str):
    tag = "t"
class Tup(tuple):
    pass
class Lst(list):
    pass
class Dct(dict):
    pass
class OD(collections.OrderedDict):
    pass

class Color(enum.Enum):
    RED = 1
    BLUE = 2
Color.RED.weight = 1.5

class Lazy:
    def __init__(self):
        self.reads = 0
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        self.__dict__["reads"] = self.__dict__["reads"] + 1
        return len(name)

class Limit:
    def __set_name__(self, owner, name):
        self.name = "_" + name
    def __get__(self, obj, owner=None):
        return self if obj is None else obj.__dict__.get(self.name, 0) * 2
    def __set__(self, obj, value):
        obj.__dict__[self.name] = min(value, 10)

class Box:
    level = 1
    limit = Limit()
    def __init__(self, v=1):
        self.v = v
    @property
    def scaled(self):
        return self.v * type(self).level

class Switch(type):
    on = True
    def __instancecheck__(cls, obj):
        return Switch.on
class Checked(metaclass=Switch):
    pass

class Seqish:
    def __len__(self):
        return 2
    def __getitem__(self, i):
        if i >= 2:
            raise IndexError(i)
        return i * 10

class Times(functools.partial):
    def __call__(self, *args, **kwargs):
        return super().__call__(*args, **kwargs) * 3

def add(a, b):
    return a + b

def chatty(n):
    LOG.append("start")
    for i in range(n):
        yield i
        LOG.append(i)
    LOG.append("end")

def forever():
    i = 0
    while True:
        yield i
        i += 1

HOOKS = []
def hook_on():
    HOOKS.append(torch.nn.modules.module.register_module_forward_hook(lambda m, i, o: o * 2))
def hook_off():
    while HOOKS:
        HOOKS.pop().remove()

ORDER = collections.OrderedDict(a=1, b=2, c=3)
lin = torch.nn.Linear(3, 3)

class Slots:
    __slots__ = ("p", "q")
    def __init__(self):
        self.p = 1

class TS(torch.Tensor):
    pass

import contextlib
@contextlib.contextmanager
def swallow(kind):
    LOG.append("enter")
    try:
        yield
    except kind:
        LOG.append("caught")
    finally:
        LOG.append("exit")
'''

# -- values: Python expressions evaluated in a world (W is the world module) ------------------
NUMBERS = ["True", "False", "1", "0", "1.0", "0.0", "-0.0", "float('nan')", "-float('nan')", "float('inf')",
           "1+0j", "complex(0.0, -0.0)", "complex(1, -0.0)", "W.Int(1)", "W.Int(3)", "W.EqNone(1)", "W.Float(1.5)",
           "10**20", "int('1' + '0'*20)", "2"]
STRINGS = ["'ab'", "''.join(['a', 'b'])", "W.Str('ab')", "W.EqAll('zz')", "'a'"]
CONTAINERS = ["(1, 2)", "(1, 2.0)", "(True, -0.0)", "W.Tup((1, 2))", "[1, 2]", "W.Lst([1, True])",
              "range(0)", "range(5, 5)", "range(0, 6, 2)", "range(0, 5, 2)", "slice(1)", "slice(True)",
              "slice(0, None)", "{True: 1}", "{1: 1}", "{1.0: 'f'}", "{-0.0: 1}", "{0.0: 1}", "{'a': 1, 'b': 2}",
              "W.Dct(a=1)", "collections.OrderedDict(a=1, b=2)", "W.OD(b=1, a=2)", "{True, 2}", "{1, 2}",
              "{-0.0}", "{0.0}", "frozenset({1.0})", "frozenset({True})"]
OBJECTS = ["W.Box()", "W.Box(5)", "W.Lazy()", "W.Color.RED", "W.Color.BLUE", "W.Seqish()", "None",
           "W.Times(W.add, 1)", "functools.partial(W.add, 2)", "W.lin", "W.Slots()", "W.ORDER"]
TENSORS = ["torch.ones(3)", "torch.arange(3.)", "torch.randn(3, requires_grad=True)", "torch.zeros(3, dtype=torch.float64)",
           "torch.ones(3).as_subclass(W.TS)", "torch.ones(6)[::2]", "torch.arange(3)"]


@dataclass(frozen=True)
class Same:
    """The index-th argument of this call again: one object passed twice."""
    index: int


@dataclass(frozen=True)
class View:
    """A view of the index-th argument (a tensor): storage shared between two arguments."""
    index: int
    how: str  # "[1:]", ".view(-1)", "[0:1]"


@dataclass(frozen=True)
class Call:
    args: tuple  # of str (expressions), Same, View
    context: str | None = None  # a with-statement context, in the world


@dataclass(frozen=True)
class Mut:
    code: str  # Python run in both worlds between calls


# -- program fragments: each a few lines over a (any value), b (any value), x (a tensor) ---------
# Each appends what it observes to `out`; builtin values only (a world's objects differ).
FRAGMENTS = {
    "numbers": ["out.append((type(a).__name__, str(a)))",
                "out.append({a: 1} if a.__hash__ is not None else None)",
                "out.append(a == b)",
                "out.append(x * (a.real if isinstance(a, complex) else a) if isinstance(a, (int, float, complex)) and not isinstance(a, bool) else x)",
                "out.append(math.copysign(1.0, a) if type(a) is float else None)"],
    "identity": ["out.append(a is b)", "out.append(id(a) == id(b))", "out.append(a is W.ORDER)"],
    "subclass_attrs": ["out.append(getattr(a, 'scale', None))", "out.append(getattr(a, 'tag', None))",
                       "out.append(getattr(a, 'doubled', None))", "out.append(getattr(a, 'weight', None))",
                       "out.append(a.upper() if isinstance(a, str) else None)"],
    "containers": ["out.append(list(a) if isinstance(a, (dict, set, frozenset, tuple, list, range)) else None)",
                   "out.append(str(a) if isinstance(a, (set, frozenset, range, slice, dict)) else None)",
                   "out.append((a.start, a.stop, a.step) if isinstance(a, (range, slice)) else None)",
                   "out.append(len(a) if isinstance(a, (dict, list, tuple, set, frozenset, range)) else None)",
                   "out.append(x[a] if isinstance(a, slice) else x)"],
    "ordered": ["if isinstance(a, collections.OrderedDict):\n    a.move_to_end(next(iter(a)))\n    out.append(list(a))",
                "out.append(list(W.ORDER))",
                "if isinstance(a, collections.OrderedDict) and a:\n    out.append(a.popitem(last=False))"],
    "descriptors": ["out.append(a.scaled if isinstance(a, W.Box) else None)",
                    "if isinstance(a, W.Box):\n    a.limit = 30\n    out.append(a.limit)",
                    "out.append((a.foo, a.reads) if isinstance(a, W.Lazy) else None)",
                    "out.append(getattr(a, 'v', 7))",
                    "out.append(hasattr(a, 'v'))"],
    "protocols": ["out.append(callable(a))", "out.append(isinstance(a, W.Checked))",
                  "out.append(isinstance(a, collections.abc.Sequence))",
                  "match a:\n    case [p, q]:\n        out.append(('seq', p, q))\n    case {'a': p}:\n        out.append(('map', p))\n    case _:\n        out.append('other')",
                  "out.append(a(x) if isinstance(a, functools.partial) else x)"],
    "iterators": ["g = (W.note(i) for i in range(5))\nout.append(next(g))\nout.append(list(W.LOG))",
                  "out.append(any(W.note(i) > 1 for i in range(5)))\nout.append(list(W.LOG))",
                  "out.append(list(zip(range(2), map(W.note, range(5)))))\nout.append(list(W.LOG))",
                  "out.append(list(zip(range(2), W.chatty(4))))\nout.append(list(W.LOG))",
                  "out.append(len(list(zip(range(3), W.forever()))))",
                  "for v in W.chatty(5):\n    if v == 1:\n        break\nout.append(list(W.LOG))",
                  "acc = []\nacc.extend(map(lambda v: len(acc), range(3)))\nout.append(acc)",
                  "out.append(list(a) if isinstance(a, W.Seqish) else None)"],
    "attributes": ["if hasattr(a, '__dict__') and not isinstance(a, type):\n    a.w = 3\n    out.append(a.w)\n    del a.w",
                   "out.append(getattr(a, 'p', None))\nif isinstance(a, W.Slots):\n    a.q = 2\n    out.append(a.q)",
                   "if isinstance(a, W.Box):\n    a.v = a.v + 1\nout.append(getattr(a, 'v', None))",
                   "if isinstance(a, W.Box) and hasattr(a, 'v'):\n    del a.v\nout.append(hasattr(a, 'v'))"],
    "exceptions": ["with W.swallow(ValueError):\n    out.append(x + 1)\n    raise ValueError('v')\nout.append(list(W.LOG))",
                   "try:\n    out.append(a[0])\nexcept (TypeError, IndexError, KeyError) as e:\n    out.append(type(e).__name__)",
                   "try:\n    out.append(a.missing)\nexcept AttributeError as e:\n    out.append(str(e))"],
    "tensors": ["y = x * 2\nout.append(y)", "x.add_(1)\nout.append(x)",
                "out.append(x is b)", "out.append(x.new(torch.Size([2, 2])).shape)",
                "if isinstance(b, torch.Tensor):\n    b.mul_(2)\nout.append(x)",
                "out.append(W.lin(x.detach().reshape(1, 3).float()).shape if x.numel() == 3 else None)",
                "out.append(torch.is_grad_enabled())", "out.append(torch.get_default_dtype())",
                "v = x[1:]\nv.mul_(3)\nout.append(x)", "out.append(type(x).__name__)\nout.append(x * 2)",
                "out.append(W.lin(torch.ones(1, 3)))", "out.append(x.sum() if x.is_floating_point() else x.float().sum())",
                "out.append((x @ x) if x.dim() == 1 and x.is_floating_point() else None)"],
}
CONTEXTS = [None, "torch.no_grad()", "torch.enable_grad()", "torch.autocast('cpu', dtype=torch.bfloat16)",
            "torch.inference_mode()"]
MUTATIONS = [
    "W.Int.scale = 5", "del W.Int.scale", "W.Float.factor = 3.0", "W.Str.tag = 'u'", "W.Box.level = 4",
    "W.Color.RED.weight = 9.0", "W.Switch.on = not W.Switch.on", "collections.abc.Sequence.register(W.Box)",
    "W.ORDER.move_to_end('a')", "W.ORDER['d'] = 4", "W.ORDER.pop('b', None)", "W.hook_on()", "W.hook_off()",
    "W.Box.__call__ = lambda self: 1", "W.Lazy.__getattr__ = lambda self, name: 0 if name.startswith('_') else 5",
    "del W.LOG[:]", "torch.set_default_dtype(torch.float64)", "torch.set_default_dtype(torch.float32)",
    "W.note = lambda v: W.LOG.append(-1) or v",
    "W.Box.scaled = property(lambda self: 99)", "del W.Box.level", "W.Box.level = 1", "W.Int.__eq__ = lambda s, o: False",
    "W.lin.weight.data.mul_(2)", "W.lin.register_forward_hook(lambda m, i, o: o + 1)",
    "W.ORDER.move_to_end('c', last=False)",
]
KINDS = sorted(FRAGMENTS)


def _value_pool(kinds: list[str]) -> list[str]:
    pool = list(TENSORS)
    if "numbers" in kinds or "identity" in kinds:
        pool += NUMBERS + STRINGS
    if "subclass_attrs" in kinds:
        pool += NUMBERS[13:17] + STRINGS + ["W.Color.RED"]
    if "containers" in kinds or "ordered" in kinds or "protocols" in kinds:
        pool += CONTAINERS
    if "descriptors" in kinds or "protocols" in kinds or "attributes" in kinds or "exceptions" in kinds:
        pool += OBJECTS
    return pool


@dataclass(frozen=True)
class Program:
    kinds: tuple[str, ...]
    body: tuple[str, ...]

    def source(self) -> str:
        lines = ["def f(a, b, x):", "    out = []"]
        for fragment in self.body:
            lines += ["    " + line for line in fragment.splitlines()]
        lines.append("    return out")
        return "\n".join(lines) + "\n"


def draw_program(rng: random.Random) -> Program:
    kinds = tuple(sorted(rng.sample(KINDS, rng.randint(1, 3))))
    body = tuple(rng.choice(FRAGMENTS[k]) for k in kinds for _ in range(rng.randint(1, 2)))
    return Program(kinds, tuple(rng.sample(body, len(body))))


def draw_sequence(rng: random.Random, program: Program) -> list:
    pool = _value_pool(list(program.kinds))
    steps: list = []
    calls = rng.randint(2, 5)
    while calls:
        if steps and rng.random() < 0.3:
            steps.append(Mut(rng.choice(MUTATIONS)))
            continue
        a = rng.choice(pool)
        b = rng.choice([*pool, Same(0)]) if rng.random() < 0.8 else Same(0)
        x: object = rng.choice(TENSORS)
        if rng.random() < 0.2 and isinstance(b, str) and b.startswith("torch."):
            x = View(1, rng.choice(["[0:3]", ".view(-1)", "[:]"]))
        context = rng.choice(CONTEXTS) if rng.random() < 0.3 else None
        steps.append(Call((a, b, x), context))
        calls -= 1
    return steps


# -- comparing two worlds' outcomes ----------------------------------------------------------
_ADDRESS = re.compile(r" at 0x[0-9a-f]+|dm_eager|dm_compiled")


def _neutral(value, depth=0):
    """An outcome with the two worlds' objects told apart only by what they are: an instance
    of a world class as its class name and attributes, a world function by its name, addresses
    and world names out of strings. Builtin values and tensors stay as they are."""
    if depth > 6:
        return "..."
    cls = type(value)
    if isinstance(value, str):
        return cls(_ADDRESS.sub("", value)) if cls is str else (cls.__qualname__, _ADDRESS.sub("", str.__str__(value)))
    if isinstance(value, (types.FunctionType, type)) and str(getattr(value, "__module__", "")).startswith("dm_"):
        return ("<world>", value.__qualname__)
    if cls in (list, tuple):
        return cls(_neutral(v, depth + 1) for v in value)
    if cls is dict or cls.__module__.startswith("dm_") and isinstance(value, dict):
        if all(type(k).__module__ == "builtins" and not isinstance(k, tuple) for k in value):
            return {k: _neutral(v, depth + 1) for k, v in value.items()}
        return ("<dict>", [(_neutral(k, depth + 1), _neutral(v, depth + 1)) for k, v in value.items()])
    if cls.__module__.startswith("dm_") or isinstance(value, functools_partial):
        state = getattr(value, "__dict__", {})
        inner = tuple(value) if isinstance(value, (tuple, list)) else (
            (_neutral(value.func), _neutral(value.args)) if isinstance(value, functools_partial) else ())
        return ("<object>", cls.__qualname__, _neutral(inner, depth + 1),
                tuple((k, _neutral(v, depth + 1)) for k, v in state.items()))
    return value


def _compare_worlds(eager, actual, number: int) -> None:
    tag = f"call {number}: "
    if (eager.exc is None) != (actual.exc is None):
        raise AssertionError(f"{tag}eager {'raised ' + repr(eager.exc) if eager.exc else 'returned'}, compiled "
                             f"{'raised ' + repr(actual.exc) if actual.exc else 'returned'}")
    if eager.exc is not None:
        assert type(eager.exc) is type(actual.exc) and _neutral(str(eager.exc)) == _neutral(str(actual.exc)), (
            f"{tag}exception differs: eager {eager.exc!r}, compiled {actual.exc!r}")
    else:
        assert_same(_neutral(eager.result), _neutral(actual.result), f"{tag}result")
        _check_aliasing(eager, actual, tag)
    assert _neutral(eager.stdout) == _neutral(actual.stdout), f"{tag}printed output differs"
    assert_same(_neutral(list(eager.args)), _neutral(list(actual.args)), f"{tag}args after the call")


# -- running ----------------------------------------------------------------------------------
class Finding(AssertionError):
    def __init__(self, kind: str, message: str, step: int) -> None:
        super().__init__(f"{kind} at step {step}: {message}")
        self.kind, self.message, self.step = kind, message, step

    @property
    def key(self) -> tuple[str, str]:
        first = self.message.strip().splitlines()[0] if self.message.strip() else ""
        first = re.sub(r"^call \d+: ", "", first)
        first = re.sub(r"0x[0-9a-f]+|\d+\.\d+e?-?\d*", "#", first)
        return self.kind, first[:120]


def _world(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    torch.manual_seed(0)  # (the two worlds' Linear alike)
    exec(compile(WORLD, f"<{name}>", "exec"), module.__dict__)
    return module


def _mutate(code: str, namespaces: list[dict]) -> None:
    """A mutation in both worlds; one that raises (``del`` of what is gone) raises in both and
    is skipped."""
    errors = []
    for ns in namespaces:
        try:
            exec(code, ns)
            errors.append(None)
        except Exception as e:  # noqa: BLE001
            errors.append(type(e))
    if errors[0] != errors[1]:
        raise Finding("mutation-differs", f"{code}: {errors}", 0)


def _namespace(world: types.ModuleType, program: Program) -> dict:
    namespace = {"W": world, "torch": torch, "math": __import__("math"), "collections": __import__("collections"),
                 "functools": __import__("functools")}
    import collections.abc  # noqa: F401  (the programs use collections.abc)
    exec(compile(program.source(), "<program>", "exec"), namespace)
    return namespace


def _arguments(spec: tuple, namespace: dict) -> list:
    args: list = []
    torch.manual_seed(0)
    for item in spec:
        if isinstance(item, Same):
            args.append(args[item.index])
        elif isinstance(item, View):
            base = args[item.index]
            args.append(eval(f"base{item.how}", {"base": base}) if isinstance(base, torch.Tensor) else torch.ones(3))
        else:
            args.append(eval(item, namespace))
    return args


def _global_state() -> tuple:
    return (torch.is_grad_enabled(), torch.is_inference_mode_enabled(), torch.get_default_dtype(),
            torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"),
            torch._C._len_torch_function_stack(), torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE))


def _in_context(context: str | None, namespace: dict, fn, args):
    manager = eval(context, namespace) if context else contextlib.nullcontext()
    with manager:
        return _run(fn, args, {})


def _reset_torch_state() -> None:
    torch.set_default_dtype(torch.float32)
    torch._C._set_grad_enabled(True)


def run_sequence(program: Program, dynamic: bool | None, steps: list) -> None:
    """Run the steps in an eager world and a compiled one; raise a Finding where they differ."""
    symexec.reset()
    eager_world, compiled_world = _world("dm_eager"), _world("dm_compiled")
    eager_ns, compiled_ns = _namespace(eager_world, program), _namespace(compiled_world, program)
    compiled = symexec.compile(compiled_ns["f"], dynamic=dynamic)
    number = 0
    try:
        for step_no, step in enumerate(steps, 1):
            if isinstance(step, Mut):
                _mutate(step.code, [eager_ns, compiled_ns])
                continue
            number += 1
            eager_args = _arguments(step.args, eager_ns)
            compiled_args = _arguments(step.args, compiled_ns)
            before = _global_state()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                eager = _in_context(step.context, eager_ns, eager_ns["f"], eager_args)
                eager_state = _global_state()
                actual = _in_context(step.context, compiled_ns, compiled, compiled_args)
            if _global_state() != eager_state or eager_state != before:
                raise Finding("global-state", f"eager left {eager_state}, compiled {_global_state()} "
                                              f"(before {before})", step_no)
            internal = [w for w in caught if issubclass(w.category, symexec.SymexecWarning) and "internal error" in str(w.message)]
            if internal:
                raise Finding("internal-error", str(internal[0].message), step_no)
            try:
                _compare_worlds(eager, actual, number)
            except AssertionError as e:
                raise Finding("differs", str(e), step_no) from None
            # (Where the graph raises, the Python side effects traced before it are not replayed:
            # a known limit, as under torch.compile; the LOG is compared where eager returned.)
            if eager_world.LOG != compiled_world.LOG:
                if eager.exc is not None:
                    break  # (the worlds differ from here on, by that limit)
                raise Finding("world-differs", f"LOG: eager {eager_world.LOG}, compiled {compiled_world.LOG}", step_no)
    finally:
        for world in (eager_world, compiled_world):
            world.hook_off()
        _reset_torch_state()


def describe(program: Program, dynamic: bool | None, steps: list, finding: Finding) -> str:
    lines = [f"dynamic={dynamic}", program.source()]
    lines += [f"  {step}" for step in steps]
    lines.append(str(finding))
    return "\n".join(lines)


def shrink(program: Program, dynamic: bool | None, steps: list, finding: Finding) -> tuple[Program, list]:
    """Drop fragments and steps while the same finding remains."""
    def fails(p: Program, s: list) -> bool:
        if sum(isinstance(x, Call) for x in s) < 1:
            return False
        try:
            run_sequence(p, dynamic, s)
        except Finding as f:
            return f.key == finding.key
        except Exception:  # noqa: BLE001 - a program the shrink broke
            return False
        return False

    changed = True
    while changed:
        changed = False
        for i in range(len(program.body)):
            candidate = Program(program.kinds, program.body[:i] + program.body[i + 1:])
            if candidate.body and fails(candidate, steps):
                program, changed = candidate, True
                break
        for i in range(len(steps)):
            candidate_steps = steps[:i] + steps[i + 1:]
            if fails(program, candidate_steps):
                steps, changed = candidate_steps, True
                break
    return program, steps


def fuzz(minutes: float, seed: int | None = None, count: int | None = None, verbose: bool = False) -> dict:
    rng = random.Random(seed)
    deadline = time.monotonic() + minutes * 60
    known: dict[tuple, str] = {}
    sequences = {None: 0, True: 0}
    while time.monotonic() < deadline and (count is None or sum(sequences.values()) < count):
        program = draw_program(rng)
        dynamic = rng.choice([None, True])
        steps = draw_sequence(rng, program)
        sequences[dynamic] += 1
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                run_sequence(program, dynamic, steps)
        except Finding as f:
            if f.key in known:
                continue
            with contextlib.redirect_stdout(io.StringIO()):
                small_program, small_steps = shrink(program, dynamic, steps, f)
            text = describe(small_program, dynamic, small_steps, f)
            known[f.key] = text
            print(f"\n=== finding {len(known)}: {f.key}\n{text}\n", flush=True)
        except Exception as e:  # noqa: BLE001 - the fuzzer's own failure: reported too
            key = ("fuzzer-crash", f"{type(e).__name__}: {e}"[:120])
            if key not in known:
                known[key] = traceback.format_exc()
                print(f"\n=== fuzzer crash: {key}\n{describe(program, dynamic, steps, Finding('crash', str(e), 0))}\n"
                      f"{textwrap.indent(traceback.format_exc(), '  ')}", flush=True)
        if verbose and sum(sequences.values()) % 100 == 0:
            print(f"{sum(sequences.values())} sequences", flush=True)
    print(f"\n{sum(sequences.values())} sequences ({sequences[None]} with dynamic=None, {sequences[True]} with "
          f"dynamic=True), {len(known)} distinct finding(s).", flush=True)
    return known


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=1.0)
    p.add_argument("--count", type=int, help="stop after this many sequences")
    p.add_argument("--seed", type=int)
    p.add_argument("--verbose", action="store_true")
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")
    return 1 if fuzz(a.minutes, a.seed, a.count, a.verbose) else 0


if __name__ == "__main__":
    sys.exit(main())
