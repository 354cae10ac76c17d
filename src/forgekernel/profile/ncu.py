"""Nsight Compute: a focused metric set per workload, and a robust parser of its CSV output.

One ``ncu`` run per workload profiles only the kernels launched inside the target's NVTX
range ``forge`` (the measured call, after warm-up), optionally narrowed by a kernel-name
regex (a candidate's Triton kernels). Clocks are left alone (``--clock-control none``).
The raw-page CSV (``--csv --page raw``) is parsed here: ``==PROF==``/``==WARNING==`` lines,
the units row, thousands separators and ``n/a`` are all handled. Metrics the device's ncu
does not know are dropped before the run (``--query-metrics``), so one unknown name cannot
sink the whole profile.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forgekernel.errors import ForgeError

STALL_REASONS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss",
                 "lg_throttle", "long_scoreboard", "math_pipe_throttle", "membar",
                 "mio_throttle", "misc", "no_instruction", "not_selected", "short_scoreboard",
                 "sleeping", "tex_throttle", "wait", "selected")
_STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"

DURATION = "gpu__time_duration.sum"
WEIGHTED = {  # raw metric -> our name; averaged over kernels weighted by duration
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory_pct",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "compute_pct",
    "l1tex__t_sector_hit_rate.pct": "l1_hit_pct",
    "lts__t_sector_hit_rate.pct": "l2_hit_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy_pct",
    "sm__maximum_warps_per_active_cycle_pct": "occupancy_theoretical_pct",
}
TENSOR = ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
          "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active")
DRAM_BYTES = "dram__bytes.sum"
REGS = "launch__registers_per_thread"
SMEM = ("launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic")
LOCAL_ST = "smsp__sass_inst_executed_op_local_st.sum"

WANTED = (DURATION, *WEIGHTED, *TENSOR, DRAM_BYTES, REGS, *SMEM, LOCAL_ST,
          *(_STALL.format(r) for r in STALL_REASONS))
"""Every raw metric requested (before dropping the ones the device's ncu lacks)."""

_SCALE = {"": 1.0, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9,
          "T": 1e12}


class NcuError(ForgeError, RuntimeError):
    """Nsight Compute was required (``--ncu on``) but is missing or failed."""


@dataclass
class NcuKernel:
    """One profiled kernel launch: its name and raw metric values in base units."""

    name: str
    values: dict[str, float | str | None] = field(default_factory=dict)


@dataclass
class NcuResult:
    """Parsed run: launches, our aggregated metrics, and notes (errors, dropped metrics)."""

    kernels: list[NcuKernel]
    metrics: dict[str, float | int | str]
    notes: list[str]


# ------------------------------------------------------------------ parsing


def parse_number(text: str, unit: str = "") -> float | str | None:
    """'1,234.5' with unit 'usecond' -> seconds-free base value; 'n/a' -> None; text stays text."""
    s = text.strip().strip('"')
    if s == "" or s.lower() in ("n/a", "nan", "-"):
        return None
    plain = s.replace(",", "").replace("\u202f", "").replace(" ", "")
    try:
        value = float(plain)
    except ValueError:
        return s
    return value * unit_scale(unit)


_TIME_UNIT = re.compile(r"^(n|u|m|)(s|sec|second)$")
_BYTE_UNIT = re.compile(r"^([kKMGT]?)(B|byte)(/s|/sec|/second|/block)?$")


def unit_scale(unit: str) -> float:
    """Factor to base units (second, byte, byte/second, ...); unknown units stay 1.

    Both ncu spellings are understood: 'nsecond'/'ns', 'usecond'/'us', 'Kbyte'/'KB', ...
    (ncu's K, M, G are powers of 1000).
    """
    u = unit.strip()
    if m := _TIME_UNIT.match(u):
        return _SCALE[m.group(1)]
    if m := _BYTE_UNIT.match(u):
        return _SCALE[m.group(1)]
    return 1.0


_DEFAULT_UNITS = {DURATION: "nsecond"}
"""Base units assumed when the CSV has no units row (``--print-units base``)."""


def parse_csv(text: str) -> tuple[list[NcuKernel], list[str]]:
    """Kernels from ncu's raw CSV page, plus the ==PROF==/==ERROR== lines worth reporting."""
    notes = [ln.strip() for ln in text.splitlines()
             if ln.startswith(("==ERROR==", "==WARNING=="))]
    rows = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("==")]
    table = list(csv.reader(io.StringIO("\n".join(rows))))
    start = next((i for i, r in enumerate(table) if "Kernel Name" in r), None)
    if start is None:
        return [], notes
    header = table[start]
    body = table[start + 1:]
    units = [_DEFAULT_UNITS.get(h, "") for h in header]
    if body and _is_units_row(body[0], header):
        units, body = body[0], body[1:]
    name_col = header.index("Kernel Name")
    kernels = []
    for row in body:
        if len(row) != len(header):
            continue
        values = {h: parse_number(v, u) for h, v, u in zip(header, row, units, strict=True)
                  if "__" in h}
        kernels.append(NcuKernel(name=row[name_col], values=values))
    return kernels, notes


