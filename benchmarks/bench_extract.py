"""Copy what a `forge bench` dir (unpacked from gpu_kb_bench.sh's bench.tgz) tells into a
results dir: its summary files, each problem's `forge run` log (`logs/`) and the verdict of
every candidate it judged (`verdicts/<problem>.json`, a list in ledger order).

    python3 benchmarks/bench_extract.py BENCH_DIR OUT_DIR
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path


def extract(bench: Path, out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    for name in ("summary.json", "summary.md", "summary.png", "results.jsonl"):
        if (bench / name).is_file():
            shutil.copy(bench / name, out / name)
    count = 0
    for problem in sorted((bench / "problems").iterdir()):
        if (problem / "run.log").is_file():
            (out / "logs").mkdir(exist_ok=True)
            shutil.copy(problem / "run.log", out / "logs" / f"{problem.name}.log")
        ledger = problem / "run" / "ledger.jsonl"
        if not ledger.is_file():
            continue
        verdicts = [row["verdict"] for row in map(json.loads, ledger.read_text().splitlines())
                    if isinstance(row.get("verdict"), dict)]
        if verdicts:
            (out / "verdicts").mkdir(exist_ok=True)
            (out / "verdicts" / f"{problem.name}.json").write_text(json.dumps(verdicts, indent=1) + "\n")
            count += len(verdicts)
    return count


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: bench_extract.py BENCH_DIR OUT_DIR")
    print(f"{extract(Path(sys.argv[1]), Path(sys.argv[2]))} verdicts")
