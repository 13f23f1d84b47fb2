"""Instances of list subclasses (HF's ``LogitsProcessorList`` and ``StoppingCriteriaList``):
created by the trace and passed in, their items read as a list's, their own methods,
properties, ``__call__`` and attributes run as CPython does. Each test compares with eager
(results, exceptions, the lists afterwards); graph counts with torch.compile where it
captures the same."""

import pytest
import torch

import symexec
from helpers import assert_same_graphs_as_dynamo, check, check_sequence


class Processors(list):
    """As transformers' LogitsProcessorList: a list whose call runs each item in turn."""

    def __call__(self, x):
        for processor in self:
            x = processor(x)
        return x


class Criteria(list):
    """As StoppingCriteriaList: a property over the items."""

    @property
    def max_length(self):
        for c in self:
            if isinstance(c, MaxLength):
                return c.max_length
        return None


class Scale:
    def __init__(self, factor):
        self.factor = factor

    def __call__(self, x):
        return x * self.factor


class MaxLength:
    def __init__(self, max_length):
        self.max_length = max_length


class Tagged(list):
    """With its own __init__ (calling list's through super()) and an attribute."""

    def __init__(self, items, tag):
        super().__init__(items)
        self.tag = tag

    def tagged(self):
        return f"{self.tag}:{len(self)}"


class OwnGetitem(list):
    """Overrides list's protocol: an object, its own methods run."""

    def __getitem__(self, i):
        return list.__getitem__(self, i) * 10


def _no_breaks(fn, *args):
    return symexec.explain(fn, *args).graph_break_count == 0


# -- created by the trace -------------------------------------------------------------------------

def test_constructed_appended_and_called():
    # Failed before: "constructing Processors, which has its own __new__" broke the graph.
    def f(x):
        processors = Processors()
        processors.append(Scale(2.0))
        processors.extend([Scale(3.0)])
        processors += [Scale(0.5)]
        return processors(x), len(processors), isinstance(processors, list), callable(processors)
    check(f, torch.randn(3))
    assert _no_breaks(f, torch.randn(3))  # (torch.compile raises an internal error at the +=)


def test_a_new_one_returned_is_rebuilt_with_its_class_and_attributes():
    def f(x):
        t = Tagged([Scale(2.0)], "a")
        t.extra = x.sum()
        return t, t[0](x), t.tagged()
    out = check(f, torch.randn(3))(torch.randn(3))
    assert type(out[0]) is Tagged and out[0].tag == "a" and type(out[0].extra) is torch.Tensor


def test_property_over_the_items_and_slices_are_plain_lists():
    def f(x):
        c = Criteria([MaxLength(7)])
        c.append(Scale(2.0))
        head, both = c[:1], c + [3]
        return x + c.max_length, type(head) is list, type(both) is list, type(c * 2) is list, len(both)
    check(f, torch.randn(3))
    assert _no_breaks(f, torch.randn(3))


def test_list_init_through_super_and_constructor_argument():
    def f(x):
        t = Tagged((1, 2, 3), tag="k")
        p = Processors([Scale(2.0)])
        return x * sum(t), t.tagged(), p(x), list(t)
    check(f, torch.randn(3))
    assert _no_breaks(f, torch.randn(3))


def test_missing_attribute_is_an_attribute_error():
    def f(x):
        p = Processors()
        try:
            p.nothing
        except AttributeError as e:
            return x + 1, str(e), hasattr(p, "append"), hasattr(p, "nothing")
    check(f, torch.randn(3))


# -- passed in --------------------------------------------------------------------------------------

def test_passed_in_iterated_called_and_mutated():
    # Failed before: "iterating over a Processors" and "Processors has no Python __len__".
    def f(processors, x):
        if len(processors) == 0:
            return x
        processors.append(Scale(-1.0))  # a side effect: replayed into the caller's list
        return processors(x), any(hasattr(p, "factor") for p in processors)
    check(f, Processors([Scale(2.0), Scale(3.0)]), torch.randn(3))
    assert _no_breaks(f, Processors([Scale(2.0)]), torch.randn(3))


def test_passed_in_attributes_read_and_written():
    def f(t, x):
        t.seen = t.tag * 2
        return x * len(t), t.tagged()
    check(f, Tagged([1, 2], "q"), torch.randn(3))


