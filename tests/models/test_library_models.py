"""Models of other libraries than transformers, captured like torch.compile (issue 22): diffusers
(UNet2DModel, UNet2DConditionModel, AutoencoderKL, DiT), x-transformers, vector-quantize-pytorch,
rotary-embedding-torch, torch-geometric, kornia, gpytorch, pyro, torchmetrics, torchdiffeq.

Nothing is downloaded: every model is built from constructor arguments with small sizes, in eval
mode, with seed 0. Each builder returns (model, make, sizes): make(size) gives (args, kwargs) for
one call, the same inputs for the same size; `sizes` are the three calls of the sequence (first;
second, a recompile that turns dynamic; third, reuse). The libraries are test extras
(pyproject.toml); a model whose library is missing is skipped.

Each model runs under symexec and under torch.compile as the HF set does (models_common.capture:
a counting backend, fullgraph=True first, again without it if that fails, every call compared
with eager). symexec must always return what eager returns; where it meets torch.compile
(graphs no more, at least 90% of its ops, fullgraph where it succeeds, recompiles no more),
`shortfalls` must be empty, for every model.
"""

from __future__ import annotations

import functools
import importlib

import pytest
import torch
from helpers import broad_or, check
from models_common import capture, shortfalls


def _gen(size):
    return torch.Generator().manual_seed(2000 + size)


def _randn(size, *shape):
    return torch.randn(*shape, generator=_gen(size))


# ---------------------------------------------------------------------------------------------
# diffusers


def _unet2d():
    diffusers = importlib.import_module("diffusers")
    model = diffusers.UNet2DModel(
        sample_size=16, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(8,),
        down_block_types=("AttnDownBlock2D",), up_block_types=("AttnUpBlock2D",), norm_num_groups=4,
        attention_head_dim=4)

    def make(size):
        return (_randn(size, 2, 3, size, size), torch.tensor([10, 20])), {}
    return model, make, (16, 8, 12)


def _unet2d_condition():
    diffusers = importlib.import_module("diffusers")
    model = diffusers.UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(8,),
        down_block_types=("CrossAttnDownBlock2D",), up_block_types=("CrossAttnUpBlock2D",), norm_num_groups=4,
        cross_attention_dim=8, attention_head_dim=2)

    def make(size):
        return (_randn(size, 2, 4, size, size), torch.tensor([10, 20]), _randn(size + 1, 2, 5, 8)), {}
    return model, make, (8, 4, 12)


def _autoencoder_kl():
    diffusers = importlib.import_module("diffusers")
    model = diffusers.AutoencoderKL(
        in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",),
        up_block_types=("UpDecoderBlock2D",), block_out_channels=(8,), layers_per_block=1,
        latent_channels=4, norm_num_groups=4, sample_size=16)

    def make(size):
        return (_randn(size, 2, 3, size, size),), {}
    return model, make, (16, 8, 12)


def _dit():
    diffusers = importlib.import_module("diffusers")
    model = diffusers.DiTTransformer2DModel(
        num_attention_heads=2, attention_head_dim=8, in_channels=4, out_channels=4, num_layers=1, sample_size=8,
        patch_size=2, num_embeds_ada_norm=10)

    def make(size):
        return (_randn(size, 2, 4, size, size),), {"timestep": torch.tensor([3, 7]),
                                                   "class_labels": torch.tensor([1, 4])}
    return model, make, (8, 4, 12)


# ---------------------------------------------------------------------------------------------
# lucidrains' libraries


def _x_transformers():
    xt = importlib.import_module("x_transformers")
    model = xt.TransformerWrapper(num_tokens=100, max_seq_len=64,
                                  attn_layers=xt.Decoder(dim=32, depth=2, heads=4))

    def make(size):
        return (torch.randint(0, 100, (2, size), generator=_gen(size)),), {}
    return model, make, (16, 8, 12)


def _vector_quantize():
    vq = importlib.import_module("vector_quantize_pytorch")
    model = vq.VectorQuantize(dim=16, codebook_size=32)

    def make(size):
        return (_randn(size, 2, size, 16),), {}
    return model, make, (16, 8, 12)


class _RotaryAttention(torch.nn.Module):
    """Self-attention whose queries and keys are rotated by rotary-embedding-torch."""

    def __init__(self, dim=32, heads=4):
        super().__init__()
        rotary = importlib.import_module("rotary_embedding_torch")
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.out = torch.nn.Linear(dim, dim)
        self.rotary = rotary.RotaryEmbedding(dim=dim // heads // 2)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        q = self.rotary.rotate_queries_or_keys(q)
        k = self.rotary.rotate_queries_or_keys(k)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, n, d))


def _rotary():
    def make(size):
        return (_randn(size, 2, size, 32),), {}
    return _RotaryAttention(), make, (16, 8, 12)


