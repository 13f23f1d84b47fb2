"""§2 — specialisation of non-tensor values.

The design document's second example::

    def fn(x, n):
        y = x ** 2
        if n >= 0:
            return (n + 1) * y
        else:
            return y / n

    fn(x, 2)

records ``y = l_x_ ** 2`` and ``mul = 3 * y``: the ``if`` is gone (the branch was decided
while tracing) and ``n + 1`` was computed once, to the constant 3. ``n`` is not an input of
the graph; instead a guard ``L['n'] == 2`` says when the graph may be reused.

Strings, floats, bools, None and tuples of them are constants in the same way; integers are
the exception once their value changes between calls (see s5_dynamic_shapes.py).

Run: ``python examples/s2_specialisation.py``
"""

import torch

import symexec
from _show import check, heading, logs, show_cache, sub_heading


def fn(x, n):
    y = x ** 2
    if n >= 0:
        return (n + 1) * y
    else:
        return y / n


def activation(x, mode, scale, shape):
    if mode == "relu":
        x = torch.relu(x)
    return x.reshape(shape) * scale


def main():
    heading("§2  fn(x, 2): the `if` disappears, (n + 1) is recorded as the constant 3")
    symexec.reset()
    compiled = symexec.compile(fn)
    x = torch.randn(200)
    with logs("graph_code"):
        check("fn(x, 2)", compiled(x, 2), fn(x, 2))
    entry = symexec.cache_entries(compiled)[0]
    code = entry.graph.code
    print("the graph's code (GraphModule.code, without the comments):")
    print("    " + "\n    ".join(line for line in code.strip().splitlines() if line.strip()))
    assert "mul = 3 * y" in code, code
    print("the graph takes only x:", [n.name for n in entry.graph.graph.nodes if n.op == "placeholder"])
    print("guards (n is a constant of the trace, so it is guarded by value):")
    for guard in entry.guards:
        print("    " + guard.text)

    heading("§2  str, float and tuple arguments are constants too")
    symexec.reset()
    compiled = symexec.compile(activation)
    x = torch.randn(6)
    check("activation(x, 'relu', 0.5, (2, 3))", compiled(x, "relu", 0.5, (2, 3)), activation(x, "relu", 0.5, (2, 3)))
    show_cache(compiled)
    sub_heading("a different float fails the guard L['scale'] == 0.5 and retraces")
    check("activation(x, 'relu', 0.25, (2, 3))", compiled(x, "relu", 0.25, (2, 3)), activation(x, "relu", 0.25, (2, 3)))
    check("activation(x, 'none', 0.25, (3, 2))", compiled(x, "none", 0.25, (3, 2)), activation(x, "none", 0.25, (3, 2)))
    print("cache entries:", len(symexec.cache_entries(compiled)))
    print("recompile reasons:")
    for reason in symexec.recompile_reasons(compiled):
        print("    " + reason)


if __name__ == "__main__":
    main()
