"""instance.build: a task at one workload (model, parameters, inputs), for both formats."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from forgekernel import instance
from forgekernel.judge import inputs as inp
from forgekernel.kernelbench import convert
from forgekernel.task import check_reference_module, load_task, shape_of

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "kernelbench"


@pytest.fixture(scope="module")
def batchnorm(tmp_path_factory):
    task = load_task(convert(FIXTURES / "6_batchnorm_train.py", tmp_path_factory.mktemp("bn") / "t"))
    return task, check_reference_module(task)


def test_forge_task_inputs_are_drawn_from_the_specs_as_before():
    task = load_task(REPO / "tasks" / "rmsnorm")
    module = check_reference_module(task)
    wl = task.smoke_workloads()[0]
    inst = instance.build(task, module, wl, seed=5)
    gen = inp.generator(5, "cpu")
    expected = [inp.draw(s, shape_of(s, wl.axes), gen, "cpu") for s in task.inputs.values()]
    assert all(torch.equal(a, b) for a, b in zip(inst.inputs, expected, strict=True))
    assert inst.model is None and inst.params == [] and inst.functional() is module.run
    (out,) = inst.reference()
    assert torch.equal(out, module.run(*inst.inputs))
    meta = instance.build(task, module, wl, meta=True)
    assert all(t.device.type == "meta" for t in meta.inputs)


@pytest.mark.parametrize("name", ["rmsnorm", "cross_entropy", "rope"])
def test_inputs_into_writes_in_place_the_values_of_the_same_seed(name, batchnorm):
    """A timing pool refilled in place holds exactly what a fresh draw of that seed gives
    (the verifier re-derives a timed call's inputs from its seed to check its output)."""
    task = load_task(REPO / "tasks" / name)
    module = check_reference_module(task)
    wl = task.smoke_workloads()[0]
    fresh = instance.inputs_at(task, module, wl, seed=11)
    views = [torch.full_like(t, 7) for t in fresh]
    storages = [v.data_ptr() for v in views]
    instance.inputs_into(task, module, wl, 11, views, "cpu")
    assert [v.data_ptr() for v in views] == storages
    assert all(torch.equal(a, b) for a, b in zip(views, fresh, strict=True))
    instance.inputs_into(task, module, wl, 12, views, "cpu")
    assert not all(torch.equal(a, b) for a, b in zip(views, fresh, strict=True))
    bn_task, bn_module = batchnorm  # get_inputs(): copied from a fresh set of that seed
    bn_wl = bn_task.workloads[0]
    at = instance.module_at(bn_task, bn_module, dict(bn_wl.axes))
    want = instance.inputs_at(bn_task, at, bn_wl, seed=3)
    got = [torch.zeros_like(t) for t in want]
    instance.inputs_into(bn_task, at, bn_wl, 3, got, "cpu")
    assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))


def test_model_at_the_init_seed_params_then_buffers(batchnorm):
    task, module = batchnorm
    wl = task.smoke_workloads()[0]
    a, b = (instance.build(task, module, wl, init_seed=3, seed=1) for _ in range(2))
    c = instance.build(task, module, wl, init_seed=4, seed=1)
    assert [n for n, _ in a.params] == ["bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
                                        "bn.num_batches_tracked"]
    assert torch.equal(a.params[0][1], b.params[0][1]) and not torch.equal(a.params[0][1], c.params[0][1])
    assert torch.equal(a.inputs[0], b.inputs[0])  # the same seed draws the same inputs
    assert not torch.equal(a.inputs[0], instance.build(task, module, wl, seed=2).inputs[0])
    assert a.model.training  # KernelBench's mode: never put in eval()


def test_workload_constants_apply_and_the_module_is_untouched(batchnorm):
    task, module = batchnorm
    wl = task.smoke_workloads()[-1]
    inst = instance.build(task, module, wl, seed=0)
    assert tuple(inst.inputs[0].shape) == (wl.axes["batch_size"], wl.axes["channels"], wl.axes["length"])
    assert inst.model.bn.num_features == wl.axes["channels"]
    assert (module.batch_size, module.channels, module.length) == (16, 32, 64)


def test_functional_is_the_reference_as_a_pure_function(batchnorm):
    task, module = batchnorm
    inst = instance.build(task, module, task.smoke_workloads()[0], seed=0)
    (ref,) = inst.reference()
    params = [t.clone() for t in inst.param_tensors()]
    params[0] = params[0] * 2  # the function uses the tensors it is given
    with torch.no_grad():
        out = inst.functional()(*params, *inst.inputs)
        (again,) = instance.outputs_of(inst.functional()(*[t.clone() for t in inst.param_tensors()],
                                                         *inst.inputs))
    assert torch.allclose(again, ref)
    assert not torch.allclose(out, ref)


def test_eval_mode_when_the_task_says_so(batchnorm):
    task, module = batchnorm
    judge = task.judge.model_copy(update={"module_mode": "eval"})
    inst = instance.build(task.model_copy(update={"judge": judge}), module, task.workloads[0], meta=True)
    assert not inst.model.training


def test_meta_instance_of_a_huge_problem_allocates_nothing(tmp_path):
    import resource

    task = load_task(convert(FIXTURES / "10_huge_softmax.py", tmp_path / "t"))
    module = check_reference_module(task)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    inst = instance.build(task, module, task.workloads[0], meta=True)
    (out,) = inst.reference()
    assert inst.inputs[0].device.type == "meta" and tuple(out.shape) == (4096, 393216)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 * 1024  # KiB
