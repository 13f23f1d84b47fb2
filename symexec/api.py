"""The decorator and the hot path.

``compile(fn)`` returns a plain function (so it binds as a method like ``fn`` would) that
walks the cache's ``hot`` list: for each entry, newest first, one call that checks the guards
and runs the replacement, returning ``MISS`` when the guards fail (a new entry calls its guard
function, then its replacement; after a few hits it becomes one generated function with the
guards in front, see ``cache.py``). Nothing else runs on a hit. A miss goes to
``_Compiled.miss``: recompile reasons, the size limit, then a new trace.
"""

from __future__ import annotations

import functools
import inspect
import threading
import types
import weakref
import warnings
from typing import Any, Callable, ParamSpec, TypeVar, overload

import torch

from . import logs
from .backends import lookup
from .callees import NOT_TRACED_FLAGS, Callees, compiled_original
from .cache import ALL_CACHES, CacheEntry, FunctionCache
from .codegen import MISS
from .config import config
from .convert import convert_frame
from .dynamic import DynamicPolicy
from .exc import CacheLimitWarning
from .translator import own_signature
from .versions import check_supported


class _Compiled:
    """Everything a compiled function knows besides its hot path."""

    def __init__(self, fn: types.FunctionType, backend: Callable[..., Any], fullgraph: bool, dynamic: bool | None,
                 callees: Callees | None = None, weak: bool = False) -> None:
        # A callee's (a user function run at a graph break) is held weakly: the cache must not
        # keep a lambda passed in alive, as Dynamo's does not. It is alive whenever it is called.
        self.weak = weak
        self._fn: Callable[[], Any] = weakref.ref(fn) if weak else (lambda: fn)
        self.backend = backend
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.cache = FunctionCache()
        ALL_CACHES.add(self.cache)
        # Compiled wrappers of what this function's graph breaks call: continuations and the
        # callees run at a break, one per function, so their caches persist. Shared by the
        # whole family (a continuation's continuation, a callee's callee are found there too).
        if callees is None:  # the root of a family
            self.callees = Callees(self._compile_new, config.cache_size_limit)
            # A callee that is this function (recursion) shares this cache, as the one code
            # object shares one cache under Dynamo; depth-capped as any callee (_compile_new).
            self.callees.wrappers[fn] = _wrap(self, max_depth=config.max_resume_depth)
        else:
            self.callees = callees

    @property
    def fn(self) -> types.FunctionType:
        return self._fn()

    @property
    def related(self) -> dict[Any, Callable[..., Any]]:
        return self.callees.all_wrappers()

    def _compile_new(self, fn: types.FunctionType, weak: bool = False) -> Callable[..., Any]:
        if fn.__code__.co_flags & _NOT_TRACED_FLAGS:
            return fn if weak else _untraced(fn)  # (a callee: called as it is)
        # Depth-capped: a recursive user function run at a break calls its wrapper once per
        # level, two frames each (wrapper, replacement) where eager spends one; past the cap
        # the rest runs as plain Python, so deep recursion that works eagerly does not hit the
        # interpreter's recursion limit.
        return _wrap(_Compiled(fn, self.backend, self.fullgraph, self.dynamic, self.callees, weak=weak),
                     max_depth=config.max_resume_depth)

    def miss(self, args: tuple, kwargs: dict) -> Any:
        # One trace at a time: tracing is not thread-safe (the ShapeEnv, the fake mode, the
        # family's ``related`` dict), and two threads missing at once on fitting inputs must
        # make one entry, not two. The hit path takes no lock. The replacement runs outside it.
        with _compile_lock:
            entry = self._fitting_entry(args, kwargs)  # another thread may have added one
            if entry is _NOT_A_CALL_OF_FN:
                run = self.fn  # (it raises eager's TypeError)
            elif entry is None:
                entry = self._compile(args, kwargs)
                if entry is None:  # past the cache size limit: its calls still run compiled
                    run = self.callees.fallback_copy(self.fn)
                else:
                    self.cache.add(entry)
                    run = entry.replacement
            else:
                run = entry.replacement
        return run(*args, **kwargs)

    def _fitting_entry(self, args: tuple, kwargs: dict) -> CacheEntry | None:
        for entry in self.cache.entries:
            try:
                if entry.guard(*args, **kwargs):
                    return entry
            except TypeError:  # the call does not fit the parameters as traced (a guard that raises fails)
                if not _fits(self.fn, args, kwargs):
                    return _NOT_A_CALL_OF_FN  # nor the function's own
                continue
        return None

    def _compile(self, args: tuple, kwargs: dict) -> CacheEntry | None:
        """A new entry for this call, or None past the cache size limit (run ``fn``'s code, its
        calls compiled: ``Callees.fallback_copy``)."""
        cache = self.cache
        if cache.limit_warned:  # past the limit: no reasons to gather or keep, call after call
            return None
        text = ""
        if cache.entries:
            reasons = cache.failure_reasons(args, kwargs)
            text = "; ".join(reasons)
            cache.recompile_reasons.append(text)
            if logs.enabled("recompiles"):
                code = self.fn.__code__
                logs.log("recompiles", "Recompiling function %s in %s:%s\n    triggered by the following guard failure(s):\n%s",
                         code.co_name, code.co_filename, code.co_firstlineno, "\n".join(f"    - {r}" for r in reasons))
        # Checked with no entries too: a limit of 0 compiles nothing, as torch.compile's.
        if len(cache.entries) >= config.cache_size_limit:
            if not cache.limit_warned:
                cache.limit_warned = True
                warnings.warn(f"symexec: {self.fn.__qualname__} hit the cache size limit "
                              f"({config.cache_size_limit}); running it without compiling from now on. "
                              f"Last recompile reason: {text or '(none: the first call)'}", CacheLimitWarning, stacklevel=4)
            return None
        return convert_frame(self.fn, args, kwargs, backend=self.backend, fullgraph=self.fullgraph,
                              config=config, index=len(cache.entries),
                              policy=DynamicPolicy(self.dynamic, cache.frame_state),
                              compile_fn=self.callees, hold_weakly=self.weak)


