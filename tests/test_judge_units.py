"""The judge's parts in-process: candidate hashing, the source policy, tolerances and value
checks, hidden workloads, guards, timing summaries, audit helpers and feedback."""

from __future__ import annotations

import random
import textwrap
import threading
from pathlib import Path

import pytest
import torch

from forgekernel.judge import (
    CandidateError,
    audit,
    candidate_hash,
    correctness,
    feedback,
    guards,
    inputs,
    policy,
    timing,
    values,
    wire,
)
from forgekernel.judge.candidate import stage
from forgekernel.records import JudgeSpec, Status, WorkloadResult
from forgekernel.task import load_task

FIXTURES = Path(__file__).parent / "fixtures" / "kernels"


# ------------------------------------------------------------------ candidates


def test_hash_is_content_not_location(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        (d / "__pycache__").mkdir(parents=True)
        (d / "kernel.py").write_text("x = 1\n")
        (d / "k.cu").write_text("// cuda\n")
    (b / "__pycache__" / "kernel.cpython-311.pyc").write_bytes(b"junk")
    (b / ".hidden").write_text("ignored")
    assert candidate_hash(a) == candidate_hash(b)
    assert candidate_hash(a / "kernel.py") == candidate_hash(a)  # staged as the same two files
    (b / "k.cu").write_text("// cuda changed\n")
    assert candidate_hash(a) != candidate_hash(b)
    assert len(candidate_hash(a)) == 16


def test_stage_renames_a_single_file_and_rejects_bad_paths(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "my_kernel.py").write_text("y = 2\n")
    (src / "helper.cu").write_text("// helper\n")
    (src / "notes.bin").write_bytes(b"\0")
    dest = stage(src / "my_kernel.py", tmp_path / "staged")
    assert sorted(p.name for p in dest.iterdir()) == ["helper.cu", "kernel.py"]
    assert (dest / "kernel.py").read_text() == "y = 2\n"
    with pytest.raises(CandidateError, match="no such file"):
        stage(tmp_path / "missing", tmp_path / "x")
    with pytest.raises(CandidateError, match="no kernel.py"):
        stage(src, tmp_path / "y")


# ------------------------------------------------------------------ source policy


def _check(tmp_path: Path, source: str, forbid=("torch.nn.functional.rms_norm",)) -> policy.PolicyResult:
    d = tmp_path / "cand"
    d.mkdir(exist_ok=True)
    (d / "kernel.py").write_text(textwrap.dedent(source))
    return policy.check_sources(d, forbid)


@pytest.mark.parametrize(("source", "needle"), [
    ("import torch.nn.functional as F\ndef run(x): return F.rms_norm(x, (4,))\n", "rms_norm"),
    ("from torch.nn.functional import rms_norm as r\n", "rms_norm"),
    ("import torch\ny = torch.ops.aten.rms_norm\n", "torch.ops.aten.rms_norm"),
    ("import torch\ntorch.cuda.synchronize = lambda: None\n", "assigns into module torch"),
    ("import time\ntime.perf_counter = lambda: 0.0\n", "assigns into module time"),
    ("import torch\nclass L(torch.Tensor):\n    pass\n", "subclasses torch.Tensor"),
    ("def f(o):\n    return o.__class__\n", "__class__"),
    ("import torch\nf = getattr(torch, 'compi' + 'le')\n", "computed name"),
    ("import torch\nf = getattr(torch, 'compile')\n", "torch.compile"),
    ("x = eval('1')\n", "eval"),
    ("import sys\nf = sys._getframe(1)\n", "sys._getframe"),
    ("import os\nos.environ['TRITON_INTERPRET'] = '0'\n", "os.environ"),
    ("from reference import run\n", "reference"),
    ("import forgekernel.judge\n", "forgekernel"),
    ("p = 'tasks/rmsnorm/reference.py'\n", "reference.py"),
])
def test_policy_flags(tmp_path, source, needle):
    result = _check(tmp_path, source)
    assert result.violations, source
    assert needle in " ".join(result.violations)


def test_policy_method_form_only_when_forbidden(tmp_path):
    src = "def run(x):\n    return x.softmax(-1)\n"
    assert _check(tmp_path, src, forbid=("torch.softmax",)).violations == []
    assert "softmax" in _check(tmp_path, src, forbid=("torch.Tensor.softmax",)).violations[0]


def test_policy_clean_kernel_and_own_kernels(tmp_path):
    result = policy.check_sources(FIXTURES / "correct" / "rmsnorm_rowwise", ("torch.nn.functional.rms_norm",))
    assert result.violations == [] and result.syntax_error is None
    assert result.own_kernels == ["_rmsnorm_row"]
    cuda = _check(tmp_path, 'SRC = """\n__global__ void __launch_bounds__(256) scale_kernel(float* x) {}\n"""\n')
    assert cuda.own_kernels == ["scale_kernel"]
    bad = _check(tmp_path, "def run(x)\n    return x\n")
    assert bad.syntax_error.startswith("kernel.py:1")


# ------------------------------------------------------------------ tolerances and values


def test_tolerance_floors_override_and_interpreter_allowance():
    spec = JudgeSpec()
    assert correctness.tolerance_for("bfloat16", 1e-3, spec, interpret=False).tol == correctness.DTYPE_FLOOR["bfloat16"]
    assert correctness.tolerance_for("bfloat16", 6e-3, spec, interpret=False).tol == pytest.approx(1.2e-2)
    assert correctness.tolerance_for("bfloat16", 6e-3, spec, interpret=True).tol == pytest.approx(3.6e-2)
    # the allowance is for the interpreter's bf16 conversion only
    assert correctness.tolerance_for("float32", 0.0, spec, interpret=True).tol == correctness.DTYPE_FLOOR["float32"]
    assert correctness.tolerance_for("int64", 0.0, spec, interpret=False).tol == 0.0
    over = correctness.tolerance_for("float32", 0.0, JudgeSpec(rtol=1e-3, atol=1e-4), interpret=False)
    assert (over.tol, over.scale, over.source) == (1e-3, pytest.approx(0.1), "task override")


def _tol(value=1e-2):
    return correctness.OutputTolerance(tol=value)


def test_compare_values_reports_where_and_by_how_much():
    ref = torch.linspace(-1, 1, 12, dtype=torch.float64).reshape(3, 4)
    out = ref.to(torch.float32).clone()
    assert values.compare(out, ref, _tol()).ok
    out[2, 1] += 0.5
    check = values.compare(out, ref, _tol())
    assert not check.ok and check.kind == "values" and check.where == (2, 1)
    assert check.max_abs == pytest.approx(0.5, rel=1e-6)
    assert check.expected == pytest.approx(float(ref[2, 1]))


def test_compare_nonfinite_zero_constant_and_exact():
    ref = torch.randn(4, 8, dtype=torch.float64)
    nan = ref.to(torch.float32).clone()
    nan[1, 3] = float("nan")
    assert values.compare(nan, ref, _tol()).kind == "nonfinite"
    assert values.compare(nan, ref, _tol()).where == (1, 3)
    assert values.compare(torch.zeros(4, 8), ref * 1e-6, _tol(10.0)).kind == "zero"
    assert values.compare(torch.full((4, 8), 0.5), 0.5 + ref * 1e-4, _tol(1.0)).kind == "constant"
    # a constant output is fine when the reference rounds to a constant in the output dtype
    near = 0.5 + ref * 1e-7
    assert values.compare(near.to(torch.bfloat16), near, _tol()).ok
    # or to values one unit in the last place apart (an RMSNorm over one column at a tiny hidden
    # workload: +-w(1 - d), d under a bf16 ulp; a correct kernel wrote w at both rows)
    rows = torch.tensor([1.0, 1.0 - 2.0 ** -8], dtype=torch.float64)
    assert rows.to(torch.bfloat16).unique().numel() == 2
    assert values.compare(torch.ones(2, dtype=torch.bfloat16), rows, _tol(1e-2)).ok
    spread = torch.tensor([1.0, 1.0 - 2.0 ** -5], dtype=torch.float64)  # eight bf16 ulps: not rounding
    assert values.compare(torch.full((2,), 0.984375, dtype=torch.bfloat16), spread, _tol(1e-1)).kind == "constant"
    # a reference that is only rounding noise around zero (GroupNorm over one-channel groups)
    noise = ref * 1e-14
    assert values.compare(torch.zeros(4, 8), noise, _tol(10.0)).ok
    assert values.negligible(noise) and not values.negligible(ref * 1e-6)
    ints = torch.arange(6)
    assert values.compare(ints, ints.to(torch.float64), _tol(0.0)).ok
    assert values.compare(ints + (ints == 4), ints.to(torch.float64), _tol(0.0)).where == (4,)


def test_bitwise_equal_and_fingerprint():
    a = torch.tensor([1.0, float("nan"), 3.0])
    same, _ = values.bitwise_equal(a, a.clone())
    assert same
    b = a.clone()
    b[2] = 3.0000002
    assert values.bitwise_equal(a, b) == (False, (2,))
    assert values.fingerprint(a) != values.fingerprint(b)
    # a piece at a time: the first difference in a later piece, by its index in the whole tensor
    big = torch.randn(6, 7)
    other = big.clone()
    other[5, 3] = float("nan")
    other[4, 1] += 1.0
    assert values.bitwise_equal(big, other, piece=5) == (False, (4, 1))
    assert values.bitwise_equal(big.t(), big.t().clone(), piece=4) == (True, None)
    assert values.bitwise_equal(big, big.reshape(7, 6)) == (False, None)
    assert values.fingerprint(big, piece=5, device="cpu") == values.fingerprint(big)


def test_structure_checks():
    refs = (torch.empty(2, 3, dtype=torch.bfloat16),)
    assert correctness.check_structure((torch.empty(2, 3, dtype=torch.bfloat16),), refs).ok
    assert correctness.check_structure((torch.empty(3, 2, dtype=torch.bfloat16),), refs).kind == "shape"
    assert correctness.check_structure((torch.empty(2, 3),), refs).kind == "dtype"
    assert correctness.check_structure((), refs).kind == "count"
    assert correctness.check_structure(([1, 2],), refs).kind == "type"

    class Sub(torch.Tensor):
        pass

    assert correctness.check_structure((torch.empty(2, 3, dtype=torch.bfloat16).as_subclass(Sub),), refs).kind == "subclass"


# ------------------------------------------------------------------ hidden workloads


def test_hidden_workloads_are_new_valid_and_odd(tasks_dir):
    task = load_task(tasks_dir / "rmsnorm", check_reference=False)
    smoke = list(task.smoke_workloads())
    hidden = inputs.hidden_workloads(task, smoke, large=False, rng=random.Random(0))
    visible = {tuple(w.axes.values()) for w in task.workloads}
    assert 1 <= len(hidden) <= inputs.HIDDEN_MAX
    assert all(w.hidden and tuple(w.axes.values()) not in visible for w in hidden)
    values = {v for w in hidden for v in w.axes.values()}
    assert 1 in values and any(v & (v - 1) and v % 2 for v in values)
    rope = load_task(tasks_dir / "rope", check_reference=False)
    for w in inputs.hidden_workloads(rope, list(rope.workloads), large=True):
        assert w.axes["D"] % 2 == 0  # multiple_of is respected
    big = inputs.hidden_workloads(task, list(task.workloads), large=True, rng=random.Random(0))
    assert len(big) == len(hidden) + 1 and max(w.axes["M"] for w in big) > 1000


# ------------------------------------------------------------------ guards


def test_harness_sees_replaced_functions():
    import math

    harness = guards.Harness({"math": math, "torch.Tensor": torch.Tensor})
    assert harness.changes() == []
    original = math.sqrt
    math.sqrt = lambda x: 0.0
    torch.Tensor.judge_test_extra = lambda self: 0
    try:
        assert set(harness.changes()) == {"math.sqrt", "torch.Tensor.judge_test_extra"}
    finally:
        math.sqrt = original
        del torch.Tensor.judge_test_extra
    assert harness.changes() == []


def test_candidate_threads_are_found_by_their_code(tmp_path):
    before = guards.thread_ids()
    stop = threading.Event()
    code = compile("def loop(stop):\n    stop.wait(10)\n", str(tmp_path / "kernel.py"), "exec")
    scope: dict = {}
    exec(code, scope)
    t = threading.Thread(target=scope["loop"], args=(stop,))
    t.start()
    try:
        found = guards.candidate_threads(before, str(tmp_path))
        assert found and "loop" in found[0]
        assert guards.candidate_threads(before, str(tmp_path / "elsewhere")) == []
    finally:
        stop.set()
        t.join()


def test_mutated_inputs_and_poison():
    a, b = torch.ones(4), torch.zeros(3)
    pristine = [a.clone(), b.clone()]
    b[1] = 7
    assert guards.mutated_inputs([a, b], pristine) == [1]
    guards.poison([64, 128], "cpu", 0xFF)  # must not raise on the CPU allocator


# ------------------------------------------------------------------ timing


def test_interleave_order_warmup_and_summary():
    order = []
    calls = [lambda: order.append("A"), lambda: order.append("B")]
    series = timing.interleave(calls, timing.HostClock(), rounds=3, warmup=1,
                               before=lambda r, k: None, after=lambda r, k, out: None)
    assert order == ["A", "B"] * 4
    assert [len(s.device_ms) for s in series] == [3, 3]
    m = timing.measurement([1.0, 2.0, 3.0, 4.0, 100.0], "cpu-interpret")
    assert (m.median_ms, m.n, m.label) == (3.0, 5, "cpu-interpret")
    assert m.spread_ms == pytest.approx(2.0)


class _LeadClock:
    """A clock whose calls take a fixed host time per callable; it records the leads asked."""

    label = "fake"

    def __init__(self, host_ms: list[float]) -> None:
        self.host_ms, self.leads, self.k = host_ms, [], 0

    def time(self, fn, lead_ms=0.0):
        k = self.k % len(self.host_ms)
        self.k += 1
        self.leads.append((k, lead_ms))
        return fn(), 1.0, self.host_ms[k], 0.0


def test_lead_covers_each_callables_host_time_after_warmup():
    clock = _LeadClock([0.2, 10.0])
    timing.interleave([lambda: None, lambda: None], clock, rounds=2, warmup=2,
                      before=lambda r, k: None, after=lambda r, k, out: None)
    warm, timed = clock.leads[:4], clock.leads[4:]
    assert all(lead == timing.LEAD_WARMUP_MS for _, lead in warm)
    assert {k: lead for k, lead in timed} == {
        0: pytest.approx(timing.LEAD_FACTOR * 0.2 + timing.LEAD_PAD_MS),
        1: timing.LEAD_MAX_MS}  # a host-heavy call hides at most the cap
    assert timing.lead_for([]) == timing.LEAD_WARMUP_MS
    off = _LeadClock([0.2])
    timing.interleave([lambda: None], off, rounds=1, warmup=1, lead=False,
                      before=lambda r, k: None, after=lambda r, k, out: None)
    assert [lead for _, lead in off.leads] == [0.0, 0.0]


# ------------------------------------------------------------------ audit helpers


def test_audit_names():
    assert audit.base_name("void at::native::(anonymous namespace)::rms_kernel<float>(float*)") == "rms_kernel"
    assert audit.is_own("_rmsnorm_row", ["_rmsnorm_row"]) and not audit.is_own("sm90_gemm", ["gemm"])
    assert audit.op_key("torch.Tensor.__rmul__") == "mul" and audit.op_key("torch.Tensor.add_") == "add"
    pats = dict(audit.forbidden_patterns(("torch.matmul", "torch.compile")))
    assert pats["torch.matmul"].search("nvjet_tst_128x256_64x4_bf16")
    assert pats["torch.compile"].search("triton_per_fused_mean_0")
    assert not pats["torch.compile"].search("_rmsnorm_row")


def test_eager_compute_of_the_rmsnorm_reference(tasks_dir):
    from forgekernel.task import load_module

    ref = load_module(tasks_dir / "rmsnorm" / "reference.py")
    x, w = torch.randn(4, 8, dtype=torch.bfloat16), torch.ones(8, dtype=torch.bfloat16)
    assert audit.eager_compute(lambda: ref.run(x, w)) == {"pow", "mean", "add", "rsqrt", "mul"}


# ------------------------------------------------------------------ feedback


def test_feedback_never_reveals_hidden_details():
    details = {"kind": "values", "hidden": True, "workload": "hidden workload 2 of 4"}
    hidden = WorkloadResult(axes={}, hidden=True, passed=False)
    text = feedback.compose(Status.WRONG_VALUES, "values outside the tolerance on hidden workload 2 of 4",
                            details, [hidden])
    assert "hidden workload 2 of 4" in text and "N+1" in text and "hidden: 0 passed, 1 failed" in text
    assert feedback.compose(Status.PASSED, "", {}) == ""
    visible = {"kind": "values", "workload": "M=16 x N=256", "where": [3, 17], "expected": 0.5,
               "got": 0.25, "max_rel": 0.4, "max_abs": 0.25, "tol": 0.01, "output": 0}
    text = feedback.compose(Status.WRONG_VALUES, "x", visible)
    assert "index (3, 17)" in text and "expected 0.5, got 0.25" in text and "What to look at" in text


def test_policy_follows_plain_assignment_aliases(tmp_path):
    src = "import torch\nF = torch.nn.functional\ndef run(x):\n    return F.rms_norm(x, (4,))\n"
    assert "torch.nn.functional.rms_norm" in _check(tmp_path, src).violations[0]


def test_roofline_floor_only_with_known_ceilings(tasks_dir):
    task = load_task(tasks_dir / "rmsnorm", check_reference=False)
    wl = next(w for w in task.workloads if w.axes == {"M": 16384, "N": 8192})
    outs = [((16384, 8192), "bfloat16")]
    floor = audit.roofline_floor(task, wl, outs, "NVIDIA H200")
    assert floor.bytes == 2 * 16384 * 8192 * 2 + 8192 * 2
    assert floor.floor_ms == pytest.approx(floor.bytes / (floor.bandwidth_tbs * 1e12) * 1e3)
    assert audit.roofline_floor(task, wl, outs, "cpu (Triton interpreter)") is None
    # another GPU: no floor without a measurement, the measured copy bandwidth's floor with one
    assert audit.roofline_floor(task, wl, outs, "NVIDIA H100 80GB HBM3") is None
    from forgekernel.profile.roofline import Ceilings

    measured = Ceilings(device="NVIDIA H100 80GB HBM3", bandwidth_tbs=2.9, bandwidth_by_mib={16: 5.0, 256: 2.9},
                        source="measured")
    h100 = audit.roofline_floor(task, wl, outs, "NVIDIA H100 80GB HBM3", measured)
    assert h100.bandwidth_tbs == 2.9 and h100.floor_ms == pytest.approx(h100.bytes / 2.9e12 * 1e3)
    # an H100's judged medians there: the side-stream cheat's 0.1095 ms is below the line, the
    # honest kernel's 0.2254 ms above it (benchmarks/results/judge_gpu_h100_2026-12-06/)
    assert 0.1095 < h100.floor_ms / audit.ROOFLINE_SLACK < 0.2254
    # the rejection line: faster than floor / ROOFLINE_SLACK
    assert floor.sol_pct(floor.floor_ms / audit.ROOFLINE_SLACK) == pytest.approx(100 * audit.ROOFLINE_SLACK)


def test_the_gpu_gate_compiles_to_a_bounded_volatile_spin():
    """The gate (forgekernel.judge.gate) cannot run on the CPU; its sm_90 code is read instead:
    the spin rereads host memory each time, gives up by the device clock, and the signal and
    the expiry are system-scope releases. Every batch number shares one compiled kernel."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, compile

    from forgekernel.judge import gate

    wait = compile(ASTSource(fn=gate._gate_wait, constexprs={}, signature={
        "flag": "*i32", "expired": "*i32", "expect": "i32", "limit_ns": "i64"}),
        target=GPUTarget("cuda", 90, 32), options={"enable_fp_fusion": False}).asm["ptx"]
    assert "ld.volatile.global.b32" in wait and "%globaltimer" in wait
    assert "atom.global.sys.release.exch.b32" in wait  # the expired word
    signal = compile(ASTSource(fn=gate._gate_signal, constexprs={},
                               signature={"done": "*i32", "value": "i32"}),
                     target=GPUTarget("cuda", 90, 32), options={"enable_fp_fusion": False}).asm["ptx"]
    assert "atom.global.sys.release.exch.b32" in signal
    names = gate._gate_wait.arg_names
    unspecialised = {names[i] if isinstance(i, int) else i for i in gate._gate_wait.do_not_specialize}
    assert {"expect", "limit_ns"} <= unspecialised


@pytest.mark.gpu
def test_a_device_pool_is_its_own_allocation_and_round_trips_values():
    """The pool the executor may map holds nothing of the verifier's: it is not a block of
    torch's caching allocator (whose segments hold the verifier's other tensors)."""
    import torch

    from forgekernel.judge import ipc

    keep = torch.randn(1 << 20, device="cuda")  # a verifier tensor in torch's pool
    slices, nbytes = ipc.layout([torch.empty(3, 5, dtype=torch.bfloat16), torch.empty(7),
                                 torch.empty((), dtype=torch.float32)])
    pool = ipc.ExportedPool(nbytes)
    try:
        segments = [(s["address"], s["address"] + s["total_size"]) for s in torch.cuda.memory_snapshot()]
        assert not any(lo <= pool.base < hi for lo, hi in segments)
        a, b = pool.view(slices[0]), pool.view(slices[1])
        a.copy_(torch.ones(3, 5, dtype=torch.bfloat16))
        b.fill_(2.0)
        assert a.dtype == torch.bfloat16 and a.shape == (3, 5) and float(a.sum()) == 15.0
        assert float(b.sum()) == 14.0 and keep.is_cuda
        scalar = pool.view(slices[2])  # a 0-dim output: filled byte-wise as the staging does
        scalar.reshape(-1).view(torch.uint8).fill_(0xFF)
        assert scalar.shape == () and bool(torch.isnan(scalar))
        with pytest.raises(ValueError):
            pool.view(ipc.Slice(nbytes, "float32", (4,)))
    finally:
        pool.free()


def test_work_after_the_signal_is_rejected_when_the_median_batch_shows_it():
    from types import SimpleNamespace

    from forgekernel.judge import gated
    from forgekernel.judge.failure import Failure

    slot = SimpleNamespace(label="M=8192 x N=16384")
    one_hiccup = [(0.02, 0.11)] * 5 + [(0.9, 0.11)]  # a host delay on one round trip
    gated._tail(slot, one_hiccup)
    first_sync = [(0.35, 0.11)] * 6  # the first synchronisation after a batch costs this on the H200
    assert gated._tail(slot, first_sync, [0.3] * 6) == {"candidate_ms": 0.35, "reference_ms": 0.3}
    with pytest.raises(Failure) as err:  # a side stream shows after every batch
        gated._tail(slot, [(1.2, 0.11)] * 4 + [(0.01, 0.11)] * 2, [0.3] * 6)
    assert err.value.details["kind"] == "side_stream" and "median of 6 batches" in str(err.value)
    with pytest.raises(Failure):  # half a call's work left running on a long call
        gated._tail(slot, [(3.0, 4.0)] * 6, [0.2] * 6)


def test_torchs_own_dynamo_wrapper_is_not_tampering_but_a_lookalike_is():
    """Importing torch._dynamo rewraps torch.manual_seed (torch's own, harmless); a candidate's
    function that borrows that wrapper's code around something else is still a replacement."""
    import subprocess
    import sys

    script = (
        "import types, torch\n"
        "from forgekernel.judge import guards\n"
        "h = guards.Harness(guards.harness_targets())\n"
        "import torch._dynamo\n"
        "print(h.changes())\n"
        "orig = h.saved['torch']['manual_seed']\n"
        "def evil(*a): return None\n"
        "cells = tuple(types.CellType(v) for v in (evil, True))\n"
        "fake = types.FunctionType(torch.manual_seed.__code__, torch.manual_seed.__globals__, closure=cells)\n"
        "fake.__wrapped__ = orig\n"
        "torch.manual_seed = fake\n"
        "print(h.changes())\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["[]", "['torch.manual_seed']"], out.stdout


def test_what_the_executor_reports_left_changed_ends_the_verdict():
    from forgekernel.judge.failure import Failure
    from forgekernel.judge.remote import CandidateProcess

    CandidateProcess._integrity({"ok": True}, "M=16 x N=256")  # nothing left changed
    cases = {"l2_persisting": ("11796480 -> 39321600", "persisting-L2"), "stream": (True, "CUDA stream"),
             "threads": (["t"], "thread"), "timers": (["ITIMER_REAL"], "timers")}
    for fact, (value, words) in cases.items():
        with pytest.raises(Failure) as err:
            CandidateProcess._integrity({fact: value}, "M=16 x N=256")
        assert err.value.status is Status.REJECTED and words in str(err.value), fact




def test_the_verifiers_result_is_read_as_one_record():
    """judge/api.py reads what the verifier sends back as a WorkerResult: a verdict from a
    status, a JudgeError from judge_error, and a key it does not know is an error, not ignored."""
    from forgekernel.delivery.base import JobResult
    from forgekernel.judge.api import JudgeError, WorkerResult, _from_job

    base = {"candidate": "c1", "judge": "forgekernel", "delivery": "cpu"}
    sent = {"versions": {"python": "3"}, "device": "cpu", "status": "WRONG_VALUES", "reason": "off",
            "details": {"kind": "values"}, "workloads": [{"axes": {"N": 4}, "passed": False}],
            "profile": {"trials": 1}, "noise_floor": None, "speedup": None}
    assert WorkerResult.model_validate(sent).status is Status.WRONG_VALUES
    verdict = _from_job(JobResult(result=sent), base, 10.0)
    assert verdict.status is Status.WRONG_VALUES and verdict.workloads[0].axes == {"N": 4}
    with pytest.raises(JudgeError, match="gave no verdict: ValueError: bad"):
        _from_job(JobResult(result={"versions": {}, "device": "", "judge_error": "ValueError: bad"}), base, 10.0)
    with pytest.raises(JudgeError, match="does not parse"):
        _from_job(JobResult(result={**sent, "surprise": 1}), base, 10.0)


def test_the_verifier_running_out_of_device_memory_is_no_verdict_on_the_candidate():
    """An OutOfMemoryError raised in the verifier (its copies at a huge workload: KernelBench
    L1 ReLU at 4096 x 393216 on the H200) is the judge's limit: a judge_error naming the
    largest workload, not the candidate's RUNTIME_ERROR."""
    import types

    import torch

    from forgekernel.judge import worker

    class Session:
        phases: dict = {}
        slots = [types.SimpleNamespace(wl=types.SimpleNamespace(axes={"M": 4, "N": 8}), label="M=4 x N=8"),
                 types.SimpleNamespace(wl=types.SimpleNamespace(axes={"M": 4096, "N": 393216}),
                                       label="M=4096 x N=393216")]
        closed = False
        cuda = False

        def load(self):
            pass

        def correctness(self):
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 12.00 GiB")

        def close(self):
            Session.closed = True

    out = worker._judge(Session(), {}, {"versions": {}, "device": "cuda"})
    assert "status" not in out and Session.closed
    assert out["judge_error"].startswith("device memory ran out in the verifier (largest workload: "
                                         "M=4096 x N=393216) [at worker._judge:")
    assert "]: CUDA out of memory" in out["judge_error"] and "--device-memory" in out["judge_error"]


def test_spent_sums_each_kind_and_keeps_its_slowest_occurrence():
    """profile['spent']: per kind of work, the count, the summed seconds and the slowest one
    (a sum of a few slow first calls reads differently from one of many equal calls)."""
    from forgekernel.judge.accounting import Spent

    spent = Spent()
    for seconds in (0.002, 0.5, 0.003):
        spent.add("executor:run", seconds)
    with spent("compare"):
        pass
    out = spent.as_dict()
    assert out["executor:run"] == {"n": 3, "s": 0.505, "max": 0.5}
    assert out["compare"]["n"] == 1 and 0 <= out["compare"]["max"] == out["compare"]["s"] < 0.1


def _checks_agree(a, b):
    assert (a.ok, a.kind, a.message, a.where, a.tol) == (b.ok, b.kind, b.message, b.where, b.tol)
    for x, y in ((a.max_abs, b.max_abs), (a.max_rel, b.max_rel), (a.expected, b.expected), (a.got, b.got)):
        if x is None or y is None or x != x or y != y:  # None or NaN: the same on both sides
            assert repr(x) == repr(y)
        else:
            assert abs(x - y) <= 1e-12 * max(abs(x), abs(y), 1e-300)


def test_value_checks_in_pieces_give_the_whole_tensor_answers():
    """compare, reference_error, negligible and fingerprint walk the tensors in bounded
    pieces; any piece size gives the answer of one piece (first failing element, largest
    error at its first occurrence, rms over every finite value)."""
    g = torch.Generator().manual_seed(3)
    ref = torch.randn(6, 7, generator=g, dtype=torch.float64) * 3
    ref_special = ref.clone()
    ref_special[1, 2], ref_special[4, 0] = float("inf"), float("nan")
    near = ref + 1e-9 * torch.randn(6, 7, generator=g, dtype=torch.float64)
    far = ref.clone()
    far[2, 5] += 1.0
    far[5, 6] += 1.0  # the same error later: the first one is reported
    nan_late = near.clone()
    nan_late[5, 1] = float("nan")
    ints = torch.arange(42).reshape(6, 7)
    off = ints.clone()
    off[3, 3] += 1
    off[5, 0] += 2
    cases = [(near.float(), ref, _tol()), (far.float(), ref, _tol()), (nan_late.float(), ref, _tol()),
             (ref_special.float(), ref_special, _tol()), (torch.zeros(6, 7), ref * 1e-6, _tol(10.0)),
             (torch.full((6, 7), 0.5), 0.5 + ref * 1e-4, _tol(1.0)),
             (off, ints.to(torch.float64), _tol(0.0)), (ints, ints.to(torch.float64), _tol(0.0)),
             (near.float(), ref, correctness.OutputTolerance(tol=1e-5, scale=0.25))]
    for out, oracle, tol in cases:
        whole = values.compare(out, oracle, tol, piece=1 << 30)
        for piece in (1, 5, 13):
            _checks_agree(values.compare(out, oracle, tol, piece=piece), whole)
    assert not values.compare(far.float(), ref, _tol()).ok
    assert values.compare(far.float(), ref, _tol(), piece=4).where in ((2, 5), (5, 6))
    for piece in (1, 5, 13):
        assert values.reference_error(near.float(), ref, piece) == pytest.approx(
            values.reference_error(near.float(), ref, 1 << 30), rel=1e-12)
        assert values.fingerprint(ref, piece) == values.fingerprint(ref, 1 << 30)
        assert values.negligible(ref * 1e-12, piece) and not values.negligible(ref_special, piece)


def test_comparing_a_large_output_keeps_its_temporaries_bounded(tmp_path):
    """A 2**25-element float32 output against its float64 oracle (256 MiB): whole-tensor
    float64 temporaries add about six times the oracle's size (1.5 GiB); in pieces of 8 MiB
    the peak grows by a few dozen pieces at most (KernelBench L1 ReLU at 4096 x 393216 ran the H200 out of memory)."""
    import subprocess
    import sys

    code = textwrap.dedent("""
        import resource, torch
        from forgekernel.judge import values
        from forgekernel.judge.correctness import OutputTolerance
        torch.manual_seed(0)
        ref = torch.randn(1 << 25, dtype=torch.float64)
        out = ref.float()
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        check = values.compare(out, ref, OutputTolerance(tol=1e-5), piece=1 << 20)
        grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base
        print(check.ok, grew // 1024)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})
    ok, grew_mib = out.stdout.split()
    assert ok == "True" and int(grew_mib) < 400, out.stdout


def test_a_pool_out_of_device_memory_releases_the_cache_once_then_names_its_size():
    """The verifier's pools come from the driver, which cannot reuse blocks PyTorch's caching
    allocator holds freed: out of memory, those are released and the allocation tried once more
    (KernelBench's 6 GiB elementwise workloads ran the H200 out of memory without it)."""
    from forgekernel.judge.ipc import allocate_or_release

    calls, released = [], []

    def fails(times: int, message: str = "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY"):
        def alloc():
            calls.append(1)
            if len(calls) <= times:
                raise RuntimeError(message)
        return alloc

    allocate_or_release(fails(0), lambda: released.append(1), 1 << 30)
    assert (len(calls), released) == (1, [])
    calls.clear()
    allocate_or_release(fails(1), lambda: released.append(1), 1 << 30)
    assert (len(calls), released) == (2, [1])
    calls.clear()
    with pytest.raises(RuntimeError, match=r"OUT_OF_MEMORY for a pool of 3\.00 GiB"):
        allocate_or_release(fails(2), lambda: None, 3 << 30)
    calls.clear()
    with pytest.raises(RuntimeError, match="INVALID_CONTEXT"):  # other errors: at once
        allocate_or_release(fails(1, "cuMemAlloc: CUDA_ERROR_INVALID_CONTEXT"), lambda: released.append(2), 1)
    assert released == [1]


def test_an_unstable_candidate_timing_is_flagged_beside_a_steady_reference():
    from types import SimpleNamespace

    from forgekernel.judge.timed import summarise_sides

    def side(ms):
        return SimpleNamespace(per_call_ms=list(ms), host_ms=[0.01] * len(ms))

    session = SimpleNamespace(cuda=True, task=SimpleNamespace(format="kernelbench"), device_name="NVIDIA H200",
                              ceilings=None)
    slot = SimpleNamespace(label="n=1", wl=None, outputs=[])
    steady = [2.72, 2.72, 2.721, 2.72, 2.719]
    jumpy = summarise_sides(session, slot, {"ref1": side(steady), "cand": side([0.66, 1.0, 1.3, 0.66, 1.0]),
                                            "ref2": side(steady)}, "device", 4)
    assert any("timing is unstable" in f for f in jumpy["flags"])
    calm = summarise_sides(session, slot, {"ref1": side(steady), "cand": side([0.66, 0.661, 0.659, 0.66, 0.66]),
                                           "ref2": side(steady)}, "device", 4)
    assert not any("unstable" in f for f in calm["flags"])


def test_wire_round_trips_tensors_whatever_their_strides(tmp_path):
    """A one-element output sliced from a wider tensor keeps a stride of 3, which torch calls
    contiguous and will not view as bytes: a correct kernel's (n, 3)[:, 0] at n = 1 failed with
    RUNTIME_ERROR on the hidden workload of size 1 (held-out operator 160)."""
    for i, t in enumerate([torch.arange(3.0).reshape(1, 3)[:, 0], torch.arange(12.0).reshape(3, 4).t(),
                           torch.arange(6, dtype=torch.int32).reshape(2, 3)[:, ::2], torch.zeros(0, 3)]):
        desc = wire.put(t, tmp_path, f"t{i}")
        back = wire.get(desc, tmp_path)
        assert back.shape == t.shape and back.dtype == t.dtype and torch.equal(back, t)


def test_an_integer_output_may_differ_only_on_a_rounding_boundary():
    """ceil() of a value within rounding error of an integer: the oracle gives the kernel's
    value for inputs moved by a rounding-sized step there, and nowhere else."""
    from forgekernel.judge import boundary

    def oracle(args):
        return (torch.ceil(args[0]).to(torch.int32),)

    x = [torch.tensor([1.5, 2.25, 3.0 + 1e-9, 5.5], dtype=torch.float64)]
    native = torch.tensor([2, 3, 4, 6], dtype=torch.int32)
    on_edge = torch.tensor([2, 3, 3, 6], dtype=torch.int32)  # 3.000000001 -> 3, not 4
    wrong = torch.tensor([2, 4, 4, 6], dtype=torch.int32)  # 2.25 -> 4
    assert boundary.explained(oracle, x, 0, on_edge, boundary.misses(on_edge, oracle(x)[0], native)) == 1
    assert boundary.explained(oracle, x, 0, wrong, boundary.misses(wrong, oracle(x)[0], native)) == 0
    both = torch.tensor([2, 4, 3, 6], dtype=torch.int32)  # one edge, one wrong: not forgiven
    assert boundary.explained(oracle, x, 0, both, boundary.misses(both, oracle(x)[0], native)) == 0
    many = [torch.full((3000,), 7.0 + 1e-9, dtype=torch.float64)]
    sevens = torch.full((3000,), 7, dtype=torch.int32)  # all on the edge: more than the share allows
    assert boundary.explained(oracle, many, 0, sevens, boundary.misses(sevens, oracle(many)[0], sevens + 1)) == 0
    assert boundary.explained(oracle, x, 0, native, torch.zeros(4, dtype=torch.bool)) == 0  # nothing to forgive

    def steep(args):  # an output that moves by about 29 for a step of 2^-20, 229 for 2^-17
        return (torch.floor(args[0] * 1e7).to(torch.int32),)

    y = [torch.tensor([3.0], dtype=torch.float64)]
    near = torch.tensor([30000005], dtype=torch.int32)
    far = torch.tensor([30000300], dtype=torch.int32)  # beyond what a step of 2^-17 moves it
    assert boundary.explained(steep, y, 0, near, torch.ones(1, dtype=torch.bool)) == 1
    assert boundary.explained(steep, y, 0, far, torch.ones(1, dtype=torch.bool)) == 0


class _CeilProblem:
    """A fake judge problem: the reference is ceil(x) in float32, the oracle the same in
    float64 (what :func:`boundary.second_opinion` asks of a real Problem)."""

    own_precision = False

    def reference(self, wl, args):
        return (torch.ceil(args[0].float()).to(torch.int32),)

    def oracle(self, wl, args):
        return (torch.ceil(args[0].double()).to(torch.int32),)


def test_the_second_opinion_forgives_a_boundary_and_notes_it():
    from forgekernel.judge import boundary
    from forgekernel.judge.correctness import OutputTolerance

    problem, tol = _CeilProblem(), OutputTolerance(tol=0.0, source="exact")
    x = [torch.tensor([1.5, 2.25, 3.0 + 1e-6, 5.5], dtype=torch.float64)]  # float32 keeps 3.000001
    ref64 = problem.oracle(None, x)[0]
    notes: list[str] = []
    edge = torch.tensor([2, 3, 3, 6], dtype=torch.int32)  # off the oracle and the float32 reference
    assert boundary.second_opinion(problem, None, x, 0, edge, ref64, tol, "cpu", notes)
    assert notes == [boundary.NOTE.format(k=0, n=1)]
    wrong = torch.tensor([2, 4, 4, 6], dtype=torch.int32)
    assert not boundary.second_opinion(problem, None, x, 0, wrong, ref64, tol, "cpu", notes)
    problem.own_precision = True  # an oracle in the reference's own dtype: no moved inputs
    assert not boundary.second_opinion(problem, None, x, 0, edge, ref64, tol, "cpu", notes)
    assert len(notes) == 1

