"""`forge bench`: `forge run` over many problems, resumable, with KernelBench's metrics.

A bench dir holds ``bench.toml`` (the problems and the settings, fixed when it is made),
``problems/<slug>/`` (the converted task, the run dir and the run's log) and
``results.jsonl`` (one line per finished problem, appended and flushed). Re-running `forge
bench` on the bench dir skips finished problems and resumes started runs. Each problem runs
as its own `forge new` + `forge run` subprocess with a wall-clock limit, several at a time
where the delivery allows. The summary (:mod:`forgekernel.bench_summary`) is rebuilt from
``results.jsonl`` after every problem.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from forgekernel.bench_compile import compile_ratio, timed_axes
from forgekernel.bench_slots import GpuSlots, too_big_to_share
from forgekernel.errors import ForgeError

BENCH_TOML, RESULTS = "bench.toml", "results.jsonl"
LOCK_LOG = "gpu_lock.jsonl"
"""Every GPU job's line of the local delivery's lock log (FK_GPU_LOCK_LOG): where the GPU's time went."""
COMPARE_REPS = 20
"""Timed rounds of the torch.compile comparison after each correct GPU problem."""


class BenchError(ForgeError, ValueError):
    """A bench that cannot start or resume; one line for the user."""


@dataclass(frozen=True)
class Problem:
    """One problem of a bench: where it came from and its directory name."""

    slug: str
    source: str


@dataclass(frozen=True)
class BenchSettings:
    """What every problem's `forge run` is given (fixed in bench.toml)."""

    agent: str = "builtin"
    delivery: str = "auto"
    iterations: int = 4
    minutes: float = 10.0
    jobs: int = 1
    target: float | None = None
    peers: bool = True
    gpus: int = 0
    """Pin the problems round-robin to GPUs 0..gpus-1 (FK_GPU of each one's forge processes);
    0: leave the GPU to the delivery's own choice."""
    share_gb: float | None = None
    """FK_GPU_SHARE_GB of each problem's forge processes: judgements under this estimated
    footprint check correctness beside other problems' on one GPU (timing stays exclusive)."""
    unsafe: bool = False
    """--unsafe-no-sandbox for this invocation only (never written to bench.toml)."""

    def run_args(self) -> list[str]:
        args = ["--agent", self.agent, "--delivery", self.delivery,
                "--max-iterations", str(self.iterations), "--max-minutes", str(self.minutes)]
        return args + (["--target", str(self.target)] if self.target else []) + self.unsafe_args()

    def unsafe_args(self) -> list[str]:
        return ["--unsafe-no-sandbox"] if self.unsafe else []


def problems_from(sources: Iterable[Path]) -> list[Problem]:
    """Task dirs and KernelBench files in ``sources`` (directories are searched one level)."""
    found: list[Path] = []
    for src in sources:
        if not src.exists():
            raise BenchError(f"{src}: no such file or directory")
        if src.is_file() or (src / "task.toml").is_file():
            found.append(src)
            continue
        inner = sorted(p for p in src.iterdir() if p.suffix == ".py" or (p / "task.toml").is_file())
        if not inner:
            raise BenchError(f"{src}: holds no task dirs and no .py problem files")
        found += inner
    seen: set[str] = set()
    out = []
    for path in found:
        slug = _slug(path, seen)
        out.append(Problem(slug, str(path.resolve())))
    return out


def _slug(path: Path, seen: set[str]) -> str:
    base = re.sub(r"[^0-9A-Za-z]+", "_", path.stem if path.is_file() else path.name).strip("_").lower()
    slug, n = base or "problem", 2
    while slug in seen:
        slug, n = f"{base}_{n}", n + 1
    seen.add(slug)
    return slug


def create(root: Path, problems: list[Problem], settings: BenchSettings) -> Path:
    """A new bench dir (fails if ``root`` exists and is not empty)."""
    import tomli_w

    if root.exists() and any(root.iterdir()):
        raise BenchError(f"{root}: exists and is not empty; resume it with `forge bench {root}`")
    (root / "problems").mkdir(parents=True, exist_ok=True)
    data = {"created": datetime.now(UTC).isoformat(timespec="seconds"),
            "settings": {k: v for k, v in vars(settings).items() if v is not None and k != "unsafe"},
            "problem": [{"slug": p.slug, "source": p.source} for p in problems]}
    (root / BENCH_TOML).write_text(tomli_w.dumps(data))
    return root


def load(root: Path) -> tuple[list[Problem], BenchSettings]:
    """The problems and settings of an existing bench dir."""
    import tomllib

    path = root / BENCH_TOML
    try:
        data = tomllib.loads(path.read_text())
        problems = [Problem(str(p["slug"]), str(p["source"])) for p in data["problem"]]
        settings = BenchSettings(**data.get("settings", {}))
    except FileNotFoundError:
        raise BenchError(f"{root}: not a bench dir (no {BENCH_TOML})") from None
    except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
        raise BenchError(f"{path}: unreadable ({type(exc).__name__}: {exc})") from None
    return problems, settings


