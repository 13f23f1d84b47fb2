"""Every fact a trace reads from a real object is guarded (GUARDS.md): a later call that differs
in that fact retraces instead of reusing a stale entry. Each test is a sequence of calls of one
compiled function compared with eager; each failed before its guard existed."""

import collections
import functools
import math
import types

import pytest
import torch

import symexec
from helpers import check_sequence

X = torch.arange(4.0) - 1.5


# -- callables ---------------------------------------------------------------------------------
def _call_arg(x, f):
    return f(x)


@pytest.mark.parametrize("first, second", [
    (torch.sin, torch.cos), (torch.sin, lambda t: t + 1), (torch.Tensor.exp, torch.Tensor.neg),
])
def test_callable_argument_is_pinned(first, second):
    check_sequence(_call_arg, [X, first], [X, second], [X, first])


@pytest.mark.parametrize("first, second, args", [
    (max, min, (3, 5)), (abs, int, (-3.5,)), (math.sqrt, math.exp, (4.0,)),
])
def test_builtin_argument_is_pinned(first, second, args):
    def fn(x, f):
        return x * f(*args)

    check_sequence(fn, [X, first], [X, second])


def test_callable_in_tuple_and_partial_is_pinned():
    check_sequence(lambda x, t: t[0](x), [X, (torch.sin,)], [X, (torch.cos,)])
    check_sequence(_call_arg, [X, functools.partial(torch.add, other=1)],
                   [X, functools.partial(torch.mul, other=2)], [X, functools.partial(torch.add, X)])


def test_bound_builtin_method_is_pinned_on_its_object():
    def fn(x, append):
        append(1)
        return x

    a, b = [], []
    compiled = symexec.compile(fn)
    compiled(X, a.append)
    compiled(X, b.append)
    assert a == [1] and b == [1]


def _make_adder(k):
    def add(t):
        return t + k
    return add


def _same_function(x, a, b):
    if a is b:
        return x * 2
    return a(x)


def test_is_between_functions_made_per_call():
    # (closures are guarded by their code, not their identity: `a is b` was folded from the
    # first call, and two fresh closures of one maker took the `a is b` branch)
    one = _make_adder(1)
    check_sequence(_same_function, [X, one, one], [X, _make_adder(1), _make_adder(1)], [X, one, _make_adder(2)])


def _plain_nested():
    def nested(t):
        return t - 1
    return nested


def test_function_made_per_call_with_attributes_is_pinned():
    marked = _plain_nested()
    marked.scale = 3  # (something of its own: the function itself is pinned, not only its code)
    check_sequence(lambda x, f: f(x) * getattr(f, "scale", 1), [X, _plain_nested()], [X, marked], [X, _plain_nested()])


_G = torch.sin


def _uses_global(x):
    return _G(x)


def test_global_callable_rebound():
    def rebind():
        global _G
        _G = torch.cos

    try:
        check_sequence(_uses_global, [X], rebind, [X])
    finally:
        globals()["_G"] = torch.sin


def test_closure_cell_and_module_attribute_callables():
    def make(f):
        return lambda t: f(t)

    check_sequence(_call_arg, [X, make(torch.sin)], [X, make(torch.cos)])
    m1, m2 = types.ModuleType("m1"), types.ModuleType("m2")
    m1.f, m2.f = torch.sin, torch.cos
    check_sequence(lambda x, mod: mod.f(x), [X, m1], [X, m2])


# -- types of arguments ------------------------------------------------------------------------
def _by_type(x, v):
    if v is None:
        return x
    if type(v) is bool:
        return x + 4
    if type(v) is int:
        return x + 1
    if isinstance(v, float):
        return x + 2
    if isinstance(v, str):
        return x + 3
    if isinstance(v, bytes):
        return x + 5
    return x * v


@pytest.mark.parametrize("first, second", [
    (None, torch.ones(4) * 3), (1, 1.5), (3, "a"), (1, True), ("a", b"a"),
])
def test_type_checks_are_guarded(first, second):
    check_sequence(_by_type, [X, first], [X, second], [X, first])