# ---------------------------------------------------------------------------------------------
# torch-geometric, kornia


class _Graph(torch.nn.Module):
    """Two graph convolutions (GCN, then GAT) and a mean readout."""

    def __init__(self):
        super().__init__()
        pyg = importlib.import_module("torch_geometric.nn")
        self.gcn = pyg.GCNConv(8, 16)
        self.gat = pyg.GATConv(16, 8, heads=2)

    def forward(self, x, edge_index):
        x = self.gcn(x, edge_index).relu()
        return self.gat(x, edge_index).mean(dim=0)


def _geometric():
    def make(size):
        gen = _gen(size)
        source = torch.arange(size)
        edges = torch.stack([torch.cat([source, source]), torch.cat([(source + 1) % size, (source + 3) % size])])
        return (torch.randn(size, 8, generator=gen), edges), {}
    return _Graph(), make, (16, 8, 12)


class _Kornia(torch.nn.Module):
    """A few of kornia's filters, color conversions and geometric transforms."""

    def __init__(self):
        super().__init__()
        self.kornia = importlib.import_module("kornia")

    def forward(self, image):
        k = self.kornia
        blurred = k.filters.gaussian_blur2d(image, (3, 3), (1.0, 1.0))
        edges = k.filters.sobel(k.color.rgb_to_grayscale(blurred))
        hsv = k.color.rgb_to_hsv(image.clamp(0, 1))
        flipped = k.geometry.transform.hflip(image)
        return edges, hsv, k.enhance.adjust_brightness(flipped, 0.2)


def _kornia():
    def make(size):
        return (torch.rand(2, 3, size, size, generator=_gen(size)),), {}
    return _Kornia(), make, (16, 8, 12)


# ---------------------------------------------------------------------------------------------
# gpytorch, pyro, torchmetrics, torchdiffeq


class _Kernel(torch.nn.Module):
    """A gpytorch kernel called on two sets of points, evaluated to a dense matrix."""

    def __init__(self):
        super().__init__()
        gpytorch = importlib.import_module("gpytorch")
        self.kernel = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

    def forward(self, x1, x2):
        return self.kernel(x1, x2).to_dense()


def _gp_kernel():
    def make(size):
        return (_randn(size, size, 3), _randn(size + 1, size, 3)), {}
    return _Kernel(), make, (16, 8, 12)


def _exact_gp():
    gpytorch = importlib.import_module("gpytorch")

    class ExactGP(gpytorch.models.ExactGP):
        """A constant mean and an RBF kernel, its prior forward (train mode)."""

        def __init__(self):
            likelihood = gpytorch.likelihoods.GaussianLikelihood()
            super().__init__(_randn(0, 10, 2), _randn(1, 10), likelihood)
            self.mean = gpytorch.means.ConstantMean()
            self.covar = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean(x), self.covar(x))

    class Prior(torch.nn.Module):
        """The GP's forward on new points: the mean and the dense covariance."""

        def __init__(self):
            super().__init__()
            self.gp = ExactGP()

        def forward(self, x):
            out = self.gp.forward(x)
            return out.mean, out.covariance_matrix

    def make(size):
        return (_randn(size, size, 2),), {}
    return Prior(), make, (16, 8, 12)


class _PyroElbo(torch.nn.Module):
    """Pyro's Trace_ELBO loss of a model with a MAP guide (Delta sites: no sampling); the
    likelihood's scale 1.0, or a parameter (``scale``: negative, validation rejects it)."""

    def __init__(self, scale=None):
        super().__init__()
        self.pyro = importlib.import_module("pyro")
        self.loc = torch.nn.Parameter(torch.tensor(0.5))
        self.scale = 1.0 if scale is None else torch.nn.Parameter(torch.tensor(scale))
        self.elbo = self.pyro.infer.Trace_ELBO()

    def model(self, data):
        dist = self.pyro.distributions
        mu = self.pyro.sample("mu", dist.Normal(0.0, 1.0))
        with self.pyro.plate("data", data.shape[0]):
            self.pyro.sample("obs", dist.Normal(mu, self.scale), obs=data)

    def guide(self, data):
        self.pyro.sample("mu", self.pyro.distributions.Delta(self.loc))

    def forward(self, data):
        return self.elbo.differentiable_loss(self.model, self.guide, data)


def _pyro():
    # torch.compile turns off torch.distributions' argument validation for the whole process
    # when it first compiles (``Distribution.set_default_validate_args(False)``, one of the patches
    # torch._dynamo applies to torch), so it never sees a validation. The comparison is made as it
    # runs, with validation off for both, whichever runs first; with it on, symexec breaks at each
    # check as eager makes them (test_pyro_validation_as_eager).
    torch.distributions.Distribution.set_default_validate_args(False)

    def make(size):
        return (_randn(size, size),), {}
    return _PyroElbo(), make, (16, 8, 12)