def finished(root: Path) -> dict[str, dict[str, Any]]:
    """Results recorded so far, by slug (a torn last line is ignored)."""
    out: dict[str, dict[str, Any]] = {}
    path = root / RESULTS
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and "slug" in row:
            out[row["slug"]] = row
    return out


class _Recorder:
    """Appends result lines (one writer at a time) and rebuilds the summary after each."""

    def __init__(self, root: Path, on_result: Callable[[dict[str, Any]], None]) -> None:
        self.root, self.on_result, self.lock = root, on_result, threading.Lock()

    def __call__(self, row: dict[str, Any]) -> None:
        with self.lock:
            with open(self.root / RESULTS, "a") as fh:
                fh.write(json.dumps(row) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            summary(self.root)
            self.on_result(row)


def run(root: Path, on_result: Callable[[dict[str, Any]], None] = lambda row: None,
        unsafe_no_sandbox: bool = False) -> dict[str, Any]:
    """Run every unfinished problem of the bench dir; returns the summary.
    ``unsafe_no_sandbox`` is passed to every `forge new` and `forge run` (not kept)."""
    problems, settings = load(root)
    if unsafe_no_sandbox:
        settings = replace(settings, unsafe=True)
    done = finished(root)
    todo = [p for p in problems if p.slug not in done]
    record = _Recorder(root, on_result)
    pool = ThreadPoolExecutor(max_workers=max(1, settings.jobs))
    slots = gpu_slots(settings)
    try:  # problems too big to share the GPU wait until the others are done, then run one by one
        later = _drain([pool.submit(_on_a_slot, slots, root, p, settings, True) for p in todo], record)
        _drain([pool.submit(_on_a_slot, slots, root, p, settings, False) for p in later], record)
    finally:  # on Ctrl-C the problems not yet started stay unstarted
        pool.shutdown(wait=True, cancel_futures=True)
    return summary(root)


def _drain(futures: list[Any], record: Callable[[dict[str, Any]], None]) -> list[Problem]:
    """Record each finished problem's row; the problems deferred (too big to share), in order.
    A None row: interrupted, left for the resume."""
    later = []
    for future in as_completed(futures):
        if isinstance(row := future.result(), Problem):
            later.append(row)
        elif row is not None:
            record(row)
    return later


def gpu_slots(settings: BenchSettings) -> GpuSlots:
    """One slot per job, each on a GPU (least busy first, so round-robin over
    ``settings.gpus``) or None."""
    return GpuSlots(settings.jobs, settings.gpus)


def _on_a_slot(slots: GpuSlots, root: Path, problem: Problem, settings: BenchSettings,
               defer: bool) -> dict[str, Any] | Problem | None:
    gpu = slots.take()
    try:
        return run_problem(root, problem, settings, gpu, slots, defer)
    finally:
        slots.give(gpu)


def summary(root: Path) -> dict[str, Any]:
    """Rebuild summary.json, summary.md and summary.png from the bench dir (returned)."""
    from forgekernel import bench_summary

    problems, settings = load(root)
    return bench_summary.write(root, problems, settings, finished(root))


def run_problem(root: Path, problem: Problem, settings: BenchSettings, gpu: int | None = None,
                slots: GpuSlots | None = None, defer: bool = False) -> dict[str, Any] | Problem | None:
    """Convert (KernelBench files), run and read back one problem; never raises. None when
    `forge new` or `forge run` was interrupted (Ctrl-C, a signal): the problem is not finished
    and a later `forge bench` on the bench dir resumes it. ``defer``: a problem too big to share
    its GPU is returned, converted but not run, to run after the others."""
    start = time.monotonic()
    env = {"FK_GPU": str(gpu)} if gpu is not None else {}
    if settings.share_gb:
        env["FK_GPU_SHARE_GB"] = str(settings.share_gb)
    if settings.delivery in ("auto", "local"):  # read by the local delivery only
        env["FK_GPU_LOCK_LOG"] = str((root / LOCK_LOG).resolve())
    base = root / "problems" / problem.slug
    base.mkdir(parents=True, exist_ok=True)
    row: dict[str, Any] = {"slug": problem.slug, "source": problem.source}
    run_dir = base / "run"
    from forgekernel.run import rundir

    if aside := rundir.set_aside_if_made_elsewhere(run_dir):  # a bench carried to a fresh machine
        row["restarted"] = f"started on another machine (its ledger key is not here): kept as {aside.name}, run again"
    if not (run_dir / "run.toml").is_file():
        args = ["new", problem.source, "--out", str(run_dir), "--agent", settings.agent,
                "--delivery", settings.delivery, *settings.unsafe_args()]
        out = _forge(args, base / "new.log", 300, env)
        if _interrupted(out):
            return None
        if out.returncode != 0:
            return {**row, **_failed("convert", base / "new.log", out), "wall_s": _since(start)}
    alone = slots is not None and gpu is not None and settings.share_gb is not None \
        and too_big_to_share(run_dir, settings.share_gb)
    if alone and defer:
        return problem
    with slots.alone(gpu) if alone else contextlib.nullcontext():
        if alone:
            row["gpu_alone"] = "its judge's estimated footprint is over the share: run with the GPU to itself"
        out = _forge(["run", str(run_dir), *settings.run_args()], base / "run.log",
                     60 * settings.minutes + 600, env)
        if _interrupted(out):
            return None
        row.update(_read_run(run_dir))
        if out.returncode not in (0, 2) or (not row.get("best") and not row.get("statuses")):
            row.update(_failed("run", base / "run.log", out))  # stopped before any verdict: say why
        if settings.peers and row.get("correct") and row.get("timing") == "device":
            if (peer := _compile_peer(base, run_dir, settings, row, env)) is None:
                return None
            row.update(peer)
    row["wall_s"] = _since(start)
    return row


def _compile_peer(base: Path, run_dir: Path, settings: BenchSettings, row: dict[str, Any],
                  env: dict[str, str]) -> dict[str, Any] | None:
    """torch.compile (default mode) against the best kernel, from `forge compare` in one
    worker with one method, on the workloads the judge timed (:func:`compile_ratio`). None
    when interrupted."""
    if settings.delivery not in ("auto", "local"):
        return {"compile_note": f"torch.compile not timed: forge compare runs on this machine, "
                                f"the bench's delivery is {settings.delivery}"}
    path = base / "compare.json"
    path.unlink(missing_ok=True)
    args = ["compare", str(run_dir / "task"), str(run_dir / "best"), "--delivery", settings.delivery,
            "--workloads", "timed", "--skip", "copy", "--skip", "read", "--reps", str(COMPARE_REPS),
            "--json", str(path), "--plot", str(base / "compare.png"), "--timeout", "480",
            *settings.unsafe_args()]
    out = _forge(args, base / "compare.log", 600, env)
    if _interrupted(out):
        return None
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return {"compile_note": "torch.compile not timed: " + _failed("compare", base / "compare.log", out)["error"]}
    return compile_ratio(record, timed_axes(row))


def _forge(args: list[str], log: Path, timeout_s: float,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "forgekernel.cli", *args]
    with open(log, "a") as fh:
        pinned = "".join(f"{k}={v} " for k, v in (env or {}).items())
        fh.write(f"$ {pinned}forge {' '.join(args)}\n")
        fh.flush()
        try:
            return subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout_s,
                                  stdin=subprocess.DEVNULL, check=False,
                                  env={**os.environ, **env} if env else None)
        except subprocess.TimeoutExpired:
            fh.write(f"forge bench: killed after {timeout_s:.0f} s\n")
            return subprocess.CompletedProcess(cmd, 124)


