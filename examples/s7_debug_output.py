"""§7 — debug output: each log artifact in turn, then ``symexec.explain``.

The design document reads Dynamo through ``TORCH_LOGS``; symexec has one switch per artifact,
``symexec.set_logs("graph_code,guards,...")`` or the environment variable
``SYMEXEC_LOGS=graph_code,guards,...``. Each artifact is a ``logging`` logger
(``symexec.graph_code``, ...) that prints to stderr:

=============  ==============================================================================
graph_code     the FX graph of each trace, with ``# File: ..., code: ...`` comments
guards         the guards of each new cache entry
recompiles     why a call retraced: the guard of each existing entry that failed
bytecode       the original and the rewritten bytecode of each function and continuation
graph_breaks   where and why a graph broke, with a hint
trace          every instruction the tracer runs, with the stack of trackers before it
               (``TRACE LOAD_GLOBAL y [NULL, TorchVariable(any), TensorVariable(...)]``)
graph_sizes    each node's symbolic and concrete shapes
=============  ==============================================================================

``symexec.explain(fn, *args)`` gathers the same information for one call into an object that
prints as a summary in a REPL and renders as HTML in Jupyter (see ``explore.ipynb``).

Run: ``python examples/s7_debug_output.py``
"""

import torch

import symexec
from _show import check, heading, logs

y = torch.randn(8)


def any_positive(x):
    return torch.any(x + y > 0)


def fn(a, b):
    return a * len(b)


def mse(x, y):
    z = (x - y) ** 2
    return z.sum()


def breaks(a):
    b = a + 2
    print("Hi")
    return b + a


def scaled_product(a, b):
    return a.shape[0] * a * b


def main():
    x = torch.randn(8)

    heading("§7  graph_code: the FX graph of each trace")
    symexec.reset()
    with logs("graph_code"):
        check("mse(x, x + 1)", symexec.compile(mse)(x, x + 1), mse(x, x + 1))

    heading("§7  guards: the guards of each new cache entry")
    symexec.reset()
    with logs("guards"):
        check("fn(t, 'Hello')", symexec.compile(fn)(torch.arange(10), "Hello"), fn(torch.arange(10), "Hello"))

    heading("§7  recompiles: which guard failed")
    symexec.reset()
    compiled = symexec.compile(fn)
    with logs("recompiles"):
        check("fn(t, 'Hello')", compiled(torch.arange(10), "Hello"), fn(torch.arange(10), "Hello"))
        check("fn(t, 'Hi')", compiled(torch.arange(10), "Hi"), fn(torch.arange(10), "Hi"))

    heading("§7  bytecode: the original and the rewritten code")
    symexec.reset()
    with logs("bytecode"):
        check("mse(x, x + 1)", symexec.compile(mse)(x, x + 1), mse(x, x + 1))

    heading("§7  graph_breaks: how many breaks, where, why")
    symexec.reset()
    with logs("graph_breaks"):
        check("breaks(x)", symexec.compile(breaks)(x), breaks(x))

    heading("§7  trace: every instruction with the stack of trackers before it")
    symexec.reset()
    with logs("trace"):
        check("any_positive(x)", symexec.compile(any_positive)(x), any_positive(x))

    heading("§7  graph_sizes: symbolic and concrete shapes of each node")
    symexec.reset()
    compiled = symexec.compile(scaled_product)
    with logs("graph_sizes"):
        for size in (4, 8):
            a, b = torch.randn(size, 3), torch.randn(size, 3)
            check(f"scaled_product(randn({size}, 3), ...)", compiled(a, b), scaled_product(a, b))

    heading("§7  symexec.explain(breaks, x): the same information for one call")
    symexec.reset()
    out = symexec.explain(breaks, x)
    print(out)
    check("explain's result", out.result, breaks(x))


if __name__ == "__main__":
    main()
