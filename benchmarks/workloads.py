"""The functions the benchmarks compile, with inputs to call them on.

Each workload is (name, function, make_args); make_args() returns a fresh tuple of arguments.
"""

import os
import platform

import numpy as np
import torch

import symexec


def mse(x, y):
    z = (x - y) ** 2
    return z.sum()


def many_args(t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, n, k, scale, mode, name):
    """Ten tensors and five int/str arguments that steer Python control flow."""
    total = t0 + t1 + t2 + t3 + t4 + t5 + t6 + t7 + t8 + t9
    if mode == "mean":
        total = total / 10
    for _ in range(k):
        total = total * scale
    if n > 2:
        total = total + n
    if name.startswith("b"):
        total = -total
    return total


def matmul_relu_12(x, w):
    for _ in range(12):
        x = torch.relu(x @ w)
    return x


def _scale(x, s):
    return x * s


def _shift(x, b):
    return x + b


def _normalise(x):
    return (x - x.mean()) / (x.std() + 1e-5)


def _block(x, w):
    return torch.tanh(_shift(_scale(x @ w, 0.5), 1.0))


def with_helpers(x, w):
    x = _normalise(x)
    x = _block(x, w)
    x = _block(x, w)
    return _normalise(_scale(x, 2.0))


def dynamic_rows(a, b, w):
    """Symbolic sizes: guards relate a's, b's and w's dimensions (compiled with dynamic=True)."""
    if a.shape[0] * 2 < 4096:
        a = a * 2
    h = (a + b) @ w
    return h.reshape(a.shape[0], -1).sum(1) / a.shape[1]


def numpy_stats(a, b):
    """NumPy arrays in and out: traced through torch (symexec's translation, torch._numpy)."""
    c = np.concatenate([a, b * 2.0]).reshape(2, -1)
    z = (c - c.mean(axis=1, keepdims=True)) / (c.std(axis=1, keepdims=True) + 1e-5)
    return np.where(z > 0, np.sqrt(np.abs(z)), np.tanh(z)).sum(axis=0)


def unrelated(a, b):
    """Compiled once by each system before measuring, to pay one-time start-up costs."""
    c = torch.sin(a) + torch.cos(b)
    return c.mean() * 2


def mse_args():
    return torch.randn(200), torch.randn(200)


def many_args_args():
    tensors = tuple(torch.randn(200) for _ in range(10))
    return tensors + (3, 2, 2, "mean", "bias")


def matmul_args():
    return torch.randn(16, 64), torch.randn(64, 64) * 0.1


def dynamic_args():
    return torch.randn(64, 32), torch.randn(64, 32), torch.randn(32, 16)


def numpy_args():
    return np.random.randn(200), np.random.randn(200)


def unrelated_args():
    return torch.randn(50), torch.randn(50)


MSE = ("mse(x, y)", mse, mse_args)
MANY_ARGS = ("10 tensors + 5 int/str", many_args, many_args_args)
MATMUL = ("12 x relu(x @ w)", matmul_relu_12, matmul_args)
HELPERS = ("helper functions", with_helpers, matmul_args)
UNRELATED = ("unrelated", unrelated, unrelated_args)
NUMPY = ("NumPy arrays", numpy_stats, numpy_args)
# Workloads carry the options both systems compile them with (a fourth element, optional).
DYNAMIC = ("dynamic shapes", dynamic_rows, dynamic_args, {"dynamic": True})


def environment():
    """What the figures are measured on, printed first by every benchmark: Python, torch, machine."""
    return (f"{platform.python_implementation()} {platform.python_version()}, torch {torch.__version__}, "
            f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs")


def options(workload):
    return workload[3] if len(workload) > 3 else {}


def same(a, b):
    if isinstance(a, np.ndarray):
        return type(b) is np.ndarray and a.dtype == b.dtype and np.allclose(a, b, rtol=1e-4, atol=1e-5)
    return torch.allclose(a, b, rtol=1e-4, atol=1e-5)


def check_symexec(compiled):
    """The measurement is meaningless if symexec fell back to the original function."""
    entries = symexec.cache_entries(compiled)
    problems = []
    if len(entries) != 1:
        problems.append(f"{len(entries)} cache entries (expected 1)")
    for entry in entries:
        if entry.fallback_reason is not None:
            problems.append(f"fallback: {entry.fallback_reason}")
        elif entry.graph is None:
            problems.append("entry without a graph")
    return problems
