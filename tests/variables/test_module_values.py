"""Modules, parameters and tensors used as Python values inside a compiled function: the module
tree enumerated, parameters as dict keys and set members, ``id()``, ``Module.__setattr__``,
autocast objects made outside, a tensor's bound method kept across a break, lazy properties on
modules. Each is compared with eager (``check``) and, where it matters, with torch.compile's
graphs."""

import pytest
import torch

import symexec
from helpers import (CountingBackend, assert_same, assert_same_graphs_as_dynamo, check, check_sequence, dynamo_graphs,
                     lazy_property)


def _one_graph(fn, *args):
    """symexec makes the graphs torch.compile makes, and breaks nowhere."""
    assert_same_graphs_as_dynamo(fn, *args)
    assert symexec.explain(fn, *args).graph_break_count == 0


class Net(torch.nn.Module):
    def __init__(self, tied=False, bias=True):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3, bias=bias)
        self.out = torch.nn.Linear(3, 3)
        if tied:
            self.out.weight = self.lin.weight
        self.register_buffer("b", torch.ones(3))

    def forward(self, x):
        return self.out(self.lin(x)) + self.b


# -- 1. the module tree enumerated --------------------------------------------------------------
def test_parameters_dtype_and_count():
    def fn(m, x):
        return x.to(next(m.parameters()).dtype) * sum(p.numel() for p in m.parameters())
    check(fn, Net(), torch.randn(2, 3))
    _one_graph(fn, Net(), torch.randn(2, 3))


def test_named_members_and_modules():
    def fn(m, x):
        names = [n for n, _ in m.named_parameters()]
        total = sum(b.sum() for b in m.buffers()) + sum(p.sum() for p in m.lin.parameters(recurse=False))
        return (x + total, names, [n for n, _ in m.named_buffers(prefix="net")], [n for n, _ in m.named_modules()],
                [type(c).__name__ for c in m.children()], len(list(m.modules())), [n for n, _ in m.named_children()])
    check(fn, Net(), torch.randn(3))
    _one_graph(fn, Net(), torch.randn(3))


def test_shared_parameter_listed_once_and_guarded():
    def fn(m, x):
        return x * len(list(m.parameters())), [n for n, _ in m.named_parameters(remove_duplicate=False)]
    check(fn, Net(tied=True), torch.randn(3))
    # Tied, then untied, then no bias: each call enumerates what eager enumerates.
    check_sequence(fn, [Net(), torch.ones(3)], [Net(tied=True), torch.ones(3)], [Net(bias=False), torch.ones(3)],
                   [Net(), torch.ones(3)])


def test_parameters_generator_kept_after_the_call():
    def fn(m, x):
        gen = m.parameters()
        next(gen)
        return x + 1, gen
    m = Net()
    compiled = symexec.compile(fn)
    _, gen = compiled(m, torch.ones(3))
    assert type(gen).__name__ == "generator"
    rest = list(gen)
    assert len(rest) == 3 and all(p is q for p, q in zip(rest, list(m.parameters())[1:]))


def test_parameters_after_a_traced_write_break_instead_of_going_stale():
    def fn(m, x, p):
        m.lin.extra = p
        return x * len(list(m.parameters()))
    check(fn, Net(), torch.randn(3), torch.nn.Parameter(torch.ones(3)), expect_traced=False)


def test_parameter_as_dict_key():
    def fn(m, x):
        index = {p: i for i, p in enumerate(m.parameters())}
        return x * index[m.lin.weight].__index__(), index[m.out.bias], len(index), m.b in index, index.get(x, -1)
    check(fn, Net(), torch.randn(3))
    _one_graph(fn, Net(), torch.randn(3))


def test_dict_keyed_by_parameters_returned():
    def fn(m):
        return {p: p.shape[0] for p in m.lin.parameters()}
    m = Net()
    got = symexec.compile(fn)(m)
    assert list(got) == [m.lin.weight, m.lin.bias] and list(got.values()) == [3, 3]


