"""What the LLM prompts tell a model about a KernelBench task and about hidden workloads."""

from __future__ import annotations

from pathlib import Path

from forgekernel.agents import prompting
from forgekernel.kernelbench import convert
from forgekernel.task import load_task

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "kernelbench"


def test_kernelbench_task_asks_for_model_new_not_run(tmp_path):
    task = load_task(convert(FIXTURES / "7_conv2d_grouped.py", tmp_path / "t"))
    system = prompting.coder_system(task, "tools")
    assert "class ModelNew(torch.nn.Module)" in system and "same arguments as the reference's `Model`" in system
    assert "run(*inputs)" not in system and "training mode" in system
    assert "more shapes than you are shown (odd sizes included)" in system  # hidden workloads on
    architect = prompting.architect_system(task, "tools")
    assert "defines `ModelNew`" in architect and "shapes you are not shown" in architect
    section = prompting.task_section(task)
    assert "(fixed at 3)" in section and "Module mode: train" in section and "TF32" in section


def test_no_promise_of_hidden_shapes_when_they_are_off(tmp_path):
    task = load_task(convert(FIXTURES / "2_relu.py", tmp_path / "t"))
    off = task.model_copy(update={"judge": task.judge.model_copy(update={"hidden": False})})
    assert "odd sizes" not in prompting.coder_system(off, "tools")
    assert "on the workloads you are shown" in prompting.coder_system(off, "tools")
    assert "shapes you are not shown" not in prompting.architect_system(off, "tools")
    forge = load_task(REPO / "tasks" / "rmsnorm")
    system = prompting.coder_system(forge, "tools")
    assert "`run(*inputs)`" in system and "ModelNew" not in system and "odd sizes included" in system
