"""Planning calls the reference on meta: costs (bytes with parameters, flops from PyTorch's
counter) and one line for a reference that misbehaves."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from forgekernel.kernelbench import convert
from forgekernel.profile import roofline
from forgekernel.refplan import ReferenceFailure, check_reference, cost
from forgekernel.task import check_reference_module, load_task

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "kernelbench"
FORGE = [sys.executable, "-m", "forgekernel.cli"]


def kb_task(tmp_path: Path, fixture: str):
    task = load_task(convert(FIXTURES / fixture, tmp_path / fixture.removesuffix(".py")))
    return task, check_reference_module(task)


def test_bytes_count_parameters_and_flops_come_from_the_counter(tmp_path):
    task, module = kb_task(tmp_path, "8_mlp_hidden.py")
    wl = task.workloads[0]
    b, i, h, o = (wl.axes[k] for k in ("batch_size", "in_features", "hidden", "out_features"))
    c = cost(task, module, wl)
    assert c.param_bytes == 4 * (i * h + h + h * o + o)
    assert c.bytes == 4 * b * i + c.param_bytes + 4 * b * o
    assert roofline.cost_bytes(task, wl, c) == c.bytes
    assert c.flops == 2 * b * i * h + 2 * b * h * o and "flop_counter" in c.flops_source


def test_conv_flops_from_the_counter(tmp_path):
    task, module = kb_task(tmp_path, "7_conv2d_grouped.py")
    wl = task.workloads[0]
    ax = wl.axes
    h_out, w_out = (ax["height"] + 1) // 2, (ax["width"] + 1) // 2
    per_output = 2 * (ax["in_channels"] // ax["groups"]) * ax["kernel_size"] ** 2
    assert cost(task, module, wl).flops == ax["batch_size"] * ax["out_channels"] * h_out * w_out * per_output


def write_task(root: Path, reference: str, *, inputs: str = 'x = { dtype = "float32", shape = ["M", "N"] }',
               extra: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "reference.py").write_text("import torch\n\n\n" + reference)
    (root / "task.toml").write_text(
        f'name = "t"\n[axes]\nM = {{}}\nN = {{}}\n[inputs]\n{inputs}\n{extra}'
        "[[workload]]\nM = 4\nN = 8\nsmoke = true\n[[workload]]\nM = 4096\nN = 65536\n")
    return root


def test_forge_task_without_a_formula_gets_counted_flops(tmp_path):
    root = write_task(tmp_path / "mm", "def run(a, b):\n    return a @ b\n",
                      inputs='a = { dtype = "float32", shape = ["M", "N"] }\n'
                             'b = { dtype = "float32", shape = ["N", "M"] }')
    task = load_task(root)
    c = cost(task, check_reference_module(task), task.workloads[1])
    assert c.flops == 2 * 4096 * 65536 * 4096


def test_bmm_flops_and_the_tf32_peak_in_the_floor(tmp_path):
    src = tmp_path / "bmm.py"
    src.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                   "    def forward(self, a, b):\n        return torch.bmm(a, b)\n\n\n"
                   "batch = 8\nm = 512\nk = 256\nn = 1024\n\n\n"
                   "def get_inputs():\n    return [torch.rand(batch, m, k), torch.rand(batch, k, n)]\n\n\n"
                   "def get_init_inputs():\n    return []\n")
    task = load_task(convert(src, tmp_path / "t"))
    c = cost(task, check_reference_module(task), task.workloads[0])
    assert c.flops == 2 * 8 * 512 * 256 * 1024
    assert roofline.compute_dtype(task) == "tf32"
    f = roofline.floor(c.bytes, c.flops, roofline.H200_SHARED, roofline.compute_dtype(task))
    assert f.peak_tflops == 494.7 and "datasheet lead, not measured" in f.peak_source
    strict = task.model_copy(update={"judge": task.judge.model_copy(update={"tf32": False})})
    assert roofline.compute_dtype(strict) == "float32" and roofline.H200_SHARED.tflops["float32"] == 67.0


BAD = {
    "raises": ("def run(x):\n    raise ValueError('no such mode')\n",
               ["fails on meta tensors at M=4 x N=8", "calling run()", "ValueError: no such mode"]),
    "wrong-arity": ("def run(x, w):\n    return x * w\n", ["run(x, w) cannot take the 1 input(s) the task declares"]),
    "hangs": ("def run(x):\n    while True:\n        pass\n", ["did not return within 1 s", "at M=4 x N=8"]),
    "item-then-raises": ("def run(x):\n    if x.sum().item() > 1e9:\n        return x\n    raise KeyError('k')\n",
                         ["fails on the CPU at M=4 x N=8", "KeyError"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_misbehaving_reference_is_one_line(tmp_path, case):
    reference, words = BAD[case]
    task = load_task(write_task(tmp_path / case, reference))
    with pytest.raises(ReferenceFailure) as info:
        check_reference(task, deadline_s=1.0)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(str(Path(task.root) / "reference.py")), msg
    for word in words:
        assert word in msg, (word, msg)


def test_item_on_meta_falls_back_to_a_real_call_at_the_smoke_workload(tmp_path):
    task = load_task(write_task(tmp_path / "item", "def run(x):\n    return x * x.abs().max().item()\n"))
    smoke, big = (cost(task, check_reference_module(task), w) for w in task.workloads)
    assert smoke.outputs == [((4, 8), "float32")] and "calls .item()" in smoke.note
    assert big.outputs is None and "cannot be planned here" in big.note
    assert big.input_bytes == 4 * 4096 * 65536  # the inputs are still counted on meta


def test_kernelbench_forward_with_the_wrong_arity_is_one_line(tmp_path):
    src = tmp_path / "two.py"
    src.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                   "    def forward(self, a, b):\n        return a + b\n\n\n"
                   "n = 64\n\n\ndef get_inputs():\n    return [torch.rand(n)]\n\n\n"
                   "def get_init_inputs():\n    return []\n")
    task = load_task(convert(src, tmp_path / "t"))
    with pytest.raises(ReferenceFailure, match=r"Model.forward\(a, b\) cannot take the 1 input\(s\) get_inputs\(\) returns"):
        check_reference(task)


def forge(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*FORGE, *args], capture_output=True, text=True, cwd=cwd, timeout=300,
                          env={**os.environ, "FK_DELIVERY": "cpu"})


@pytest.mark.parametrize("command", [["new", "--dry-run"], ["run"]])
def test_cli_says_it_in_one_line_and_makes_nothing(tmp_path, command):
    task = write_task(tmp_path / "bad", BAD["raises"][0])
    work = tmp_path / "work"
    work.mkdir()
    out = forge(command[0], str(task), *command[1:], cwd=work)
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.startswith("forge: error: ") and out.stderr.count("\n") == 1, out.stderr
    assert "ValueError: no such mode" in out.stderr and "Traceback" not in out.stderr
    assert list(work.iterdir()) == []


def test_dry_run_of_a_huge_problem_is_fast_and_small(tmp_path):
    """4096 x 393216 float32 is 6 GiB: converting and planning must allocate none of it."""
    # the peak of this command alone: pytest's own RUSAGE_CHILDREN holds the largest of every
    # child the session waited for, so a full run failed this on another test's subprocess
    probe = ("import json, resource, subprocess, sys; out = subprocess.run(sys.argv[1:]); "
             "sys.stderr.write(json.dumps(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); "
             "sys.exit(out.returncode)")
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-c", probe, *FORGE, "new", str(FIXTURES / "10_huge_softmax.py"),
                          "--dry-run", "--json"], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                         env={**os.environ, "FK_DELIVERY": "cpu"})
    wall = time.monotonic() - start
    peak_mib = json.loads(out.stderr.strip().splitlines()[-1]) / 1024
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    own = plan["workloads"][0]
    assert own["axes"] == {"rows": 4096, "cols": 393216} and own["bytes"] == 2 * 4 * 4096 * 393216
    assert wall < 10.0 and peak_mib < 1024, (wall, peak_mib)