def test_id_of_module_and_parameter():
    def fn(m, x):
        return x + 1, id(m), id(m.lin.weight), id(m.lin) == id(m), id(x) == id(m.b)
    m, x = Net(), torch.randn(3)
    compiled = symexec.compile(fn)
    for _ in range(2):
        assert_same(fn(m, x), compiled(m, x))
    assert len(symexec.cache_entries(compiled)) == 1  # the same objects: no retrace
    other = Net()
    assert_same(fn(other, x), compiled(other, x))  # another module: its own id
    assert symexec.explain(fn, m, x).graph_break_count == 0


# -- 2. tensors as set members --------------------------------------------------------------------
def test_tensor_in_a_set_of_parameters():
    def fn(m, x):
        params = set(m.parameters())
        return x + 1, m.lin.weight in params, x in params, m.b in params, len(params)
    check(fn, Net(), torch.randn(3))
    _one_graph(fn, Net(), torch.randn(3))


def test_membership_sees_an_input_that_is_a_parameter():
    def fn(m, x):
        return x * 2, x in set(m.parameters()), x in {p: 0 for p in m.lin.parameters()}
    m = Net()
    check_sequence(fn, [m, torch.ones(3, 3)], [m, m.lin.weight], [m, torch.ones(3, 3)])


def test_iterating_a_set_of_tensors_breaks():
    def fn(m, x):
        return [p.shape for p in set(m.lin.parameters())], x + 1
    check(fn, Net(), torch.randn(3), expect_traced=False)


# -- 3. Module.__setattr__ ------------------------------------------------------------------------
def test_register_a_parameter_passed_in():
    def fn(m, x, p):
        m.lin.extra = p
        return m.lin.extra * x
    check(fn, Net(), torch.randn(3), torch.nn.Parameter(torch.ones(3)))
    _one_graph(fn, Net(), torch.randn(3), torch.nn.Parameter(torch.ones(3)))


def test_replace_a_buffer_and_set_a_plain_tensor():
    def fn(m, x):
        m.b = x * 2
        setattr(m.lin, "plain", x + 1)
        m.lin.bias = None
        return m.b + m.lin.plain, m.lin.bias
    check(fn, Net(), torch.randn(3))
    _one_graph(fn, Net(), torch.randn(3))


@pytest.mark.parametrize("name", ["weight", "lin"])
def test_wrong_type_for_a_slot_raises_before_anything_after_it(name):
    def fn(m, x):
        target = m.lin if name == "weight" else m
        setattr(target, name, x * 2)
        print("after")
        return x
    check(fn, Net(), torch.randn(3), expect_traced=False)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_parameter_made_inside_is_a_parameter(backend):
    def fn(m, x):
        m.lin.extra = torch.nn.Parameter(torch.ones(3))
        m.lin.bias = torch.nn.Parameter(x.detach().clone())
        return m(x), type(m.lin.extra).__name__, sorted(n for n, _ in m.named_parameters())
    check(fn, Net(), torch.randn(3), backend=backend, expect_traced=False)


class Guarded(torch.nn.Module):
    """A module with its own ``__setattr__``/``__delattr__`` (as torchmetrics' Metric): it refuses
    a name, logs the others, then runs nn.Module's."""

    def __init__(self):
        super().__init__()
        self.log = []
        self.lin = torch.nn.Linear(3, 3)
        self.register_buffer("total", torch.zeros(3))
        self.count = 0

    def __setattr__(self, name, value):
        if name == "frozen":
            raise RuntimeError(f"Can't change const `{name}`.")
        if name != "log":
            self.log.append(name)
        super().__setattr__(name, value)

    def __delattr__(self, name):
        self.log.append("del " + name)
        super().__delattr__(name)


def test_a_modules_own_setattr_runs_once_and_nn_modules_store_is_replayed():
    def fn(m, x):
        m.count = m.count + 1
        m.total = m.total + x  # a buffer replaced
        m.plain = x * 2
        del m.plain
        m.extra = x.sum()
        return m.lin(m.total) + m.extra, m.count

    check(fn, Guarded(), torch.randn(3))
    _one_graph(fn, Guarded(), torch.randn(3))


def test_a_modules_own_setattr_that_raises():
    def fn(m, x):
        m.count = 1
        m.frozen = x
        return x

    check(fn, Guarded(), torch.randn(3), expect_traced=False)


