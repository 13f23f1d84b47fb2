"""Instances of dict subclasses (config objects) and frozen dataclasses, passed in and created by
the trace: attribute reads and writes as CPython's lookup does them. Each test compares with
eager; graph counts with torch.compile where it captures the same."""

import collections
import dataclasses

import torch

import symexec
from helpers import assert_same, assert_same_graphs_as_dynamo, check, check_sequence


class AttrDict(dict):
    __getattr__ = dict.__getitem__
    __setattr__ = dict.__setitem__


class FrozenDict(collections.OrderedDict):
    """As diffusers' configuration dict."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for key, value in self.items():
            setattr(self, key, value)
        self.__frozen = True

    def __setattr__(self, name, value):
        if hasattr(self, "__frozen") and self.__frozen:
            raise Exception(f"You cannot use ``__setattr__`` on a {self.__class__.__name__} instance.")
        super().__setattr__(name, value)

    def __setitem__(self, name, value):
        if hasattr(self, "__frozen") and self.__frozen:
            raise Exception(f"You cannot use ``__setitem__`` on a {self.__class__.__name__} instance.")
        super().__setitem__(name, value)


class Config(dict):
    scale = 1.0

    @property
    def doubled(self):
        return self["shift"] * 2


def _config(**attributes):
    c = Config(shift=1.5)
    for name, value in attributes.items():
        setattr(c, name, value)
    return c


CONFIG = AttrDict(scale=2.0, shift=1.0)


def _no_breaks(fn, *args):
    return symexec.explain(fn, *args).graph_break_count == 0


# -- passed in ------------------------------------------------------------------------------------

def test_an_attr_dict_passed_in():
    # Failed before: "reading attribute 'scale' of the dict" broke the graph.
    def f(x):
        try:
            CONFIG.missing
        except KeyError as e:
            return x * CONFIG.scale + CONFIG["shift"], e.args
    check(f, torch.ones(2))
    assert _no_breaks(f, torch.ones(2))


def test_a_frozen_dict_passed_in():
    def f(c, x):
        return x * c.scale + c["shift"], c.get("scale"), len(c)
    check(f, FrozenDict(scale=2.0, shift=1.0), torch.ones(2))
    assert_same_graphs_as_dynamo(f, FrozenDict(scale=2.0, shift=1.0), torch.ones(2))
    assert _no_breaks(f, FrozenDict(scale=2.0, shift=1.0), torch.ones(2))


def test_instance_attributes_of_a_dict_passed_in():
    def f(c, x):
        return x * c.scale + c.doubled, getattr(c, "tag", "none"), hasattr(c, "other")
    check(f, _config(scale=3.0, tag="a"), torch.ones(2))
    assert_same_graphs_as_dynamo(f, _config(scale=3.0, tag="a"), torch.ones(2))


def test_an_instance_attribute_is_guarded():
    # The instance attribute is re-read, and one added later shadows the class attribute.
    def f(c, x):
        return x * c.scale
    check_sequence(f, [_config(scale=3.0), torch.ones(2)], [_config(scale=4.0), torch.ones(2)],
                   [_config(), torch.ones(2)], [_config(scale=5.0), torch.ones(2)])


def test_an_attribute_written_on_a_dict_passed_in():
    def f(c, x):
        c.tag = "written"
        return x * 2, c.tag
    eager_c, compiled_c = _config(), _config()
    expected = f(eager_c, torch.ones(2))
    assert_same(expected, symexec.compile(f)(compiled_c, torch.ones(2)))
    assert vars(eager_c) == vars(compiled_c) == {"tag": "written"}
    assert _no_breaks(f, _config(), torch.ones(2))


# -- created by the trace -------------------------------------------------------------------------

def test_an_attr_dict_created():
    # Failed before: "constructing AttrDict, which has its own __new__".
    def f(x):
        c = AttrDict(scale=2.0)
        c.shift = 1.0  # an item
        try:
            c.missing
        except KeyError as e:
            return x * c.scale + c["shift"], e.args, c
    check(f, torch.ones(2))
    assert _no_breaks(f, torch.ones(2))


def test_a_frozen_dict_created():
    def f(x):
        c = FrozenDict(scale=2.0, shift=1.0)
        return x * c.scale + c["shift"], list(c.keys()), c
    check(f, torch.ones(2))
    assert_same_graphs_as_dynamo(f, torch.ones(2))
    assert _no_breaks(f, torch.ones(2))
    out = symexec.compile(f)(torch.ones(2))[2]
    assert type(out) is FrozenDict and vars(out) == vars(f(torch.ones(2))[2])


def test_a_dict_subclass_created_with_attributes():
    def f(x):
        c = Config(shift=2.0)
        c.scale = 3.0
        c["extra"] = x
        return x * c.scale + c.doubled, c
    check(f, torch.ones(2))
    assert_same_graphs_as_dynamo(f, torch.ones(2))
    out = symexec.compile(f)(torch.ones(2))[1]
    assert type(out) is Config and vars(out) == {"scale": 3.0}


def test_a_dict_subclass_with_its_own_iter_is_an_object():
    class Reversed(dict):
        def __iter__(self):
            return iter(list(dict.keys(self))[::-1])

    def f(x):
        c = Reversed(a=1, b=2)
        return list(c), x + 1
    check(f, torch.ones(2))


# -- frozen dataclasses ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Frozen:
    a: torch.Tensor
    b: int = 2


def test_a_frozen_dataclass_created():
    # Failed before: its __init__'s object.__setattr__(self, ...) broke the graph.
    def f(x):
        d = Frozen(x + 1)
        return d.a * d.b, d
    check(f, torch.ones(2))
    assert_same_graphs_as_dynamo(f, torch.ones(2))


def test_a_frozen_dataclass_passed_in():
    def f(d, x):
        return d.a * d.b + x
    check(f, Frozen(torch.ones(2), 3), torch.ones(2))
    assert_same_graphs_as_dynamo(f, Frozen(torch.ones(2), 3), torch.ones(2))


def test_assigning_a_field_of_a_frozen_dataclass_created():
    def f(x):
        d = Frozen(x + 1)
        try:
            d.b = 5
        except dataclasses.FrozenInstanceError as e:
            return d.a * 2, str(e), d.b
    check(f, torch.ones(2))
    assert_same_graphs_as_dynamo(f, torch.ones(2))


def test_assigning_a_field_of_a_frozen_dataclass_passed_in():
    # Failed before: "setting Frozen.b runs Python code" (no graph at all).
    def f(d, x):
        try:
            del d.a
        except dataclasses.FrozenInstanceError as e:
            deleted = str(e)
        try:
            d.b = 5
        except dataclasses.FrozenInstanceError as e:
            return x * 2, str(e), deleted, d.b
    check(f, Frozen(torch.ones(2), 3), torch.ones(2))
    assert_same_graphs_as_dynamo(f, Frozen(torch.ones(2), 3), torch.ones(2))


def test_an_uncaught_frozen_instance_error():
    def f(d, x):
        d.b = x
    check(f, Frozen(torch.ones(2), 3), torch.ones(2), expect_traced=False)


class _ItemsModelOutput(collections.OrderedDict):
    """A ModelOutput as older HuggingFace wrote it: string keys through ``dict(self.items())``."""

    def __getitem__(self, k):
        if isinstance(k, str):
            inner_dict = dict(self.items())
            return inner_dict[k]
        return self.to_tuple()[k]

    def __setattr__(self, name, value):
        if name in self.keys() and value is not None:
            super().__setitem__(name, value)
        super().__setattr__(name, value)

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setattr__(key, value)

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


def test_ordered_dict_subclass_reading_through_dict_of_its_items():
    # (dict(self.items()) broke the graph: whether a dict view has `keys` was not known)
    def by_key(x):
        return x["a"] + 1

    def by_attribute(x):
        return x.a + 1

    def through_tuple(x):
        return x.to_tuple()[0] + 1

    def by_index(x):
        return x[0] + 1

    for fn in (by_key, by_attribute, through_tuple, by_index):
        ex = _ItemsModelOutput(a=torch.randn(10), b=torch.randn(10), c=torch.randn(10))
        check(fn, ex)
        assert symexec.explain(fn, ex).graph_break_count == 0
        assert_same_graphs_as_dynamo(fn, ex)


def test_dict_of_a_dict_view():
    def fn(d):
        return dict(d.items())["a"] + 1, dict(d.keys() and d.items()), hasattr(d.values(), "keys")

    check(fn, {"a": torch.ones(2), "b": 3})
    check(fn, collections.OrderedDict(a=torch.ones(2)))


class _ReversedDict(dict):
    def __iter__(self):
        return reversed(list(self.keys()))


ReversedDict = _ReversedDict


class ReversedKeysDict(ReversedDict):
    def keys(self):
        return ["bar"]


def test_passed_in_with_its_own_iter_reads_items_natively_and_iterates_with_it():
    def fn(x, d):
        return x * d["foo"] * d["bar"], list(d), [k for k in d], dict(d), {**d}, len(d), "foo" in d, list(d.keys())

    check(fn, torch.randn(4), ReversedDict({"foo": 1, "bar": 2}))
    assert symexec.explain(fn, torch.randn(4), ReversedDict({"foo": 1, "bar": 2})).graph_break_count == 0
    check(fn, torch.randn(4), ReversedKeysDict({"foo": 1, "bar": 2}))
    assert_same_graphs_as_dynamo(lambda x, d: x * d["foo"] * d["bar"], torch.randn(4), ReversedDict({"foo": 1, "bar": 2}))


class _OneIterList(list):
    def __iter__(self):
        return iter([0])


def test_subclass_with_its_own_iter_read_by_key_and_length():
    # (d["foo"] broke the graph: "no Python __getitem__") the builtin's own lookup, read
    # through its source; a key gone or another length retraces
    def fn(x, d):
        return x * d["foo"] * d["bar"], len(d)

    check_sequence(fn, [torch.randn(4), _ReversedDict({"foo": 1, "bar": 2})],
                   [torch.randn(4), _ReversedDict({"foo": 3, "bar": 2, "z": 0})], [torch.randn(4), _ReversedDict({"bar": 2})])
    assert symexec.explain(fn, torch.randn(4), _ReversedDict({"foo": 1, "bar": 2})).graph_break_count == 0

    def by_index(x, items):
        return x * items[0] + items[-1], len(items)

    check_sequence(by_index, [torch.randn(4), _OneIterList([1, 2])], [torch.randn(4), _OneIterList([3])],
                   [torch.randn(4), _OneIterList([])])
