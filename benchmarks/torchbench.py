"""TorchBench models: symexec against eager and torch.compile, in eval and in train.

    python benchmarks/torchbench.py [TORCHBENCH_DIR] [--models dcgan,nanogpt,...] [--mode eval|train|both]
                                    [--threads 1] [--timeout 900] [--list]

TorchBench (github.com/pytorch/benchmark) is not part of this repository: nothing of it is
committed or installed by it. The script runs where a checkout of it exists (the argument, else
$TORCHBENCH_DIR, else /work/.cache/torchbench; it exits with a message when there is none), in
an environment holding torch, symexec and the few pure-Python packages the models below import
(see SETUP); it is not run in CI. None of TorchBench's installers is run.

The models are those of torchbenchmark/models that run here as they are: on the CPU, with
random weights and the model's own example inputs, nothing downloaded (no pretrained weights,
configs or datasets), no torchvision, torchaudio or other compiled dependency (`--list` prints
them, and why each other model is left out). Each is built by its own `Model(test=mode,
device="cpu", batch_size=...)` at a small batch size, and `get_module()` gives (module,
example inputs), as in PyTorch's own benchmarks/dynamo/torchbench.py. Everything runs in one
process. For each model and mode, three deep copies of the module run the same inputs:

  eager            the module itself
  symexec          symexec.compile(module, backend=counting)
  torch.compile    torch.compile(module, backend=counting)

where `counting` records every graph it is given and runs it as is (Dynamo's backend
contract; tests/helpers.CountingBackend).

  eval   module.eval(), the call under torch.no_grad() (torch.enable_grad() for the models
         TorchBench runs so: maml).
  train  module.train(), the call, then loss = the sum of the means of every floating output
         tensor, loss.backward().

Each system makes the call twice (the second a cache hit, seeded like the first, in train
after the first backward). Compared with eager, within rtol 1e-4 / atol 1e-5 (models_common.
differences: every output tensor, structure included, as Dynamo's accuracy check for float32):
both calls' outputs, every parameter's gradient (train) and every buffer after the calls
(BatchNorm's running statistics). Counted: the graphs the backend was given by the first call
and their op nodes (call_function/call_method/call_module), graph breaks (symexec: the user
locations of the breaks in its `graph_breaks` log, but for a break in a loop, after which the
frame runs as its code: torch.compile skips such a frame, and counts no break for it;
torch.compile: counters["graph_break"]), graphs
compiled by the second call (a recompile there is a guard failing on identical inputs), and
the first call's time (trace, compile and run; the forward only in train).

symexec's status: `ok` (equal to eager, no fallback, no more graphs or breaks than
torch.compile and at least 90% of its ops), else the first of `RAISES` (the call raised),
`WRONG` (differs from eager), `FALLBACK` (an entry runs the original function: a
SymexecWarning, or a function past the cache size limit), `graphs+` (more graphs than
torch.compile), `breaks+` (more graph breaks), `ops-` (under 90% of its ops), `recompile`
(compiles again on the second call when torch.compile does not). After a fallback the model
runs once more with symexec.config.raise_on_internal_error = True, and the note names the
error and the innermost symexec frame it came from. A model torch.compile itself fails on
(raises, or differs from eager) is marked `tc fails` and is not counted against symexec. The
table ends with the count of `ok` rows and the median ratio of first-call times, symexec /
torch.compile, over the runs without a fallback.

SETUP (once; every path outside this repository):

    fetch github:pytorch/benchmark, then git clone <its git dir> /work/.cache/torchbench
    python3.11 -m venv /work/.cache/tb-venv && . /work/.cache/tb-venv/bin/activate
    pip install torch==2.13.0 && pip install -e /work/main
    pip install torch==2.13.0 transformers==5.24.0 pyyaml numpy psutil tqdm gymnasium
    python benchmarks/torchbench.py /work/.cache/torchbench

Torch runs single-threaded by default (--threads), as in models.py.
"""

import argparse
import copy
import gc
import importlib
import logging
import os
import random
import signal
import statistics
import sys
import time
import traceback
import warnings

