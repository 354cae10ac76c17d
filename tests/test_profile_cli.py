"""`forge profile` end to end on the CPU runner: hand-computed bytes and floors, launches, bound."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from forgekernel.profile import METRICS
from forgekernel.profile.roofline import H200_SHARED


def forge(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "forgekernel.cli", *args], capture_output=True,
                          text=True, timeout=600, cwd=cwd)


def hand_floor_ms(nbytes: int) -> float:
    """Interpolate the H200 baseline's size-matched copy table by hand (buffer = bytes / 2)."""
    mib = nbytes / 2 / 2**20
    table = sorted(H200_SHARED.bandwidth_by_mib.items())
    if mib <= table[0][0]:
        tbs = table[0][1]
    else:
        (s0, b0), (s1, b1) = next(((a, b) for a, b in zip(table, table[1:], strict=False) if mib <= b[0]))
        tbs = b0 + (b1 - b0) * (mib - s0) / (s1 - s0)
    return nbytes / (tbs * 1e12) * 1e3


def test_profile_rmsnorm_reference_json(repo):
    proc = forge("profile", str(repo / "tasks" / "rmsnorm"), "--json", "--delivery", "cpu")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    profiles = out["profiles"]
    assert [p["axes"] for p in profiles] == [{"M": 16, "N": 256}, {"M": 7, "N": 384}]
    for p in profiles:
        M, N = p["axes"]["M"], p["axes"]["N"]
        m = p["metrics"]
        assert m["bytes"] == 2 * M * N * 2 + 2 * N
        assert m["flops"] == 4 * M * N
        assert m["floor_ms"] == pytest.approx(m["bytes"] / 2.64e12 * 1e3)  # 16 MiB-and-below row
        assert m["floor_ms"] == pytest.approx(hand_floor_ms(m["bytes"]))
        assert m["launches"] == 8
        assert m["bound"] == "latency"  # a few ns of traffic against 8 launches
        assert "sol_pct" not in m  # cpu-interpret timings give no %SOL
        assert p["sources"]["median_ms"].startswith("cpu-interpret")
        assert set(m) <= set(METRICS)
        assert sum(k["count"] for k in p["kernels"]) == 8


def test_hand_floor_interpolates_between_table_rows():
    # 16384 x 8192 bf16 in and out: 512 MiB moved, a 256 MiB copy buffer -> 4.13 TB/s
    nbytes = 2 * 16384 * 8192 * 2 + 2 * 8192
    assert hand_floor_ms(nbytes) == pytest.approx(nbytes / 4.13e12 * 1e3, rel=1e-4)


def test_profile_triton_candidate_table(repo):
    proc = forge("profile", str(repo / "tasks" / "rmsnorm"), "--delivery", "cpu", "--kernel",
                 str(repo / "benchmarks" / "kernels" / "rmsnorm_triton"), "--json")
    assert proc.returncode == 0, proc.stderr
    for p in json.loads(proc.stdout)["profiles"]:
        assert p["metrics"]["launches"] == 1
        assert [k["name"] for k in p["kernels"]] == ["rmsnorm_row_kernel"]
        assert p["sources"]["launches"] == "triton-interpreter"
        assert p["metrics"]["regs"] > 0 and p["metrics"]["spills"] == 0
        assert p["metrics"]["uses_wgmma"] is False
        assert p["sources"]["regs"].startswith("static: triton")


def test_bad_inputs_are_one_line_errors(repo, tmp_path):
    cases = [
        ("profile", str(repo / "tasks" / "rmsnorm"), "--ncu", "sometimes"),
        ("profile", str(repo / "tasks" / "rmsnorm"), "--delivery", "cpu", "--ncu", "on"),
        ("profile", str(tmp_path / "nothing")),
        ("profile", str(repo / "tasks" / "rmsnorm"), "--delivery", "cpu", "--kernel", str(tmp_path)),
    ]
    for args in cases:
        proc = forge(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("forge: error: "), (args, proc.stderr)