_compile_lock = threading.RLock()  # re-entrant: a backend may call compiled code that misses


_NOT_A_CALL_OF_FN: Any = object()  # what _fitting_entry finds for a call the function's parameters refuse


def _fits(fn: types.FunctionType, args: tuple, kwargs: dict) -> bool:
    """Whether the call binds to ``fn``'s parameters as they are now (its code and defaults:
    not a ``__signature__`` or ``__wrapped__`` it may carry)."""
    try:
        own_signature(fn).bind(*args, **kwargs)
    except TypeError:
        return False
    return True


_P = ParamSpec("_P")
_R = TypeVar("_R")
_M = TypeVar("_M", bound=torch.nn.Module)


# For type checkers: a compiled function keeps the function's signature, a compiled module is
# typed as its module (a CompiledModule reads the module's attributes and runs its call).
@overload
def compile(fn: _M, *, backend: Any = "eager", fullgraph: bool = False, dynamic: bool | None = None) -> _M: ...
@overload
def compile(fn: Callable[_P, _R], *, backend: Any = "eager", fullgraph: bool = False,
            dynamic: bool | None = None) -> Callable[_P, _R]: ...
@overload
def compile(fn: None = None, *, backend: Any = "eager", fullgraph: bool = False,
            dynamic: bool | None = None) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]: ...