class _Metric(torch.nn.Module):
    """A torchmetrics metric: reset, one update, compute (the same every call)."""

    def __init__(self):
        super().__init__()
        torchmetrics = importlib.import_module("torchmetrics")
        self.metric = torchmetrics.MeanSquaredError()

    def forward(self, preds, target):
        self.metric.reset()
        self.metric.update(preds, target)
        return self.metric.compute()


def _torchmetrics():
    def make(size):
        return (_randn(size, size), _randn(size + 1, size)), {}
    return _Metric(), make, (16, 8, 12)


class _Ode(torch.nn.Module):
    """torchdiffeq's odeint over a small learned vector field, fixed-step RK4."""

    def __init__(self):
        super().__init__()
        self.odeint = importlib.import_module("torchdiffeq").odeint
        self.field = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))

    def forward(self, y0):
        t = torch.linspace(0.0, 1.0, 3)
        return self.odeint(lambda t, y: self.field(y), y0, t, method="rk4", options={"step_size": 0.25})


def _torchdiffeq():
    def make(size):
        return (_randn(size, size, 4),), {}
    return _Ode(), make, (16, 8, 12)


BUILDERS = {
    "diffusers_unet2d": _unet2d,
    "diffusers_unet2d_condition": _unet2d_condition,
    "diffusers_autoencoder_kl": _autoencoder_kl,
    "diffusers_dit": _dit,
    "x_transformers_decoder": _x_transformers,
    "vector_quantize": _vector_quantize,
    "rotary_attention": _rotary,
    "geometric_gcn_gat": _geometric,
    "kornia_filters": _kornia,
    "gpytorch_kernel": _gp_kernel,
    "gpytorch_exact_gp": _exact_gp,
    "pyro_elbo": _pyro,
    "torchmetrics_mse": _torchmetrics,
    "torchdiffeq_rk4": _torchdiffeq,
}


# The library each model needs (the test is skipped without it).
LIBRARIES = {
    "diffusers_unet2d": "diffusers", "diffusers_unet2d_condition": "diffusers",
    "diffusers_autoencoder_kl": "diffusers", "diffusers_dit": "diffusers",
    "x_transformers_decoder": "x_transformers", "vector_quantize": "vector_quantize_pytorch",
    "rotary_attention": "rotary_embedding_torch", "geometric_gcn_gat": "torch_geometric", "kornia_filters": "kornia",
    "gpytorch_kernel": "gpytorch", "gpytorch_exact_gp": "gpytorch", "pyro_elbo": "pyro",
    "torchmetrics_mse": "torchmetrics", "torchdiffeq_rk4": "torchdiffeq",
}


@functools.cache
def build(name):
    """(model in eval mode, make, sizes) for one of BUILDERS, built once with seed 0."""
    pytest.importorskip(LIBRARIES[name])
    torch.manual_seed(0)
    model, make, sizes = BUILDERS[name]()
    return model.eval(), make, sizes


@functools.cache
def _reference(name):
    """torch.compile's capture of a model, computed once."""
    model, make, sizes = build(name)
    return capture("torch.compile", model, make, sizes)


def _row(ours, theirs):
    return (f"symexec: graphs {ours.new_graphs}, ops {ours.ops}, fullgraph {ours.fullgraph}; "
            f"torch.compile: graphs {theirs.new_graphs}, ops {theirs.ops}, fullgraph {theirs.fullgraph}")


# (All of them on CPython 3.11; elsewhere a slice, closures, breaks and hooks among them: helpers.BROAD.)
@pytest.mark.parametrize("name", broad_or(BUILDERS, {"torchdiffeq_rk4", "rotary_attention"}))
def test_library_model_captured_like_torch_compile(name):
    model, make, sizes = build(name)
    theirs = _reference(name)
    ours = capture("symexec", model, make, sizes)
    row = _row(ours, theirs)
    assert not ours.problems and not theirs.problems, f"{name}: {row}\n  " + "\n  ".join(ours.problems + theirs.problems)
    found = shortfalls(ours, theirs)
    assert not found, f"{name}: {row}\n  " + "\n  ".join(found)


@pytest.mark.parametrize("scale", [1.5, -1.0], ids=["valid", "invalid"])
def test_pyro_validation_as_eager(scale):
    """With pyro's (and torch.distributions') validation on, as a process that never ran
    torch.compile has it, each check runs as eager runs it: a valid model's loss is eager's, an
    invalid scale raises eager's ValueError, its message (the distribution's repr) included."""
    pyro = pytest.importorskip("pyro")
    torch.manual_seed(0)
    model = _PyroElbo(scale)
    with torch.no_grad(), pyro.validation_enabled(True):
        check(model, _randn(8, 8))
