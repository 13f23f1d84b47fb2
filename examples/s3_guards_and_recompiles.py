"""§3 — guards, sources and the cache.

The design document's examples::

    def fn(a, b):
        return a * len(b)

    fn(torch.arange(10), "Hello")   # guards: type of L['b'] is str, L['b'] == 'Hello'
    fn(torch.arange(10), "Hi")      # recompiles; the log names the failed guard

and, for guards written through sources (``L['l']`` is a local, ``L['l'][0]`` an item of it)::

    def fn(x, l):
        return x * len(l[0])

    fn(torch.randn(8), ["Hi", "Hello"])   # len(L['l']) == 2, L['l'][0] == 'Hi', ...

Sources also reach globals (``G['w']``) and attributes (``G['scale'].weight``; inside a\ncompiled module, ``L['self'].weight``). Past the cache
size limit (``symexec.config.cache_size_limit``) symexec warns once and runs the function
without compiling.

Run: ``python examples/s3_guards_and_recompiles.py``
"""

import warnings

import torch

import symexec
from _show import check, heading, logs, show_cache, show_guards, sub_heading


def fn(a, b):
    return a * len(b)


def first_len(x, l):
    return x * len(l[0])


w = torch.randn(8)


class Scale(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(8))

    def forward(self, x):
        return x * self.weight + w


scale = Scale()


def apply_scale(x):
    return scale(x) * 2


def main():
    heading("§3  fn(t, 'Hello') then fn(t, 'Hi'): a failed guard triggers a recompile")
    symexec.reset()
    compiled = symexec.compile(fn)
    t = torch.arange(10)
    with logs("guards,recompiles"):
        check("fn(t, 'Hello')", compiled(t, "Hello"), fn(t, "Hello"))
        check("fn(t, 'Hi')", compiled(t, "Hi"), fn(t, "Hi"))
    check("fn(t, 'Hello') again: a cache hit on the first entry", compiled(t, "Hello"), fn(t, "Hello"))
    check("fn(t, 'Hi') again: a cache hit on the second entry", compiled(t, "Hi"), fn(t, "Hi"))
    show_cache(compiled)
    reasons = symexec.recompile_reasons(compiled)
    print("symexec.recompile_reasons(fn):", reasons)
    assert any("L['b'] == 'Hello'" in r for r in reasons), reasons

    heading("§3  fn(x, ['Hi', 'Hello']): guards on a list and its items, through sources")
    symexec.reset()
    compiled = symexec.compile(first_len)
    x, l = torch.randn(8), ["Hi", "Hello"]
    check("fn(x, ['Hi', 'Hello'])", compiled(x, l), first_len(x, l))
    entry = symexec.cache_entries(compiled)[0]
    show_guards(entry)
    assert "len(L['l']) == 2" in [g.text for g in entry.guards]
    sub_heading("a list of another length fails len(L['l']) == 2")
    check("fn(x, ['Hi', 'Hello', 'Bye'])", compiled(x, ["Hi", "Hello", "Bye"]), first_len(x, ["Hi", "Hello", "Bye"]))
    print("recompile reasons:", symexec.recompile_reasons(compiled))

    heading("§3  sources through globals and attributes: G['w'], G['scale'].weight")
    symexec.reset()
    compiled = symexec.compile(apply_scale)
    x = torch.randn(8)
    check("apply_scale(x)", compiled(x), apply_scale(x))
    show_cache(compiled)

    heading("§3  the cache size limit: past it, a warning and the original function")
    symexec.reset()
    previous = symexec.config.cache_size_limit
    symexec.config.cache_size_limit = 3
    try:
        compiled = symexec.compile(fn)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for word in ["a", "bb", "ccc", "dddd", "eeeee"]:
                check(f"fn(t, {word!r})", compiled(t, word), fn(t, word))
        for warning in caught:
            print("warning:", warning.message)
        print("cache entries:", len(symexec.cache_entries(compiled)), "(the limit is 3)")
    finally:
        symexec.config.cache_size_limit = previous


if __name__ == "__main__":
    main()
