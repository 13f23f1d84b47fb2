"""User-defined objects, classes and nn.Modules: attribute reads and writes, methods, module calls."""

import dataclasses
import enum

import pytest
import torch
import torch.nn.functional as F

import symexec
from helpers import assert_same, assert_same_graphs_as_dynamo, check


def _t(*shape):
    return torch.randn(*shape)


class Config:
    def __init__(self, hidden=4, act="relu", scale=None):
        self.hidden = hidden
        self.act = act
        self.scale = scale

    def activation(self, x):
        return getattr(F, self.act)(x)


@dataclasses.dataclass
class Batch:
    inputs: torch.Tensor
    weight: float = 1.0


class Color(enum.Enum):
    RED = 1
    BLUE = 2


class Counter:
    calls = 0  # a class attribute, read through the instance

    def __init__(self):
        self.history = []

    def record(self, value):
        self.history.append(value)
        return len(self.history)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(3, 4)
        self.fc2 = torch.nn.Linear(4, 2)
        self.register_buffer("offset", torch.ones(2))
        self.mode = "sum"

    def forward(self, x):
        y = self.fc2(torch.relu(self.fc1(x))) + self.offset
        if self.mode == "sum":
            return y.sum(-1)
        return y


class Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(3)])
        self.norm = torch.nn.LayerNorm(2)
        self.seq = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Tanh())

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.seq(self.norm(x))