def _is_units_row(row: list[str], header: list[str]) -> bool:
    """The units row has an empty ID and no numeric metric cells."""
    if not row or "ID" not in header or row[header.index("ID")].strip():
        return False
    return all(not isinstance(parse_number(v), float) for v in row)


def summarize(kernels: list[NcuKernel]) -> dict[str, float | int | str]:
    """Our metric names from per-kernel raw values (absent when no kernel had the metric)."""
    out: dict[str, float | int | str] = {}
    times = [_num(k.values.get(DURATION)) for k in kernels]
    total_s = sum(t for t in times if t is not None)
    if total_s > 0:
        out["ncu_ms"] = total_s * 1e3
    weights = [t if t else 0.0 for t in times]
    for raw, name in WEIGHTED.items():
        avg = _weighted([_num(k.values.get(raw)) for k in kernels], weights)
        if avg is not None:
            out[name] = avg
    tensor = [_max_of(k.values.get(m) for m in TENSOR) for k in kernels]
    avg = _weighted(tensor, weights)
    if avg is not None:
        out["tensor_pct"] = avg
    _add_sums(out, kernels, total_s)
    stall = _top_stall(kernels, weights)
    if stall:
        out["stall_top"] = stall
    return out


def _add_sums(out: dict[str, Any], kernels: list[NcuKernel], total_s: float) -> None:
    dram = [_num(k.values.get(DRAM_BYTES)) for k in kernels]
    if any(d is not None for d in dram):
        out["dram_bytes"] = int(sum(d or 0.0 for d in dram))
        if total_s > 0:
            out["dram_tbs"] = out["dram_bytes"] / total_s / 1e12
    regs = [_num(k.values.get(REGS)) for k in kernels]
    if any(r is not None for r in regs):
        out["regs"] = int(max(r for r in regs if r is not None))
    smem = [_sum_of(k.values.get(m) for m in SMEM) for k in kernels]
    if any(s is not None for s in smem):
        out["smem_bytes"] = int(max(s for s in smem if s is not None))
    local = [_num(k.values.get(LOCAL_ST)) for k in kernels]
    if any(v is not None for v in local):
        out["local_st_insts"] = int(sum(v or 0.0 for v in local))


def _top_stall(kernels: list[NcuKernel], weights: list[float]) -> str | None:
    best, best_val = None, 0.0
    for reason in STALL_REASONS:
        if reason == "selected":  # issuing, not stalled
            continue
        val = _weighted([_num(k.values.get(_STALL.format(reason))) for k in kernels], weights)
        if val is not None and val > best_val:
            best, best_val = reason, val
    return best


def _num(v: Any) -> float | None:
    return v if isinstance(v, float) else None


def _max_of(values: Any) -> float | None:
    nums = [v for v in values if isinstance(v, float)]
    return max(nums) if nums else None


def _sum_of(values: Any) -> float | None:
    nums = [v for v in values if isinstance(v, float)]
    return sum(nums) if nums else None


def _weighted(values: list[float | None], weights: list[float]) -> float | None:
    pairs = [(v, w) for v, w in zip(values, weights, strict=True) if v is not None]
    if not pairs:
        return None
    wsum = sum(w for _, w in pairs)
    if wsum <= 0:
        return sum(v for v, _ in pairs) / len(pairs)
    return sum(v * w for v, w in pairs) / wsum


# ------------------------------------------------------------------ running


def find_ncu() -> str | None:
    """Path of the ncu binary on PATH, or None."""
    return shutil.which("ncu")


def check_mode(mode: str) -> str | None:
    """Resolve 'auto'/'on'/'off' to the ncu path to use (None = skip); 'on' without ncu raises."""
    if mode not in ("auto", "on", "off"):
        raise NcuError(f"--ncu {mode!r}: use auto, on or off")
    if mode == "off":
        return None
    path = find_ncu()
    if path is None and mode == "on":
        raise NcuError("--ncu on: Nsight Compute (ncu) is not on PATH; install it or use --ncu auto")
    return path


_AVAILABLE: dict[str, set[str] | None] = {}


def available_metrics(ncu: str, timeout_s: float = 120) -> set[str] | None:
    """Base metric names this device's ncu knows (None when the query fails)."""
    if ncu not in _AVAILABLE:
        proc = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True,
                              timeout=timeout_s, check=False)
        names = parse_query_metrics(proc.stdout) if proc.returncode == 0 else set()
        _AVAILABLE[ncu] = names or None
    return _AVAILABLE[ncu]


