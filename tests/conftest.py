"""Test session setup: symexec's own bugs raise, and every test starts with empty caches.

No internal error passes unseen: every one symexec meets while compiling (raised, or run
eagerly with a ``SymexecWarning``) fails the test that caused it, unless the test is marked
``@pytest.mark.expect_internal_error``.
"""

import os
import sys

import pytest
import torch
import torch._dynamo  # the reference implementation, compared against in some tests

import symexec
import symexec.convert

sys.path.insert(0, os.path.dirname(__file__))  # so tests can `from helpers import check`


def pytest_configure(config):
    config.addinivalue_line("markers", "expect_internal_error: the test provokes symexec internal errors on purpose "
                                       "(fault injection); without it any internal error fails the test")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"_symexec_report_{report.when}", report)


@pytest.fixture(autouse=True, scope="session")
def _raise_on_internal_error():
    previous = symexec.config.raise_on_internal_error
    symexec.config.raise_on_internal_error = True
    yield
    symexec.config.raise_on_internal_error = previous


@pytest.fixture(autouse=True)
def _no_unexpected_internal_errors(request):
    seen = []

    def record(fn, error):
        seen.append(f"{getattr(fn, '__qualname__', fn)}: {type(error).__name__}: {error}")

    symexec.convert.internal_error_hooks.append(record)
    try:
        yield seen
    finally:
        symexec.convert.internal_error_hooks.remove(record)
    call = getattr(request.node, "_symexec_report_call", None)
    if call is not None and call.failed:  # already failed (the internal error raised, most often)
        return
    if seen and request.node.get_closest_marker("expect_internal_error") is None:
        pytest.fail("symexec internal error(s) during the test (mark it @pytest.mark.expect_internal_error "
                    "if they are intended):\n  " + "\n  ".join(seen), pytrace=False)


@pytest.fixture(autouse=True)
def _fresh_caches():
    symexec.reset()
    symexec.convert._warned.clear()  # each test sees its own once-per-function warnings
    torch._dynamo.reset()
    torch.manual_seed(0)
    yield
    symexec.reset()
    torch._dynamo.reset()