# -- the compiled function and its callees -----------------------------------------------------
def test_defaults_kwdefaults_and_code_changed_after_compiling():
    def fn(x, k=1, *, j=2):
        return x * k + j

    def set_defaults():
        fn.__defaults__ = (5,)

    def set_kwdefaults():
        fn.__kwdefaults__ = {"j": 7}

    def change_kwdefaults_in_place():
        fn.__kwdefaults__["j"] = 9

    def swap_code():
        fn.__code__ = (lambda x, k=1, *, j=2: x - k - j).__code__

    check_sequence(fn, [X], set_defaults, [X], set_kwdefaults, [X], change_kwdefaults_in_place, [X], swap_code, [X])


def test_calls_that_fit_only_the_changed_parameters():
    """A call that fits the function's parameters only as changed since the trace (a default
    added, removed, a parameter added with the code) behaves as eager: it was bound to the
    parameters as traced and raised their TypeError (or ran with the old default)."""
    def fn(x, y):
        return x + y

    def add_default():
        fn.__defaults__ = (torch.full((4,), 5.0),)

    def remove_default():
        fn.__defaults__ = None

    def add_parameter():
        fn.__code__ = (lambda x, y, z=2: x + y * z).__code__

    def keyword_only():
        fn.__code__ = (lambda x, y=1, *, k: x + y - k).__code__
        fn.__kwdefaults__ = {"k": 3}

    def no_keyword_default():
        fn.__kwdefaults__ = None

    check_sequence(fn, [X, X], [X, X], [X, X], [X, X], add_default, [X], [X], [X, X], remove_default, [X], [X, X],
                   add_parameter, [X, X, X], [X], [X, X], keyword_only, [X], [X, X], no_keyword_default, [X], [X, X])


def _fallback_plus_one(x):
    with torch.autocast("cpu"):
        symexec.graph_break()  # (a break inside autocast: the frame runs as its original code)
        return x + 1


def _fallback_plus_two(x):
    with torch.autocast("cpu"):
        symexec.graph_break()
        return x + 2


def test_a_frame_run_as_its_original_code_runs_its_code_as_it_is_now():
    """The copy that runs a frame as its original code was made once per function: after its
    __code__ was assigned, the new entry ran the old code (x + 1 where eager gave x + 2)."""
    original = _fallback_plus_one.__code__

    def swap():
        _fallback_plus_one.__code__ = _fallback_plus_two.__code__

    try:
        compiled = check_sequence(_fallback_plus_one, [X], [X], swap, [X], [X], captured=False)
        assert all(e.fallback_reason for e in symexec.cache_entries(compiled))
    finally:
        _fallback_plus_one.__code__ = original


def test_an_entry_traced_with_every_argument_given_takes_no_default():
    """Such an entry has no defaults and guards none; a call omitting an argument misses and
    takes the function's default as it is then."""
    def fn(x, k=2):
        return x * k

    def set_defaults():
        fn.__defaults__ = (5,)

    compiled = check_sequence(fn, [X, 3], [X, 3], [X], set_defaults, [X], [X, 4], [X])
    bare = [e for e in symexec.cache_entries(compiled) if not any("__defaults__" in g.text for g in e.guards)]
    assert bare and all(e.guard.__defaults__ is None for e in bare)


def test_a_type_error_inside_the_function_is_the_functions():
    """A TypeError raised by the traced code itself (not by binding the call) is eager's, and
    no retrace: the entry is the one traced."""
    def fn(x, n):
        return x + (n + "a" if n > 2 else n)

    compiled = check_sequence(fn, [X, 1], [X, 3], [X, 1], [X, 3], [X, 3], [X, 3])
    assert len(symexec.cache_entries(compiled)) == 2


def _callee(x):
    return x + 1


