"""capture_launches on the CPU: eager aten ops as would-be launches, Triton under the interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import torch

from forgekernel.profile import launches
from forgekernel.profile.launches import (
    CPU_OPS_SOURCE,
    INTERP_SOURCE,
    LaunchTrace,
    capture_launches,
)
from forgekernel.task import load_module

TRITON_KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


def run(x):
    y = torch.empty_like(x)
    double_kernel[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), BLOCK=128)
    return y
'''


def test_eager_rmsnorm_reference_shows_its_ops(tasks_dir):
    ref = load_module(tasks_dir / "rmsnorm" / "reference.py")
    x = torch.randn(16, 256, dtype=torch.bfloat16)
    w = torch.randn(256, dtype=torch.bfloat16)
    trace = capture_launches(lambda: ref.run(x, w), device="cpu", repeats=2)
    counts = {k.name: k.count for k in trace.kernels}
    # x.to(fp32), pow, mean, add, rsqrt, mul, .to(bf16), weight * h
    assert counts == {"aten::_to_copy": 2, "aten::pow": 1, "aten::mean": 1, "aten::add": 1,
                      "aten::rsqrt": 1, "aten::mul": 2}
    assert trace.launches == 8
    assert trace.source == CPU_OPS_SOURCE
    assert trace.device_time_ms is None
    assert sum(k.share for k in trace.kernels) == pytest.approx(1.0)


def test_views_and_noop_casts_are_not_launches():
    x = torch.randn(8, 8)
    trace = capture_launches(lambda: x.view(64).to(torch.float32),
                             device="cpu")
    assert trace.launches == 0
    assert trace.kernels == ()


def test_triton_kernel_under_interpreter_is_one_launch(tmp_path):
    (tmp_path / "kern.py").write_text(TRITON_KERNEL)
    script = textwrap.dedent(f"""
        import sys, torch
        sys.path.insert(0, {str(tmp_path)!r})
        import kern
        from forgekernel.profile.launches import capture_launches
        x = torch.randn(300)
        trace = capture_launches(lambda: kern.run(x), device="cpu", repeats=2)
        sys.stdout.write("RESULT " + trace.model_dump_json() + "\\n")
    """)
    env = {"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    trace = LaunchTrace.model_validate(json.loads(line.removeprefix("RESULT ")))
    assert trace.launches == 1
    assert [k.name for k in trace.kernels] == ["double_kernel"]
    # empty_like and the interpreter's own copies are not counted
    assert trace.source == INTERP_SOURCE


class _KinetoEvent:
    """Stands for a kineto device event: a name and the stream it ran on."""

    def __init__(self, name: str, stream: int) -> None:
        self._name, self._stream = name, stream

    def name(self) -> str:
        return self._name

    def device_type(self):
        from torch.autograd import DeviceType

        return DeviceType.CUDA

    def device_resource_id(self) -> int:
        return self._stream


class _Profile:
    def __init__(self, events) -> None:
        self.kineto_results = type("R", (), {"events": lambda _self: events})()


def test_device_work_off_the_calls_stream_is_named():
    prof = _Profile([_KinetoEvent("_rmsnorm_row", 7), _KinetoEvent("Memset (Device)", 7),
                     _KinetoEvent("_side_kernel", 13), _KinetoEvent("_side_kernel", 13)])
    assert launches._side_stream_events(prof, 7) == (("_side_kernel",), ())
    assert launches._side_stream_events(prof, 13)[0] == ("_rmsnorm_row", "Memset (Device)")
    side, notes = launches._side_stream_events(prof, None)
    assert side == () and "streams unknown" in notes[0]
    assert launches._side_stream_events(object(), 7)[1]  # no kineto results: said, not assumed


def test_the_audit_rejects_work_on_a_side_stream():
    from forgekernel.judge import audit
    from forgekernel.judge.failure import Failure
    from forgekernel.records import KernelStat

    mine = [KernelStat(name="_rmsnorm_row", count=1, time_ms=0.01, share=1.0)]
    with pytest.raises(Failure) as err:
        audit._check_cuda({"side_streams": ["_rmsnorm_row"]}, mine, [], ())
    assert err.value.details["audit"] == "side_stream" and "current_stream" in str(err.value)
    summary = {"side_streams": []}
    audit._check_cuda(summary, mine, [], ())
    assert summary["own_share"] == 1.0
