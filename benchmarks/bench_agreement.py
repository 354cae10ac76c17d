"""Per problem of a `forge bench` dir: each candidate's search verdict against its
confirmation (the same kernel judged again in a fresh judgement), with the verifier's
re-taken and kept-disturbed timing batches (docs/judge.md), as JSON on stdout:

    python3 benchmarks/bench_agreement.py BENCH_DIR > agreement.json
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
            "status": v.get("status"), "speedup": v.get("speedup"), "retaken": retaken, "disturbed_kept": kept}
    for row in rows.values():
        a, c = (row.get("attempt") or {}).get("speedup"), (row.get("confirmation") or {}).get("speedup")
        row["diff_pct"] = round((c / a - 1) * 100, 3) if a and c else None
    return list(rows.values())


def main(bench: Path) -> dict:
    out = {}
    for ledger in sorted(bench.glob("problems/*/run/ledger.jsonl")):
        out[ledger.parent.parent.name] = problem(ledger)
    diffs = [abs(r["diff_pct"]) for rows in out.values() for r in rows if r["diff_pct"] is not None]
    return {"bench": str(bench), "pairs": len(diffs),
            "within_0.5pct": sum(d <= 0.5 for d in diffs), "within_1pct": sum(d <= 1.0 for d in diffs),
            "max_abs_diff_pct": max(diffs) if diffs else None, "problems": out}


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1])), indent=1))