def test_callee_code_swapped():
    original = _callee.__code__

    def swap():
        _callee.__code__ = (lambda x: x + 3).__code__

    try:
        check_sequence(lambda x: _callee(x), [X], swap, [X])
    finally:
        _callee.__code__ = original


# -- aliasing ------------------------------------------------------------------------------------
def test_aliasing_between_arguments():
    def lists(a, b):
        a.append(1)
        return len(b)

    shared = []
    check_sequence(lists, [[], []], [shared, shared], [[], []], captured=False)

    def dicts(a, b):
        a["k"] = 1
        return len(b)

    d = {}
    check_sequence(dicts, [{}, {}], [d, d], captured=False)

    def identity(a, b):
        return 1 if a is b else 2

    class Obj:
        pass

    o = Obj()
    check_sequence(identity, [o, Obj()], [o, o], [o, Obj()], captured=False)

    def tensors(a, b):
        a.add_(1)
        return b * 2

    t = torch.ones(3)
    check_sequence(tensors, [torch.ones(3), torch.ones(3)], [t, t])


# -- tensor facts beyond the tensor guard ----------------------------------------------------------
def test_tensor_facts_read_by_the_trace_are_guarded():
    z = torch.randn(3, dtype=torch.complex64)
    check_sequence(lambda x: x.is_conj(), [z], [z.conj()], captured=False)
    check_sequence(lambda x: x.is_neg(), [z], [z.conj().imag], captured=False)
    leaf = torch.randn(3, requires_grad=True)
    check_sequence(lambda x: x.is_leaf, [leaf], [leaf * 2], captured=False)
    base = torch.randn(10)
    check_sequence(lambda x: x.storage_offset(), [base[0:3]], [base[2:5]], captured=False)
    with torch.inference_mode():
        inference = torch.randn(3)
    check_sequence(lambda x: x.is_inference(), [torch.randn(3)], [inference], captured=False)


def test_python_attribute_of_a_tensor():
    scaled = torch.randn(3)
    scaled.scale = 5
    check_sequence(lambda x: x * getattr(x, "scale", 1), [torch.randn(3)], [scaled], [torch.randn(3)])


# -- floats -------------------------------------------------------------------------------------------
def test_negative_zero_is_not_zero():
    check_sequence(lambda x, f: str(f), [X, 0.0], [X, -0.0], captured=False)
    check_sequence(lambda x, f: x * math.copysign(1, f), [X, 0.0], [X, -0.0])


@pytest.mark.parametrize("dynamic", [None, True])
def test_inf_and_nan_after_a_float_became_dynamic(dynamic):
    def fn(x, f):
        if f > 0:
            return x * f
        return x - 1

    check_sequence(fn, [X, 1.0], [X, 2.0], [X, float("inf")], [X, float("nan")], [X, -float("inf")], dynamic=dynamic)


# -- torch's global state ---------------------------------------------------------------------------
def test_default_dtype_and_deterministic_algorithms():
    def dtype(x):
        return torch.ones(2).dtype

    compiled = symexec.compile(dtype)
    compiled(X)
    torch.set_default_dtype(torch.float64)
    try:
        assert compiled(X) is torch.float64
    finally:
        torch.set_default_dtype(torch.float32)

    def det(x):
        return x + (1 if torch.are_deterministic_algorithms_enabled() else 2)

    compiled = symexec.compile(det)
    compiled(X)
    torch.use_deterministic_algorithms(True)
    try:
        assert torch.equal(compiled(X), X + 1)
    finally:
        torch.use_deterministic_algorithms(False)


def test_called_inside_torch_jit_trace():
    # (PyTorch's test_repros test_jit_trace_errors: tracing symbolic shapes under the JIT tracer
    # was an internal error) The frame runs as its code inside torch.jit.trace, so the trace
    # records its ops; outside, the guard on the tracing state lets it compile.
    def fn(x):
        return x * 2 + 1

    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    compiled = symexec.compile(fn, backend=backend, dynamic=True)
    with pytest.warns(symexec.SymexecWarning, match="torch.jit.trace"):
        traced = torch.jit.trace(compiled, torch.randn(3), check_trace=False)  # (its check calls fn again)
    x = torch.randn(5)
    assert torch.equal(traced(x), fn(x))
    assert graphs == []
    assert torch.equal(compiled(x), fn(x))
    assert len(graphs) == 1