os.environ["HF_HUB_OFFLINE"] = "1"  # before transformers is imported: never download
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy
import torch
import torch._dynamo  # the reference
from torch._dynamo.utils import counters as dynamo_counters
from workloads import environment

import symexec

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from helpers import CountingBackend  # noqa: E402
from models_common import differences  # noqa: E402

DEFAULT_DIR = "/work/.cache/torchbench"

# ---------------------------------------------------------------------------------------------
# The models that run here. name -> (batch size in eval, batch size in train); None: the
# model's own default (or a model that does not let it be changed); a mode the model does not
# implement (TorchBench raises NotImplementedError) is left out of the tuple's meaning by
# MODES below.

MODELS = {
    "BERT_pytorch": (2, 2),
    "cm3leon_generate": (1, 1),
    "dcgan": (2, 2),
    "demucs": (1, 4),  # train: the batch must be a multiple of its remix group (4)
    "hf_Bert": (1, 1),
    "hf_Bert_large": (1, 1),
    "hf_BigBird": (1, 1),
    "hf_Reformer": (1, 1),
    "hf_Whisper": (1, 1),
    "lennard_jones": (None, None),
    "llama": (2, None),
    "maml": (None, None),
    "microbench_unbacked_tolist_sum": (None, None),
    "nanogpt": (1, 1),
    "nvidia_deeprecommender": (4, 4),
    "phlippe_densenet": (8, 8),
    "phlippe_resnet": (8, 8),
    "pyhpc_equation_of_state": (16384, None),  # the batch is the number of grid points
    "pyhpc_isoneutral_mixing": (16384, None),
    "pyhpc_turbulent_kinetic_energy": (None, None),
    "pytorch_unet": (1, 1),
    "soft_actor_critic": (None, None),
    "tts_angular": (2, 2),
}

# The modes each model implements (TorchBench's Model.train() raises NotImplementedError for
# the others, or returns it: llama); absent: both.
MODES = {
    "cm3leon_generate": ("eval",),  # (its output is generated token ids: nothing to train through)
    "llama": ("eval",),
    "maml": ("eval",),
    "microbench_unbacked_tolist_sum": ("eval",),
    "pyhpc_equation_of_state": ("eval",),
    "pyhpc_isoneutral_mixing": ("eval",),
    "pyhpc_turbulent_kinetic_energy": ("eval",),
}

