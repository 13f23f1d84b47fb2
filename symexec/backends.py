"""Backends follow Dynamo's contract: ``backend(gm, example_inputs) -> callable``.

So every ``torch.compile`` backend plugs in as a callable; the names below are ours.
"""

from __future__ import annotations

from typing import Any, Callable

import torch.fx

Backend = Callable[[torch.fx.GraphModule, list], Callable[..., Any]]


def eager(gm: torch.fx.GraphModule, example_inputs: list) -> Callable[..., Any]:
    """Run the captured graph as it is."""
    return gm.forward


def aot_eager(gm: torch.fx.GraphModule, example_inputs: list) -> Callable[..., Any]:
    """AOTAutograd's forward/backward split, each half run as is (a check of the traced graph)."""
    from torch._functorch.aot_autograd import aot_module_simplified  # noqa: PLC0415 - heavy, on demand
    from torch._functorch.compilers import nop  # noqa: PLC0415

    return aot_module_simplified(gm, example_inputs, fw_compiler=nop, bw_compiler=nop)


def inductor(gm: torch.fx.GraphModule, example_inputs: list) -> Callable[..., Any]:
    """TorchInductor, torch's own compiler (C++/OpenMP code on CPU)."""
    from torch._inductor.compile_fx import compile_fx  # noqa: PLC0415 - heavy, on demand

    return compile_fx(gm, example_inputs)


BACKENDS: dict[str, Backend] = {"eager": eager, "aot_eager": aot_eager, "inductor": inductor}


def register_backend(name: str, backend: Backend) -> None:
    if not isinstance(name, str) or not callable(backend):
        raise TypeError("register_backend(name: str, backend: callable)")
    BACKENDS[name] = backend


def list_backends() -> list[str]:
    return sorted(BACKENDS)


def lookup(backend: Any) -> Backend:
    if isinstance(backend, str):
        try:
            return BACKENDS[backend]
        except KeyError:
            raise ValueError(f"unknown backend {backend!r}; known backends: {', '.join(list_backends())}") from None
    if callable(backend):
        return backend
    raise TypeError(f"backend must be a name ({', '.join(list_backends())}) or a callable(gm, example_inputs), "
                    f"not {type(backend).__name__}")
