"""Frames that CPython runs for real still get their own code compiled.

CPython has no hook here to compile nested frames for us (Dynamo's eval-frame hook does that
job), so wherever symexec hands a call to CPython it hands over a compiled stand-in instead:

* at a graph break on a call whose callee the tracer would have inlined (``breaks.py``), the
  generated code passes the callee through ``Callees.value`` first;
* where a function runs as its original code (a break that cannot be resumed, or past the cache
  size limit), it runs a copy whose calls of a user's function, method or module call its
  compiled stand-in (``with_compiled_callees``; ``call_sites.py``). Functions of torch, of the
  standard library and of a few other libraries (``_LIBRARY_PACKAGES``) are called as they are,
  as Dynamo's frame hook skips their frames.

``Callees`` is one per family of compiled functions (a compiled function, its continuations and
the callees its breaks call): each callee is compiled once, with its own cache, and found again
on every later call. The mapping is exact: what it cannot stand in for (a ``symexec.disable``d
function, a generator, a module that ``torch.jit`` traces...) is called as it is.
"""

from __future__ import annotations

import functools
import inspect
import os
import sysconfig
import threading
import types
import weakref
from typing import Any, Callable

import torch
from torch._higher_order_ops.associative_scan import associative_scan as _associative_scan
from torch._higher_order_ops.cond import cond as _cond_wrapper
from torch._higher_order_ops.map import map as _map_wrapper
from torch._higher_order_ops.scan import scan as _scan
from torch._higher_order_ops.while_loop import while_loop as _while_loop_wrapper

from . import logs
from .call_sites import with_mapped_callables
from .resume import CONTINUATION_PREFIX, Opened, opened
from .source import partial_field
from .torch_api import disabled_by_torch, disabled_by_user, skipped_frame

# Coroutines, generators and async generators: a call builds a frame object that runs later,
# which a replacement function cannot stand in for.
NOT_TRACED_FLAGS = inspect.CO_COROUTINE | inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE

_MODULE_HOOKS = ("_backward_hooks", "_backward_pre_hooks", "_forward_hooks", "_forward_pre_hooks")
# What nn.Module._call_impl checks before it skips its hook logic and calls ``forward``.
_GLOBAL_MODULE_HOOKS = ("_global_backward_pre_hooks", "_global_backward_hooks", "_global_forward_hooks",
                        "_global_forward_pre_hooks")


def compiled_original(value: Any) -> Any:
    """The function a symexec wrapper (``compile``'s, or an untraced one) stands for, else None.
    (A user's ``functools.wraps`` wrapper of one copies its marks, but wraps the wrapper.)"""
    original = getattr(value, "_symexec_original", None)
    return original if original is not None and getattr(value, "__wrapped__", None) is original else None


# torch's Python wrappers of its higher-order operators (``torch.cond``...; the operators are
# modelled in ``variables/higher_order.py``). A compiled stand-in would take their torch.compile
# path (``is_dynamo_compiling()`` is true while tracing) and skip the checks eager makes: at a
# break, CPython runs them as they are.
HIGHER_ORDER_WRAPPERS = frozenset({_cond_wrapper, _map_wrapper, _while_loop_wrapper, _associative_scan, _scan})


def runs_as_is(fn: types.FunctionType) -> bool:
    """Whether a call of ``fn`` is never compiled: marked ``symexec.disable`` (or by torch's
    ``disable``/``skip``), already a compiled wrapper (it has its own cache), a generator or
    coroutine function, or torch's wrapper of a higher-order operator (``torch.cond``: compiled, it
    would skip eager's checks)."""
    if (fn.__code__.co_flags & NOT_TRACED_FLAGS or disabled_by_torch(fn) or disabled_by_user(fn)
            or fn in HIGHER_ORDER_WRAPPERS):
        return True
    marks = fn.__dict__
    return bool(marks) and ("_symexec_disabled" in marks or compiled_original(fn) is not None)


