"""Functions with `assert` statements, kept out of test modules so that pytest does not rewrite
their asserts: these compile to CPython's own LOAD_ASSERTION_ERROR / RAISE_VARARGS bytecode."""


def positive_scale(x, n):
    assert n > 0, "n must be positive"
    assert x.dim() == 1
    return x * n


def bare_assert(x, flag):
    assert flag
    return x + 1
