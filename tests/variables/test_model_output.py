"""Dict-like dataclasses built while tracing: transformers' ``ModelOutput`` is modelled exactly
(its dict holds the fields set to something other than None, in the order they were set);
other dataclass dicts are traced as any object. Each test compares with eager."""

import dataclasses

import pytest
import torch

import symexec
from helpers import assert_same_graphs_as_dynamo, check, symexec_graphs

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


@dataclasses.dataclass
class NestedOutput(ModelOutput):
    logits: torch.Tensor = None
    inner: BaseModelOutput = None

    def to_tuple(self):  # as CLIPOutput's: nested outputs flattened
        return tuple(v.to_tuple() if isinstance(v, ModelOutput) else v for v in self.values())


def test_a_subclass_with_its_own_to_tuple_in_one_graph():
    # Failed before: "constructing NestedOutput, which has its own __new__" (a graph break).
    def f(x):
        o = NestedOutput(logits=x * 2, inner=BaseModelOutput(last_hidden_state=x + 1))
        return o.to_tuple(), o[1], o[-1][0] * 3, o
    check(f, torch.ones(2))
    assert symexec.explain(f, torch.ones(2)).graph_break_count == 0


def test_clip_output_in_one_graph():
    from transformers.models.clip.modeling_clip import CLIPOutput
    from transformers.modeling_outputs import BaseModelOutputWithPooling

    def f(x):
        text = BaseModelOutputWithPooling(last_hidden_state=x, pooler_output=x.sum(0))
        o = CLIPOutput(logits_per_image=x * 2, logits_per_text=x.t(), text_model_output=text)
        return o.to_tuple(), o[2] * 3, o
    check(f, torch.ones(2, 3))
    assert symexec.explain(f, torch.ones(2, 3)).graph_break_count == 0


@dataclasses.dataclass(init=False)
class OwnInitOutput(ModelOutput):
    a: torch.Tensor = None

    def __init__(self, t):
        super().__init__()
        self.a = t * 2


def test_a_subclass_with_its_own_init_is_not_modelled_as_its_fields():
    # Failed before: modelled as OwnInitOutput(a=t), its __init__ never run (a wrong result).
    def f(x):
        o = OwnInitOutput(x)
        return o.a, o["a"], len(o)
    check(f, torch.ones(2), expect_traced=False)


# -- outputs passed in (what a continuation gets after a graph break) --------------------------

def test_an_output_used_across_a_break():
    # Failed before: each read after the break broke the graph again (items(), keys(), len()).
    def f(x):
        o = BaseModelOutput(last_hidden_state=x + 1, hidden_states=(x,))
        print("break")
        return o[0] * 2, o["last_hidden_state"] + 1, o.hidden_states, o.to_tuple(), len(o), o[-1]
    check(f, torch.ones(2), calls=3)
    assert symexec.explain(f, torch.ones(2)).graph_break_count == 1


def test_an_output_written_across_a_break():
    def f(x):
        o = BaseModelOutput(last_hidden_state=x + 1)
        print("break")
        o.hidden_states = (x * 2,)
        o.attentions = None
        o["last_hidden_state"] = x * 3
        return o, o.to_tuple(), list(o.keys()), o[1][0] + 1
    check(f, torch.ones(2), calls=3)
    assert symexec.explain(f, torch.ones(2)).graph_break_count == 1


def test_an_output_passed_in_is_read_in_one_graph():
    def f(o, x):
        return o[0] * x, o["last_hidden_state"] + 1, o.hidden_states, o.to_tuple(), len(o), o.attentions, "attentions" in o
    o = BaseModelOutput(last_hidden_state=torch.ones(2), hidden_states=(torch.ones(1),))
    check(f, o, torch.ones(2), calls=3)
    assert_same_graphs_as_dynamo(f, o, torch.ones(2))


def test_an_output_passed_in_is_written():
    # The writes are replayed on the real object: attributes and items, in order.
    def f(o, x):
        o.hidden_states = (x,)
        o["attentions"] = (x + 1,)
        o.last_hidden_state = None  # the attribute only: the item keeps its value
        return o["last_hidden_state"] * 2, o.last_hidden_state, o.to_tuple()
    check(f, BaseModelOutput(last_hidden_state=torch.ones(2)), torch.ones(3), calls=3)
    assert_same_graphs_as_dynamo(f, BaseModelOutput(last_hidden_state=torch.ones(2)), torch.ones(3))


def test_writes_whose_replay_would_reorder_the_keys():
    # Replayed as attribute writes, the latest last, `attentions` would come before
    # `hidden_states`: the trace breaks instead.
    def f(o, x):
        o.hidden_states = (x,)
        o.attentions = (x,)
        o.hidden_states = (x * 2,)
        return list(o.keys()), o.to_tuple(), x + 1
    check(f, BaseModelOutput(last_hidden_state=torch.ones(2)), torch.ones(3))


def test_an_item_set_to_none_on_an_output_passed_in():
    def f(o, x):
        o["hidden_states"] = None
        return list(o.keys()), o.hidden_states, x + 1
    check(f, BaseModelOutput(last_hidden_state=torch.ones(2)), torch.ones(3))


