"""Issue 21 (5): the tables families register their handlers in refuse a duplicate (one used to
replace the other silently, so behaviour depended on import order)."""

import pytest


def test_a_handler_registered_twice_is_refused():
    from symexec.variables.base import Registry
    from symexec.variables.builtin_functions import HANDLERS
    from symexec.variables.constant import COMPUTED_WRAPPERS
    assert isinstance(HANDLERS, Registry) and isinstance(COMPUTED_WRAPPERS, Registry)
    with pytest.raises(ValueError, match="registered twice"):
        HANDLERS[len] = lambda tx, obj: None
    with pytest.raises(ValueError, match="registered twice"):
        COMPUTED_WRAPPERS.update({dict: lambda v: None})


def test_the_object_protocol_sits_below_the_families():
    # object_protocol.py imports no tracker family but base and constant; the families register
    # how their kinds of class attribute bind, and lower families call it directly (no slot
    # filled at import time by a higher one)
    import ast
    import pathlib
    import types

    from symexec.variables import object_protocol
    tree = ast.parse(pathlib.Path(object_protocol.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level == 1}
    assert imported <= {"base", "constant"}, imported
    assert {types.FunctionType, staticmethod, classmethod, property, types.WrapperDescriptorType,
            types.MethodDescriptorType} <= set(object_protocol.DESCRIPTORS)
    import symexec.variables.lists as lists
    assert not hasattr(lists, "CLASS_ATTRIBUTE")


def test_torch_callables_the_trace_answers_are_one_table():
    import torch

    from symexec.variables import torch_functions as torch_variables
    from symexec.variables.base import Registry
    table = torch_variables._SPECIAL_CALLS
    assert isinstance(table, Registry)
    assert {torch.jit.annotate, torch.is_tensor, torch.is_grad_enabled, torch.no_grad, torch.enable_grad,
            torch.set_grad_enabled, torch.autocast, torch.autograd.profiler.record_function} <= set(table)
