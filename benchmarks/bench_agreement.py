"""Per problem of a `forge bench` dir: each candidate's search verdict against its
confirmation (the same kernel judged again in a fresh judgement): speedups, each timed
workload's candidate and reference medians, the verifier's re-taken and kept-disturbed
timing batches (docs/judge.md), and a failed verdict's feedback, as JSON on stdout:

    python3 benchmarks/bench_agreement.py BENCH_DIR [META_JSON] > agreement.json

META_JSON (the device, date, versions and commit of the call, as gpu_kb_bench.sh writes it)
is copied in as "meta".
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _tails(verdict: dict) -> tuple[int, int]:
    tails = (verdict.get("profile") or {}).get("tails") or {}
    return (sum(int(t.get("retaken", 0)) for t in tails.values()),
            sum(int(t.get("disturbed_kept", 0)) for t in tails.values()))


def problem(ledger: Path) -> list[dict]:
    events = [json.loads(line) for line in ledger.read_text().splitlines() if line.strip()]
    rows: dict[str, dict] = {}
    for e in events:
        v = e.get("verdict")
        if not v or not e.get("candidate"):
            continue
        side = "confirmation" if e.get("kind") == "confirm" else "attempt"
        retaken, kept = _tails(v)
        rows.setdefault(e["candidate"], {"candidate": e["candidate"]})[side] = {
            "status": v.get("status"), "speedup": v.get("speedup"), "retaken": retaken, "disturbed_kept": kept,
            "workloads": [{"median_ms": w.get("median_ms"), "reference_ms": w.get("reference_ms")}
                          for w in v.get("workloads") or [] if w.get("median_ms")],
            "feedback": (v.get("feedback") or "")[:400] if v.get("status") != "PASSED" else ""}
    for row in rows.values():
        a, c = (row.get("attempt") or {}).get("speedup"), (row.get("confirmation") or {}).get("speedup")
        row["diff_pct"] = round((c / a - 1) * 100, 3) if a and c else None
    return list(rows.values())


def main(bench: Path, meta: Path | None = None) -> dict:
    out = {}
    for ledger in sorted(bench.glob("problems/*/run/ledger.jsonl")):
        out[ledger.parent.parent.name] = problem(ledger)
    diffs = [abs(r["diff_pct"]) for rows in out.values() for r in rows if r["diff_pct"] is not None]
    return {"meta": json.loads(meta.read_text()) if meta else None, "bench": str(bench), "pairs": len(diffs),
            "within_0.5pct": sum(d <= 0.5 for d in diffs), "within_1pct": sum(d <= 1.0 for d in diffs),
            "max_abs_diff_pct": max(diffs) if diffs else None, "problems": out}


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else None), indent=1))
