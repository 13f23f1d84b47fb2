"""The second differential fuzzer (tests/datamodel_fuzz.py) with fixed seeds: a slice of random
programs over the Python data model and torch, each called in a sequence where the world changes
between calls, compared with eager call by call. For a long run with a fresh seed, shrunk
repros and a count of sequences: `python tests/datamodel_fuzz.py --minutes N --seed S`."""

import contextlib
import io
import warnings

import pytest

import datamodel_fuzz
from helpers import broad_or


@pytest.mark.parametrize("seed", broad_or(range(6), (0, 3)))
def test_datamodel_fuzz_slice(seed):
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        findings = datamodel_fuzz.fuzz(minutes=30, seed=1000 + seed, count=20)
    assert not findings, "\n\n".join(findings.values())