# Every other model of torchbenchmark/models, and why it does not run here.
_TORCHVISION = "imports torchvision"
_HUB = "downloads its config (and weights) from the Hugging Face Hub"
_DATA = "reads a data file TorchBench's installer downloads"
EXCLUDED = {
    "Background_Matting": "imports tensorboardX, cv2 and torchvision",
    "LearningToPaint": "imports cv2 (OpenCV) and torchvision",
    "Super_SloMo": _TORCHVISION,
    "alexnet": _TORCHVISION,
    **{f"basic_gnn_{n}": "imports torch_geometric; " + _DATA + " (Reddit_minimal)"
       for n in ("edgecnn", "gcn", "gin", "sage")},
    "densenet121": _TORCHVISION,
    **{f"detectron2_{n}": "imports detectron2 (a compiled extension)"
       for n in ("fasterrcnn_r_101_c4", "fasterrcnn_r_101_dc5", "fasterrcnn_r_101_fpn", "fasterrcnn_r_50_c4",
                 "fasterrcnn_r_50_dc5", "fasterrcnn_r_50_fpn", "fcos_r_50_fpn", "maskrcnn", "maskrcnn_r_101_c4",
                 "maskrcnn_r_101_fpn", "maskrcnn_r_50_c4", "maskrcnn_r_50_fpn")},
    "dlrm": "imports onnx (compiled; unused by the model)",
    "doctr_det_predictor": "imports doctr (python-doctr, OpenCV) and downloads weights",
    "doctr_reco_predictor": "imports doctr (python-doctr, OpenCV) and downloads weights",
    "drq": "imports gym and kornia; " + _DATA + " (drq/obs.pkl)",
    "fastNLP_Bert": "imports fastNLP; " + _DATA,
    "functorch_dp_cifar10": _TORCHVISION,
    "functorch_maml_omniglot": _DATA + " (maml_omniglot/batch.pt)",
    **{n: _HUB for n in ("hf_Albert", "hf_Bart", "hf_DistilBert", "hf_GPT2", "hf_GPT2_large", "hf_Longformer",
                         "hf_Roberta_base", "hf_T5", "hf_T5_base", "hf_T5_generate", "hf_T5_large",
                         "hf_distil_whisper", "llava", "moondream")},
    "hf_clip": "imports PIL and requests; " + _HUB,
    "llama_v2_7b_16h": "needs HUGGING_FACE_HUB_TOKEN (gated download); 3.5B parameters",
    "maml_omniglot": "imports higher; " + _DATA + " (maml_omniglot/batch.pt)",
    "mnasnet1_0": _TORCHVISION,
    "mobilenet_v2": _TORCHVISION,
    "mobilenet_v2_quantized_qat": _TORCHVISION,
    "mobilenet_v3_large": _TORCHVISION,
    "moco": _TORCHVISION,
    "modded_nanogpt": "imports triton (CUDA only)",
    "opacus_cifar10": "imports opacus and torchvision",
    "pytorch_CycleGAN_and_pix2pix": _TORCHVISION,
    "pytorch_stargan": "imports PIL and torchvision",
    "resnet152": _TORCHVISION,
    "resnet18": _TORCHVISION,
    "resnet50": _TORCHVISION,
    "resnet50_quantized_qat": _TORCHVISION,
    "resnext50_32x4d": _TORCHVISION,
    "sam": "imports cv2 (OpenCV) and torchvision; downloads weights",
    "sam_fast": "imports cv2, triton and segment_anything_fast; downloads weights",
    "shufflenet_v2_x1_0": _TORCHVISION,
    "simple_gpt": "CUDA only (bfloat16, DTensor tensor parallelism)",
    "simple_gpt_tp_manual": "CUDA only (bfloat16, tensor parallelism)",
    "speech_transformer": "imports kaldi_io; " + _DATA + " (speech_transformer_inputs)",
    "squeezenet1_1": _TORCHVISION,
    "stable_diffusion_text_encoder": "imports diffusers; " + _HUB,
    "stable_diffusion_unet": "imports diffusers; " + _HUB,
    "tacotron2": "imports unidecode, inflect, librosa; " + _DATA + " (tacotron2-minimal)",
    "timm_efficientdet": "imports effdet and timm (which imports torchvision); downloads weights",
    **{n: "imports timm, which imports torchvision" + ("" if n == "timm_vovnet" else "; downloads pretrained weights")
       for n in ("timm_efficientnet", "timm_nfnet", "timm_regnet", "timm_resnest", "timm_vision_transformer",
                 "timm_vision_transformer_large", "timm_vovnet")},
    "torch_multimodal_clip": "imports torchmultimodal, PIL and torchvision; downloads weights",
    "vgg16": _TORCHVISION,
    "vision_maskrcnn": "imports torchvision and pycocotools; " + _DATA + " (COCO)",
    "yolov3": "imports torchvision, cv2 and pycocotools; " + _DATA,
}


# ---------------------------------------------------------------------------------------------
# Building a model.

def load_torchbench(path):
    if not os.path.isdir(os.path.join(path, "torchbenchmark", "models")):
        sys.exit(f"torchbench.py: no TorchBench checkout at {path!r} (expected {path}/torchbenchmark/models).\n"
                 f"Fetch github:pytorch/benchmark and clone it there, or pass its path (or set TORCHBENCH_DIR); "
                 f"see SETUP in this script's docstring.")
    sys.path.insert(0, os.path.abspath(path))
    try:
        import torchbenchmark  # noqa: F401
    except ImportError as error:
        sys.exit(f"torchbench.py: cannot import torchbenchmark from {path}: {error}\n"
                 f"(its own imports need psutil, pyyaml and numpy: see SETUP in this script's docstring)")


