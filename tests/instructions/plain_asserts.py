"""Functions with `assert` statements, kept out of test modules so that pytest does not rewrite
their asserts: these compile to CPython's own LOAD_ASSERTION_ERROR / RAISE_VARARGS bytecode."""


def positive_scale(x, n):
    assert n > 0, "n must be positive"
    assert x.dim() == 1
    return x * n


def bare_assert(x, flag):
    assert flag
    return x + 1


# asserts on tensor values (checked in the graph: test_control_flow.py)
def tensor_assert(x):
    b = x.sin()
    assert x[0] == 3, "First dim need to be 3"
    return x.cos() + b


def tensor_assert_bare(x):
    assert x.sum() > 0
    return x * 2


def tensor_assert_other_message(x):
    assert x.max(), 42
    return x - 1


def tensor_assert_after_in_place(x):
    x.add_(1)
    assert x[0] > 0, "positive"
    return x * 2


def tensor_assert_after_list_append(x, seen):
    seen.append(1)
    assert x[0] > 0, "positive"
    return x * 2


def tensor_assert_caught(x):
    try:
        assert x[0] > 0, "positive"
        return x * 2
    except AssertionError as e:
        return x - len(str(e))


def _checked(x):
    assert x[0] > 0, "positive"
    return x * 2


def tensor_assert_in_callee_caught_by_caller(x):
    try:
        return _checked(x) + 1
    except AssertionError:
        return x - 1


def tensor_assert_in_callee(x):
    return _checked(x + 1) - 3


def tensor_assert_many_values(x):
    assert x > 0, "ambiguous"
    return x + 1


def tensor_assert_formatted_message(x):
    assert x[0] > 0, f"bad {x.shape[0]}"
    return x + 1