class Callees:
    """The compiled stand-ins of one family's callees. ``compile_new(fn)`` makes the compiled
    wrapper of a function (``api.py``); each is made once, then found here."""

    def __init__(self, compile_new: Callable[..., Callable[..., Any]], closures_per_code: int) -> None:
        self._compile_new = compile_new
        # Wrappers by function (a continuation: by code, a new function object each time).
        self.wrappers: dict[Any, Callable[..., Any]] = {}
        # A user function's, held weakly (so is the function in its wrapper): a lambda passed
        # in and called at a break dies when the user drops it.
        self.callee_wrappers: "weakref.WeakKeyDictionary[types.FunctionType, Callable[..., Any]]" = \
            weakref.WeakKeyDictionary()
        # A closure is a new function object each time its maker runs; past this many of one
        # code, the others run as they are instead of each being traced (and kept) anew.
        self.closures_per_code = closures_per_code
        self._closures: dict[types.CodeType, int] = {}
        # A function made at run time: its code opened (resume.opened), (globals, opened, wrapper) by code.
        self._opened_codes: dict[types.CodeType, tuple[dict, Opened | None, Callable[..., Any] | None]] = {}
        self._fallback_copies: "weakref.WeakKeyDictionary[types.FunctionType, tuple[tuple, types.FunctionType]]" = \
            weakref.WeakKeyDictionary()
        # A user's torch.autograd.Function class: (its forward, the subclass whose forward is compiled).
        self._function_classes: "weakref.WeakKeyDictionary[type, tuple[Any, type]]" = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def __call__(self, fn: types.FunctionType) -> Callable[..., Any]:
        """The compiled wrapper of ``fn`` (or ``fn`` itself, where it runs as is)."""
        key: Any = fn
        wrappers: Any = self.callee_wrappers
        if fn in self.wrappers:  # the family's root, called from itself
            wrappers = self.wrappers
        elif fn.__code__.co_name.startswith(CONTINUATION_PREFIX):
            # A continuation is a new function object each time: one wrapper per code. One with
            # a closure (of a method with a __class__ cell, which keeps it; a nested break's
            # chain) has one per closure: the replacement traced from it runs over its cells.
            key = (fn.__code__, *map(id, fn.__closure__)) if fn.__closure__ else fn.__code__
            wrappers = self.wrappers
        wrapper = wrappers.get(key)
        if wrapper is not None:
            return wrapper
        with self._lock:  # (called when generated code runs: two threads make one wrapper)
            wrapper = wrappers.get(key)
            if wrapper is not None:
                return wrapper
            if key is not fn.__code__ and fn.__closure__:
                made = self._closures.get(fn.__code__, 0)
                if made >= self.closures_per_code:
                    return fn
                self._closures[fn.__code__] = made + 1
            wrapper = self._compile_new(fn, wrappers is self.callee_wrappers)
            if wrapper is not fn:
                wrappers[key] = wrapper
        return wrapper

    def all_wrappers(self) -> dict[Any, Callable[..., Any]]:
        """Every compiled wrapper of the family: continuations' and callees'."""
        return {**self.wrappers, **self.callee_wrappers}

    # -- run time: what the code generated at a break calls --------------------------------------
    def value(self, callee: Any, any_code: bool = False) -> Any:
        """What to call instead of ``callee``, which the tracer would have inlined: the same
        call, with the Python code it runs compiled."""
        kind = type(callee)
        if kind is types.FunctionType:
            own_frame_skipped = skipped_frame(callee)
            if own_frame_skipped is not None:  # torch's disable(recursive=False), skip: its calls compiled
                return self.fallback_copy(own_frame_skipped)
            if callee.__code__.co_flags & inspect.CO_GENERATOR and _users_function(callee) \
                    and not (disabled_by_torch(callee) or disabled_by_user(callee) or "_symexec_disabled" in callee.__dict__):
                # A generator's frames run as they are (a replacement cannot stand in for one),
                # but what they call is compiled, as Dynamo's hook compiles those frames.
                return self.fallback_copy(callee)
            if runs_as_is(callee) or not (any_code or _users_function(callee) or callee in self.wrappers):
                return callee  # (torch's and the standard library's frames run as they are, as Dynamo's hook skips them)
            if (callee.__closure__ is not None or "<locals>" in callee.__qualname__) and callee not in self.wrappers:
                made = self._opened(callee)  # a function made at run time: compiled once per code
                if made is not None:
                    return functools.partial(_call_opened, *made, callee)
            wrapper = self(callee)
            if wrapper is not callee and "<" in callee.__qualname__:
                # A function made at run time (a closure, a lambda, 3.11's comprehension) may be
                # held by nothing but the call about to be made, and its wrapper holds it weakly:
                # this call holds it until it returns (else a miss inside found it collected).
                return functools.partial(_call_holding, wrapper, callee)
            return wrapper
        if kind is types.MethodType:
            fn = callee.__func__
            if fn is _FUNCTION_APPLY and isinstance(callee.__self__, type):
                return self._function_class(callee.__self__).apply
            module = bound_module_call(callee)
            if module is not None:  # (HF generate()'s ``model_forward = self.__call__``)
                return self._module(module)
            compiled = self.value(fn, any_code) if type(fn) is types.FunctionType else fn
            return callee if compiled is fn else types.MethodType(compiled, callee.__self__)
        if isinstance(callee, functools.partial) and class_lookup(kind, "__call__") is _PARTIAL_CALL:
            # (a subclass's too, read past its own fields: pyro's _bound_partial has a slot named func)
            fn = partial_field(callee, "func")
            compiled = self.value(fn)
            return callee if compiled is fn else \
                functools.partial(compiled, *partial_field(callee, "args"), **partial_field(callee, "keywords"))
        if isinstance(callee, torch.nn.Module):
            return self._module(callee)
        # A class whose metaclass has a Python __call__ (pyro's distributions), an object whose
        # class has one (pyro's handlers): that runs compiled, bound to the callee.
        call = class_lookup(type(callee), "__call__")
        if type(call) is types.FunctionType and _users_function(call):
            compiled = self.value(call)
            return callee if compiled is call else functools.partial(compiled, callee)
        if call is _TYPE_CALL and isinstance(callee, type):
            return self.type_call(callee)
        return callee

    def type_call(self, cls: type) -> Any:
        """What ``type.__call__(cls, ...)`` is (called on a class whose metaclass is ``type``, or
        through ``super().__call__`` in a metaclass's own): ``cls``'s construction with its
        ``__init__``, a user's Python function, compiled; where its classes are all made by class
        statements down to ``object`` and it is no nn.Module (a module is built as it is)."""
        bound = _TYPE_CALL.__get__(cls, type(cls))
        if issubclass(cls, torch.nn.Module) or not all(k is object or k.__flags__ & _HEAP_TYPE for k in cls.__mro__):
            return bound  # (a module, or an instance laid out by a builtin base: a dict's, a type's, made as it is)
        init = class_lookup(cls, "__init__")
        if type(init) is not types.FunctionType or not _users_function(init):
            return bound
        compiled = self.value(init)
        return bound if compiled is init else functools.partial(_construct, cls, init, compiled)

    def _opened(self, fn: types.FunctionType) -> tuple[Opened, Callable[..., Any]] | None:
        """The compiled wrapper of ``fn``'s code opened (``resume.opened``: its closure's cells
        are arguments), made once per code: every closure of the code runs its entries, which
        guard the cells' contents, not the function object. None where the code cannot be
        opened, or another function of it has other globals (the first one's are compiled in)."""
        code = fn.__code__
        known = self._opened_codes.get(code)
        if known is None:
            try:
                made = opened(code)
            except Exception as e:  # noqa: BLE001 - not opened: compiled per function object
                logs.log("debug", "%s is compiled per function: %s: %s", fn.__qualname__, type(e).__name__, e)
                made = None
            wrapper = None
            if made is not None:
                opened_fn = types.FunctionType(made.code, fn.__globals__, fn.__name__)
                opened_fn.__qualname__ = fn.__qualname__
                with self._lock:
                    wrapper = self.wrappers[made.code] = self._compile_new(opened_fn, False)
            known = self._opened_codes[code] = (fn.__globals__, made, wrapper)
        f_globals, made, wrapper = known
        if made is None or f_globals is not fn.__globals__:
            return None
        return made, wrapper

    def _function_class(self, cls: type) -> type:
        """A ``torch.autograd.Function`` class whose ``apply`` runs its forward compiled: a
        subclass of the same name with the compiled forward (``apply`` calls forward from C,
        where no Python code of ours could swap it); the class itself where that is not a
        user's Python staticmethod or is not compiled. Backward runs as it is, as in eager (it
        runs outside any compiled call)."""
        forward = class_lookup(cls, "forward")
        known = self._function_classes.get(cls)
        if known is not None and known[0] is forward:
            return known[1]
        made = cls
        if type(forward) is staticmethod and _users_function(forward.__func__):
            compiled = self.value(forward.__func__)
            if compiled is not forward.__func__:
                made = type(cls)(cls.__name__, (cls,), {"forward": staticmethod(compiled), "__module__": cls.__module__,
                                                      "__qualname__": cls.__qualname__, "__doc__": cls.__doc__})
        self._function_classes[cls] = (forward, made)
        return made

    def attribute(self, obj: Any, name: str) -> Any:
        """``obj.name`` where the load runs a Python getter the tracer would have inlined (a
        property's ``fget``, a descriptor's ``__get__``): that getter runs compiled (one of the
        standard library's, ``functools.cached_property``'s, runs with its calls compiled).
        Attribute lookup is followed as CPython's ``object.__getattribute__`` does; anything
        else (a class's own ``__getattribute__``, a getter in C) is a plain ``getattr``."""
        found = _python_getter(obj, name)
        if found is None:
            return getattr(obj, name)
        getter, args = found
        compiled = self.value(getter) if _users_function(getter) else self.fallback_copy(getter)
        try:
            return compiled(*args)
        except AttributeError:
            fallback = class_lookup(type(obj), "__getattr__")
            if fallback is _MISSING:
                raise
            return fallback(obj, name)  # (a Python function: _python_getter checked)

    def _module(self, module: torch.nn.Module) -> Any:
        """``module(...)`` with its forward compiled; hooks, ``__call__`` overrides and
        ``module.compile()`` behave as in eager."""
        call = type(module).__call__
        if call is not torch.nn.Module.__call__:  # the class's own __call__ is what runs
            compiled = self.value(call) if type(call) is types.FunctionType else call
            return module if compiled is call else types.MethodType(compiled, module)
        if module._compiled_call_impl is not None or torch._C._get_tracing_state() \
                or isinstance(module, torch.nn.RNNBase):  # (a recurrent module runs as it is: nn_module.py)
            return module
        forward = module.forward  # (torch's own, of a module holding the user's: compiled all the same)
        compiled = self.value(forward, any_code=True) if type(forward) in (types.FunctionType, types.MethodType) else forward
        if compiled is forward:
            return module
        hooks = torch.nn.modules.module
        if any(getattr(module, name) for name in _MODULE_HOOKS) or any(getattr(hooks, name) for name in _GLOBAL_MODULE_HOOKS):
            return functools.partial(_call_with_forward, module, compiled)
        return compiled  # no hooks: nn.Module.__call__ would call forward and nothing else

    # -- a function run as its original code --------------------------------------------------
    def at_call_site(self, callee: Any) -> Any:
        """What a call site of a function run as its original code calls instead of ``callee``:
        the compiled stand-in of a user's function, method, ``functools.partial`` or module;
        anything else (builtins, classes, torch's and the standard library's functions) as is."""
        try:
            return self.value(callee) if _users_code(callee) else callee
        except Exception as e:  # noqa: BLE001 - never the user's failure: the call runs as it is
            logs.log("debug", "calling %r as it is: %s: %s", type(callee).__name__, type(e).__name__, e)
            return callee

    def fallback_copy(self, fn: types.FunctionType) -> types.FunctionType:
        """``fn`` with its calls of user code made through compiled wrappers (``at_call_site``)."""
        made_from = (fn.__code__, fn.__defaults__, fn.__kwdefaults__)  # (all may be assigned since)
        known = self._fallback_copies.get(fn)
        if known is None or any(a is not b for a, b in zip(known[0], made_from)):
            known = self._fallback_copies[fn] = (made_from, _copy_with_compiled_callees(fn, self))
        return known[1]


