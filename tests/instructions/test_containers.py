"""Containers: BUILD_*, LIST_/SET_/MAP_ appends, DICT_UPDATE/DICT_MERGE, unpacking, f-strings,
subscripts and slices (BINARY_SUBSCR, BUILD_SLICE, STORE_SUBSCR, DELETE_SUBSCR)."""

import collections.abc

import pytest
import torch

import symexec
from helpers import check, check_sequence


def _t(*shape):
    return torch.randn(*shape)


def _kw(**kwargs):
    return kwargs


def _pos(*args):
    return args


# --- BUILD_TUPLE / BUILD_LIST / BUILD_MAP / BUILD_CONST_KEY_MAP / BUILD_SET / BUILD_STRING -----------


def test_build_tuple():
    def fn(x, y):
        return (x, y, x + y)

    check(fn, _t(2), _t(2))


def test_build_list():
    def fn(x, y):
        items = [x, y, x * y]
        return items

    check(fn, _t(2), _t(2))


def test_build_empty_containers():
    def fn(x):
        return [], (), {}, set(), x

    check(fn, _t(1), captured=False)


def test_build_map_with_computed_keys():
    def fn(x, k):
        return {k: x, k + "2": x * 2}

    check(fn, _t(2), "key")


def test_build_const_key_map():
    def fn(x, y):
        return {"a": x, "b": y, "c": 3}

    check(fn, _t(2), _t(2), captured=False)


def test_build_map_int_keys():
    def fn(x):
        d = {0: x, 1: x + 1}
        return d[0] + d[1]

    check(fn, _t(2))


def test_build_set_of_constants():
    def fn(a, b):
        return {a, b, 3}, {1, 2, 3, 4}

    check(fn, 1, 2, captured=False)


def test_build_string_fstring():
    def fn(name, n, x):
        return f"{name}-{n}-{n + 1}", x

    check(fn, "abc", 3, _t(1), captured=False)


def test_nested_containers():
    def fn(x):
        return {"a": [x, (x + 1, {"b": x * 2})], "c": ()}

    check(fn, _t(2))


def test_container_literal_of_constants():
    def fn(x):
        return [1, 2, 3], (4, 5, 6), x

    check(fn, _t(1), captured=False)


# --- LIST_APPEND / LIST_EXTEND / LIST_TO_TUPLE / SET_ADD / SET_UPDATE / MAP_ADD -----------------------


def test_list_comprehension_list_append():
    def fn(x):
        return [x * i for i in range(3)]

    check(fn, _t(2))


def test_list_extend_with_star():
    def fn(a, b, x):
        return [*a, x, *b]

    check(fn, [1, 2], (3, 4), _t(2), captured=False)


def test_list_to_tuple_with_star():
    def fn(a, x):
        return (*a, x, *a)

    check(fn, [_t(1), 2], _t(2), captured=False)


def test_star_of_tensor_in_tuple():
    def fn(x):
        return (*x,)

    check(fn, _t(3, 2))


def test_set_comprehension_set_add():
    def fn(items):
        return {i % 3 for i in items}

    check(fn, [1, 2, 3, 4, 5], captured=False)


def test_set_update_from_star():
    def fn(a, b):
        return {*a, *b}

    check(fn, [1, 2], (2, 3), captured=False)


def test_dict_comprehension_map_add():
    def fn(x, keys):
        return {k: x * i for i, k in enumerate(keys)}

    check(fn, _t(2), ["a", "b", "c"])


def test_dict_update_merge_literal():
    def fn(a, b):
        return {**a, **b}

    check(fn, {"x": 1, "y": _t(2)}, {"y": 3, "z": 4}, captured=False)


def test_dict_update_with_extra_keys():
    def fn(a, x):
        return {"first": x, **a, "last": x + 1}

    check(fn, {"m": 1}, _t(2))


def test_dict_merge_in_call():
    def fn(a, b):
        return _kw(**a, **b)

    check(fn, {"x": _t(2)}, {"y": 2}, captured=False)


def test_dict_merge_duplicate_keyword_raises():
    def fn(a, b):
        return _kw(**a, **b)

    check(fn, {"x": 1}, {"x": 2}, expect_traced=False)


def test_call_with_star_args_list_to_tuple():
    def fn(a, x):
        return _pos(*a, x)

    check(fn, [1, 2], _t(2), captured=False)


# --- UNPACK_SEQUENCE / UNPACK_EX --------------------------------------------------------------------


def test_unpack_tuple():
    def fn(t):
        a, b, c = t
        return c, b, a

    check(fn, (_t(1), 2, "s"), captured=False)


def test_unpack_list():
    def fn(items):
        a, b = items
        return a * b

    check(fn, [_t(2), _t(2)])


