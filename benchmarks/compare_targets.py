"""Issue 18's targets counted from `forge compare` JSON: per timed (non-smoke) workload, the
kernel against the best peer that matched the reference, on device time and on per-call time,
and against the size-matched copy (or read-only pass) for memory-bound tasks.

    python3 benchmarks/compare_targets.py benchmarks/results/compare_h200_2026-12-04/*.json \
        --out benchmarks/results/compare_h200_2026-12-04/targets.json

Peers are the rows that are neither the kernel nor a ceiling (copy, read-only pass) and whose
status is ok. Prints one line per task and the totals.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CEILINGS = {"copy", "read"}
COMPUTE_BOUND = {"matmul"}


def _best(rows: list[dict], key: str) -> dict | None:
    peers = [r for r in rows if r["kind"] not in CEILINGS | {"kernel"} and r["status"] == "ok" and r.get(key)]
    return min(peers, key=lambda r: r[key]) if peers else None


def workload_row(task: str, w: dict) -> dict | None:
    kernel = next((r for r in w["rows"] if r["kind"] == "kernel" and r["status"] == "ok"), None)
    if kernel is None:
        return None
    out = {"task": task, "workload": " x ".join(f"{k}={v}" for k, v in w["axes"].items())}
    for key in ("device_ms", "per_call_ms"):
        best = _best(w["rows"], key)
        out[f"best_peer_{key}"] = best["name"] if best else None
        out[f"vs_best_{key}"] = best[key] / kernel[key] if best and kernel.get(key) else None
    out["of_ceiling"] = None if task in COMPUTE_BOUND else kernel.get("of_ceiling")
    return out


def count(rows: list[dict]) -> dict:
    def share(key: str, bar: float) -> dict:
        vals = [r[key] for r in rows if r[key] is not None]
        return {"at_or_above": sum(v >= bar for v in vals), "of": len(vals), "bar": bar,
                "geomean": math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None}
    return {"device_vs_best_peer": share("vs_best_device_ms", 1.0),
            "per_call_vs_best_peer": share("vs_best_per_call_ms", 1.0),
            "memory_bound_of_ceiling": share("of_ceiling", 0.95)}


def _smoke_axes(task: str) -> list[dict]:
    """The task's smoke workloads (tasks/<task>/task.toml): not among the timed ones."""
    from forgekernel.task import load_task

    return [dict(w.axes) for w in load_task(REPO / "tasks" / task).workloads if w.smoke]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows, meta = [], {}
    for path in args.files:
        doc = json.loads(path.read_text())
        if "workloads" not in doc:
            continue
        meta.setdefault("device", doc.get("device"))
        meta.setdefault("commit", doc.get("commit"))
        smoke = _smoke_axes(doc["task"])
        timed = [w for w in doc["workloads"] if w["axes"] not in smoke]
        task_rows = [r for w in timed if (r := workload_row(doc["task"], w))]
        rows += task_rows
        c = count(task_rows)
        print(f"{doc['task']:<18} device >= best peer {c['device_vs_best_peer']['at_or_above']}/"
              f"{c['device_vs_best_peer']['of']}, per call {c['per_call_vs_best_peer']['at_or_above']}/"
              f"{c['per_call_vs_best_peer']['of']}, >= 0.95 of ceiling "
              f"{c['memory_bound_of_ceiling']['at_or_above']}/{c['memory_bound_of_ceiling']['of']}")
    total = count(rows)
    print("total:", json.dumps(total))
    if args.out:
        args.out.write_text(json.dumps({**meta, "totals": total, "workloads": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
