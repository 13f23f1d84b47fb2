"""§1 — a tracer that records torch operations into an FX graph.

The design document's first example::

    @torch.compile
    def mse(x, y):
        z = (x - y) ** 2
        return z.sum()

traces into three nodes, ``sub = l_x_ - l_y_``, ``z = sub ** 2``, ``sum_1 = z.sum()``, and the
graph returns ``(sum_1,)``. Each node carries the source line it came from, printed as
``# File: ...:5, code: z = (x - y) ** 2``. Decorating compiles nothing: the trace happens
at the first call, with the real arguments.

Run: ``python examples/s1_fx_graph.py``
"""

import torch

import symexec
from _show import check, heading, logs, show_guards, sub_heading


def mse(x, y):
    z = (x - y) ** 2
    return z.sum()


def main():
    heading("§1  mse(x, y): the torch operations that ran, as a linear FX graph")
    symexec.reset()

    compiled = symexec.compile(mse)
    print("after symexec.compile(mse):", len(symexec.cache_entries(compiled)), "cache entries (nothing traced yet)")

    x, y = torch.randn(200), torch.randn(200)
    # The design document's `TORCH_LOGS=graph_code python example.py`:
    with logs("graph_code"):
        check("mse(x, y), first call (traces)", compiled(x, y), mse(x, y))
    check("mse(x, y), second call (cache hit)", compiled(x, y), mse(x, y))
    print("after two calls:", len(symexec.cache_entries(compiled)), "cache entry")

    sub_heading("the nodes of the graph")
    graph = symexec.cache_entries(compiled)[0].graph
    for node in graph.graph.nodes:
        target = getattr(node.target, "__name__", node.target)
        print(f"    {node.op:<14} {node.name:<6} {target}")
    ops = [node.name for node in graph.graph.nodes if node.op in ("call_function", "call_method")]
    assert ops == ["sub", "z", "sum_1"], ops

    sub_heading("the guards a later call must pass to reuse it")
    show_guards(symexec.cache_entries(compiled)[0])


if __name__ == "__main__":
    main()
