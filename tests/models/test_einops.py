"""einops' operations and layers under symexec and torch.compile: einops 0.8 with torch >= 2.8
registers nothing with allow_in_graph, so both trace into it (its lru_cache'd recipe helpers
with symbolic sizes, its backend table keyed by classes, pack/unpack's closures). Over three
sizes (static, dynamic, reused) symexec returns eager's results and compiles no more graphs
than torch.compile."""

import pytest
import torch
from helpers import run_both

einops = pytest.importorskip("einops")
layers = pytest.importorskip("einops.layers.torch")


def _operations(x):
    q, k, v = map(lambda t: einops.rearrange(t, "b n (h d) -> b h n d", h=2), x.chunk(3, dim=-1))
    scores = einops.einsum(q, k, "b h i d, b h j d -> b h i j")
    pooled = einops.reduce(scores, "b h i j -> b h i", "max")
    packed, shapes = einops.pack([q, v], "b h * d")
    first, second = einops.unpack(packed * 2, shapes, "b h * d")
    return einops.repeat(pooled, "b h n -> b h n c", c=3), first + second


_PATCHES = torch.nn.Sequential(layers.Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=2, p2=2),
                               torch.nn.Linear(12, 8), layers.Reduce("b n d -> b d", "mean"))


def _layers(image):
    sizes = einops.parse_shape(image, "b c h w")
    return _PATCHES(image) * sizes["h"]


@pytest.mark.parametrize("fn, make", [
    (_operations, lambda n: torch.randn(2, n, 12)),
    (_layers, lambda n: torch.randn(2, 3, n, n)),
])
def test_einops_meets_torch_compile(fn, make):
    with torch.no_grad():
        _, ours, theirs = run_both(fn, [(make(n),) for n in (4, 6, 8)])
    assert ours.graph_count <= theirs.graph_count
    assert sum(ours.op_counts()) >= 0.9 * sum(theirs.op_counts())