# -- 4. autocast objects made outside -------------------------------------------------------------
@torch.autocast("cpu", dtype=torch.bfloat16)
def _autocast_matmul(a, b):
    return a @ b


AUTOCAST = torch.autocast("cpu", dtype=torch.bfloat16)


def test_autocast_decorator():
    def fn(x):
        return _autocast_matmul(x, x) + 1
    check(fn, torch.randn(3, 3))
    _one_graph(fn, torch.randn(3, 3))


def test_autocast_object_entered_inside():
    def fn(x):
        with AUTOCAST:
            y = x @ x
        return y, x @ x
    check(fn, torch.randn(3, 3))
    _one_graph(fn, torch.randn(3, 3))

    def entered(x):
        with AUTOCAST as ac:  # (torch.compile answers False here: __enter__ returns self)
            return x @ x, ac is AUTOCAST
    check(entered, torch.randn(3, 3))
    for name in ("prev", "prev_cache_enabled", "prev_fastdtype"):
        AUTOCAST.__dict__.pop(name, None)
    symexec.compile(fn)(torch.randn(3, 3))
    assert (AUTOCAST.prev, AUTOCAST.prev_cache_enabled, AUTOCAST.prev_fastdtype) == (False, True, torch.bfloat16)


def test_autocast_object_settings_guarded():
    ac = torch.autocast("cpu", dtype=torch.bfloat16)

    def fn(x, ac):
        with ac:
            return x @ x
    check_sequence(fn, [torch.ones(2, 2), ac], [torch.ones(2, 2), torch.autocast("cpu", enabled=False)],
                   [torch.ones(2, 2), torch.autocast("cpu", dtype=torch.float16)])


# -- 5. a tensor's bound method across a break -----------------------------------------------------
@pytest.mark.parametrize("breaker", ["print", "graph_break"])
def test_bound_method_called_after_a_break(breaker):
    def fn(x):
        f = x.sum
        if breaker == "print":
            print("hi")
        else:
            symexec.graph_break()
        return f(dim=0, keepdim=True) * 2
    check(fn, torch.randn(3, 2))
    out = symexec.explain(fn, torch.randn(3, 2))
    assert (out.graph_count, out.graph_break_count) == (1, 1)
    assert [n.target for n in out.graphs[0].graph.nodes if n.op == "call_method"] == ["sum"]
    backend = CountingBackend()
    compiled = symexec.compile(fn, backend=backend)
    for _ in range(3):
        compiled(torch.randn(3, 2))
    assert backend.graph_count == 1  # (the continuation does not retrace per tensor)


# -- 6. facts and descriptors ---------------------------------------------------------------------
def test_is_tensor_is_mps_and_is_compiling():
    def fn(m, x):
        return x + 1, torch.is_tensor(m), x.is_mps, torch.compiler.is_compiling()
    m, x = Net(), torch.randn(3)
    expected, _ = dynamo_graphs(fn, m, x)
    assert expected[3] is True
    assert_same(expected, symexec.compile(fn)(m, x))
    out = symexec.explain(fn, m, x)  # (torch.compile also keeps a dead is_mps node)
    assert out.graph_count == 1 and out.graph_break_count == 0




class LazyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    @lazy_property
    def scale(self):
        return self.lin.in_features * 0.5

    def forward(self, x):
        return self.lin(x) * self.scale


def test_lazy_property_on_a_module():
    def fn(m, x):
        return m(x) + m.scale, "scale" in m.__dict__
    check(fn, LazyNet(), torch.randn(3))
    _one_graph(fn, LazyNet(), torch.randn(3))
    cached = LazyNet()
    cached.scale  # noqa: B018 - now in its __dict__
    check_sequence(fn, [LazyNet(), torch.ones(3)], [cached, torch.ones(3)])


def test_module_dict_write_of_a_parameter_name_breaks():
    def fn(m, x):
        m.lin.__dict__["weight"] = x
        return m.lin.weight + 1
    check(fn, Net(), torch.randn(3), expect_traced=False)