def compile(fn: Callable[..., Any] | None = None, *, backend: Any = "eager", fullgraph: bool = False,
            dynamic: bool | None = None) -> Any:
    """Compile ``fn`` with symexec: ``@compile``, ``@compile(backend=...)`` or ``compile(fn, ...)``.

    Args:
        fn: a function, a bound method or any callable, or an ``nn.Module`` (its forward is
            compiled; hooks run as in eager). Omitted, ``compile(...)`` is a decorator.
        backend: what compiles each captured FX graph: a name from ``list_backends()``
            ("eager", "aot_eager", "inductor", ...) or a callable ``(GraphModule, example_inputs)
            -> callable``, as torch.compile's backends.
        fullgraph: raise ``Unsupported`` at the first graph break instead of splitting the
            function (as torch.compile's ``fullgraph=True``).
        dynamic: None (the default) traces sizes as they are and makes one symbolic once it
            changes; True makes sizes symbolic from the first trace; False never does.

    Returns:
        A function with ``fn``'s signature (a ``CompiledModule`` for a module) that traces on
        each call no cached entry accepts, never at decoration.

    Raises:
        TypeError: ``fn`` is not callable, or an argument has the wrong type.
        ValueError: ``backend`` names no registered backend.
        RuntimeError: the running Python is not one symexec supports (3.11 to 3.13).

    Example::

        @symexec.compile(backend="aot_eager")
        def f(x, y):
            return (x - y).relu().sum()

        f(torch.randn(8), torch.randn(8))  # traced, compiled and run; the next call is a cache hit
    """
    check_supported()
    backend_fn = lookup(backend)
    if not isinstance(fullgraph, bool):
        raise TypeError(f"fullgraph must be a bool, not {type(fullgraph).__name__}")
    if dynamic not in (None, True, False):
        raise TypeError(f"dynamic must be None, True or False, not {dynamic!r}")
    if fn is None:
        return functools.partial(compile, backend=backend, fullgraph=fullgraph, dynamic=dynamic)
    if isinstance(fn, torch.nn.Module):
        return CompiledModule(fn, backend=backend, fullgraph=fullgraph, dynamic=dynamic)
    if not callable(fn):
        raise TypeError(f"symexec.compile expects a function, not {type(fn).__name__}")
    fn = compiled_original(fn) or fn
    if not isinstance(fn, types.FunctionType):
        fn = _forwarder(fn)
    if fn.__code__.co_flags & _NOT_TRACED_FLAGS:
        return _untraced(fn)
    return _wrap(_Compiled(fn, backend_fn, fullgraph, dynamic))


# Coroutines, generators and async generators run as they are, as under torch.compile when it
# cannot trace a frame (callees.py says why).
_NOT_TRACED_FLAGS = NOT_TRACED_FLAGS