def build(name, mode):
    """(module, args, kwargs) of TorchBench's model `name`, in `mode`, at our batch size."""
    module = importlib.import_module(f"torchbenchmark.models.{name}")
    cls = module.Model
    eval_bs, train_bs = MODELS.get(name, (None, None))
    batch_size = eval_bs if mode == "eval" else train_bs
    if not getattr(cls, "ALLOW_CUSTOMIZE_BSIZE", True):
        batch_size = None
    benchmark = cls(test=mode, device="cpu", batch_size=batch_size)
    model, inputs = benchmark.get_module()
    # llama's Model calls torch.set_default_device("cpu"), which leaves a torch-function mode
    # (DeviceContext) on for the rest of the process: every later model would run each op
    # through it, under both systems and eagerly. The models are what is measured here: the
    # mode goes once the model is built.
    torch.set_default_device(None)
    model.train(mode == "train")
    if isinstance(inputs, dict):
        return model, (), inputs
    return model, tuple(inputs), {}


def grad_mode(name, mode):
    if mode == "train":
        return torch.enable_grad()
    from torchbenchmark.util.env_check import USE_GRAD_IN_INFERENCE
    return torch.enable_grad() if name in USE_GRAD_IN_INFERENCE else torch.no_grad()


def plain(value):
    """An output made of tensors, containers and constants only (what models_common.differences
    compares): a torch.distributions.Distribution becomes the dict of its tensors (its
    parameters, its base distribution's), a dataclass the dict of its fields."""
    if isinstance(value, torch.distributions.Distribution):
        return {"distribution": type(value).__name__,
                **{k: plain(v) for k, v in sorted(vars(value).items())
                   if isinstance(v, (torch.Tensor, torch.distributions.Distribution))}}
    if hasattr(value, "to_tuple") or isinstance(value, torch.Tensor):
        return value
    if hasattr(value, "__dataclass_fields__"):
        return {f: plain(getattr(value, f)) for f in value.__dataclass_fields__}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value) if type(value) in (list, tuple) else value
    return value


def detached(value):
    return torch.utils._pytree.tree_map(lambda t: t.detach() if isinstance(t, torch.Tensor) else t, value)


def floating_tensors(value):
    """Every floating-point tensor of an output (after plain()), in order."""
    if isinstance(value, torch.Tensor):
        return [value] if value.is_floating_point() else []
    if hasattr(value, "to_tuple"):
        value = value.to_tuple()
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in floating_tensors(v)]
    return []


def scalar_loss(output):
    """The sum of the means of every floating output tensor that takes part in autograd."""
    parts = [t.mean() for t in floating_tensors(plain(output)) if t.requires_grad]
    if not parts:
        raise RuntimeError("no floating output tensor requires grad: nothing to train")
    return sum(parts)


# ---------------------------------------------------------------------------------------------
# Running one system.

class Run:
    """What one system did with one model in one mode."""

    def __init__(self, system):
        self.system = system
        self.error = None  # "Type: first line" when the call (or backward) raised
        self.error_trace = None
        self.outputs = []  # the output of each call
        self.grads = {}
        self.buffers = {}
        self.graphs = 0  # graphs compiled by the first call
        self.ops = 0
        self.second_graphs = 0  # graphs compiled by the second call
        self.breaks = 0
        self.break_reasons = []
        self.fallbacks = []
        self.loop_frames = 0  # symexec: frames run as their code for a break in a loop
        self.first_ms = None
        self.differences = []  # from eager's run


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.records = []

    def emit(self, record):
        self.records.append(record)


class _symexec_logs:
    """Collect symexec's graph_breaks and fallbacks records (printing nothing)."""

    NAMES = ("symexec.graph_breaks", "symexec.fallbacks")

    def __enter__(self):
        self.handler = _Collect()
        self.saved = []
        for name in self.NAMES:
            logger = logging.getLogger(name)
            self.saved.append((logger, logger.level, logger.propagate))
            logger.setLevel(logging.INFO)
            logger.propagate = False
            logger.addHandler(self.handler)
        return self.handler

    def __exit__(self, *exc):
        for logger, level, propagate in self.saved:
            logger.removeHandler(self.handler)
            logger.setLevel(level)
            logger.propagate = propagate


def first_line(error):
    text = (str(error).strip().splitlines() or [""])[0]
    return f"{type(error).__name__}: {text[:300]}"


