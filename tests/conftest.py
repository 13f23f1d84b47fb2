"""Test session setup: symexec's own bugs raise, and every test starts with empty caches."""

import os
import sys

import pytest
import torch
import torch._dynamo  # the reference implementation, compared against in some tests

import symexec

sys.path.insert(0, os.path.dirname(__file__))  # so tests can `from helpers import check`


@pytest.fixture(autouse=True, scope="session")
def _raise_on_internal_error():
    previous = symexec.config.raise_on_internal_error
    symexec.config.raise_on_internal_error = True
    yield
    symexec.config.raise_on_internal_error = previous


@pytest.fixture(autouse=True)
def _fresh_caches():
    symexec.reset()
    torch._dynamo.reset()
    torch.manual_seed(0)
    yield
    symexec.reset()
    torch._dynamo.reset()
