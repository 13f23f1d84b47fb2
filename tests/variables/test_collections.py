"""The ``collections`` types and builtin dicts in the forms PyTorch's own Dynamo tests use them:
a ``defaultdict`` passed in keyed by strings and tensors, ``defaultdict.fromkeys``, ``deque``."""

import collections

import torch

from helpers import check, check_sequence, symexec_graphs


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
