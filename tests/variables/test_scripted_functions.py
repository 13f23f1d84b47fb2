"""torch.jit.script'ed functions called from compiled code (torch_functions.ScriptFunctionVariable):
traced as the Python functions they were made from where TorchScript takes every argument as it
is, else a break where CPython calls the scripted function."""

import torch

import symexec
from tests.helpers import assert_same_graphs_as_dynamo, check


@torch.jit.script
def fast_cos(x, c: float = 2.0):
    return torch.cos(x) * c


@torch.jit.script
def scaled(x, y, k: int):
    return x * k + y


def test_scripted_function_traced_into_with_its_defaults():
    check(lambda x: fast_cos(x) + fast_cos(x, 3) + fast_cos(x, c=0.5), torch.randn(4))
    compiled = symexec.compile(lambda x: fast_cos(x), fullgraph=True)
    x = torch.randn(3)
    assert torch.equal(compiled(x), fast_cos(x))


def test_scripted_function_held_by_a_module_as_torch_compile_captures_it():
    class Mod(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fast_cos = fast_cos

        def forward(self, x):
            return self.fast_cos(x)

    mod, x = Mod(), torch.randn(4)
    check(mod, x)
    assert_same_graphs_as_dynamo(mod, x)


def test_arguments_torchscript_converts_break_the_graph():
    # a 0-d tensor for a float (TorchScript reads its value), True for an int, a float for an
    # int (TorchScript raises): CPython calls the scripted function, as eager
    check(lambda x: fast_cos(x, torch.tensor(2.0)) + 1, torch.randn(3), expect_traced=False)
    check(lambda x, y: scaled(x, y, True), torch.randn(3), torch.randn(3), expect_traced=False, captured=False)
    check(lambda x, y: scaled(x, y, 2.5), torch.randn(3), torch.randn(3), expect_traced=False, captured=False)
    check(lambda x, y: scaled(x, y, 2), torch.randn(3), torch.randn(3))
