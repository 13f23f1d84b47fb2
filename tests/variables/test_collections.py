"""The ``collections`` types and builtin dicts in the forms PyTorch's own Dynamo tests use them:
a ``defaultdict`` passed in keyed by strings and tensors, ``defaultdict.fromkeys``, ``deque``."""

import collections
import typing

import torch

import symexec
from helpers import check, check_sequence, dynamo_graphs, symexec_graphs


def _t(*shape):
    return torch.randn(*shape) if shape else torch.randn(3)


# --- dicts keyed by constants and tensors -----------------------------------------------------


def test_defaultdict_input_keyed_by_strings_and_a_parameter():
    param = torch.nn.Parameter(torch.ones(2, 2))
    for factory in (list, dict, tuple, set, lambda: {}):
        dd = collections.defaultdict(factory)
        dd["a"], dd[param], dd["c"], dd["b"] = _t(), 123, _t(), factory()

        def fn(x, dd=dd):
            dd["a"] = x + 1
            dd[param] = 124
            dd["c"] = x * 2
            return dd["b"], dd["new"], dd[param], len(dd)

        check(fn, _t(), calls=1)
        assert symexec_graphs(fn, _t())[1].graph_count == 1  # (no break: as under torch.compile)


def test_dict_keyed_by_strings_and_tensors_changes_between_calls():
    a, b = _t(), _t()
    d = {"s": 1, a: 2}

    def fn(x):
        return x + d["s"] + d.get(a, 10) + d.get(b, 20), list(d.values())

    def swap():
        d.pop(a)
        d[b] = 5

    def same_shapes():
        d.clear()
        d.update({"s": 2, a: 3})

    check_sequence(fn, [_t()], swap, [_t()], same_shapes, [_t()])


def test_dict_keyed_by_strings_and_tensors_iterated_and_mutated():
    a = _t()

    def fn(d, x):
        total = x
        for k, v in d.items():
            total = total + v + (k if isinstance(k, torch.Tensor) else 0)
        d["t"] = total
        keys = list(d)
        del d[keys[1]]
        return total, len(d), [isinstance(k, str) for k in d.keys()]

    check(fn, {"s": _t(), a: _t()}, _t())


def test_missing_keys_of_a_dict_keyed_by_strings_and_tensors():
    a, b = _t(), _t()
    d = {"s": 1, a: 2}

    def fn(x, key):
        try:
            del d[key]
        except KeyError as e:
            return x + 1, str(e)
        return x

    check_sequence(fn, [_t(), "z"], [_t(), "z"])

    def pops(d, x):
        key = list(d)[1]
        return x + d.pop(x, 3), d.pop(key), d.get(key), d

    check(pops, {"s": 1, a: 2, "t": b}, _t())


# --- fromkeys and setdefault ------------------------------------------------------------------


def test_defaultdict_fromkeys_then_setdefault():
    def fn(x, key):
        d = collections.defaultdict.fromkeys("a", "b")
        d["a"] = 1
        d.setdefault(key, 10)
        d.setdefault("n")
        try:
            d["missing"]  # (no factory: a KeyError)
        except KeyError:
            x = x * 2
        return x + d[key], d, d.default_factory, type(d)

    check(fn, _t(), "a")
    check(fn, _t(), "c")


def test_fromkeys_of_each_dict_class():
    def fn(x, y):
        d = dict.fromkeys(["a", "b"])
        d1 = dict.fromkeys(d, x + 1)
        d2 = collections.defaultdict.fromkeys(iter(d1), x - 2)
        d3 = collections.OrderedDict.fromkeys(("a", "b"), value=y)
        d4 = dict.fromkeys([x, y], 0)
        return d1["a"] * d2["b"] + d2["a"] + d1["b"] + d3["a"] + d3["b"], d2, d3, len(d4), d4[y]

    check(fn, _t(), _t())


# --- deque ------------------------------------------------------------------------------------


def test_deque_methods():
    def fn(a, b):
        d = collections.deque([a, b])
        d.append(a + 1)
        d.extend([a, b])
        d.insert(0, "foo")
        tmp = d.pop()
        another = collections.deque([tmp])
        d.extendleft(another)
        another.clear()
        d.extend(another)
        d[2] = "setitem"
        d = d.copy()
        d.append(d.popleft())
        d.rotate(2)
        d.rotate(-1)
        del d[1]
        d.extend(collections.deque())
        return d, len(d), d.maxlen, d.index("setitem"), d.count("foo"), [type(x) for x in d]

    check(fn, _t(), _t())


def test_deque_extendleft_takes_a_map_one_at_a_time():
    def fn(a, b, c):
        d = collections.deque([a])
        d.extendleft(map(lambda x: x + 1, [b, c]))
        return d, list(reversed(d))

    check(fn, _t(), _t(), _t())


