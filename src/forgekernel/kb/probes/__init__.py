"""Probes: small GPU programs, each measuring one hardware mechanism.

A probe is a function ``probe(ctx: ProbeContext) -> ProbeResult`` living in one of this
package's modules. The registry below names each probe, the module that holds it and the
unit of the value it returns; nothing heavy is imported until a probe runs (inside the
worker process, ``python -m forgekernel.kb.worker``). Probes of one module run in one
worker process and may share measurements through ``ctx.memo``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ProbeResult(BaseModel):
    """What a probe measured: one value in ``unit`` plus the details behind it.

    ``supported`` is False when the mechanism could not be exercised on this machine
    (for example a Triton feature the installed version lacks); ``value`` is then None and
    ``reason`` says why.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    probe: str
    value: float | None
    unit: str
    details: dict[str, Any] = Field(default_factory=dict)
    supported: bool = True
    reason: str = ""


class ProbeEnv(BaseModel):
    """Where probes ran: device, driver, library versions and the date (UTC, ISO)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    device: str
    driver: str = ""
    versions: dict[str, str] = Field(default_factory=dict)
    date: str


@dataclass
class ProbeContext:
    """Shared state of the probes running in one worker process."""

    device: str = "cuda"
    memo: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ProbeSpec:
    """A registered probe: its module (under this package), function name and unit."""

    module: str
    function: str
    unit: str
    summary: str


PROBES: dict[str, ProbeSpec] = {
    "copy_large": ProbeSpec("copy", "copy_large", "TB/s",
                            "min device copy bandwidth over buffers >= 256 MiB"),
    "copy_small": ProbeSpec("copy", "copy_small", "x",
                            "16 MiB copy bandwidth / large-buffer copy bandwidth"),
    "l2_reuse": ProbeSpec("l2", "l2_reuse", "x",
                          "read bandwidth of a 24 MiB working set re-read / of a 1 GiB one"),
    "matmul_bf16": ProbeSpec("matmul", "matmul_bf16", "TFLOP/s", "torch.matmul bf16 8192^3"),
    "matmul_fp16": ProbeSpec("matmul", "matmul_fp16", "TFLOP/s", "torch.matmul fp16 8192^3"),
    "launch_eager": ProbeSpec("launch", "launch_eager", "us",
                              "device time per back-to-back eager launch of a tiny kernel"),
    "launch_graph": ProbeSpec("launch", "launch_graph", "us",
                              "device time per tiny kernel replayed in a CUDA graph"),
    "load_width": ProbeSpec("loads", "load_width", "x",
                            "16-byte vectorised / scalar loads, bf16 streaming kernel, 1 GiB"),
    "tma_loads": ProbeSpec("loads", "tma_loads", "x",
                           "Triton tensor-descriptor tile loads / pointer tile loads"),
    "rows_multirow": ProbeSpec("rows", "rows_multirow", "x",
                               "best multi-row / one-row-per-program rmsnorm, N = 512"),
    "rows_num_warps": ProbeSpec("rows", "rows_num_warps", "x",
                                "best num_warps / num_warps = 4 rmsnorm, N = 16384"),
    "rows_persistent": ProbeSpec("rows", "rows_persistent", "x",
                                 "persistent grid / plain grid rmsnorm, 2M rows of 128"),
}
"""Probe name -> where it lives and what it returns."""


def run_probe(name: str, ctx: ProbeContext) -> ProbeResult:
    """Import the probe's module and run it (inside a worker process)."""
    spec = PROBES[name]
    module = importlib.import_module(f"forgekernel.kb.probes.{spec.module}")
    result = getattr(module, spec.function)(ctx)
    if result.unit != spec.unit:
        raise ValueError(f"probe {name} returned unit {result.unit!r}, registered {spec.unit!r}")
    return result


def groups(names: list[str]) -> dict[str, list[str]]:
    """Probe names grouped by module, in registry order (one worker process per group)."""
    out: dict[str, list[str]] = {}
    for name in PROBES:
        if name in names:
            out.setdefault(PROBES[name].module, []).append(name)
    return out