def seed():
    # (TorchBench's set_random_seed makes torch.manual_seed always seed its own constant)
    torch.manual_seed(0)
    random.seed(0)
    numpy.random.seed(0)  # (BigBird's random attention blocks, for one)


def run(system, name, mode, pristine, args, kwargs):
    result = Run(system)
    model = copy.deepcopy(pristine)
    args, kwargs = copy.deepcopy((args, kwargs))
    backend = CountingBackend()
    if system == "symexec":
        symexec.reset()
        fn = symexec.compile(model, backend=backend)
    elif system == "torch.compile":
        torch._dynamo.reset()
        dynamo_counters.clear()
        fn = torch.compile(model, backend=backend)
    else:
        fn = model
    with _symexec_logs() as logs, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # (recorded, not printed: symexec's own are reported below)
        try:
            for call in range(2):
                seed()
                before = backend.graph_count
                with grad_mode(name, mode):
                    start = time.perf_counter()
                    output = fn(*args, **kwargs)
                    elapsed = time.perf_counter() - start
                    if mode == "train" and call == 0:
                        scalar_loss(output).backward()
                result.outputs.append(detached(plain(output)))
                del output
                if call == 0:
                    result.first_ms = elapsed * 1e3
                    result.graphs = backend.graph_count
                    result.ops = sum(backend.op_counts())
                else:
                    result.second_graphs = backend.graph_count - before
        except Exception as error:  # reported in the table; the other systems go on
            result.error = first_line(error)
            result.error_trace = traceback.format_exc()
    if mode == "train":
        result.grads = {n: p.grad for n, p in model.named_parameters()}
    result.buffers = {n: b for n, b in model.named_buffers()}
    if system == "symexec":
        reasons = {}
        for record in logs.records:
            if record.name.endswith("graph_breaks") and getattr(record.args[-1], "in_loop", False):
                # A break in a loop: the frame runs as its code, what it calls compiled, as
                # torch.compile skips it ("graph break in loop"), which it does not count as a
                # graph break either.
                result.loop_frames += 1
            elif record.name.endswith("graph_breaks"):
                # One break is reported by every frame it unwinds through (a break inside an
                # inlined call breaks each caller at its call), each naming its own sources:
                # one break per user location.
                reason = record.args[-1]
                where = (getattr(reason, "filename", None), getattr(reason, "lineno", None))
                reasons.setdefault(where if where[0] is not None else str(reason), reason)
            else:
                result.fallbacks.append(record.getMessage())
        result.break_reasons = list(reasons.values())
        result.breaks = len(reasons)
        # A SymexecWarning (an internal error), and the cache size limit's UserWarning: past it
        # a function runs uncompiled.
        result.fallbacks += [f"{w.category.__name__}: {w.message}" for w in caught
                             if issubclass(w.category, symexec.SymexecWarning) or str(w.message).startswith("symexec:")]
        symexec.reset()
    elif system == "torch.compile":
        result.breaks = sum(dynamo_counters["graph_break"].values())
        result.break_reasons = list(dynamo_counters["graph_break"])
        torch._dynamo.reset()
    return result


def compare(actual, expected, mode):
    """Where `actual` differs from eager's run `expected`."""
    found = []
    for call, (a, e) in enumerate(zip(actual.outputs, expected.outputs), 1):
        found += [f"call {call} output: {d}" for d in differences(a, e)]
    if mode == "train":
        found += [f"grad {d[4:]}" for d in differences(actual.grads, expected.grads) if d != "no tensor in the output"]
    found += [f"buffer {d[4:]}" for d in differences(actual.buffers, expected.buffers) if d != "no tensor in the output"]
    return found


def internal_error(name, mode, pristine, args, kwargs):
    """Run symexec again with raise_on_internal_error: "Type: message (at file:line in fn)"."""
    saved = symexec.config.raise_on_internal_error
    symexec.config.raise_on_internal_error = True
    try:
        again = run("symexec", name, mode, pristine, args, kwargs)
    finally:
        symexec.config.raise_on_internal_error = saved
    if again.error is None:
        return None
    return f"{again.error} [{innermost_symexec_frame(again.error_trace)}]"