def test_bounded_deque():
    def fn(x):
        d = collections.deque(range(5), maxlen=3)
        d.append(x)
        d.appendleft(7)
        d.extend([8, 9])
        d.extendleft([1, 2])
        try:
            d.insert(0, 1)
        except IndexError as e:
            x = x + len(str(e))
        try:
            collections.deque().pop()
        except IndexError as e:
            x = x + len(str(e))
        try:
            d["a"]
        except TypeError as e:
            x = x + len(str(e))
        return d, d.maxlen, x

    check(fn, _t())


def test_deque_passed_in_is_changed_in_place():
    def fn(d, x):
        d.append(x + 1)
        d.appendleft(x * 2)
        first = d.popleft()
        return first + d[0] + d[-1], len(d), d.maxlen

    check(fn, collections.deque([_t(), _t()]), _t())
    check(fn, collections.deque([_t(), _t(), _t()], maxlen=3), _t())


def test_deque_list_index_with_bounds():
    for index in ([], [2], [0, 3]):
        def fn(t, index=index):
            return t + collections.deque([1, 2, 3, 4]).index(3, *index)

        check(fn, torch.zeros(1))


def test_structseq_made_while_tracing_in_a_pytree():
    def fn(x):
        tree = {
            "a": [x, x - 1],
            "c": (x, 3.0, collections.deque([0.0, -x, 1, 2], maxlen=3)),
            "d": collections.OrderedDict({"e": torch.return_types.qr((2 * x, None)),
                                          "m": torch.return_types.max([x, x.argmax()])}),
        }
        leaves, spec = torch.utils._pytree.tree_flatten(tree)
        back = torch.utils._pytree.tree_unflatten([leaf * 2 if isinstance(leaf, torch.Tensor) else leaf
                                                   for leaf in leaves], spec)
        return leaves, back, tree["d"]["e"].Q, type(tree["d"]["m"]), type(back["d"]["e"])

    check(fn, _t(3, 2))
    assert symexec_graphs(fn, _t(3, 2))[1].graph_count == 1


def test_tree_map_over_several_trees_with_deques():
    def fn(x, y):
        a = {"k": [x, collections.deque([x + 1, 2.0], maxlen=4)], "t": (x, 3)}
        b = {"k": [y, collections.deque([y * 2, 5.0], maxlen=4)], "t": (y, 4)}
        return torch.utils._pytree.tree_map(lambda p, q: p + q, a, b)

    check(fn, _t(), _t())
    assert symexec_graphs(fn, _t(), _t())[1].graph_count == 1


def test_dict_keyed_by_modules_classes_and_typevars():
    import typing

    T = typing.TypeVar("T")
    m1, m2 = torch.nn.Linear(3, 3), torch.nn.ReLU()
    d = {m1: 1, float: torch.float32, T: _t(), "s": 2}

    def fn(x, key):
        return x * d[key] + d["s"], d[float], d[T], len(d), [k is m1 for k in d]

    def swap():  # the same kinds of keys, other objects: retraced
        d.pop(m1)
        d[m2] = 4

    check_sequence(fn, [_t(), m1], [_t(), "s"], swap, [_t(), m2], [_t(), "s"])
    assert symexec_graphs(fn, _t(), "s")[1].graph_count == 1


Point = collections.namedtuple("Point", ["x", "y"])


def test_class_of_a_tuple_list_and_namedtuple_remade():
    def fn(x):
        updated = [v + 1 for v in x]
        return x.__class__(*updated), updated.__class__(updated), (1, 2).__class__, x.__class__ is Point

    check(fn, Point(_t(), _t()))
    assert symexec_graphs(fn, Point(_t(), _t()))[1].graph_count == 1


class _Pair(typing.NamedTuple):
    first: torch.Tensor
    second: torch.Tensor


class _PairSubclass(_Pair):
    pass


def test_attributes_set_on_a_namedtuple_subclass_instance():
    def fn(a, b):
        t = _PairSubclass(a, b)
        t.x = a
        t.z = b
        t.z = a
        return hasattr(t, "x"), t.x + t.first, t.z, t

    check(fn, _t(), _t())
    assert symexec_graphs(fn, _t(), _t())[1].graph_count == 1

    def returned(a, b):
        t = _PairSubclass(a, b)
        t.x = a * 2
        return t

    compiled = symexec.compile(returned, fullgraph=True)
    a, b = _t(), _t()
    out = compiled(a, b)
    assert type(out) is _PairSubclass and torch.equal(out.x, a * 2) and out.first is a


