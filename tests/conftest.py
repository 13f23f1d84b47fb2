"""Test session setup: symexec's own bugs raise, and every test starts with empty caches.

No internal error passes unseen: every one symexec meets while compiling (raised, or run
eagerly with a ``SymexecWarning``) fails the test that caused it, unless the test is marked
``@pytest.mark.expect_internal_error``. The session counts them too, wherever they happen
(module fixtures included), prints the count and fails the run if any was not expected; the
scripts and the notebook, which run in their own processes, fail on a ``SymexecWarning``.
"""

import os
import sys

import pytest
import torch
import torch._dynamo  # the reference implementation, compared against in some tests

import symexec
import symexec.convert

sys.path.insert(0, os.path.dirname(__file__))  # so tests can `from helpers import check`

import helpers  # noqa: E402 - found through the path above

# One intra-op thread, here and in the scripts the tests start: the tensors are tiny, and idle
# OpenMP threads spinning beside another suite (CI runs two at once on two cores) cost more
# than they give. Results compare eager and compiled in the same process either way.
os.environ.setdefault("OMP_NUM_THREADS", "1")
torch.set_num_threads(1)


def pytest_configure(config):
    config.addinivalue_line("markers", "expect_internal_error: the test provokes symexec internal errors on purpose "
                                       "(fault injection); without it any internal error fails the test")
    config.addinivalue_line("markers", "broad: a test whose subject does not depend on the Python version (symexec's "
                                       "own source read statically, shape-rule and ufunc sweeps, the notebook, "
                                       "xdist's crash handling): run where the sweeps run whole (helpers.BROAD: "
                                       "CPython 3.11, or SYMEXEC_BROAD=1), deselected elsewhere")
    config.addinivalue_line("markers", "quick: set on collection, the fast core of the suite (`pytest -m quick`, under "
                                       "two minutes): the tests of " + ", ".join(QUICK_DIRECTORIES) + ", but "
                                       "those marked broad and those that compile with inductor")


def pytest_report_header(config):
    if not helpers.BROAD:
        return (f"CPython {sys.version_info[0]}.{sys.version_info[1]}: the sweeps run as a slice and tests marked "
                "'broad' are deselected (SYMEXEC_BROAD=1 runs everything)")
    return None


# The directories whose tests make the quick set: the tracer, its trackers, guards, generated
# code, the API and the regressions, not the models, training, fuzzers or project checks.
QUICK_DIRECTORIES = ("instructions", "variables", "guards", "codegen", "api", "regressions")
_TESTS = os.path.dirname(os.path.abspath(__file__))


def _quick(item):
    directory = os.path.relpath(str(item.path), _TESTS).split(os.sep)[0]
    return (directory in QUICK_DIRECTORIES and item.get_closest_marker("broad") is None
            and "inductor" not in item.nodeid)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _quick(item):
            item.add_marker(pytest.mark.quick)
    if helpers.BROAD:
        return
    broad = [item for item in items if item.get_closest_marker("broad") is not None]
    if broad:
        config.hook.pytest_deselected(items=broad)
        items[:] = [item for item in items if item.get_closest_marker("broad") is None]


_SESSION_INTERNAL_ERRORS = {"expected": 0, "unexpected": []}
_CURRENT_ITEM = [None]
_TEST_FIXTURE_ACTIVE = [False]  # while _no_unexpected_internal_errors watches (it fails the test itself)


def _count_internal_error(fn, error):
    if _TEST_FIXTURE_ACTIVE[0]:
        return
    item = _CURRENT_ITEM[0]
    if item is not None and item.get_closest_marker("expect_internal_error") is not None:
        _SESSION_INTERNAL_ERRORS["expected"] += 1
        return
    where = item.nodeid if item is not None else "outside any test"
    _SESSION_INTERNAL_ERRORS["unexpected"].append(f"{where} (outside the test body): {getattr(fn, '__qualname__', fn)}: "
                                                  f"{type(error).__name__}: {error}")


def pytest_sessionstart(session):
    symexec.convert.internal_error_hooks.append(_count_internal_error)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _CURRENT_ITEM[0] = item
    yield
    _CURRENT_ITEM[0] = None


# The suite runs in worker processes (pytest-xdist, `-n auto` in pyproject.toml), so that a test
# that crashes the interpreter (a segfault) or hangs (pytest-timeout ends the worker) fails
# that test and the run goes on in a new worker. The worker sends its counts of internal errors
# to the main process, which prints them and fails the run on one nobody expected.


def _is_worker(config):
    return hasattr(config, "workerinput")


def pytest_testnodedown(node, error):
    counts = getattr(node, "workeroutput", {}).get("symexec_internal_errors")
    if counts is not None:
        _SESSION_INTERNAL_ERRORS["expected"] += counts["expected"]
        _SESSION_INTERNAL_ERRORS["unexpected"] += counts["unexpected"]


def pytest_terminal_summary(terminalreporter):
    if _is_worker(terminalreporter.config):
        return
    unexpected = _SESSION_INTERNAL_ERRORS["unexpected"]
    terminalreporter.write_line(f"symexec internal errors on Python {sys.version.split()[0]}: {len(unexpected)} "
                                f"unexpected, {_SESSION_INTERNAL_ERRORS['expected']} provoked on purpose")
    for line in unexpected[:20]:
        terminalreporter.write_line(f"  {line}")


def pytest_sessionfinish(session, exitstatus):
    if _is_worker(session.config):
        session.config.workeroutput["symexec_internal_errors"] = dict(_SESSION_INTERNAL_ERRORS)
        return
    if _SESSION_INTERNAL_ERRORS["unexpected"] and session.exitstatus == 0:
        session.exitstatus = 1  # an internal error that no test failed on still fails the run


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
    _TEST_FIXTURE_ACTIVE[0] = True
    try:
        yield seen
    finally:
        _TEST_FIXTURE_ACTIVE[0] = False
        symexec.convert.internal_error_hooks.remove(record)
    if request.node.get_closest_marker("expect_internal_error") is not None:
        _SESSION_INTERNAL_ERRORS["expected"] += len(seen)
    else:
        _SESSION_INTERNAL_ERRORS["unexpected"] += [f"{request.node.nodeid}: {line}" for line in seen]
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