def test_one_output_passed_twice():
    def f(a, b, x):
        a.hidden_states = (x,)
        return b.hidden_states, len(b), b.to_tuple()
    o = BaseModelOutput(last_hidden_state=torch.ones(2))
    check(f, o, o, torch.ones(3), captured=False)


def test_a_clip_output_across_a_break():
    from transformers.models.clip.modeling_clip import CLIPOutput
    from transformers.modeling_outputs import BaseModelOutputWithPooling

    def f(x):
        text = BaseModelOutputWithPooling(last_hidden_state=x, pooler_output=x.sum(0))
        o = CLIPOutput(logits_per_image=x * 2, text_model_output=text)
        print("break")
        return o.to_tuple(), o[1][0] * 3, o.text_model_output.pooler_output + 1
    check(f, torch.ones(2, 3), calls=3)
    assert symexec.explain(f, torch.ones(2, 3)).graph_break_count == 1


@dataclasses.dataclass
class ScaledOutput(ModelOutput):
    logits: torch.Tensor = None

    @property
    def scale(self):
        return 2.0


def test_a_class_property_wins_over_an_input_model_outputs_instance_dict():
    """A ModelOutput passed in, with an instance-dict entry under a class property's name:
    CPython's lookup finds the property (x * 2), not the entry (x * 5)."""
    def fn(out):
        return out.logits * out.scale

    out = ScaledOutput(logits=torch.ones(3))
    out.__dict__["scale"] = 5.0
    check(fn, out)


@pytest.mark.parametrize("key", ["last_hidden_state", "attentions", "missing"])
def test_model_output_get_compiled_on_its_own(key):
    # (generate's decoding loop runs as its code and compiles what it calls: `outputs.get(...)`
    # traced ModelOutput.get itself, whose `super().get(...)` reached OrderedDict.get through
    # super(), and the frame fell back: "calling object.get on the BaseModelOutput L['self']")
    out = BaseModelOutput(last_hidden_state=torch.randn(2), attentions=(torch.randn(1),))
    check(ModelOutput.get, out, key, captured=False)
    assert symexec.explain(ModelOutput.get, out, key).graph_break_count == 0


# -- diffusers' BaseOutput: an older copy of ModelOutput, modelled where the two agree ------------


@pytest.fixture(scope="module")
def diffusers_outputs():
    """diffusers' BaseOutput and a two-field subclass (diffusers is a test extra)."""
    outputs = pytest.importorskip("diffusers.utils.outputs")

    @dataclasses.dataclass
    class TwoFields(outputs.BaseOutput):
        a: torch.Tensor = None
        b: object = None

    return outputs.BaseOutput, TwoFields


def test_a_diffusers_output_built_while_tracing(diffusers_outputs):
    # Failed before: "constructing TwoFields, a dict subclass with its own __new__ or protocol"
    # (diffusers' UNet2DModel broke once at its return, where torch.compile does not).
    _, TwoFields = diffusers_outputs

    def f(x):
        o = TwoFields(a=x + 1)
        return o, o.a * 2, o[0], o["a"], o.to_tuple(), len(o), list(o.keys()), "b" in o, o.get("b")
    check(f, torch.ones(2))
    assert_same_graphs_as_dynamo(f, torch.ones(2))


class _Distribution:
    """A non-tensor lone first field (diffusers' AutoencoderKLOutput holds a distribution)."""

    def __init__(self, mean):
        self.mean = mean


def test_a_diffusers_output_of_a_lone_object_keeps_it_as_its_item(diffusers_outputs):
    # Failed before (a break): transformers' ModelOutput would try to unpack it as key/value
    # pairs; diffusers' BaseOutput unpacks only a dict.
    _, TwoFields = diffusers_outputs

    def f(x):
        o = TwoFields(b=None, a=None)
        p = TwoFields(_Distribution(x * 2))
        return len(o), p.a.mean + 1, len(p), list(p.keys())
    check(f, torch.ones(2))
    assert_same_graphs_as_dynamo(f, torch.ones(2))


def test_a_diffusers_output_of_a_lone_dict_is_unpacked(diffusers_outputs):
    _, TwoFields = diffusers_outputs

    def f(x):
        o = TwoFields({"a": x, "b": 3})
        return len(o), list(o.keys()), o.a, x + 1
    check(f, torch.ones(2))


def test_setting_an_unset_field_of_a_diffusers_output_adds_no_item(diffusers_outputs):
    # diffusers' __setattr__ updates an item only when the key is there (transformers' whenever
    # the name is a field): built while tracing or passed in, the item stays out.
    _, TwoFields = diffusers_outputs

    def built(x):
        o = TwoFields(a=x)
        o.b = x * 2
        o.a = x * 3
        return len(o), list(o.keys()), o.b, o["a"]

    def passed(o, x):
        o.b = x * 2
        o.a = x + 1
        return len(o), list(o.keys()), o.b, o["a"]
    check(built, torch.ones(2))
    check(passed, TwoFields(a=torch.zeros(2)), torch.ones(2))