class Counting(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = 0
        self.weight = torch.nn.Parameter(torch.ones(2))

    def forward(self, x):
        self.steps += 1
        return x * self.weight * self.steps


def _same_module(seed, cls):
    torch.manual_seed(seed)
    return cls()


# --- plain user objects --------------------------------------------------------------------------


def test_object_attributes_select_branch():
    def fn(cfg, x):
        y = x * cfg.hidden
        if cfg.scale is not None:
            y = y * cfg.scale
        return cfg.activation(y)

    check(fn, Config(hidden=2, act="gelu"), _t(3))


def test_dataclass_input():
    def fn(batch):
        return batch.inputs * batch.weight

    check(fn, Batch(_t(3), 0.5))


def test_dataclass_created_inside():
    def fn(x):
        b = Batch(x + 1)
        return b.inputs * b.weight, b.weight

    check(fn, _t(2))


def test_enum_constants():
    def fn(x, color):
        if color == Color.RED:
            return x + color.value
        return x

    check(fn, _t(2), Color.RED)


def test_class_attribute_via_instance_and_class():
    def fn(c, x):
        return x + c.calls + Counter.calls

    check(fn, Counter(), _t(2))


def test_method_mutating_object_state():
    def fn(c, x):
        n = c.record(x)
        n = c.record(x * 2)
        return n

    check(fn, Counter(), _t(2))


def test_object_created_inside_and_returned():
    def fn(x):
        c = Counter()
        c.record(x)
        return c

    check(fn, _t(2), captured=False)


def test_isinstance_user_class():
    def fn(obj, x):
        return isinstance(obj, Config), isinstance(obj, Counter), x

    check(fn, Config(), _t(1), captured=False)


def test_type_of_user_object():
    def fn(obj, x):
        return type(obj).__name__, type(obj) is Config, x

    check(fn, Config(), _t(1), captured=False)


# --- nn.Modules -------------------------------------------------------------------------------------


def test_module_forward_called_directly():
    model = _same_module(0, MLP)

    def fn(x):
        return model(x)

    check(fn, _t(2, 3))


def test_module_passed_as_argument():
    def fn(model, x):
        return model(x)

    # Each round passes a fresh copy of the module: whether that recompiles is not our concern.
    check(fn, _same_module(0, MLP), _t(2, 3), expect_reuse=False)


def test_module_attribute_changed_between_calls():
    model = _same_module(0, MLP)

    def fn(x):
        return model(x)

    compiled = check(fn, _t(2, 3))
    model.mode = "none"
    x = _t(2, 3)
    assert torch.equal(compiled(x), model(x))


def test_module_parameters_and_buffers():
    model = _same_module(1, MLP)

    def fn(x):
        w = model.fc1.weight
        return x @ w.t() + model.fc1.bias, model.offset * 2, len(list(model.parameters()))

    check(fn, _t(2, 3))


def test_module_list_sequential_layernorm():
    model = _same_module(2, Stack)

    def fn(x):
        return model(x)

    check(fn, _t(3, 2))


def test_module_attribute_mutation_in_forward():
    model = _same_module(0, Counting)
    eager_model = _same_module(0, Counting)
    x = torch.ones(2)
    expected = [eager_model(x), eager_model(x)]
    compiled = symexec.compile(lambda t: model(t))
    actual = [compiled(x), compiled(x)]
    assert model.steps == eager_model.steps == 2
    for e, a in zip(expected, actual):
        assert torch.equal(e, a)


def test_module_in_eval_and_train_mode():
    def fn(x, training):
        drop = torch.nn.Dropout(p=0.5)
        drop.train(training)
        return drop(x) if not training else x

    check(fn, _t(4), False)


def test_builtin_module_functional_equivalent():
    lin = _same_module(3, lambda: torch.nn.Linear(3, 2))

    def fn(x):
        return lin(x), F.linear(x, lin.weight, lin.bias)

    check(fn, _t(2, 3))


def test_module_gives_one_graph_like_dynamo():
    model = _same_module(0, MLP)

    def fn(x):
        return model(x) * 2

    assert_same_graphs_as_dynamo(fn, _t(2, 3))


# The truth and len() protocols check what a Python __bool__ / __len__ returns, as CPython's
# slots do (PyTorch's test_misc test_if_cond_user_defined_object2 found the unchecked float).
class BoolReturns:
    def __init__(self, value):
        self.value = value

    def __bool__(self):
        return self.value


class LenReturns:
    def __init__(self, value):
        self.value = value

    def __len__(self):
        return self.value


def _branch_on(x, obj):
    y = x * 2
    if not obj:
        return y + 1
    return y - 1


def _len_of(x, obj):
    return x * 2, len(obj)


def test_bool_returning_non_bool_raises_type_error():
    for value in (1.2, 1, 0, None, "yes"):
        check(_branch_on, _t(3), BoolReturns(value), captured=False)  # the TypeError ends the graph before an op


def test_bool_returning_bool_branches_like_dynamo():
    check(_branch_on, _t(3), BoolReturns(False))
    assert_same_graphs_as_dynamo(_branch_on, _t(3), BoolReturns(True))


def test_len_must_return_a_non_negative_int():
    for value in (-1, 2.0, "3"):
        check(_branch_on, _t(3), LenReturns(value), captured=False)
        check(_len_of, _t(3), LenReturns(value), captured=False)
    for value in (True, 0, 3):  # a bool is an int: len() gives the int
        check(_len_of, _t(3), LenReturns(value))
        check(_branch_on, _t(3), LenReturns(value))
    assert_same_graphs_as_dynamo(_len_of, _t(3), LenReturns(3))


class CountsUp:
    """An iterator whose __iter__ returns itself (PyTorch's test_functions test_enumerate_custom)."""

    def __init__(self, stop):
        self.stop = stop

    def __iter__(self):
        self.a = 1
        return self

    def __next__(self):
        if self.a > self.stop:
            raise StopIteration
        self.a += 1
        return self.a


def test_iterating_an_object_whose_iter_returns_itself():
    # it was an endless recursion (an internal error); it breaks the graph now
    def fn(x, counter):
        y = x * 2
        for i, item in enumerate(counter):
            y = y + i * item
            if item == 3:
                break
        return y, counter.a

    check(fn, _t(2), CountsUp(5))


class _Wrapped:
    """A non-tensor object that torch functions dispatch to through ``__torch_function__``:
    it unwraps itself (and its kind) and runs the function on the tensor it holds."""

    def __init__(self, data, scale=1.0):
        self.data = data
        self.scale = scale

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        def unwrap(a):
            if isinstance(a, cls):
                return a.data * a.scale
            if isinstance(a, (list, tuple)):
                return type(a)(unwrap(i) for i in a)
            return a
        if func is torch.max and kwargs is None:
            return torch.tensor(len(types) + len(args))
        if func is torch.mean:
            return NotImplemented
        return func(*unwrap(args), **unwrap(kwargs or {}))


def _call_with_wrapped(x, y):
    w = _Wrapped(x, 2.0)
    if torch.overrides.is_tensor_like(w):
        return torch.sum(w, dim=0), torch.add(w, y), torch.cat([w, y])
    return torch.zeros(1)


def test_torch_function_of_a_user_object_is_traced():
    check(_call_with_wrapped, _t(3), _t(3))
    assert_same_graphs_as_dynamo(_call_with_wrapped, _t(3), _t(3))


def test_torch_function_is_given_kwargs_none_as_eager():
    # (torch.compile passes kwargs={} here, and so takes the other branch)
    def fn(x):
        return torch.max(_Wrapped(x)), torch.max(_Wrapped(x), dim=0)
    check(fn, _t(3))


def test_torch_function_of_an_input_object():
    def fn(w, y):
        return torch.mul(w, y), torch.max(w, dim=0)
    check(fn, _Wrapped(_t(2, 3), 0.5), _t(2, 3))


def test_torch_function_giving_not_implemented_raises_as_eager():
    def fn(x):
        return torch.mean(_Wrapped(x))
    check(fn, _t(3), expect_traced=False)


def test_torch_function_dispatch_follows_disabled_torch_function():
    def fn(x):
        return torch.sum(_Wrapped(x), dim=0)
    compiled = symexec.compile(fn)
    x = _t(3)
    assert torch.equal(compiled(x), fn(x))
    with torch._C.DisableTorchFunction():  # no dispatch: torch's parser refuses the object, as in eager
        with pytest.raises(TypeError) as eager:
            fn(x)
        with pytest.raises(TypeError) as ours:
            compiled(x)
    assert str(ours.value) == str(eager.value)
    assert torch.equal(compiled(x), fn(x))


def test_str_of_a_new_object_runs_its_python_str_or_repr():
    # (str() of a new object broke the graph) its class's __str__, or __repr__ under object's __str__
    class CustomStr:
        def __str__(self):
            return "ok"

    class CustomRepr:
        def __init__(self, n):
            self.n = n

        def __repr__(self):
            return f"CustomRepr({self.n})"

    def fn(x):
        return x + 1, str(CustomStr()), str(CustomRepr(3))

    check(fn, torch.ones(4))
    assert symexec.explain(fn, torch.ones(4)).graph_break_count == 0


def test_str_of_an_object_whose_str_returns_a_non_str_raises_as_eager():
    class Bad:
        def __str__(self):
            return 3

    def fn(x):
        try:
            return str(Bad())
        except TypeError:
            return x + 1

    check(fn, torch.ones(2), expect_traced=False, captured=False)



class PrefixedAttributes:
    """Stores every attribute under a prefix through object's __setattr__; reads it back in __getattr__."""

    def __setattr__(self, key, value):
        super().__setattr__(f"pfx_{key}", value)

    def __getattr__(self, key):
        try:
            return self.__dict__[f"pfx_{key}"]
        except KeyError:
            raise AttributeError(key) from None


def test_own_setattr_ending_in_object_setattr_on_an_input():
    # (the store broke the graph: its replay as `obj.name = value` would run __setattr__ again)
    # replayed as object.__setattr__(obj, "pfx_y", value), once, as eager stored it
    def fn(obj):
        obj.y = obj.x + 1
        return obj.y * 2

    obj = PrefixedAttributes()
    obj.x = torch.randn(8)
    check(fn, obj)
    calls = []

    class Counted(PrefixedAttributes):
        def __setattr__(self, key, value):
            calls.append(key)
            super().__setattr__(key, value)

    compiled = symexec.compile(fn, fullgraph=True)
    fresh = Counted()
    fresh.x = torch.randn(8)
    calls.clear()
    compiled(fresh)
    assert calls == ["y"] and set(vars(fresh)) == {"pfx_x", "pfx_y"}
    torch.testing.assert_close(fresh.pfx_y, fresh.pfx_x + 1)


def test_thread_local_attributes_set_and_read_per_thread():
    # (setting an attribute of a threading.local broke the graph: its __setattr__ is C) its
    # slots are the generic ones over the calling thread's dict: stores replayed, reads guarded
    import threading

    loc = threading.local()

    def store(x, l):
        l.x = x
        return x + 1

    compiled = symexec.compile(store, fullgraph=True)
    x = torch.ones(2, 2)
    compiled(x, loc)
    assert loc.x is x

    def read(x, l):
        y = l.w * x
        l.w = y
        return l.w + 1, getattr(l, "nope", 5)

    compiled = symexec.compile(read)
    eager_loc, x = threading.local(), torch.randn(2)
    loc.w = eager_loc.w = torch.ones(2)
    assert_same(compiled(x, loc), read(x, eager_loc))
    torch.testing.assert_close(loc.w, eager_loc.w)
    results = []

    def in_another_thread():
        loc.w, loc.nope = torch.full((2,), 3.0), 7  # (this thread's own attributes)
        results.append((compiled(torch.ones(2), loc), loc.w))

    worker = threading.Thread(target=in_another_thread)
    worker.start()
    worker.join()
    (out, nope), w = results[0]
    torch.testing.assert_close(out, torch.full((2,), 4.0))
    torch.testing.assert_close(w, torch.full((2,), 3.0))
    assert nope == 7 and not hasattr(loc, "nope")


def test_str_of_an_object_with_object_repr_is_made_where_the_object_exists():
    # (str() of a new object broke the graph) object.__repr__ names the address: generated
    # code makes the text of the object it makes (or was given)
    class DefaultStr:
        pass

    def made(x):
        return x + 1, str(DefaultStr())

    compiled = symexec.compile(made, fullgraph=True)
    out, text = compiled(torch.ones(2))
    assert text.startswith(f"<{__name__}.test_str_of_an_object_with_object_repr_is_made_where_the_object_exists."
                           f"<locals>.DefaultStr object at 0x")

    def escapes(x):
        a = DefaultStr()
        return x * 2, str(a), a

    out, text, obj = symexec.compile(escapes, fullgraph=True)(torch.ones(2))
    assert text == object.__repr__(obj)

    def used(x, o):
        s = str(o)
        return x + 1, s.split(" object at")[0], s == str(o)

    check(used, torch.ones(2), DefaultStr())


def test_repr_and_formatting_of_objects_run_their_python_methods():
    # (repr() and f-strings of a new object broke the graph) __repr__, __str__, __format__ as
    # CPython's slots run them; object's __format__ is str(), object's __repr__ made at run time
    class R:
        def __repr__(self):
            return "R!"

    class S:
        def __str__(self):
            return "S!"

    class F:
        def __format__(self, spec):
            return f"F<{spec}>"

    class D:
        pass

    def fn(x):
        return (x + 1, repr(R()), f"{R()}", f"{R()!r}", f"{S()}", f"{F():>5}", format(F(), "x"),
                f"{S()!s:>4}")

    check(fn, torch.ones(1))
    assert symexec.explain(fn, torch.ones(1)).graph_break_count == 0

    def default(x):
        d = D()
        return x + 1, f"{d}", repr(d), d

    out = symexec.compile(default, fullgraph=True)(torch.ones(1))
    assert out[1] == out[2] == object.__repr__(out[3])

    def with_spec(x):
        try:
            return f"{D():>5}"
        except TypeError as e:
            return x + 1, str(e)

    check(with_spec, torch.ones(1), captured=False)  # (object.__format__'s TypeError: raised by CPython)


def test_pybind_property_of_an_object_passed_in_read_through_its_source():
    # (a property without a Python getter broke the graph) pybind11's accessor, read for real,
    # the value guarded
    def fn(x, pybind_obj):
        if pybind_obj.result:
            return torch.cos(x)
        return torch.sin(x)

    guard_info = torch._C._dynamo.guards.GuardDebugInfo
    compiled = symexec.compile(fn)
    for result in (True, False, True):  # (the object cannot be copied: compared by hand)
        obj, x = guard_info(result, ["a==1"], 0), torch.randn(4)
        assert_same(compiled(x, obj), fn(x, obj))
    assert symexec.explain(fn, torch.randn(4), guard_info(True, ["a==1"], 0)).graph_break_count == 0
