"""torch's global state that a trace depends on: the one list it is read from and guarded by.

Every entry is ``(text, read)``: ``read()`` returns the current value, and each entry's guard
is ``read() == <value at trace time>``. A call made under other global state than the trace
saw (grad off, an enclosing ``torch.autocast``, another default dtype, deterministic
algorithms switched on, a torch-function mode such as ``torch.set_default_device``) fails the
guard and retraces.

Autocast is read per device only when some autocast is on: ``torch._C._is_any_autocast_enabled``
is one cheap call, and while it stays False the per-device values cannot matter.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch
from torch.utils._device import DeviceContext

# Devices whose autocast state is guarded when autocast is on somewhere.
AUTOCAST_DEVICES = ("cpu", "cuda")

Reader = Callable[[], Any]

# Always read and guarded.
STATE: tuple[tuple[str, Reader], ...] = (
    ("torch.is_grad_enabled()", torch.is_grad_enabled),
    ("torch.is_inference_mode_enabled()", torch.is_inference_mode_enabled),
    ("torch.get_default_dtype()", torch.get_default_dtype),
    # (the C functions behind torch.are_deterministic_algorithms_enabled and
    # torch.is_deterministic_algorithms_warn_only_enabled: no Python frame per cache hit)
    ("torch.are_deterministic_algorithms_enabled()", torch._C._get_deterministic_algorithms),
    ("torch.is_deterministic_algorithms_warn_only_enabled()", torch._C._get_deterministic_algorithms_warn_only),
    # torch.set_default_device and user TorchFunctionModes live on this stack.
    ("len(torch function mode stack)", torch._C._len_torch_function_stack),
    ("len(torch dispatch mode stack)", torch._C._len_torch_dispatch_stack),
    ("torch.is_autocast_cache_enabled()", torch.is_autocast_cache_enabled),
    ("any autocast enabled", torch._C._is_any_autocast_enabled),
    # vmap, grad, jvp...: the levels a traced torch.vmap pushes are constants of its graph.
    ("functorch transform depth", torch._C._functorch.get_dynamic_layer_stack_depth),
    # torch.jit.trace records the ops as they run: a frame called under it runs as its code
    ("torch.jit tracing", torch._C._is_tracing),
)

# Read and guarded only when some autocast is on.
AUTOCAST_STATE: tuple[tuple[str, Reader], ...] = tuple(
    item
    for device in AUTOCAST_DEVICES
    for item in (
        (f"torch.is_autocast_enabled({device!r})", functools.partial(torch.is_autocast_enabled, device)),
        (f"torch.get_autocast_dtype({device!r})", functools.partial(torch.get_autocast_dtype, device)),
    )
)


def read() -> list[tuple[str, Reader, Any]]:
    """The state as it is now: ``(text, reader, value)`` for every entry that matters."""
    items = [(text, reader, reader()) for text, reader in STATE]
    if torch._C._is_any_autocast_enabled():
        items += [(text, reader, reader()) for text, reader in AUTOCAST_STATE]
    if torch._C._len_torch_function_stack():
        items.append(("the torch function modes (class, device)", function_modes, function_modes()))
    return items


def function_modes() -> tuple[tuple[type, Any], ...]:
    """Each mode on the torch-function stack, by class (and device, for a DeviceContext)."""
    return tuple((type(mode), getattr(mode, "device", None))
                 for mode in map(torch._C._get_function_stack_at, range(torch._C._len_torch_function_stack())))


_CPU = torch.device("cpu")


def modes_transparent() -> bool:
    """No mode changes what the traced code does: no dispatch mode, and on the torch-function
    stack at most ``torch.set_default_device("cpu")``'s, which gives factory functions the device
    they have anyway (transformers' LLaMA sets it while building). symexec traces only here."""
    if torch._C._len_torch_dispatch_stack():
        return False
    return all(kind is DeviceContext and device == _CPU for kind, device in function_modes())


def in_functorch_transform() -> bool:
    """A functorch transform (vmap, grad, ...) is running: the arguments may be its wrapped
    tensors, which fake tensors do not model (symexec traces only outside any)."""
    return torch._C._functorch.get_dynamic_layer_stack_depth() != 0


def pop_functorch_levels() -> None:
    """Pop every functorch level a trace pushed and left (it stopped inside a ``torch.vmap``):
    traces start with none (``in_functorch_transform``)."""
    if torch._C._functorch.get_dynamic_layer_stack_depth():
        torch._C._functorch.pop_dynamic_layer_stack_and_undo_to_depth(0)