def test_length_and_class_are_guarded():
    def f(processors, x):
        return processors(x)
    check_sequence(f, [Processors([Scale(2.0)]), torch.ones(2)], [Processors([Scale(2.0), Scale(3.0)]), torch.ones(2)],
                   [Criteria([Scale(2.0)]), torch.ones(2)], [[Scale(2.0)], torch.ones(2)])


def test_method_assigned_to_the_class_later_retraces():
    class Local(list):
        def total(self):
            return len(self)

    def f(items, x):
        return x + items.total()

    def patch():
        Local.total = lambda self: 100

    check_sequence(f, [Local([1]), torch.ones(2)], patch, [Local([1]), torch.ones(2)])


def test_a_subclass_overriding_the_protocol_runs_its_own_methods():
    def f(items, x):
        return x + items[1]
    check(f, OwnGetitem([1, 2]), torch.randn(3))

    def g(x):
        items = OwnGetitem([1, 2])  # (constructing one breaks; its __getitem__ runs for real)
        return x + items[0]
    check(g, torch.randn(3))


def test_call_of_a_list_subclass_without_call_is_a_type_error():
    def f(c, x):
        try:
            c(x)
        except TypeError as e:
            return x, str(e)
    check(f, Criteria(), torch.randn(2), captured=False)


@pytest.mark.parametrize("op", ["slice", "add", "mul"])
def test_size_arithmetic_keeps_torch_size(op):
    # (a Size + tuple was traced as a plain tuple: `type(...) is torch.Size` differed)
    def f(x):
        s = x.shape
        out = {"slice": s[:1], "add": (1,) + s + (2,), "mul": s * 2}[op]
        return type(out) is torch.Size, out, x.reshape(out).shape if op == "slice" else None
    # symexec captures nothing here: only sizes are read (x.reshape(out).shape for slice)
    check(f, torch.randn(3, 4), captured=False)


def test_graphs_in_a_processor_loop_match_torch_compile():
    processors = Processors([Scale(2.0), Scale(3.0)])

    def f(x):
        return processors(x).relu()
    ours, _ = assert_same_graphs_as_dynamo(f, torch.randn(4))
    assert ours.graph_count == 1


def test_dict_subclass_with_call_is_callable():
    class Calls(dict):
        def __call__(self, x):
            return x * self["k"]

    def f(d, x):
        return callable(d), d(x)
    check(f, Calls(k=3.0), torch.randn(2))
    assert symexec.explain(f, Calls(k=3.0), torch.randn(2)).graph_break_count == 0


@pytest.mark.parametrize("base", [tuple, list, set, dict, object])
def test_method_replaced_on_a_builtin_subclass_retraces(base):
    # (a tuple subclass's method was read for real through its C __getattribute__, and the
    # function it found was not guarded: call 3 ran the old method, a silent wrong answer)
    class Local(base):
        def total(self):
            return 1

    def f(items, x):
        return x + items.total()

    def patch():
        Local.total = lambda self: 100

    check_sequence(f, [Local(), torch.ones(2)], patch, [Local(), torch.ones(2)])


class Merging(Processors):
    """As the LogitsProcessorList of a test of torch's: its own ``clear`` (a named method)."""

    def clear(self):
        self.cleared = True

    def pop(self, index=-1):
        return "popped"


def _merge(default_list, custom_list):
    if len(custom_list) == 0:
        return default_list
    for default in default_list:
        for custom in custom_list:
            if type(custom) is type(default):
                raise ValueError
    default_list.extend(custom_list)
    return default_list


def test_passed_in_with_its_own_named_methods_is_still_a_list():
    def fn(x, left, right):
        combined = _merge(left, right)
        right.clear()
        return combined(x), right.pop(), len(left)

    check(fn, torch.randn(8), Merging([torch.nn.ReLU(), torch.nn.Sigmoid()]), Merging([torch.nn.SiLU()]))
    check(fn, torch.randn(8), Merging([torch.nn.ReLU()]), Merging([]))
    def args():
        return torch.randn(8), Merging([torch.nn.ReLU(), torch.nn.Sigmoid()]), Merging([torch.nn.SiLU()])

    assert symexec.explain(fn, *args()).graph_break_count == 0
    assert_same_graphs_as_dynamo(fn, *args())


class Shifted(list):
    def __getitem__(self, i):
        return list.__getitem__(self, i + 1)


def test_passed_in_with_its_own_subscript_runs_it():
    def fn(x, items):
        return x * items[0], len(items)

    check(fn, torch.randn(2), Shifted([1, 2, 3]))