def test_enclosing_autocast():
    def fn(x):
        return x @ x.T

    compiled = symexec.compile(fn)
    m = torch.randn(3, 3)
    assert compiled(m).dtype is torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert compiled(m).dtype == fn(m).dtype == torch.bfloat16
    assert compiled(m).dtype is torch.float32


# -- classes -------------------------------------------------------------------------------------------
def test_method_and_property_replaced_on_the_class():
    class A:
        def m(self, x):
            return x + 1

        @property
        def p(self):
            return 1

    def fn(o, x):
        return o.m(x) * o.p

    a = A()

    def replace_method():
        A.m = lambda self, x: x + 2

    def replace_property():
        A.p = property(lambda self: 3)

    check_sequence(fn, [a, X], replace_method, [a, X], replace_property, [a, X])


def test_method_replaced_on_a_base_reached_through_super():
    class Base:
        def m(self, x):
            return x + 1

    class Child(Base):
        def m(self, x):
            return super().m(x) * 2

    def replace():
        Base.m = lambda self, x: x + 5

    check_sequence(lambda o, x: o.m(x), [Child(), X], replace, [Child(), X])


def test_instance_attribute_shadows_class_attribute_and_method():
    class S:
        k = 1

        def m(self, x):
            return x + 1

    s = S()

    def shadow():
        s.k = 4
        s.m = lambda x: x + 9

    check_sequence(lambda o, x: o.m(x) * o.k, [s, X], shadow, [s, X])


def test_getattr_default_after_the_attribute_was_deleted():
    class G:
        pass

    g = G()
    g.w = 3

    def delete():
        del g.w

    check_sequence(lambda o, x: x * getattr(o, "w", 1), [g, X], delete, [g, X])


# -- containers and modules ------------------------------------------------------------------------
def test_dict_subclass_overriding_getitem():
    class D(dict):
        def __getitem__(self, key):
            return 10

    check_sequence(lambda d, x: x * d["a"], [D(a=1), X])

    class Missing(dict):
        def __missing__(self, key):
            return 7

    check_sequence(lambda d, x: x * d["b"], [Missing(a=1), X])


def test_module_list_appended_after_compiling():
    layers = torch.nn.ModuleList([torch.nn.Linear(4, 4)])

    def fn(m, x):
        for layer in m:
            x = layer(x)
        return x * len(m)

    check_sequence(fn, [layers, X], lambda: layers.append(torch.nn.ReLU()), [layers, X])


def test_module_global_shadowing_a_builtin():
    def fn(x):
        return x * abs(-2)

    compiled = symexec.compile(fn)
    compiled(X)
    globals()["abs"] = lambda v: 10
    try:
        assert torch.equal(compiled(X), X * 10)
    finally:
        del globals()["abs"]
    assert torch.equal(compiled(X), X * 2)


def test_global_forward_hook_registered_after_compiling_reaches_inlined_submodules():
    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = torch.nn.Linear(4, 4)

        def forward(self, x):
            return self.inner(x) + 1

    model = Outer()
    compiled = symexec.compile(model)
    compiled(X)
    handle = torch.nn.modules.module.register_module_forward_hook(lambda m, i, o: o * 0)
    try:
        assert torch.equal(compiled(X), model(X))
    finally:
        handle.remove()


def test_module_overriding_call():
    class CallM(torch.nn.Module):
        def forward(self, x):
            return x + 1

        def __call__(self, x):
            return x * 100

    check_sequence(lambda m, x: m(x), [CallM(), X])


