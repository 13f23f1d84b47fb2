"""§5 — symbolic integers and dynamic shapes.

The design document's examples:

* automatic dynamic integers: ``fn(x, 2)`` traces with ``n`` a constant; ``fn(x, 3)`` sees
  that the int changed and retraces with ``n`` a ``torch.SymInt`` (``add = l_n_ + 1;
  mul = add * y``), guarded by ``0 <= L['n']``; ``fn(x, -2)`` takes the other branch and gets
  its own graph; ``fn(x, 4)`` reuses the symbolic graph: three traces for four calls.
* automatic dynamic sizes: ``a.shape[0] * a * b`` with sizes (4, 3), (8, 3), (16, 3) traces
  twice; the second trace has the first dimension symbolic, records ``size``/``getitem``
  nodes, and is guarded by ``L['b'].size()[0] == L['a'].size()[0]`` and
  ``2 <= L['a'].size()[0]``.
* ``dynamic=True``: sizes are symbolic from the first call; ``if a.shape[0] * 2 < 16`` then
  adds a guard on the symbolic expression (``2*s0 >= 16``, which the shape environment
  simplifies to ``8 <= L['a'].size()[0]``).
* the ``graph_sizes`` log shows each node's symbolic and concrete shapes.

Run: ``python examples/s5_dynamic_shapes.py``
"""

import torch

import symexec
from _show import check, heading, logs, show_cache, show_graph, show_guards, sub_heading


def fn(x, n):
    y = x ** 2
    if n >= 0:
        return (n + 1) * y
    else:
        return y / n


def scaled_product(a, b):
    return a.shape[0] * a * b


def small_or_shifted(a):
    if a.shape[0] * 2 < 16:
        return a
    else:
        return a + 1


def traces(compiled):
    return len(symexec.cache_entries(compiled))


def main():
    heading("§5  fn(x, 2), fn(x, 3), fn(x, -2), fn(x, 4): an int becomes symbolic")
    symexec.reset()
    compiled = symexec.compile(fn)
    x = torch.randn(200)
    for n in (2, 3, -2, 4):
        check(f"fn(x, {n})", compiled(x, n), fn(x, n))
        print(f"    traces so far: {traces(compiled)}")
    assert traces(compiled) == 3
    show_cache(compiled)
    print("recompile reasons:")
    for reason in symexec.recompile_reasons(compiled):
        print("    " + reason)
    symbolic = symexec.cache_entries(compiled)[1]  # newest first: [n < 0, n >= 0 symbolic, n == 2]
    assert "0 <= L['n']" in [g.text for g in symbolic.guards]
    assert "add * y" in symbolic.graph.code

    heading("§5  a.shape[0] * a * b with sizes (4, 3), (8, 3), (16, 3): two traces")
    symexec.reset()
    compiled = symexec.compile(scaled_product)
    with logs("graph_sizes"):
        for size in (4, 8, 16):
            a, b = torch.randn(size, 3), torch.randn(size, 3)
            check(f"fn(randn({size}, 3), randn({size}, 3))", compiled(a, b), scaled_product(a, b))
            print(f"    traces so far: {traces(compiled)}")
    assert traces(compiled) == 2
    first, second = reversed(symexec.cache_entries(compiled))
    sub_heading("first trace: sizes are constants")
    show_graph(first)
    show_guards(first)
    sub_heading("second trace: the first dimension is symbolic")
    show_graph(second)
    show_guards(second)
    texts = [g.text for g in second.guards]
    assert "L['b'].size()[0] == L['a'].size()[0]" in texts and "2 <= L['a'].size()[0]" in texts, texts

    heading("§5  mark_dynamic: symbolic dimensions from the first call")
    symexec.reset()
    compiled = symexec.compile(scaled_product)
    a, b = torch.randn(5, 3), torch.randn(5, 3)
    symexec.mark_dynamic(a, 0)  # a * b needs equal sizes: mark both, or the size is specialised
    symexec.mark_dynamic(b, 0)
    check("fn(a, b) with mark_dynamic(a, 0), mark_dynamic(b, 0)", compiled(a, b), scaled_product(a, b))
    a, b = torch.randn(7, 3), torch.randn(7, 3)
    check("fn(randn(7, 3), randn(7, 3)): no retrace", compiled(a, b), scaled_product(a, b))
    assert traces(compiled) == 1
    show_cache(compiled)

    heading("§5  dynamic=True: `if a.shape[0] * 2 < 16` becomes a guard on the symbolic size")
    symexec.reset()
    compiled = symexec.compile(small_or_shifted, dynamic=True)
    with logs("graph_code,guards,graph_sizes"):
        a = torch.randn(8)
        check("fn(randn(8))", compiled(a), small_or_shifted(a))
    a = torch.randn(20)
    check("fn(randn(20)): reuses the graph", compiled(a), small_or_shifted(a))
    a = torch.randn(3)
    check("fn(randn(3)): the other branch, a new trace", compiled(a), small_or_shifted(a))
    print("traces:", traces(compiled))
    assert traces(compiled) == 2
    show_cache(compiled)


if __name__ == "__main__":
    main()