_MISSING = object()


_NO_GLOBALS: dict[str, Any] = {"__builtins__": {}}


def _call_opened(made: Opened, wrapper: Callable[..., Any], fn: types.FunctionType, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` through the compiled wrapper of its opened code: the call bound to
    its parameters and defaults as CPython binds it, its cells made as its frame makes them (a
    parameter's holding the argument, another's empty), its closure's cells passed on."""
    binder = types.FunctionType(made.binder, _NO_GLOBALS, None, fn.__defaults__)
    binder.__kwdefaults__ = fn.__kwdefaults__
    try:
        values = binder(*args, **kwargs)
    except TypeError:  # a call that does not bind: eager's own error
        return fn(*args, **kwargs)
    cells = [types.CellType(values[i]) if i >= 0 else types.CellType() for i in made.cell_params]
    return wrapper(*[values[i] for i in made.live], *cells, *(fn.__closure__ or ()))


def _construct(cls: type, init: types.FunctionType, compiled: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``cls(*args, **kwargs)`` as ``type.__call__`` makes it, with ``compiled`` standing for the
    class's ``__init__`` (``init``): ``__new__``; then, on an instance of ``cls``, the
    ``__init__`` of its type (``compiled`` where that is still ``init``), which must return None."""
    obj = cls.__new__(cls, *args, **kwargs)
    if not isinstance(obj, cls):
        return obj
    kind = type(obj)
    result = compiled(obj, *args, **kwargs) if class_lookup(kind, "__init__") is init else kind.__init__(obj, *args, **kwargs)
    if result is not None:
        raise TypeError(f"__init__() should return None, not '{type(result).__name__}'")
    return obj


def _call_holding(wrapper: Callable[..., Any], fn: types.FunctionType, *args: Any, **kwargs: Any) -> Any:
    """``wrapper(*args, **kwargs)`` while ``fn``, which it holds weakly, is held here."""
    return wrapper(*args, **kwargs)


def class_lookup(cls: type, name: str) -> Any:
    """What CPython's type lookup finds for ``name`` along ``cls``'s MRO (no descriptor run)."""
    for klass in cls.__mro__:
        found = klass.__dict__.get(name, _MISSING)
        if found is not _MISSING:
            return found
    return _MISSING


def _python_getter(obj: Any, name: str) -> tuple[types.FunctionType, tuple[Any, ...]] | None:
    """The Python function ``getattr(obj, name)`` calls and its arguments, where the lookup is
    ``object.__getattribute__``'s and finds a property with a Python ``fget`` or a descriptor
    with a Python ``__get__`` (a non-data one only where the instance's ``__dict__`` lacks the
    name); else None."""
    cls = type(obj)
    if class_lookup(cls, "__getattribute__") is not object.__getattribute__:
        return None
    fallback = class_lookup(cls, "__getattr__")
    if fallback is not _MISSING and type(fallback) is not types.FunctionType:
        return None
    descriptor = class_lookup(cls, name)
    if descriptor is _MISSING:
        return None
    kind = type(descriptor)
    get = class_lookup(kind, "__get__")
    if class_lookup(kind, "__set__") is _MISSING and class_lookup(kind, "__delete__") is _MISSING:
        try:
            attributes = object.__getattribute__(obj, "__dict__")
        except AttributeError:
            attributes = {}
        if type(attributes) is not dict or name in attributes:
            return None
    if get is _PROPERTY_GET:
        fget = descriptor.fget
        return (fget, (obj,)) if type(fget) is types.FunctionType else None
    if type(get) is types.FunctionType:
        return get, (descriptor, obj, cls)
    return None


_PROPERTY_GET = property.__dict__["__get__"]
_PARTIAL_CALL = functools.partial.__dict__["__call__"]
_TYPE_CALL = type.__dict__["__call__"]
_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement
_FUNCTION_APPLY = torch.autograd.Function.__dict__["apply"].__func__
_MODULE_CALL = torch.nn.Module.__call__


# Packages whose functions Dynamo's frame hook does not compile, nor does symexec where it
# runs a frame as its original code: torch's own, symexec's, and libraries of numbers, data,
# progress bars and testing that hold no torch code to capture.
_LIBRARY_PACKAGES = frozenset({"torch", "functorch", "symexec", "bytecode", "numpy", "sympy", "networkx", "pandas",
                               "sklearn", "scipy", "tabulate", "tqdm", "tree", "xarray", "hypothesis", "pytest",
                               "_pytest", "pluggy", "onnx", "onnxruntime", "tensorflow"})
_STDLIB_DIRS = tuple({os.path.join(sysconfig.get_paths()[key], "") for key in ("stdlib", "platstdlib")})


def bound_module_call(callee: types.MethodType) -> torch.nn.Module | None:
    """The module of ``module.__call__`` (``nn.Module.__call__`` bound to it), else None: a call
    of it is the module's call, whose forward Dynamo's hook compiles (past torch's own frames)."""
    module = callee.__self__
    if callee.__func__ is _MODULE_CALL and isinstance(module, torch.nn.Module) \
            and class_lookup(type(module), "__call__") is _MODULE_CALL:
        return module
    return None


def _users_code(callee: Any) -> bool:
    """Whether a call of ``callee`` runs Python code of the user's (or of a library outside the
    standard library and ``_LIBRARY_PACKAGES``), which Dynamo's frame hook would compile."""
    if type(callee) is types.MethodType:
        module = bound_module_call(callee)  # (`is not None`: an empty Sequential is falsy)
        callee = module if module is not None else callee
    if isinstance(callee, torch.nn.Module):
        call = type(callee).__call__
        module = callee
        callee = call if call is not torch.nn.Module.__call__ else getattr(callee, "forward", None)
        if not _users_function(callee):  # torch's own module: compiled where it holds the user's
            # (an nn.Sequential of the user's layers, which its loop calls from torch's code)
            return any(_users_code(child) for child in module._modules.values() if child is not None)
        return True
    return _users_function(callee)


def _users_function(callee: Any) -> bool:
    """``_users_code`` of a function, bound method or ``functools.partial``."""
    if type(callee) is types.MethodType:
        callee = callee.__func__
    elif type(callee) is functools.partial:
        return _users_code(callee.func)
    if type(callee) is not types.FunctionType:
        return False
    return users_code_object(callee.__code__, callee.__module__)


def users_code_object(code: types.CodeType, module: str | None) -> bool:
    """Whether ``code`` (of a function of ``module``) is the user's, or a library's outside the
    standard library and ``_LIBRARY_PACKAGES``: the frames Dynamo's hook compiles."""
    if (module or "").partition(".")[0] in _LIBRARY_PACKAGES:
        return False
    filename = code.co_filename
    return not (filename.startswith(_STDLIB_DIRS) and "site-packages" not in filename)


def _call_with_forward(module: torch.nn.Module, forward: Any, *args: Any, **kwargs: Any) -> Any:
    """Call ``module`` (its hooks run) with ``forward`` as its forward for this call, as
    ``CompiledModule`` does; a module with a forward of its own instance is called as it is."""
    attributes = module.__dict__
    if "forward" in attributes:
        return module(*args, **kwargs)
    attributes["forward"] = forward
    try:
        return module(*args, **kwargs)
    finally:
        if attributes.get("forward") is forward:
            del attributes["forward"]


def with_compiled_callees(fn: types.FunctionType, callees: Callees) -> types.FunctionType:
    """What runs ``fn`` as its original code for this family (made once)."""
    return callees.fallback_copy(fn)


def _copy_with_compiled_callees(fn: types.FunctionType, callees: Callees) -> types.FunctionType:
    """A copy of ``fn`` whose calls call the compiled stand-in of what they call
    (``call_sites.py``). Nothing else changes: every value, the called one too, is the same."""
    try:
        code = with_mapped_callables(fn.__code__, callees.at_call_site)
    except Exception as e:  # noqa: BLE001 - the original code is always a correct copy
        logs.log("debug", "the calls of %s run as they are: %s: %s", fn.__qualname__, type(e).__name__, e)
        return fn
    if code is fn.__code__:
        return fn
    copy = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__qualname__ = fn.__qualname__
    return copy