class _ShadowedProperty(torch.nn.Module):
    """An instance-dict entry under the name of a class property: CPython's lookup finds the
    property first (a data descriptor wins over the instance dict)."""

    def __init__(self):
        super().__init__()
        self.__dict__["scale"] = 5.0
        self.__dict__["shift"] = 1.0

    @property
    def scale(self):
        print("scale read")
        return 2.0

    shift = 0.5  # a plain class attribute: the instance dict wins over it

    def forward(self, x):
        return x * self.scale + self.shift


def test_a_class_property_wins_over_the_instance_dict_of_a_module():
    """The trace read the instance dict and returned x * 5 (the property's getter ran only in
    guards); eager's x * 2, with its print, is the answer."""
    m = _ShadowedProperty()
    check(lambda x: m(x), torch.ones(3))
    check_sequence(lambda x: m(x), [torch.ones(3)], lambda: setattr(_ShadowedProperty, "shift", 0.25),
                   [torch.ones(3)], lambda: m.__dict__.update(shift=3.0), [torch.ones(3)])


# -- 7. modules made by the trace and handed out ---------------------------------------------------
class _OwnState(torch.nn.Module):
    """A module whose own __getstate__/__setstate__ keep part of it (torch.jit's export idiom)."""

    def __init__(self):
        super().__init__()
        self.a = 3

    def __getstate__(self):
        return (3, self.training)

    def __setstate__(self, state):
        self.a, self.training = state

    def forward(self, x):
        return x + self.a


def test_a_module_made_in_the_trace_with_its_own_state_protocol_is_not_copied_through_it():
    """Generated code hands out a copy.deepcopy of a module the trace made: through these
    __getstate__/__setstate__ the copy had no _modules (its call raised AttributeError where eager
    returned x + 3). The construction breaks: CPython makes it."""
    def fn(x):
        m = _OwnState()
        symexec.graph_break()
        return m(x), sorted(vars(m))
    check(fn, torch.ones(2), expect_traced=False)


# --------------------------------------------------------------------------------------------
# A module class's own __getattr__ / __getattribute__


class _QueueModule(torch.nn.Module):
    """Names in a plain dict attribute answered by its own __getattr__, the rest by torch's."""

    def __init__(self):
        super().__init__()
        self.custom_dict = {"queue": [torch.rand((2, 2)) for _ in range(3)]}
        self.other_attr = torch.rand((2, 2))
        self.lin = torch.nn.Linear(2, 2)

    def __getattr__(self, name):
        custom_dict = self.custom_dict
        if name in custom_dict:
            return custom_dict[name]
        return super().__getattr__(name)

    def forward(self, x):
        return self.lin(x @ self.other_attr + self.queue[-1]), hasattr(self, "nope")


def test_module_with_its_own_getattr():
    # (a name only its __getattr__ knows was "no attribute", a break) traced, then torch's
    mod = _QueueModule()
    check(mod, torch.rand((2, 2)))
    assert_same_graphs_as_dynamo(mod, torch.rand((2, 2)))

    def swap_queue():
        mod.custom_dict["queue"] = [torch.ones(2, 2)]

    check_sequence(lambda x: mod(x), [torch.rand((2, 2))], swap_queue, [torch.rand((2, 2))])


class _SpecialModule(torch.nn.Module):
    """Its own __getattribute__: one name made up, one changed, the rest object's."""

    def __init__(self):
        super().__init__()
        self.my_number = 42
        self.lin = torch.nn.Linear(2, 2)

    def __getattribute__(self, name):
        if name == "special_attr":
            return torch.tensor([[1.0, 2.0], [3.0, 4.0]])
        if name == "my_number":
            return super().__getattribute__(name) + 58
        return super().__getattribute__(name)

    def forward(self, x):
        return self.my_number * x + self.special_attr * x + self.lin(x)


def test_module_with_its_own_getattribute():
    # (its __getattribute__ was ignored: `self.my_number` read 42 where eager reads 100, and a
    # name only it knows broke the graph) every read goes through it, traced
    mod = _SpecialModule()
    check(mod, torch.rand((2, 2)))
    assert symexec.explain(mod, torch.rand((2, 2))).graph_break_count == 0

    def fn(m, x):
        return m(x)

    check(fn, mod, torch.rand((2, 2)))