def innermost_symexec_frame(trace):
    frames = [line.strip() for line in trace.splitlines() if line.strip().startswith('File "') and "/symexec/" in line]
    if not frames:
        return "no symexec frame"
    # File ".../symexec/x/y.py", line 12, in fn
    path, line, where = frames[-1].split(", ")
    return f"{path.split('/symexec/', 1)[1].rstrip(chr(34))}:{line.split()[1]} {where}"


# ---------------------------------------------------------------------------------------------
# The table.

class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def measure(name, mode, timeout):
    """One row: (status, eager, symexec, torch.compile runs, notes)."""
    notes = []
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        torch.manual_seed(0)
        pristine, args, kwargs = build(name, mode)
        runs = {"eager": run("eager", name, mode, pristine, args, kwargs)}
        for system in ("symexec", "torch.compile"):  # compared as they come: one copy's state at a time
            runs[system] = run(system, name, mode, pristine, args, kwargs)
            runs[system].differences = compare(runs[system], runs["eager"], mode)
            runs[system].outputs = runs[system].grads = runs[system].buffers = None
            gc.collect()
    except _Timeout:
        return "timeout", None, None, None, [f"over {timeout} s (--timeout)"]
    except NotImplementedError as error:
        return "n/a", None, None, None, [f"TorchBench: {first_line(error)}"]
    except Exception as error:
        return "build fails", None, None, None, [first_line(error)]
    finally:
        signal.alarm(0)
    eager, ours, theirs = runs["eager"], runs["symexec"], runs["torch.compile"]
    if eager.error:
        return "eager fails", eager, ours, theirs, [f"eager: {eager.error}"]

    theirs_wrong = [f"torch.compile: {theirs.error}"] if theirs.error else theirs.differences
    if theirs.error is None and theirs_wrong:
        theirs_wrong = [f"torch.compile differs from eager: {d}" for d in theirs_wrong]
    ours_wrong = ours.differences if ours.error is None else []
    notes += [f"symexec differs from eager: {d}" for d in ours_wrong[:6]]
    notes += [f"  ... and {len(ours_wrong) - 6} more" for _ in [1] if len(ours_wrong) > 6]
    if ours.error:
        notes.append(f"symexec raised {ours.error}")
    notes += [f"symexec fallback: {f}" for f in ours.fallbacks]
    if ours.loop_frames:
        notes.append(f"symexec: {ours.loop_frames} frame(s) broke in a loop and ran as their code, their calls "
                     f"compiled (torch.compile skips such frames)")
    if ours.fallbacks and not ours.error:
        error = internal_error(name, mode, pristine, args, kwargs)
        if error:
            notes.append(f"with raise_on_internal_error: {error}")
    if ours.graphs > theirs.graphs or ours.breaks > theirs.breaks or ours.ops < 0.9 * theirs.ops:
        notes += [f"symexec break: {str(r).splitlines()[0]}"
                  + (f" at {os.path.basename(r.filename)}:{r.lineno}" if getattr(r, "filename", None) else "")
                  for r in ours.break_reasons]
        notes += [f"torch.compile break: {str(r).strip().splitlines()[0]}" for r in theirs.break_reasons]

    if ours.error:
        status = "RAISES"
    elif ours_wrong:
        status = "WRONG"
    elif ours.fallbacks:
        status = "FALLBACK"
    elif theirs.error or theirs_wrong:
        status = "ok"  # (not measured against a failing reference)
    elif ours.graphs > theirs.graphs:
        status = "graphs+"
    elif ours.breaks > theirs.breaks:
        status = "breaks+"
    elif ours.ops < 0.9 * theirs.ops:
        status = "ops-"
    elif ours.second_graphs > theirs.second_graphs:
        status = "recompile"
    else:
        status = "ok"
    if theirs.error or theirs_wrong:
        notes += theirs_wrong[:3]
        status = f"tc fails ({status})"
    return status, eager, ours, theirs, notes


