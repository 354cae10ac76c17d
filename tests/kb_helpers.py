"""Shared helpers for the knowledge-base tests: a private copy of hw_kb and probe runs
built by the probes' own analysis functions from physically shaped timings."""

from __future__ import annotations

import shutil
from pathlib import Path

from forgekernel.kb.probes import ProbeEnv, ProbeResult
from forgekernel.kb.probes import copy as copy_probe
from forgekernel.kb.probes import matmul as matmul_probe

REPO = Path(__file__).resolve().parents[1]


def kb_copy(tmp_path: Path) -> Path:
    """A writable copy of the committed hw_kb with every certification removed."""
    import tomllib

    import tomli_w

    dst = tmp_path / "hw_kb"
    shutil.copytree(REPO / "hw_kb", dst, ignore=shutil.ignore_patterns("*.md"))
    for path in dst.glob("*/*.toml"):
        raw = tomllib.loads(path.read_text())
        raw.pop("certification", None)
        path.write_text(tomli_w.dumps(raw))
    return dst


def copy_sweep(large_tbs: float, small_tbs: float) -> dict[int, dict]:
    """A copy sweep whose timings follow 2 x bytes / bandwidth (small sizes slower)."""
    out = {}
    for mib in copy_probe.SIZES_MIB:
        bw = small_tbs if mib <= copy_probe.SMALL_MIB else large_tbs
        ms = 2 * mib * (1 << 20) / (bw * 1e12) * 1e3
        out[mib] = {"median_ms": ms, "spread_ms": ms * 0.01, "n": 20, "tbs": bw}
    return out


def env(device: str = "NVIDIA H200") -> ProbeEnv:
    return ProbeEnv(device=device, driver="580.00", versions={"torch": "2.11.0", "sm": "9.0"},
                    date="2026-12-02T00:00:00Z")


def matmul_result(probe: str, ms: float, n: int = 8192) -> ProbeResult:
    """A matmul probe result whose value is what the probe's own formula gives for ``ms``."""
    return ProbeResult(probe=probe, value=matmul_probe.tflops(n, ms), unit="TFLOP/s",
                       details={"by_n": {str(n): {"median_ms": ms}}})


def run_dict(results: list[ProbeResult], device: str = "NVIDIA H200") -> dict:
    """A raw probe run, shaped as `forge kb probe --out` writes it."""
    return {**env(device).model_dump(mode="json"), "delivery": "local", "commit": "test",
            "results": {r.probe: r.model_dump(mode="json") for r in results}, "jobs": []}