def test_namedtuple_and_counter_inputs_keep_their_behaviour():
    class Pair(collections.namedtuple("Pair", "a b")):
        def total(self):
            return self.a + self.b

    check_sequence(lambda p, x: x * p.total(), [Pair(1, 2), X], [Pair(3, 4), X])
    check_sequence(lambda c, x: x * c["missing"], [collections.Counter(a=1), X])


# -- found by reading every place a tracker reads a real object -----------------------------------
def _call_module(m, x):
    return m(x)


def test_forward_replaced_on_the_module_instance():
    # What accelerate's and PEFT's hooks do: an instance attribute shadows the class's forward.
    lin = torch.nn.Linear(4, 4)

    def patch():
        lin.forward = lambda x: x * 100

    check_sequence(_call_module, [lin, X], patch, [lin, X])


def test_method_shadowed_on_the_module_instance():
    class Scaled(torch.nn.Module):
        def scale(self):
            return 2

        def forward(self, x):
            return x * self.scale()

    m = Scaled()

    def patch():
        m.scale = lambda: 10

    check_sequence(_call_module, [m, X], patch, [m, X])


def test_class_name_reassigned():
    class Named:
        pass

    def rename():
        Named.__name__ = "ALongerName"

    check_sequence(lambda o, x: x + len(type(o).__name__), [Named(), X], rename, [Named(), X])


def test_torch_function_replaced_in_torch_namespace():
    original = torch.nn.functional.gelu

    def patch():
        torch.nn.functional.gelu = lambda x: x * 7

    def restore():
        torch.nn.functional.gelu = original

    try:
        check_sequence(lambda x: torch.nn.functional.gelu(x) + torch.sin(x), [X], patch, [X], restore, [X])
    finally:
        torch.nn.functional.gelu = original


def test_namedtuple_class_attribute_reassigned():
    Point = collections.namedtuple("Point", "a b")
    Point.scale = 2

    def patch():
        Point.scale = 5

    check_sequence(lambda p: p.a * p.scale, [Point(X, 1)], patch, [Point(X, 1)])


def test_one_shadowing_guard_per_object():
    class Many(torch.nn.Module):
        def a(self):
            return 1

        def b(self):
            return 2

        def forward(self, x):
            return x * (self.a() + self.b())

    out = symexec.explain(_call_module, Many(), X)
    shadowing = [g for g in out.guards if "not in L['m'].__dict__" in str(g)]
    assert len(shadowing) == 1 and "'a'" in str(shadowing[0]) and "'b'" in str(shadowing[0]), shadowing


# -- class facts: every class read goes through the one guarded lookup (find_on_class) ------------
def _replace_init():
    class Box:
        def __init__(self, v):
            self.v = v

    def patch():
        def init(self, v):
            self.v = v * 10
        Box.__init__ = init
    return (lambda x: x * Box(2).v), [X], patch


def _add_len():
    class Sized:
        pass

    def patch():
        Sized.__len__ = lambda self: 0
    return (lambda o, x: x + 1 if o else x - 1), [Sized(), X], patch


def _add_getattribute():
    class Plain:
        k = 2

    def patch():
        def getattribute(self, name):
            return 9 if name == "k" else object.__getattribute__(self, name)
        Plain.__getattribute__ = getattribute
    return (lambda o, x: x * o.k), [Plain(), X], patch


def _add_setattr():
    class Rec:
        def __init__(self):
            self.a = 1

    def patch():
        def setattr_(self, name, value):
            object.__setattr__(self, name, value * 2)
        Rec.__setattr__ = setattr_

    def fn(x):
        r = Rec()
        r.a = 3
        return x * r.a
    return fn, [X], patch


def _exception_init():
    class Oops(Exception):
        pass

    def patch():
        def init(self, *args):
            Exception.__init__(self, *args, *args)
        Oops.__init__ = init

    def fn(x):
        try:
            raise Oops("a")
        except Oops as e:
            return x * len(e.args)
    return fn, [X], patch