def _interrupted(out: subprocess.CompletedProcess) -> bool:
    """Stopped by Ctrl-C or a signal (forge's exit 130, or a death by signal), not by its own end
    or bench's time limit (124)."""
    return out.returncode in (130, -signal.SIGINT, -signal.SIGTERM, -signal.SIGHUP)


def _failed(stage: str, log: Path, out: subprocess.CompletedProcess) -> dict[str, Any]:
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("forge: error") or "error" in ln.lower()]
    why = (errors or lines or [f"exit {out.returncode}"])[-1]
    if out.returncode == 124:
        why = "timed out"
    return {"stage": stage, "error": why[:300], "exit": out.returncode}


def _read_run(run_dir: Path) -> dict[str, Any]:
    """What the run found: the confirmed best verdict, attempts, delivery."""
    from forgekernel.run import engine, rundir

    if not (run_dir / "run.toml").is_file():
        return {}
    try:
        rd = rundir.open(run_dir)
        state = engine.load_state(rd)
    except ForgeError as exc:
        return {"error": f"run dir unreadable: {exc}"}
    best = state.best
    verdict = _best_verdict(rd, best)
    row: dict[str, Any] = {"attempts": state.iterations, "delivery": rd.config.delivery,
                           "best": best.candidate if best else None, "correct": verdict is not None}
    if verdict is not None:
        row.update(speedup=verdict.get("speedup"), timing=_timing_label(verdict),
                   workloads=[{k: w.get(k) for k in ("axes", "median_ms", "reference_ms", "speedup")}
                              for w in verdict.get("workloads", []) if not w.get("hidden")],
                   device=verdict.get("device", ""))
    statuses: dict[str, int] = {}
    for a in state.attempts.values():
        key = a.verdict.status.value if a.verdict else "AGENT_ERROR"
        statuses[key] = statuses.get(key, 0) + 1
    row["statuses"] = statuses
    return row


def _best_verdict(rd: Any, best: Any) -> dict[str, Any] | None:
    if best is None:
        return None
    path = rd.root / "best" / "verdict.json"
    if path.is_file():
        data = json.loads(path.read_text())
        if data.get("status") == "PASSED":
            return data
    return best.verdict.model_dump(mode="json") if best.verdict and best.verdict.passed else None


def _timing_label(verdict: dict[str, Any]) -> str:
    labels = {w.get("timing_label") for w in verdict.get("workloads", []) if w.get("timing_label")}
    return labels.pop() if len(labels) == 1 else ",".join(sorted(x for x in labels if x))


def _since(start: float) -> float:
    return round(time.monotonic() - start, 1)
