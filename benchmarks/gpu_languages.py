"""The built-in RMSNorm in Triton, CUDA C++ and CuTe DSL, judged and compared on one GPU.

Renders the built-in agent's rownorm structures for tasks/rmsnorm (Triton ``rownorm_row``,
CUDA C++ ``rownorm_cuda``, CuTe DSL ``rownorm_cute`` when ``cutlass`` imports) at a few
knob points, judges each with ``forge judge --delivery local --json`` and places the ones
that pass against the peers with ``forge compare``. Writes ``languages.json`` (device, date,
versions, commit, every verdict) and ``compare_rmsnorm.json`` under --out.

    source scripts/gpu_env.sh      # on the GPU machine
    python3 benchmarks/gpu_languages.py --out $OUT --commit <sha>

On a CPU-only machine the same script shows the compile-only path: every CUDA C++ and CuTe
DSL candidate is REJECTED as "needs a GPU" with its registers and spills (--delivery cpu).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

POINTS = {
    "rownorm_row": [{}],
    "rownorm_cuda": [{}, {"THREADS": 256, "VEC": 8}, {"THREADS": 0, "VEC": 4}],
    "rownorm_cute": [{"THREADS": 128, "VEC": 8}, {"THREADS": 256, "VEC": 8}, {"THREADS": 128, "VEC": 1}],
}
LANGUAGE = {"rownorm_row": "triton", "rownorm_cuda": "cuda", "rownorm_cute": "cute-dsl"}


def render(out: Path, first: bool = False) -> list[tuple[str, dict, Path]]:
    from forgekernel import templates
    from forgekernel.agents import builtin_generated
    from forgekernel.task import load_task

    made = []
    for name, points in POINTS.items():
        if name == "rownorm_cute" and importlib.util.find_spec("cutlass") is None:
            print(f"{name}: skipped (nvidia-cutlass-dsl is not installed)")
            continue
        task = load_task(REPO / "tasks" / "rmsnorm").model_copy(update={"language": LANGUAGE[name]})
        match = builtin_generated.resolve(task, (REPO / "tasks" / "rmsnorm" / "reference.py").read_text())
        tpl = templates.template(name)
        for knobs in points[:1] if first else points:
            cfg = templates.complete(tpl, knobs)
            label = name + "".join(f"_{k.lower()}{v}" for k, v in sorted(knobs.items()))
            d = out / "kernels" / label
            d.mkdir(parents=True, exist_ok=True)
            (d / "kernel.py").write_text(templates.render(cfg, match.op, match.params, match.constants,
                                                          call=match.call))
            made.append((label, cfg.knobs, d))
    return made


def forge(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "forgekernel.cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=REPO)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--commit", default="")
    ap.add_argument("--delivery", default="local")
    ap.add_argument("--timeout", type=float, default=420)
    ap.add_argument("--first", action="store_true", help="Only the first knob point of each structure.")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    compared = None
    for label, knobs, d in render(args.out, args.first):
        start = time.monotonic()
        try:
            proc = forge("judge", "tasks/rmsnorm", str(d / "kernel.py"), "--delivery", args.delivery,
                         "--json", "--timeout", str(max(10.0, args.timeout - 30)), timeout=args.timeout)
            verdict = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}
            err = proc.stderr.strip()[-400:]
        except subprocess.TimeoutExpired:
            verdict, err = {}, f"no verdict within {args.timeout:.0f} s"
        row = {"kernel": label, "knobs": knobs, "status": verdict.get("status"),
               "reason": (verdict.get("reason") or err)[:600], "speedup": verdict.get("speedup"),
               "wall_s": round(time.monotonic() - start, 1),
               "workloads": [{"axes": w.get("axes"), "median_ms": w.get("median_ms"),
                              "reference_ms": w.get("reference_ms"), "passed": w.get("passed")}
                             for w in verdict.get("workloads", [])]}
        rows.append(row)
        write(args, rows, compared)
        print(f"{label:36s} {row['status']!s:14s} {row['speedup'] or 0:8.3g}  {row['wall_s']:6.1f} s  "
              f"{row['reason'][:90]}", flush=True)
    passed = [str(args.out / "kernels" / r["kernel"] / "kernel.py") for r in rows if r["status"] == "PASSED"]
    if passed and args.delivery != "cpu":
        proc = forge("compare", "tasks/rmsnorm", *passed, "--json", str(args.out / "compare_rmsnorm.json"),
                     "--plot", str(args.out / "compare_rmsnorm.png"), "--commit", args.commit,
                     timeout=args.timeout)
        compared = {"exit": proc.returncode, "tail": (proc.stdout + proc.stderr)[-3000:]}
        print(compared["tail"])
    write(args, rows, compared)
    return 0


def write(args: argparse.Namespace, rows: list[dict], compared: dict | None) -> None:
    """languages.json as it stands (after every verdict: a run cut short keeps what it did)."""
    env = {}
    try:
        import torch
        import triton

        env = {"torch": torch.__version__, "triton": triton.__version__, "python": sys.version.split()[0],
               "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"}
        if importlib.util.find_spec("cutlass"):
            import cutlass

            env["cutlass_dsl"] = cutlass.__version__
    except ImportError:
        pass
    result = {"what": "built-in rmsnorm structures by language, judged on tasks/rmsnorm",
              "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "commit": args.commit,
              "delivery": args.delivery, "env": env, "verdicts": rows, "compare": compared}
    (args.out / "languages.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    sys.exit(main())