def _bases_assigned():
    class Root:
        pass

    class A(Root):
        pass

    class B(Root):
        pass

    class C(A):
        pass
    return (lambda o, x: x + (1 if isinstance(o, B) else 2)), [C(), X], lambda: setattr(C, "__bases__", (B,))


def _abc_register():
    import collections.abc

    class Later:
        pass
    return (lambda o, x: x + (1 if isinstance(o, collections.abc.Sized) else 2)), [Later(), X], \
        lambda: collections.abc.Sized.register(Later)


def _slots_attribute():
    class Slotted:
        __slots__ = ("a",)

        def __init__(self):
            self.a = 2
    o = Slotted()
    return (lambda s, x: x * s.a), [o, X], lambda: setattr(o, "a", 7)


def _copy_protocol_added():
    import copy

    class Cfg:
        def __init__(self):
            self.k = 2

    def patch():
        def copy_(self):
            new = Cfg.__new__(Cfg)
            new.k = 10
            return new
        Cfg.__copy__ = copy_
    return (lambda c, x: x * copy.copy(c).k), [Cfg(), X], patch


@pytest.mark.parametrize("make", [_replace_init, _add_len, _add_getattribute, _add_setattr, _exception_init,
                                  _bases_assigned, _abc_register, _slots_attribute, _copy_protocol_added],
                         ids=lambda m: m.__name__.strip("_"))
def test_class_fact_changed_after_compiling(make):
    fn, args, patch = make()
    check_sequence(fn, args, patch, args)


# -- a mutable object read from one of torch's modules ------------------------------------------
def test_contents_of_a_torch_module_attribute_are_guarded(monkeypatch):
    # torch.fx.<dict> read by attribute: its identity was guarded, its contents baked in.
    monkeypatch.setattr(torch.fx, "_symexec_registry", {"scale": 1}, raising=False)

    def fn(x):
        return x * torch.fx._symexec_registry["scale"]

    def change():
        torch.fx._symexec_registry["scale"] = 5

    check_sequence(fn, [torch.ones(2)], change, [torch.ones(2)])


# -- module members read straight from _parameters/_buffers/_modules (issue 12) ------------------
class _Lin(torch.nn.Linear):
    pass


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = _Lin(3, 3)
        self.register_buffer("scale", torch.ones(3))
        self.layers = torch.nn.ModuleList([torch.nn.Linear(3, 3), torch.nn.Linear(3, 3)])
        self.seq = torch.nn.Sequential(collections.OrderedDict(first=torch.nn.Tanh(), second=torch.nn.Sigmoid()))  # (strictly monotone: every change shows)

    def forward(self, x):
        return self.seq[1](self.layers[1](self.layers[0](self.lin(x)))) * self.scale + self.seq[0](x)


_BLOCK = _Block()


def _replace_linear():
    _BLOCK.lin = torch.nn.Linear(3, 3)


def _replace_weight():
    _BLOCK.lin.weight = torch.nn.Parameter(torch.randn(3, 3))


def _replace_list_item():
    _BLOCK.layers[1] = torch.nn.Linear(3, 3)


def _shadow_in_instance_dict():
    _BLOCK.lin.__dict__["weight"] = torch.zeros(3, 3)


def _buffer_replaced():
    _BLOCK.scale = torch.full((3,), 2.0)


def _parameter_before_buffer():
    _BLOCK._parameters["scale"] = torch.nn.Parameter(torch.full((3,), 3.0))  # __getattr__ finds it first


def _class_property_shadows_member():
    _Lin.weight = property(lambda self: torch.zeros(3, 3))  # found before __getattr__ runs


def _class_attribute_added():
    type(_BLOCK.seq).extra = 1  # (a name the trace never read: no retrace needed, none wrong)


def _module_dict_swapped():
    _BLOCK._modules["lin"] = torch.nn.Linear(3, 3)


def _sequential_reordered():
    seq = _BLOCK.seq
    seq._modules["first"] = seq._modules.pop("first")  # seq[1] is now the Tanh, by position


