"""A fixed slice of the conformance suites (tests/conformance.py): symexec is ok wherever
torch.compile is, default and dynamic=True, and captures no fewer ops unless it captured the
whole function. `python benchmarks/conformance.py` runs all of it and prints the table."""

import pytest
import torch

import conformance
from helpers import BROAD, broad_or

# Every STRIDE-th op of op_db (in its own order), in each form: deterministic, and spread over
# the whole database rather than its first letters (three times sparser where the sweeps run as
# a slice: helpers.BROAD).
STRIDE = 23 if BROAD else 69


def _op_slice():
    from torch.testing._internal.common_methods_invocations import op_db

    return op_db[::STRIDE]


def _ids(samples):
    return [s.key for s in samples]


OP_SAMPLES = list(conformance.op_samples(_op_slice(), per_op=1))
MODULE_SAMPLES = [s for i, s in enumerate(conformance.module_samples(per_module=1)) if i % (6 if BROAD else 18) == 0]


def _assert_conforms(sample, dynamic):
    comparison = conformance.compare(sample, dynamic)
    assert comparison.conforms, comparison.describe()


@pytest.mark.parametrize("sample", OP_SAMPLES, ids=_ids(OP_SAMPLES))
def test_op_db(sample):
    _assert_conforms(sample, None)


@pytest.mark.parametrize("sample", [s for s in OP_SAMPLES if s.form == "function"],
                         ids=_ids([s for s in OP_SAMPLES if s.form == "function"]))
def test_op_db_dynamic(sample):
    _assert_conforms(sample, True)


@pytest.mark.parametrize("sample", MODULE_SAMPLES, ids=_ids(MODULE_SAMPLES))
def test_module_db(sample):
    _assert_conforms(sample, None)


def _optimizer_sample(name, desc):
    from torch.testing._internal.common_optimizers import optim_db

    info = next(i for i in optim_db if i.optim_cls.__name__ == name)
    return next(s for s in conformance.optim_samples([info]) if s.form == desc)


@pytest.mark.parametrize("name,desc", broad_or([("SGD", "momentum"), ("Adam", "default"), ("AdamW", "amsgrad"),
                                                ("Adagrad", "default"), ("RMSprop", "momentum")], [("Adam", "default")]))
def test_optim_db_step(name, desc):
    _assert_conforms(_optimizer_sample(name, desc), None)


def test_a_public_torch_function_run_for_its_effect_stays_in_the_graph():
    # torch.optim.sgd.sgd returns None and updates the parameters in place: its node was
    # dropped as a helper "that returned None", and optimizer.step() changed nothing.
    # (torch.optim deletes its submodules' names: `torch.optim.sgd` is no attribute, and the test
    # compared two AttributeErrors until a graph that only set the grad mode stopped counting)
    from helpers import check
    from torch.optim.sgd import sgd

    def step(params, grads):
        with torch.no_grad():
            sgd(params, grads, [None], weight_decay=0.0, momentum=0.0, lr=0.1,
                dampening=0.0, nesterov=False, maximize=False)
        return params

    check(step, [torch.randn(3)], [torch.randn(3)])