def test_unpack_nested():
    def fn(t):
        (a, b), c = t
        return a + b + c

    check(fn, ((_t(2), _t(2)), _t(2)))


def test_unpack_tensor_rows():
    def fn(x):
        a, b = x
        return a - b

    check(fn, _t(2, 3))


def test_unpack_dict_keys():
    def fn(d):
        a, b = d
        return a + b

    check(fn, {"p": 1, "q": 2}, captured=False)


def test_unpack_tuple_from_function_result():
    def fn(x):
        a, b = x.max(dim=0)
        return a, b

    check(fn, _t(3, 2))


def test_unpack_ex_star_end():
    def fn(items):
        a, *rest = items
        return a, rest

    check(fn, [_t(1), 2, 3], captured=False)


def test_unpack_ex_star_middle():
    def fn(items):
        a, *mid, z = items
        return a, mid, z

    check(fn, (1, 2, 3, 4, 5), captured=False)


def test_unpack_ex_empty_star():
    def fn(items):
        *head, last = items
        return head, last

    check(fn, [_t(1)], captured=False)


def test_unpack_ex_tensor():
    def fn(x):
        first, *others = x
        return first, others

    check(fn, _t(3, 2))


def test_unpack_wrong_count_raises():
    def fn(items):
        a, b = items
        return a

    check(fn, [1, 2, 3], expect_traced=False)


# --- f-strings / FORMAT_VALUE ----------------------------------------------------------------------


def test_format_value_conversions():
    def fn(s, n):
        return f"{s!r} {s!s} {s!a} {n}"

    check(fn, "hé", 3, captured=False)


def test_format_value_with_spec():
    def fn(n, f):
        return f"{n:>5}|{f:.3f}|{n:#x}|{f:e}"

    check(fn, 42, 3.14159, captured=False)


def test_format_value_nested_spec():
    def fn(f, width):
        return f"{f:{width}.2f}"

    check(fn, 2.5, 8, captured=False)


def test_format_tensor_shape_in_fstring():
    def fn(x):
        return f"shape={tuple(x.shape)} dtype={x.dtype}", x + 1

    check(fn, _t(2, 3))


def test_str_format_method():
    def fn(x, name):
        return "{}:{}".format(name, x.dim()), x

    check(fn, _t(2), "n", captured=False)


# --- BINARY_SUBSCR / BUILD_SLICE on tensors ---------------------------------------------------------


@pytest.mark.parametrize(
    "index",
    [
        0,
        -1,
        slice(1, None),
        slice(None, None, 2),
        slice(-2, None),
        (0, 1),
        (slice(None), 0),
        (Ellipsis, 1),
        (None, 0),
    ],
    ids=["int", "neg", "slice_from", "step", "neg_slice", "pair", "column", "ellipsis", "newaxis"],
)
def test_tensor_getitem_argument(index):
    def fn(x, i):
        return x[i]

    check(fn, _t(4, 3), index)


def test_tensor_slicing_syntax():
    def fn(x):
        return x[1:3], x[:, 0], x[..., -1], x[::2, 1:], x[None], x[0, 1]

    check(fn, _t(4, 3))


def test_tensor_index_with_tensor():
    def fn(x, idx):
        return x[idx]

    check(fn, _t(5), torch.tensor([0, 2, 4]))


def test_tensor_index_with_bool_mask_shape():
    def fn(x):
        return x[x.shape[0] - 1]

    check(fn, _t(3, 2))


def test_tensor_index_with_list():
    def fn(x):
        return x[[0, 2]]

    check(fn, _t(4))


# --- subscripts on lists, tuples, dicts, strings, ranges ------------------------------------------------


def test_list_getitem_and_slices():
    def fn(items):
        return items[0], items[-1], items[1:], items[::-1], items[1:3]

    check(fn, [_t(1), 2, "c", 4.0], captured=False)


def test_tuple_getitem_and_slices():
    def fn(t):
        return t[1], t[-2:], t[::2]

    check(fn, (1, _t(2), 3, 4), captured=False)


def test_dict_getitem():
    def fn(d):
        return d["a"] * d["b"]

    check(fn, {"a": _t(2), "b": 3})


def test_dict_missing_key_raises():
    def fn(d):
        return d["missing"]

    check(fn, {"a": 1}, expect_traced=False)


def test_list_index_out_of_range_raises():
    def fn(items):
        return items[5]

    check(fn, [1, 2], expect_traced=False)


def test_str_and_range_subscripts():
    def fn(s):
        r = range(10)
        return s[1], s[-2:], r[3], r[2:8:2]

    check(fn, "hello", captured=False)


def test_slice_with_variable_bounds():
    def fn(items, a, b):
        return items[a:b]

    check(fn, [1, 2, 3, 4, 5], 1, 4, captured=False)