def test_keys_views_compared_and_combined_whatever_the_values():
    def fn(x, a, b):
        d = {3: x}
        keys = d.keys()
        d[4] = x + 1
        total = torch.zeros(1)
        for k in sorted(a.keys() | b.keys()):
            total = total + a.get(k, 0) + b.get(k, 0)
        return 3 in keys, 5 in keys, {3: 2, 4: "aa"}.keys() == keys, a.keys() & b.keys(), a.keys() - b.keys(), \
            a.keys() ^ b.keys(), a.keys() <= b.keys(), total

    check(fn, _t(), {"p": _t(1), "q": _t(1)}, {"q": _t(1), "r": _t(1)})
    assert symexec_graphs(fn, _t(), {"p": _t(1)}, {"q": _t(1)})[1].graph_count == 1


def test_missing_attribute_of_a_size():
    def fn(x):
        if hasattr(x.shape, "_fields"):
            return x + 1
        return x - 1, getattr(x.size(), "names", None)

    check(fn, _t(2, 3))
    assert symexec_graphs(fn, _t(2, 3))[1].graph_count == 1


def test_size_as_a_dict_key():
    def fn(x, cached):
        if x.shape not in cached:
            cached[x.shape] = x
        return x + cached[x.shape], len(cached), [type(k) for k in cached]

    cached = {}
    check_sequence(fn, [_t(2, 3), cached], [_t(2, 3), cached], [_t(3, 2), cached])
    _, backend = symexec_graphs(fn, _t(2, 3), {torch.Size([2, 3]): _t(2, 3), (1, 2): 0})
    assert backend.graph_count == 1


def test_default_factory_of_a_defaultdict_read():
    # Made by the trace (with a factory, or by fromkeys: None) or passed in: no graph break.
    def fn(x, given):
        made = collections.defaultdict(list)
        keys = collections.defaultdict.fromkeys("ab", 1)
        return x + 1, made.default_factory, keys.default_factory, given.default_factory
    check(fn, _t(), collections.defaultdict(int, {"a": 1}))
    assert not symexec.explain(fn, _t(), collections.defaultdict(int)).break_reasons


# --------------------------------------------------------------------------------------------
# collections.namedtuple called inside: a class per call, as in eager


def _plain(value):
    """A named tuple as data that compares across calls: each call makes its own class."""
    return tuple(value), type(value).__name__, type(value).__module__, type(value)._fields


def test_namedtuple_made_inside_and_used():
    # (namedtuple() ran its eval() and broke the graph) made now, its instances traced
    def fn(a, b):
        mytuple = collections.namedtuple("mytuple", ["x", "y", "xy"])
        tmp = mytuple(a, b, a + b)
        return _plain(mytuple(tmp.x, tmp[1], tmp.xy + b))

    def with_defaults(a, b):
        mytuple = collections.namedtuple("mytuple", ["x", "y", "xy"], defaults=(None, 1, None))
        tmp = mytuple(a, xy=b)
        return _plain(mytuple(tmp.x, tmp[1], tmp.xy + b)), mytuple._field_defaults

    for f in (fn, with_defaults):
        check(f, _t(), _t())
        assert symexec.explain(f, _t(), _t()).graph_break_count == 0
        # (graphs only: torch.compile gives the class torch's own module as its __module__)
        assert symexec_graphs(f, _t(), _t())[1].op_counts() == dynamo_graphs(f, _t(), _t())[1].op_counts()


def test_namedtuple_class_made_inside_escapes_as_a_new_class_per_call():
    # the class and its instances leave the call: one class per call, its instances of it
    def fn(a):
        P = collections.namedtuple("P", "x y")
        p = P(a, 2)
        q = p._replace(y=a + 1)
        return P, p, q, type(p)

    compiled = symexec.compile(fn, fullgraph=True)
    x = _t()
    first, second = compiled(x), compiled(x)
    for P, p, q, kind in (first, second):
        assert kind is P and type(p) is P and type(q) is P and P.__module__ == __name__
        assert p.x is x and p.y == 2 and torch.equal(q.y, x + 1)
    assert first[0] is not second[0]


def test_namedtuple_made_inside_across_a_graph_break():
    def fn(a):
        P = collections.namedtuple("P", ["x", "y"], defaults=(0,))
        p = P(a + 1)
        symexec.graph_break()
        return _plain(P(p.x * 2, p.y)), type(p) is P

    check(fn, _t())


def test_namedtuple_made_inside_with_bad_fields_raises_as_eager():
    def fn(a):
        try:
            collections.namedtuple("P", ["x", "x"])
        except ValueError as e:
            return a + 1, str(e)

    check(fn, _t())


def test_namedtuple_class_made_inside_set_attribute_breaks():
    def fn(a):
        P = collections.namedtuple("P", "x")
        P.extra = 3
        return _plain(P(a + 1)), P.extra

    check(fn, _t())
