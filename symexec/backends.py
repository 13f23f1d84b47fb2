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


_BUILT_IN = frozenset(BACKENDS)


def register_backend(name: str, backend: Backend) -> None:
    """Make ``backend`` known as ``name``, so that ``symexec.compile(fn, backend=name)`` uses it.

    Args:
        name: the name to give it; not one already registered (``list_backends()``).
        backend: a callable with Dynamo's backend contract, ``backend(gm, example_inputs)``: it
            gets each captured ``torch.fx.GraphModule`` and its example inputs (fake tensors and
            symbolic numbers as torch.compile passes them) and returns the callable to run in the
            graph's place. Any torch.compile backend is one.

    Raises:
        TypeError: ``name`` is not a string or ``backend`` is not callable.
        ValueError: ``name`` is taken: a built-in backend, or one registered before with another
            callable (registering the same callable again under its name does nothing).

    Example::

        def printing(gm, example_inputs):
            gm.graph.print_tabular()
            return gm.forward

        symexec.register_backend("printing", printing)
        symexec.compile(fn, backend="printing")
    """
    if not isinstance(name, str) or not callable(backend):
        raise TypeError("register_backend(name: str, backend: callable)")
    known = BACKENDS.get(name)
    if known is not None and (name in _BUILT_IN or known is not backend):
        raise ValueError(f"a backend named {name!r} is already registered"
                         f"{' (built in)' if name in _BUILT_IN else ''}; choose another name")
    BACKENDS[name] = backend


def list_backends() -> list[str]:
    """The names ``symexec.compile(fn, backend=...)`` accepts, sorted: the built-in ones
    ("aot_eager", "eager", "inductor") and those given to ``register_backend``. (A callable
    backend needs no name: ``symexec.compile(fn, backend=my_backend)``.)"""
    return sorted(BACKENDS)


def lookup(backend: Any) -> Backend:
    """The backend to compile graphs with, checked: what it returns must be callable."""
    if getattr(backend, "_symexec_checked", False):
        return backend
    if isinstance(backend, str):
        try:
            return _checked(BACKENDS[backend], backend)
        except KeyError:
            raise ValueError(f"unknown backend {backend!r}; known backends: {', '.join(list_backends())}") from None
    if callable(backend):
        return _checked(backend, getattr(backend, "__name__", type(backend).__name__))
    raise TypeError(f"backend must be a name ({', '.join(list_backends())}) or a callable(gm, example_inputs), "
                    f"not {type(backend).__name__}")


def _checked(backend: Backend, name: str) -> Backend:
    """``backend`` whose result is checked: a non-callable would otherwise fail later, at the
    first call of the generated code, far from its cause. Runs once per graph, at compile
    time; the cache-hit path calls what the backend returned directly. The compiler turns the
    error into ``BackendCompilerFailed`` naming the backend."""

    def checked(gm: torch.fx.GraphModule, example_inputs: list) -> Callable[..., Any]:
        compiled = backend(gm, example_inputs)
        if not callable(compiled):
            raise TypeError(f"backend {name!r} returned a non-callable of type {type(compiled).__name__} "
                            f"({_short_repr(compiled)}); a backend(gm, example_inputs) must return a "
                            f"callable that runs the graph")
        return compiled

    checked.__name__ = checked.__qualname__ = name
    checked.__wrapped__ = backend  # type: ignore[attr-defined]
    checked._symexec_checked = True  # type: ignore[attr-defined]
    return checked


def _short_repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - only a message
        return f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."
