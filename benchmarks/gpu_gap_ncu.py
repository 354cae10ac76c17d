"""Nsight Compute on the two released kernels that trail their best peer: why the gap.

kernels/rope/kernel.py is 1-5 % slower than torch.compile of tasks/rope/reference.py, and
kernels/matmul/kernel.py about 3 % behind cuBLAS (torch.matmul) at two shapes. This script
profiles each side with ncu so the gap can be read off the counters: bytes moved to and from
DRAM, DRAM and SM throughput against peak, achieved occupancy, registers, launch shape, L2 hit
rate, instructions executed and global-load bytes through L1.

Run on a CUDA machine with ncu on PATH, as root (ncu needs the performance counters):

    source scripts/gpu_env.sh
    python3 benchmarks/gpu_gap_ncu.py --out DIR --commit SHA [--tasks rope,matmul] [--budget-s 400]

For each task, each non-smoke workload and each implementation (rope: forge, compile; matmul:
forge, cublas) one ncu call profiles this script's driver mode,

    python3 benchmarks/gpu_gap_ncu.py --drive TASK IMPL WORKLOAD_INDEX

which builds the workload's inputs on cuda as forge does (seed 0), calls the implementation
3 times (Triton and Inductor compile, caches fill), synchronizes, and calls it once more inside
the NVTX range "forge_measure", the only range ncu profiles (--nvtx-include "forge_measure/";
--target-processes application-only, so Inductor's compile workers are left alone). IMPL is
forge (kernels/TASK/kernel.py's run), compile (torch.compile of the reference's run, as
`forge compare` builds it), eager (the reference) or, for matmul, cublas (torch.matmul).

ncu runs with its defaults otherwise (caches flushed before each replay pass) and with
--clock-control none (the GPU's own clocks, as `forge profile` runs it; --clock-control base
locks them). No new step starts once --budget-s is nearly spent; each ncu call gets at most
--timeout-s. Writes DIR/gap_ncu.json after every step (device, UTC date, torch/triton/ncu
versions, commit; per task, workload and implementation: every kernel launched in the range
with its metrics, in SI base units (seconds, bytes), and totals over the kernels), keeps each
call's raw CSV in DIR/raw/, and prints a markdown table last.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any, NoReturn

REPO = Path(__file__).resolve().parents[1]
SCRIPT = Path(__file__).resolve()
sys.path.insert(0, str(REPO / "src"))

from forgekernel.profile.ncu import available_metrics, find_ncu, parse_number  # noqa: E402

RANGE = "forge_measure"
WARMUP = 3
IMPLS = {"rope": ("forge", "compile"), "matmul": ("forge", "cublas")}
"""What the orchestrator profiles per task: the released kernel and its best peer."""
DRIVE_IMPLS = ("forge", "compile", "eager", "cublas")

DURATION = "gpu__time_duration.sum"
DRAM_READ, DRAM_WRITE = "dram__bytes_read.sum", "dram__bytes_write.sum"
INST, L1_LD = "smsp__inst_executed.sum", "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum"
REGS, GRID, BLOCK = "launch__registers_per_thread", "launch__grid_size", "launch__block_size"
WEIGHTED = {"dram_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
            "sm_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
            "occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
            "l2_hit_pct": "lts__t_sector_hit_rate.pct"}
"""Totals' names for the metrics averaged over kernels, weighted by each kernel's duration."""
METRICS = (DURATION, DRAM_READ, DRAM_WRITE, *WEIGHTED.values(), REGS, GRID, BLOCK, INST, L1_LD,
           "launch__shared_mem_per_block", "launch__waves_per_multiprocessor")
"""Requested from ncu (Hopper names); the last two are launch attributes, free to collect."""
SUMMED = {"dram_read_mb": (DRAM_READ, 1e-6), "dram_write_mb": (DRAM_WRITE, 1e-6),
          "inst_executed": (INST, 1.0), "l1_global_ld_mb": (L1_LD, 1e-6)}
MIN_STEP_S = 20.0
"""No step starts with less of the budget left than this."""


def fail(message: str, code: int = 2) -> NoReturn:
    """One line on stderr and exit ``code`` (no traceback)."""
    print(f"gpu_gap_ncu: {message}", file=sys.stderr)
    raise SystemExit(code)


def check_impl(task: str, impl: str) -> None:
    """Refuse a task or implementation the driver does not know, in one line."""
    if task not in IMPLS:
        fail(f"unknown task {task!r}; use one of {', '.join(IMPLS)}")
    allowed = [i for i in DRIVE_IMPLS if i != "cublas" or task == "matmul"]
    if impl not in allowed:
        fail(f"unknown impl {impl!r} for {task}; use one of {', '.join(allowed)}")


# ------------------------------------------------------------------ parsing (pure)


def parse_ncu_csv(text: str, keep: Iterable[str] = METRICS) -> list[dict[str, Any]]:
    """One dict per kernel of ncu's ``--csv --page raw`` text: id, name, block and grid (ncu's
    "(x, y, z)" text) and ``metrics`` (the ``keep`` columns present, in SI base units by the
    units row; "1,234" and "n/a" handled). Lines that are not CSV records (==PROF==,
    ==WARNING==, blank, the target's own output) are skipped."""
    rows = list(csv.reader(io.StringIO("\n".join(
        ln for ln in text.splitlines() if ln.startswith('"')))))
    start = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    if start is None:
        return []
    header, body = rows[start], rows[start + 1:]
    units = [""] * len(header)
    if body and _is_units_row(body[0], header):
        units, body = body[0], body[1:]
    cols = {h: i for i, h in enumerate(header)}
    wanted = [m for m in keep if m in cols]
    kernels = []
    for row in body:
        if len(row) != len(header) or row == header:
            continue
        metrics = {m: _plain(parse_number(row[cols[m]], units[cols[m]])) for m in wanted}
        kernels.append({"id": _plain(parse_number(_cell(row, cols, "ID"))),
                        "name": _cell(row, cols, "Kernel Name"),
                        "block": _cell(row, cols, "Block Size") or None,
                        "grid": _cell(row, cols, "Grid Size") or None, "metrics": metrics})
    return kernels


def _is_units_row(row: list[str], header: list[str]) -> bool:
    """The units row: an empty ID cell and no number in any cell."""
    if len(row) != len(header) or ("ID" in header and row[header.index("ID")].strip()):
        return False
    return not any(isinstance(parse_number(v), float) for v in row)


def _cell(row: list[str], cols: dict[str, int], name: str) -> str:
    return row[cols[name]].strip() if name in cols else ""


def _plain(value: Any) -> Any:
    """Whole floats as ints (counts, registers, sizes); other values as parsed."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 53:
        return int(value)
    return value


def ncu_notes(text: str) -> list[str]:
    """ncu's ==ERROR== and ==WARNING== lines (the ==PROF== connect lines say nothing)."""
    return [ln.strip() for ln in text.splitlines() if ln.startswith(("==ERROR==", "==WARNING=="))]


def _num(kernel: dict[str, Any], metric: str) -> float | None:
    value = kernel["metrics"].get(metric)
    return float(value) if isinstance(value, (int, float)) else None


def totals(kernels: list[dict[str, Any]]) -> dict[str, Any]:
    """Over an implementation's kernels: count, summed time and bytes, duration-weighted
    percentages, and the longest kernel's name, registers, grid and block."""
    durations = [_num(k, DURATION) or 0.0 for k in kernels]
    out: dict[str, Any] = {"kernels": len(kernels), "duration_us": sum(durations) * 1e6}
    for key, (metric, scale) in SUMMED.items():
        values = [v for v in (_num(k, metric) for k in kernels) if v is not None]
        out[key] = _plain(sum(values) * scale) if values else None
    for key, metric in WEIGHTED.items():
        pairs = [(v, w) for v, w in zip((_num(k, metric) for k in kernels), durations, strict=True)
                 if v is not None]
        weight = sum(w for _, w in pairs)
        out[key] = (sum(v * w for v, w in pairs) / weight if weight > 0
                    else sum(v for v, _ in pairs) / len(pairs) if pairs else None)
    if kernels:
        main = kernels[max(range(len(kernels)), key=durations.__getitem__)]
        out.update(main_kernel=main["name"], registers=main["metrics"].get(REGS),
                   grid=main["grid"] or main["metrics"].get(GRID),
                   block=main["block"] or main["metrics"].get(BLOCK))
    return out


COLUMNS = ("task", "workload", "impl", "kernels", "duration us", "DRAM read MB", "DRAM write MB",
           "DRAM % peak", "SM %", "occupancy %", "regs/thread", "grid", "block")


def render_table(results: list[dict[str, Any]]) -> str:
    """Markdown: one row per task, workload and implementation (the longest kernel's name,
    registers, grid and block; the rest over all its kernels)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in results:
        label = " ".join(f"{k}={v}" for k, v in r.get("axes", {}).items())
        head = [r["task"], f"{r['workload']}: {label}", r["impl"]]
        t = r.get("totals") or {}
        if r.get("status") != "ok" or not t.get("kernels"):
            note = f"{r.get('status', 'failed')}: {r.get('note', '')}".replace("|", "/")
            lines.append("| " + " | ".join([*head, note[:120]] + [""] * (len(COLUMNS) - 4)) + " |")
            continue
        name = _short(str(t.get("main_kernel", "")))
        cells = [f"{t['kernels']}: {name}", _fmt(t.get("duration_us"), 1),
                 _fmt(t.get("dram_read_mb"), 1), _fmt(t.get("dram_write_mb"), 1),
                 _fmt(t.get("dram_pct"), 1), _fmt(t.get("sm_pct"), 1),
                 _fmt(t.get("occupancy_pct"), 1), _fmt(t.get("registers"), 0),
                 str(t.get("grid") or "-"), str(t.get("block") or "-")]
        lines.append("| " + " | ".join(head + cells) + " |")
    return "\n".join(lines)


def _fmt(value: Any, digits: int) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "-"


def _short(name: str, width: int = 48) -> str:
    """A kernel name without its template/argument list, at most ``width`` characters."""
    base = name.split("(")[0].split("<")[0].removeprefix("void ").strip() or name
    return (base if len(base) <= width else base[:width - 3] + "...").replace("|", "/")


# ------------------------------------------------------------------ driver (ncu's target)


def drive(task_name: str, impl: str, index_text: str) -> None:
    """Warm up the implementation, then one call inside the NVTX range ncu profiles."""
    check_impl(task_name, impl)
    if not index_text.isdigit():
        fail(f"WORKLOAD_INDEX must be a non-negative integer (got {index_text!r})")
    import torch

    if not torch.cuda.is_available():
        fail("--drive needs a CUDA GPU, and torch sees none here")
    problem, wl = _problem_at(task_name, int(index_text))
    fn = _callable(problem, wl, task_name, impl)
    inputs = problem.make(wl, seed=0)
    for _ in range(WARMUP):
        fn(*inputs)
    torch.cuda.synchronize()
    with torch.cuda.nvtx.range(RANGE):
        fn(*inputs)
        torch.cuda.synchronize()


def _problem_at(task_name: str, index: int) -> tuple[Any, Any]:
    """forge's Problem (inputs as the judge and `forge compare` make them) and the workload."""
    from forgekernel.errors import ForgeError
    from forgekernel.judge.problem import Problem
    from forgekernel.task import load_task

    try:
        task = load_task(REPO / "tasks" / task_name, check_reference=False)
    except ForgeError as exc:
        fail(str(exc))
    if index >= len(task.workloads):
        fail(f"workload index {index} is out of range: tasks/{task_name} has "
             f"{len(task.workloads)} workloads (0-{len(task.workloads) - 1})")
    return Problem(task, "cuda"), task.workloads[index]


def _callable(problem: Any, wl: Any, task_name: str, impl: str) -> Any:
    """The implementation as ``f(*inputs)``, built as `forge compare`'s worker builds it."""
    import torch

    from forgekernel.compare import calls

    if impl == "forge":
        kernel = REPO / "kernels" / task_name / "kernel.py"
        return problem.load(kernel, name="_gap_ncu_forge_kernel").at(wl)
    if impl == "compile":
        return calls.compiled(problem.reference_callable(wl))
    if impl == "cublas":
        return torch.matmul
    return problem.reference_callable(wl)


# ------------------------------------------------------------------ orchestrator


def choose_metrics(ncu: str) -> tuple[list[str], list[str]]:
    """(metrics to request, those this ncu does not list): one unknown name fails a run."""
    known = available_metrics(ncu)
    if known is None:
        return list(METRICS), []
    keep = [m for m in METRICS if m.startswith("launch__") or m.split(".", 1)[0] in known]
    return keep, [m for m in METRICS if m not in keep]


def plan(task_names: list[str]) -> list[dict[str, Any]]:
    """Every (task, non-smoke workload, implementation) step, the two sides of a gap adjacent."""
    from forgekernel.task import load_task

    steps = []
    for name in task_names:
        task = load_task(REPO / "tasks" / name, check_reference=False)
        for i, wl in enumerate(task.workloads):
            if wl.smoke:
                continue
            steps += [{"task": name, "workload": i, "axes": dict(wl.axes), "impl": impl}
                      for impl in IMPLS[name]]
    return steps


def ncu_command(ncu: str, metrics: list[str], step: dict[str, Any], log: Path,
                clock: str) -> list[str]:
    return [ncu, "--nvtx", "--nvtx-include", f"{RANGE}/", "--csv", "--page", "raw",
            "--print-units", "base", "--clock-control", clock,
            "--target-processes", "application-only", "--metrics", ",".join(metrics),
            "--log-file", str(log), sys.executable, str(SCRIPT), "--drive", step["task"],
            step["impl"], str(step["workload"])]


def _flags(metrics: list[str], clock: str) -> list[str]:
    """ncu's own flags, as every step passes them (the log file aside)."""
    cmd = ncu_command("ncu", metrics, {"task": "T", "impl": "I", "workload": 0}, Path("x"), clock)
    return cmd[1:cmd.index("--log-file")]


def _run_group(cmd: list[str], timeout_s: float) -> tuple[int | None, str]:
    """(exit code or None on timeout, stdout + stderr tail); on timeout the whole process
    group this call started (ncu, its target, the target's workers) is killed."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        return proc.returncode, out[-20000:]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, (out or "")[-20000:]


def profile_step(ncu: str, metrics: list[str], step: dict[str, Any], out: Path,
                 args: argparse.Namespace, timeout_s: float) -> dict[str, Any]:
    """One ncu call: the step's kernels, totals, notes and where its raw text lies."""
    stem = f"{step['task']}_w{step['workload']}_{step['impl']}"
    log = out / "raw" / f"{stem}.csv"
    log.unlink(missing_ok=True)
    started = time.monotonic()
    rc, tail = _run_group(ncu_command(ncu, metrics, step, log, args.clock_control), timeout_s)
    text = log.read_text(errors="replace") if log.exists() else ""
    kernels = parse_ncu_csv(text)
    entry = {**step, "status": "ok", "note": "", "raw": f"raw/{stem}.csv",
             "wall_s": round(time.monotonic() - started, 1), "notes": ncu_notes(text)[:8],
             "kernels": kernels, "totals": totals(kernels)}
    if rc != 0 or not kernels:
        (out / "raw" / f"{stem}.log").write_text(tail)
        entry["log"] = f"raw/{stem}.log"
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
    last = next((ln for ln in reversed(lines) if not ln.startswith("==")), lines[-1] if lines else "")
    if rc is None:
        entry.update(status="timeout", note=f"ncu ran past {timeout_s:.0f} s")
    elif not kernels:
        entry.update(status="failed", note=f"no kernel profiled (ncu exit {rc}): {last[:200]}")
    elif rc != 0:
        entry["note"] = f"ncu exit {rc}: {last[:200]}"
    return entry


def _ncu_version(ncu: str) -> str:
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unknown ({type(exc).__name__})"
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    return next((ln for ln in reversed(lines) if "version" in ln.lower()), lines[-1] if lines else "")


def header(args: argparse.Namespace, ncu: str, metrics: list[str],
           dropped: list[str]) -> dict[str, Any]:
    import torch

    versions = {}
    for dist in ("torch", "triton"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = "absent"
    versions["ncu"] = _ncu_version(ncu)
    return {"what": "ncu metrics of forge's released rope and matmul kernels and their best peers",
            "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device",
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "versions": versions, "commit": args.commit, "metrics": metrics,
            "metrics_dropped": dropped, "units": "metrics in SI base units: seconds, bytes, %, counts",
            "ncu_flags": _flags(metrics, args.clock_control),
            "warmup_calls": WARMUP, "nvtx_range": RANGE, "results": []}


def orchestrate(args: argparse.Namespace) -> None:
    ncu = find_ncu()
    if ncu is None:
        fail("ncu (Nsight Compute) is not on PATH; run this on a GPU machine that has it, as root")
    names = [n.strip() for n in args.tasks.split(",") if n.strip()]
    unknown = [n for n in names if n not in IMPLS]
    if unknown or not names:
        fail(f"--tasks {args.tasks!r}: use a comma list of {', '.join(IMPLS)}")
    out = Path(args.out)
    (out / "raw").mkdir(parents=True, exist_ok=True)
    record = header(args, ncu, *choose_metrics(ncu))
    started = time.monotonic()
    for step in plan(names):
        left = args.budget_s - (time.monotonic() - started)
        if left < MIN_STEP_S:
            entry = {**step, "status": "skipped", "note": "not reached: the time budget was spent"}
        else:
            entry = profile_step(ncu, record["metrics"], step, out, args, min(args.timeout_s, left))
        record["results"].append(entry)
        (out / "gap_ncu.json").write_text(json.dumps(record, indent=1))
        t = entry.get("totals") or {}
        print(f"[{time.monotonic() - started:5.0f} s] {step['task']} w{step['workload']} "
              f"{step['impl']}: {entry['status']} {t.get('kernels', 0)} kernel(s) "
              f"{t.get('duration_us', 0.0):.1f} us {entry['note']}", flush=True)
    print(render_table(record["results"]))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--drive", nargs=3, metavar=("TASK", "IMPL", "WORKLOAD_INDEX"),
                    help="ncu's target: warm up, then one call inside the NVTX range")
    ap.add_argument("--out", help="directory for gap_ncu.json and raw/")
    ap.add_argument("--commit", default="")
    ap.add_argument("--tasks", default=",".join(IMPLS))
    ap.add_argument("--budget-s", type=float, default=400.0)
    ap.add_argument("--timeout-s", type=float, default=120.0, help="per ncu call")
    ap.add_argument("--clock-control", default="none", choices=("none", "base"))
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.drive:
        drive(*args.drive)
        return 0
    if not args.out:
        fail("--out DIR is required (or --drive TASK IMPL WORKLOAD_INDEX)")
    orchestrate(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
