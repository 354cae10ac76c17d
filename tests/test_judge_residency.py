"""Where the verifier keeps its copies of a large workload, and the timed batch's memory cap."""

from __future__ import annotations

from pathlib import Path

import torch

from forgekernel.judge import gated, residency


def test_plan_by_share_of_device_memory():
    gib = 1 << 30
    # KernelBench's 1.6e9-element ReLU (6.4 GB in, 6.4 GB out) on an 80 GB card: on the host
    relu = residency.plan(int(12.8 * gib), 78 * gib)
    assert relu.host and relu.release
    # a 4 GB scalar multiply stays on the device, its calls start from an emptied cache
    scale = residency.plan(8 * gib, 78 * gib)
    assert not scale.host and scale.release
    small = residency.plan(64 << 20, 78 * gib)
    assert small == residency.Residency()
    assert residency.plan(100 * gib, None) == residency.Residency()  # no GPU: nothing moves


def test_keep_copies_where_planned():
    x = torch.arange(6.0).reshape(2, 3)
    for plan in (residency.Residency(host=True), residency.Residency()):
        kept = plan.keep_all([x, 3, None])
        assert kept[1:] == [3, None]
        assert torch.equal(kept[0], x) and kept[0].data_ptr() != x.data_ptr()
        assert kept[0].device.type == "cpu"
    args = [x, 3]
    assert residency.Residency().hold(args) is args  # a device plan: the same tensors, no copy
    held = residency.Residency(host=True).hold(args)  # a timed call's inputs for the oracle
    assert held[0] is not x and torch.equal(held[0], x) and held[1] == 3
    assert residency.io_bytes([x, 2.0], out_bytes=100) == 6 * 4 + 100
    assert residency.free_bytes(torch, cuda=False, planned_gib=None) is None
    assert residency.free_bytes(torch, cuda=False, planned_gib=2) == 2 << 30


def test_timed_batch_holds_its_outputs_within_the_pool_limit():
    """A matmul over a short K: two 8 MiB inputs and a 4 GiB output per call. A batch keeps
    every call's outputs until it ends, so K is held to what POOL_MAX_BYTES allows (at least 2)."""
    args = [torch.empty(32768, 64, device="meta"), torch.empty(64, 32768, device="meta")]
    out = 32768 * 32768 * 4
    assert gated.calls_per_batch(0.05, args) > 16  # outputs not counted: a reference batch
    assert gated.calls_per_batch(0.05, args, out) == 2
    small = [torch.empty(1024, 1024, device="meta")]
    assert gated.calls_per_batch(0.05, small, 4 << 20) == min(gated.MAX_K, gated.POOL_MAX_BYTES // (8 << 20),
                                                              int(gated.BATCH_MS / 0.05) + 1)


def test_calibration_sizes_the_staging_pool_for_the_largest_workload(tmp_path):
    """A pool is freed only with its executor, so a staging pool grown call by call kept every
    smaller one (an H100 held 24 GiB of them for a 6.4 GB ReLU and its slightly larger hidden
    workload): calibration records each workload's staged bytes, and the first pool is sized
    for the largest."""
    from forgekernel.judge import ipc
    from forgekernel.judge.options import JudgeOptions
    from forgekernel.judge.session import Session
    from forgekernel.task import load_task

    task = load_task(Path(__file__).resolve().parents[1] / "tasks" / "softmax")
    payload = {"task": task.model_dump(mode="json"), "options": JudgeOptions(smoke_only=True).model_dump(mode="json"),
               "candidate_dir": str(tmp_path)}
    session = Session(payload, "cpu")
    session.calibrate()
    assert len(session.slots) > 2 and any(s.wl.hidden for s in session.slots)
    for slot in session.slots:
        args = session.problem.make(slot.wl, 0)
        outs = [torch.empty(o.shape, dtype=o.dtype) for o in slot.outputs]
        assert slot.staged_bytes == ipc.layout([a for a in args if isinstance(a, torch.Tensor)] + outs)[1] > 0
    # the first pool, whichever workload's call comes first, holds the largest one's
    largest = max(s.staged_bytes for s in session.slots)
    smallest = min(s.staged_bytes for s in session.slots)
    assert smallest < largest and residency.staging_bytes(smallest, session.slots) == largest
    assert residency.staging_bytes(largest + 1, session.slots) == largest + 1


def test_a_task_with_no_workload_for_the_delivery_gets_no_verdict(tmp_path):
    """KernelBench L3 29 (Swin MLP) has no smoke workload (its image size is pinned and one
    image is over the smoke limits), and the CPU interpreter judges smoke workloads only: with
    nothing to judge, a candidate PASSED having run nowhere. Now the judge gives no verdict and
    says why."""
    import shutil

    import pytest

    from forgekernel.delivery import make_runner
    from forgekernel.judge import judge
    from forgekernel.judge.api import JudgeError
    from forgekernel.task import load_task

    repo = Path(__file__).resolve().parents[1]
    task_dir = tmp_path / "softmax"
    shutil.copytree(repo / "tasks" / "softmax", task_dir)
    toml = task_dir / "task.toml"
    toml.write_text(toml.read_text().replace("smoke = true\n", ""))
    task = load_task(task_dir)
    assert task.workloads and not task.smoke_workloads()
    with pytest.raises(JudgeError, match="no workload to judge: the task has no smoke workload"):
        judge(task, repo / "kernels" / "softmax", make_runner("cpu"))