def test_tuple_index_from_shape():
    def fn(x):
        return x.shape[-1], x.shape[:1], x.size()[1:]

    check(fn, _t(2, 3, 4), captured=False)


# --- STORE_SUBSCR / DELETE_SUBSCR ------------------------------------------------------------------


def test_store_subscr_local_list():
    def fn(x):
        items = [0, 0, 0]
        items[1] = x
        items[-1] = x * 2
        return items

    check(fn, _t(2))


def test_store_subscr_local_dict():
    def fn(x):
        d = {}
        d["a"] = x
        d["b"] = d["a"] + 1
        return d

    check(fn, _t(2))


def test_store_subscr_input_list():
    def fn(items, x):
        items[0] = x + 1
        return x

    check(fn, [None, 2], _t(2))


def test_store_subscr_input_dict():
    def fn(d, x):
        d["new"] = x * 3
        d["old"] = d["old"] + 1
        return x

    check(fn, {"old": 1}, _t(2))


def test_store_slice_input_list():
    def fn(items, x):
        items[1:3] = [x, x]
        return len(items)

    check(fn, [1, 2, 3, 4], _t(1), captured=False)


def test_delete_subscr_list_and_dict():
    def fn(items, d, x):
        del items[0]
        del d["a"]
        return x + len(items) + len(d)

    check(fn, [1, 2, 3], {"a": 1, "b": 2}, _t(2))


def test_store_subscr_tensor_int():
    def fn(x):
        x[0] = 5
        return x

    check(fn, _t(3))


def test_store_subscr_tensor_slice_and_tensor_value():
    def fn(x, y):
        x[1:, 0] = y
        return x.sum()

    check(fn, _t(3, 2), _t(2))


def test_store_subscr_local_tensor():
    def fn(x):
        z = torch.zeros(3)
        z[1] = x.sum()
        z[2:] = 7.0
        return z

    check(fn, _t(2))


def test_store_subscr_tensor_with_mask():
    def fn(x):
        x[x > 0] = 0.0
        return x

    check(fn, _t(5))


def test_augmented_subscript_on_tensor():
    def fn(x):
        x[0] += 1
        return x * 2

    check(fn, _t(3))


def test_augmented_subscript_on_input_dict():
    def fn(d, x):
        d["count"] += 1
        d["acc"] = d.get("acc", 0) + x
        return d["count"]

    check(fn, {"count": 1}, _t(2))


def test_list_of_tensors_modified_then_stacked():
    def fn(items):
        items.append(items[0] * 2)
        return torch.stack(items)

    check(fn, [_t(2), _t(2)])


class ReadOnlyMap(collections.abc.Mapping):
    """A mapping that is not a dict: iterating it gives its keys."""

    def __init__(self, **items):
        self._items = items

    def __getitem__(self, key):
        return self._items[key]

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)


def test_dict_merge_and_update_from_a_user_mapping():
    # DICT_MERGE (f(**m)) and DICT_UPDATE ({**m}) of a mapping that is not a dict read keys(),
    # then each item (PyTorch's test_functions test_unpack_mutable_map)
    def fn(x, mapping):
        return _kw(**mapping), {**mapping, "z": x * 2}, _kw(a=x, **mapping)

    check(fn, _t(2), ReadOnlyMap(b=_t(2), c=1))


def test_dict_merge_of_a_user_mapping_with_a_repeated_keyword():
    def fn(x, mapping):
        return _kw(a=x + 1, **mapping)

    check(fn, _t(2), ReadOnlyMap(a=1), captured=False)  # TypeError before the op is recorded


def test_dict_update_of_a_non_mapping_raises():
    def fn(x, items):
        return x + 1, {**items}

    check(fn, _t(2), [("a", 1)], captured=False)  # TypeError: not a mapping


_PARAM = torch.nn.Parameter(torch.ones(4, 4))


def test_dict_display_keyed_by_tensors():
    # BUILD_MAP keys a tensor by identity, as a dict does
    def fn(a, b):
        tmp = {"a": a, _PARAM: 3, b: 4, 1: "one", True: "true"}
        return tmp["a"] + tmp[_PARAM] * tmp[b], tmp[1], len(tmp), a in tmp, _PARAM in tmp

    check(fn, _t(4, 4), _t(4, 4))
    check(lambda a: {a: 1, a: 2}[a] + a, _t(2))
    assert symexec.explain(fn, _t(4, 4), _t(4, 4)).graph_break_count == 0


def test_dict_display_of_one_tensor_passed_twice():
    def fn(a, b):
        return len({a: 1, b: 2}) + a

    t = _t(2)
    check_sequence(fn, [t, t], [_t(2), _t(2)], [t, t])