def _untraced(fn: types.FunctionType) -> Callable[..., Any]:
    """A wrapper of the same kind as ``fn`` (``inspect.iscoroutinefunction`` and friends stay
    true) that delegates everything: ``await`` and ``yield from`` pass sends, throws and
    closes through; an async generator is driven item by item, ``asend``/``athrow`` included."""
    flags = fn.__code__.co_flags
    if flags & inspect.CO_COROUTINE:
        async def untraced(*args: Any, **kwargs: Any) -> Any:
            return await fn(*args, **kwargs)
    elif flags & inspect.CO_ASYNC_GENERATOR:
        async def untraced(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
            agen = fn(*args, **kwargs)
            try:
                value = await agen.__anext__()
                while True:
                    try:
                        sent = yield value
                    except GeneratorExit:
                        await agen.aclose()
                        raise
                    except BaseException as e:  # noqa: BLE001 - thrown in by the caller
                        value = await agen.athrow(e)
                    else:
                        value = await agen.asend(sent)
            except StopAsyncIteration:
                return
    else:  # a generator (or an iterable coroutine, types.coroutine)
        def untraced(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
            return (yield from fn(*args, **kwargs))

        if flags & inspect.CO_ITERABLE_COROUTINE:
            untraced = types.coroutine(untraced)
    functools.update_wrapper(untraced, fn)
    untraced._symexec_original = fn  # type: ignore[attr-defined]
    untraced._symexec_untraced = True  # type: ignore[attr-defined]
    return untraced


def _wrap(state: _Compiled, max_depth: int | None = None) -> Callable[..., Any]:
    """The function users call: the hot path over the cache, nothing else. (A callee's is
    only called by generated code: it holds its function weakly, as ``state`` does.)"""
    fn = state.fn
    hot = state.cache.hot
    miss = state.miss

    if max_depth is None:
        def compiled(*args: Any, **kwargs: Any) -> Any:
            for entry in hot:  # guards and replacement in one generated function
                try:
                    result = entry(*args, **kwargs)
                except TypeError as e:
                    if e.__traceback__.tb_next is not None:  # raised inside, not by the call
                        raise
                    break  # the call does not fit the traced signature: the function's may have changed
                if result is not MISS:
                    return result
            return miss(args, kwargs)
    else:
        # A continuation (a loop whose body breaks calls it from itself once per iteration) or
        # a function run at a break (it may recurse).
        # Past ``max_depth`` nested calls the rest runs as plain Python, before the
        # interpreter's recursion limit is near.
        # The depth is per thread: two threads running the loop do not share a count.
        local = threading.local()
        original = state._fn

        def compiled(*args: Any, **kwargs: Any) -> Any:
            depth = getattr(local, "depth", 0)
            if depth >= max_depth:
                return original()(*args, **kwargs)
            local.depth = depth + 1
            try:
                for entry in hot:
                    try:
                        result = entry(*args, **kwargs)
                    except TypeError as e:  # an entry traced from a call that passed every
                        if e.__traceback__.tb_next is not None:  # argument has no defaults
                            raise
                        break
                    if result is not MISS:
                        return result
                return miss(args, kwargs)
            finally:
                local.depth = depth

    compiled._symexec = state  # type: ignore[attr-defined]
    if state.weak:
        compiled.__name__, compiled.__qualname__ = fn.__name__, fn.__qualname__
    else:
        functools.update_wrapper(compiled, fn)
        compiled._symexec_original = fn  # type: ignore[attr-defined]
    return compiled


def _forwarder(target: Callable[..., Any]) -> types.FunctionType:
    """A Python function calling ``target`` (a bound method, a functools.partial, a callable
    object): compiling it traces into the target."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return target(*args, **kwargs)

    functools.update_wrapper(call, target, assigned=("__module__", "__name__", "__qualname__", "__doc__"), updated=())
    return call


class CompiledModule(torch.nn.Module):
    """What ``symexec.compile(module)`` returns, like torch.compile's optimized module: calling
    it runs the module's own ``__call__`` (its hooks included) with ``forward`` compiled; the
    original module is its ``_orig_mod`` submodule, so ``parameters()``, ``state_dict()``,
    ``train()`` and ``eval()`` reach it, and other attributes are read from it."""

    def __init__(self, mod: torch.nn.Module, *, backend: Any, fullgraph: bool, dynamic: bool | None) -> None:
        super().__init__()
        self._orig_mod = mod
        forward = mod.__dict__.get("forward", None)
        if forward is not None:  # an instance attribute: compile what it is
            forward = getattr(forward, "__func__", forward)
            self._bind = forward is not mod.__dict__["forward"]
        else:
            forward = type(mod).forward
            self._bind = True
        self.__dict__["_compiled_forward"] = compile(forward, backend=backend, fullgraph=fullgraph, dynamic=dynamic)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        mod = self._modules["_orig_mod"]  # (what self._orig_mod finds, without Module.__getattr__)
        forward = types.MethodType(self._compiled_forward, mod) if self._bind else self._compiled_forward
        saved = mod.__dict__.get("forward", _MISSING)
        mod.__dict__["forward"] = forward  # nn.Module.__call__ calls self.forward: ours, for this call
        try:
            return mod(*args, **kwargs)
        finally:
            if saved is _MISSING:
                del mod.__dict__["forward"]
            else:
                mod.__dict__["forward"] = saved

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self(*args, **kwargs)

    @property
    def training(self) -> bool:  # type: ignore[override]
        """The original module's flag (``mod.eval()`` is seen here; ``train()`` here sets it there)."""
        return self._modules["_orig_mod"].training

    @training.setter
    def training(self, mode: bool) -> None:
        modules = self.__dict__.get("_modules")
        if modules is not None and "_orig_mod" in modules:  # (Module.__init__ sets it before there is one)
            modules["_orig_mod"].training = mode

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._orig_mod, name)


_MISSING = object()


def graph_break() -> None:
    """End the current graph here (as ``torch._dynamo.graph_break``): the code before and
    after the call is captured in separate graphs. Outside compiled code it does nothing.

    Example::

        @symexec.compile
        def f(x):
            y = x.sin()
            symexec.graph_break()
            return y.cos()       # symexec.explain(f, x): 2 graphs, 1 graph break
    """


graph_break._symexec_graph_break = True  # type: ignore[attr-defined]


def disable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` run as plain Python, never traced (like ``torch.compiler.disable``): compiling it
    runs it as is, and a compiled function that calls it breaks the graph at the call.

    Args:
        fn: a callable; as a decorator, the function it decorates.

    Returns:
        A wrapper of ``fn`` (``functools.wraps``) that symexec never traces.

    Raises:
        TypeError: ``fn`` is not callable.

    Example::

        @symexec.disable
        def log_stats(t):
            print(t.mean().item())
    """
    if not callable(fn):
        raise TypeError(f"symexec.disable expects a function, not {type(fn).__name__}")
    fn = compiled_original(fn) or fn

    @functools.wraps(fn)
    def disabled(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    disabled._symexec_disabled = True  # type: ignore[attr-defined]
    return disabled


def allow_in_graph(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark ``fn`` to be recorded in the graph as one call, not traced into (like
    ``torch.compiler.allow_in_graph``). It then runs on fake tensors while tracing, so it must
    take and return tensors and constants and have no side effects.

    Args:
        fn: a Python function.

    Returns:
        ``fn`` itself, marked.

    Raises:
        TypeError: ``fn`` is not a Python function.

    Example::

        @symexec.allow_in_graph
        def fused(x, y):
            return x * y + y
    """
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"symexec.allow_in_graph expects a Python function, not {type(fn).__name__}")
    fn._symexec_allow_in_graph = True  # type: ignore[attr-defined]
    return fn


def _state(compiled: Any) -> _Compiled:
    if isinstance(compiled, CompiledModule):
        compiled = compiled._compiled_forward
    state = getattr(compiled, "_symexec", None)
    if not isinstance(state, _Compiled):
        raise TypeError(f"expected a function returned by symexec.compile, not {type(compiled).__name__}")
    return state


def run(fn: Any = None) -> Any:
    """A compiled function that only uses what it has compiled (as ``torch._dynamo.run``): a
    call its cache has an entry for runs that entry; any other runs the original function, and
    nothing is traced for it. (What an entry's code calls at a graph break keeps its own cache,
    and may still compile.)

    Args:
        fn: what ``symexec.compile`` returned; a function that is not compiled is returned as
            it is. Omitted, ``run`` is a decorator.

    Raises:
        TypeError: ``fn`` is a compiled module, or not callable.

    Example::

        compiled(x)                      # traced and cached
        frozen = symexec.run(compiled)
        frozen(x)                        # the entry; frozen(other_kind_of_input) runs eagerly
    """
    if fn is None:
        return run
    if isinstance(fn, CompiledModule):
        raise TypeError("symexec.run expects a function returned by symexec.compile, not a compiled module")
    state = getattr(fn, "_symexec", None)
    if not isinstance(state, _Compiled):
        if not callable(fn):
            raise TypeError(f"symexec.run expects a function, not {type(fn).__name__}")
        return fn
    hot = state.cache.hot

    @functools.wraps(fn)
    def run_only(*args: Any, **kwargs: Any) -> Any:
        for entry in hot:
            try:
                result = entry(*args, **kwargs)
            except TypeError as e:
                if e.__traceback__.tb_next is not None:  # raised inside, not by the call
                    raise
                break
            if result is not MISS:
                return result
        return state.fn(*args, **kwargs)

    return run_only


def cache_entries(compiled: Any) -> list[CacheEntry]:
    """The cache entries of a compiled function, newest first.

    Each ``CacheEntry`` has ``guards`` (each with a ``text`` such as ``L['b'] == 'Hello'``),
    ``graph`` (the ``torch.fx.GraphModule``, or None), ``replacement`` (the generated function a
    hit runs), ``readable_code`` (it, as Python-like text) and ``fallback_reason`` (None, or why
    the entry runs the original function).

    Args:
        compiled: what ``symexec.compile`` returned (a function or a compiled module).

    Raises:
        TypeError: ``compiled`` is not something ``symexec.compile`` returned.

    Example::

        compiled(x)
        [g.text for g in symexec.cache_entries(compiled)[0].guards]
    """
    return list(_state(compiled).cache.entries)


def recompile_reasons(compiled: Any) -> list[str]:
    """Why each retrace happened, oldest first: for each call no entry accepted, the guard of
    each existing entry that rejected it (``L['b'] == 'Hello'``), as torch.compile's
    ``recompiles`` log says it.

    Args:
        compiled: what ``symexec.compile`` returned.

    Raises:
        TypeError: ``compiled`` is not something ``symexec.compile`` returned.
    """
    return list(_state(compiled).cache.recompile_reasons)
