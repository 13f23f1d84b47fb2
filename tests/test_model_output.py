"""Dict-like dataclasses built while tracing: transformers' ``ModelOutput`` is modelled exactly
(its dict holds the fields set to something other than None, in the order they were set);
other dataclass dicts are traced as any object. Each test compares with eager."""

import dataclasses

import pytest
import torch

from helpers import check, symexec_graphs

transformers = pytest.importorskip("transformers")
from transformers.modeling_outputs import BaseModelOutput  # noqa: E402
from transformers.utils.generic import ModelOutput  # noqa: E402


@dataclasses.dataclass
class PlainDataclassDict(dict):
    a: torch.Tensor = None
    b: torch.Tensor = None


@dataclasses.dataclass
class OwnGetitemOutput(ModelOutput):
    a: torch.Tensor = None
    b: torch.Tensor = None

    def __getitem__(self, k):
        return "own " + str(k)


def test_a_plain_dataclass_dict_is_not_a_model_output():
    # Failed before: its dict was taken to be its non-None fields (it is empty).
    def f(x):
        d = PlainDataclassDict(a=x + 1)
        return len(d), list(d.keys()), d.a * 2
    check(f, torch.ones(2), expect_traced=False)


def test_setting_a_field_attribute_adds_the_key():
    # Failed before: the object was rebuilt twice at the break, and the attribute set on one.
    def f(x):
        o = BaseModelOutput(last_hidden_state=x + 1)
        o.hidden_states = (x,)
        return len(o), o.to_tuple(), x * 2
    check(f, torch.ones(2))
    assert len(symexec_graphs(f, torch.ones(2))[1].graphs) == 1


def test_setting_an_item_sets_the_attribute():
    # Failed before: IndexError on o[1].
    def f(x):
        o = BaseModelOutput(last_hidden_state=x + 1)
        o["hidden_states"] = (x,)
        return len(o), o.hidden_states, o[1], o[-1], o[:2]
    check(f, torch.ones(2))


def test_views_are_live_and_of_ordered_dict_types():
    def f(x):
        o = BaseModelOutput(last_hidden_state=x + 1)
        keys, items = o.keys(), o.items()
        o.attentions = (x * 3,)
        return type(keys), type(items), list(keys), list(items), "attentions" in o, o.get("hidden_states", 7)
    check(f, torch.ones(2))


def test_keys_are_in_the_order_they_were_set():
    # The rebuilt object would have field order: the trace breaks instead.
    def f(x):
        o = BaseModelOutput(last_hidden_state=x + 1)
        o.attentions = (x,)
        o.hidden_states = (x * 2,)
        return list(o.keys()), o.to_tuple(), o[1]
    check(f, torch.ones(2), expect_traced=False)


def test_a_field_set_to_none_keeps_its_key():
    def f(x):
        o = BaseModelOutput(last_hidden_state=x + 1, hidden_states=(x,))
        o.hidden_states = None
        return len(o), o.hidden_states, o["hidden_states"]
    check(f, torch.ones(2), expect_traced=False)


def test_an_attribute_that_is_not_a_field():
    def f(x):
        o = BaseModelOutput(last_hidden_state=x + 1)
        o.extra = 3
        return len(o), o.extra, o.to_tuple()
    check(f, torch.ones(2), expect_traced=False)


def test_the_same_object_across_a_break():
    def f(x):
        o = BaseModelOutput(last_hidden_state=x + 1)
        same = [o, o]
        print("break")
        o.hidden_states = (x,)
        return same[0] is same[1], len(same[1]), o
    check(f, torch.ones(2))


def test_a_missing_key_raises_key_error():
    def f(x):
        o = BaseModelOutput(last_hidden_state=x + 1)
        try:
            return o["attentions"]
        except KeyError as e:
            return e.args, x * 2
    check(f, torch.ones(2))


def test_only_a_first_field_that_is_not_a_tensor():
    # ModelOutput unpacks it as (key, value) pairs: not modelled, the trace breaks.
    def f(x):
        o = BaseModelOutput(last_hidden_state=[("hidden_states", x + 1)])
        return list(o.keys()), o.last_hidden_state, x * 2
    check(f, torch.ones(2), expect_traced=False)


def test_a_subclass_with_its_own_getitem():
    def f(x):
        o = OwnGetitemOutput(a=x + 1)
        return o[0], o["a"], x * 2
    check(f, torch.ones(2), expect_traced=False)
