"""Re-derive a bench's torch.compile figures from the `forge compare` JSON it kept.

    python benchmarks/bench_recompare.py BENCH_DIR [--compare-dir DIR]

For each result of BENCH_DIR/results.jsonl whose problem has a compare JSON
(BENCH_DIR/problems/<slug>/compare.json, or DIR/<slug>.json for a results folder that kept
them apart), recompute ``speedup_compile`` and ``compile_note`` with the bench's own
``compile_ratio`` over the workloads the judge timed, rewrite results.jsonl and rebuild the
summary. For results recorded before the bench compared only those workloads.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from forgekernel import bench  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("bench_dir", type=Path)
    ap.add_argument("--compare-dir", type=Path, default=None)
    args = ap.parse_args()
    path = args.bench_dir / bench.RESULTS
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for row in rows:
        where = (args.compare_dir / f"{row['slug']}.json" if args.compare_dir
                 else args.bench_dir / "problems" / row["slug"] / "compare.json")
        if not where.is_file():
            continue
        for key in ("speedup_compile", "compile_note", "compile_timing"):
            row.pop(key, None)
        row.update(bench.compile_ratio(json.loads(where.read_text()), bench.timed_axes(row)))
        print(f"{row['slug']}: vs torch.compile {row.get('speedup_compile')}")
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bench.summary(args.bench_dir)


if __name__ == "__main__":
    main()