@pytest.mark.parametrize("change", [_replace_linear, _replace_weight, _replace_list_item, _shadow_in_instance_dict,
                                    _buffer_replaced, _parameter_before_buffer, _class_property_shadows_member,
                                    _class_attribute_added, _module_dict_swapped,
                                    _sequential_reordered])
def test_members_read_from_their_dicts_still_see_every_change(change):
    global _BLOCK
    _BLOCK = _Block()

    def fn(x):
        return _BLOCK(x)

    check_sequence(fn, [torch.randn(2, 3)], change, [torch.randn(2, 3)], [torch.randn(2, 3)])
    if hasattr(torch.nn.Sequential, "extra"):
        del torch.nn.Sequential.extra
    if "weight" in _Lin.__dict__:
        del _Lin.weight


def test_member_guards_read_the_dicts_not_getattr():
    model = _Block()
    entry = symexec.cache_entries(_compiled_once(model))[0]
    exprs = " ".join(g.expr for g in entry.guards)
    assert "._modules['lin']._parameters['weight']" in exprs and "._modules['layers']._modules['1']" in exprs
    assert "._modules['seq']._modules['second']" in exprs  # Sequential: the i-th key, guarded


def _compiled_once(model):
    compiled = symexec.compile(lambda x: model(x))
    compiled(torch.randn(2, 3))
    return compiled


@pytest.mark.parametrize("query, change, restore", [
    (lambda: torch.get_num_threads(), lambda: torch.set_num_threads(1), lambda n: torch.set_num_threads(n)),
    (lambda: torch.get_float32_matmul_precision(), lambda: torch.set_float32_matmul_precision("high"),
     lambda p: torch.set_float32_matmul_precision(p)),
    (lambda: torch.is_anomaly_enabled(), lambda: torch.autograd.set_detect_anomaly(True),
     lambda a: torch.autograd.set_detect_anomaly(a)),
])
def test_queries_of_torchs_state_are_guarded(query, change, restore):
    """A torch function called with constant arguments returns torch's state as it is: its
    value was baked into the entry, so a later change kept the old answer."""
    def fn(x):
        return x * (2 if query() in (1, "high", True) else 3), query()

    before = query()
    try:
        check_sequence(fn, [X], [X], change, [X], lambda: restore(before), [X])
    finally:
        restore(before)


def test_a_wrong_call_after_an_entry_without_defaults_raises_eagers_error_once_traced():
    """An entry traced with every argument given takes no defaults: a call the function itself
    refuses raises the function's own TypeError (its parameters' message), and makes no entry."""
    def fn(x, k=2):
        return x * k

    compiled = check_sequence(fn, [X, 3], [X, 1, 2], [X, 1, 2], [X])
    assert len(symexec.cache_entries(compiled)) == 2


def test_a_query_of_torchs_state_with_keywords_is_guarded_too():
    def fn(x):
        return x * (2 if torch.is_autocast_enabled(device_type="cpu") else 3)

    compiled = check_sequence(fn, [X], [X])
    texts = [g.text for e in symexec.cache_entries(compiled) for g in e.guards]
    assert "torch.is_autocast_enabled(device_type='cpu') is False" in texts, texts


def _breaks_inside(x, k=2, j=3):
    x = x + k
    symexec.graph_break()  # the call of this function runs at a break: its compiled stand-in
    return x * j


def test_a_callee_entry_traced_with_every_argument_given_misses_a_call_omitting_one():
    """A callee's entry traced from a call passing every argument has no defaults: a later call
    omitting one raised TypeError (missing 2 required positional arguments) from the entry, where
    the root's hot path takes it as a miss (gpytorch's Kernel.__call__, called both ways)."""
    def fn(x, full):
        if full:
            return _breaks_inside(x, 4, 5)
        return _breaks_inside(x)

    check_sequence(fn, [X, True], [X, False], [X, True], [X, False])