def parse_query_metrics(text: str) -> set[str]:
    """Base names from ``ncu --query-metrics`` (first token of each table line)."""
    names = set()
    for line in text.splitlines():
        tok = line.strip().split(" ", 1)[0]
        if "__" in tok and re.fullmatch(r"[a-z0-9_]+__[a-zA-Z0-9_]+", tok):
            names.add(tok)
    return names


UNLISTED = frozenset({"sm__maximum_warps_per_active_cycle_pct"})
"""Derived metrics (the Occupancy section's) that ``--query-metrics`` does not list."""


def select_metrics(known: set[str] | None, *, strict: bool = False) -> tuple[list[str], list[str]]:
    """(metrics to request, metrics dropped as unknown to this ncu).

    ``strict`` also drops the unlisted derived metrics (the retry after a failed run).
    """
    if known is None:
        return list(WANTED), []
    keep, drop = [], []
    for m in WANTED:
        listed = m.startswith("launch__") or m.split(".", 1)[0] in known
        ok = listed or (m in UNLISTED and not strict)
        (keep if ok else drop).append(m)
    return keep, drop


def ncu_command(ncu: str, metrics: list[str], log_file: Path, target: list[str],
                kernel_regex: str | None = None, launch_count: int = 64,
                nvtx: bool = True) -> list[str]:
    """The ncu command line for one workload's target process."""
    cmd = [ncu, "--csv", "--page", "raw", "--print-units", "base", "--clock-control", "none",
           "--target-processes", "all", "--launch-count", str(launch_count),
           "--metrics", ",".join(metrics), "--log-file", str(log_file)]
    if nvtx:
        cmd += ["--nvtx", "--nvtx-include", "forge/"]
    if kernel_regex:
        cmd += ["--kernel-name", f"regex:{kernel_regex}"]
    return cmd + target


def run_ncu(ncu: str, spec_file: Path, log_file: Path, *, kernel_regex: str | None,
            timeout_s: float, env: dict[str, str], launches: int | None = None) -> NcuResult:
    """Profile the target described by ``spec_file`` (see ncu_target); never raises on failure.

    If the NVTX range matched nothing, retry once without it, profiling the first
    ``launches`` kernels (those of the first warm-up call), and say so in the notes.
    """
    known = available_metrics(ncu)
    metrics, dropped = select_metrics(known)
    res = _run_once(ncu, metrics, spec_file, log_file, kernel_regex, timeout_s, env, 64, True)
    if not res.kernels and known is not None and any(m in UNLISTED for m in metrics):
        metrics, dropped = select_metrics(known, strict=True)
        res = _run_once(ncu, metrics, spec_file, log_file.with_suffix(".strict.csv"),
                        kernel_regex, timeout_s, env, 64, True)
    notes = [f"ncu: metrics unknown to this ncu dropped: {', '.join(dropped)}"] if dropped else []
    if not res.kernels and launches:
        retry = _run_once(ncu, metrics, spec_file, log_file.with_suffix(".nonvtx.csv"),
                          kernel_regex, timeout_s, env, launches, False)
        if retry.kernels:
            retry.notes.insert(0, f"ncu: the NVTX range matched no kernel; profiled the first "
                                  f"{launches} launches (a warm-up call) instead")
            res = retry
    res.notes[:0] = notes
    return res


def _run_once(ncu: str, metrics: list[str], spec_file: Path, log_file: Path,
              kernel_regex: str | None, timeout_s: float, env: dict[str, str],
              launch_count: int, nvtx: bool) -> NcuResult:
    from forgekernel.sandbox import python_argv

    # this process's sys.path, fixed: the filtered environment carries no PYTHONPATH
    target = python_argv("forgekernel.profile.ncu_target", [str(spec_file)])
    cmd = ncu_command(ncu, metrics, log_file, target, kernel_regex, launch_count, nvtx)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env,
                              check=False)
    except subprocess.TimeoutExpired:
        return NcuResult([], {}, [f"ncu: timed out after {timeout_s:.0f} s"])
    text = log_file.read_text(errors="replace") if log_file.exists() else ""
    kernels, msgs = parse_csv(text)
    notes = [f"ncu: {m}" for m in msgs[:5]]
    if proc.returncode != 0:
        log_file.with_suffix(".stderr.txt").write_text(proc.stdout[-20000:] + proc.stderr[-20000:])
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
        notes.append(f"ncu: exited with code {proc.returncode}: {tail[0][:200]}")
    if not kernels:
        notes.append("ncu: no kernel was profiled (filter matched nothing, or ncu failed)")
    return NcuResult(kernels, summarize(kernels), notes)