def fmt_pair(a, b):
    return f"{'-' if a is None else a}/{'-' if b is None else b}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("torchbench_dir", nargs="?", default=os.environ.get("TORCHBENCH_DIR", DEFAULT_DIR),
                        help=f"the TorchBench checkout (default: $TORCHBENCH_DIR, else {DEFAULT_DIR})")
    parser.add_argument("--models", default=None,
                        help="comma-separated TorchBench model names (default: every model of --list that runs here)")
    parser.add_argument("--mode", default="both", choices=("eval", "train", "both"))
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per model and mode (default 900)")
    parser.add_argument("--list", action="store_true", help="print the models that run here, the others and why, then exit")
    options = parser.parse_args()
    if options.list:
        print("run here:", ", ".join(f"{n} ({'/'.join(MODES.get(n, ('eval', 'train')))})" for n in MODELS))
        for name, why in EXCLUDED.items():
            print(f"left out: {name}: {why}")
        return
    load_torchbench(options.torchbench_dir)
    names = list(MODELS) if options.models is None else [n.strip() for n in options.models.split(",") if n.strip()]
    modes = ("eval", "train") if options.mode == "both" else (options.mode,)

    print(environment(), flush=True)
    logging.getLogger("torch._dynamo").setLevel(logging.ERROR)  # its graph-break warnings: counted instead
    torch.set_num_threads(options.threads)
    warm_up()
    width = max(9, *(len(n) + 1 for n in names))
    header = (f"{'model':<{width}}{'mode':<6}{'symexec':<16}{'graphs':>8}{'ops':>11}{'breaks':>8}"
              f"{'2nd':>5}{'1st sym':>10}{'1st tc':>10}{'ratio':>7}")
    print(f"{torch.get_num_threads()} thread(s); graphs, ops, breaks, 2nd (graphs compiled by the second call): "
          f"symexec/torch.compile; 1st = first call in ms")
    print(header)
    print("-" * len(header), flush=True)
    all_notes, ratios, counted, ok = [], [], 0, 0
    for name in names:
        for mode in modes:
            if mode not in MODES.get(name, ("eval", "train")):
                continue
            status, eager, ours, theirs, notes = measure(name, mode, options.timeout)
            all_notes += [f"{name} {mode}: {n}" for n in notes]
            if ours is None:
                print(f"{name:<{width}}{mode:<6}{status}", flush=True)
                continue
            if not status.startswith("tc fails") and status not in ("eager fails",):
                counted += 1
                ok += status == "ok"
            ratio = ""
            if ours.first_ms and theirs.first_ms and not (ours.error or ours.fallbacks or theirs.error):
                ratios.append(ours.first_ms / theirs.first_ms)
                ratio = f"{ratios[-1]:.2f}"
            print(f"{name:<{width}}{mode:<6}{status:<16}{fmt_pair(ours.graphs, theirs.graphs):>8}"
                  f"{fmt_pair(ours.ops, theirs.ops):>11}{fmt_pair(ours.breaks, theirs.breaks):>8}"
                  f"{fmt_pair(ours.second_graphs, theirs.second_graphs):>5}"
                  f"{_ms(ours.first_ms):>10}{_ms(theirs.first_ms):>10}{ratio:>7}", flush=True)
    print(f"symexec ok: {ok} of {counted} runs (runs torch.compile itself fails are not counted)"
          + (f"; first call symexec / torch.compile: median {statistics.median(ratios):.2f}, "
             f"max {max(ratios):.2f} (runs without fallback)" if ratios else ""))
    print("(symexec: ok, else RAISES, WRONG = differs from eager, FALLBACK = runs the original function, graphs+ / "
          "breaks+ = more graphs / breaks than torch.compile, ops- = under 90% of its ops, recompile = compiles again "
          "on the second call; tc fails = torch.compile itself raises or differs from eager, symexec's own status "
          "in brackets)")
    for note in all_notes:
        print("NOTE:", note)


def _ms(value):
    return "-" if value is None else f"{value:.0f}"


def warm_up():
    """Pay each system's one-time start-up (imports, first trace) before the first model."""
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten(),
                                torch.nn.Linear(16, 4))
    for compiled in (symexec.compile(model, backend="eager"), torch.compile(model, backend="eager")):
        with torch.no_grad():
            compiled(torch.randn(2, 3, 4, 4))
        compiled(torch.randn(2, 3, 4, 4)).sum().backward()
    symexec.reset()
    torch._dynamo.reset()


if __name__ == "__main__":
    main()
