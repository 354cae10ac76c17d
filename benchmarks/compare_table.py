"""The `forge compare` summary table (markdown) from compare JSON files.

    python benchmarks/compare_table.py benchmarks/results/compare_cpu_2026-12-04/*.json \
        --readme kernels/README.md

One row per task and workload: the kernel's figure (device ms on a GPU, per-call ms under
the CPU interpreter), each peer as the peer's time / the kernel's ("3.1x": the kernel is 3.1
times faster; peers that did not match the reference say so instead), and the kernel's share
of the size-matched copy's (or, for a reduction, the read-only pass's) speed. With --readme
the table replaces what lies between the COMPARE-TABLE markers (or --marker NAME's) in that file; without it the
table goes to stdout. Every number comes from the JSON files named; none is typed in.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from forgekernel.compare.record import CompareRecord, Row, load  # noqa: E402

MARKER = "COMPARE-TABLE"


def _peer(row: Row) -> str:
    if row.status == "ok":
        return f"{row.vs_kernel:.3g}x" if row.vs_kernel is not None else "-"
    return row.status


def _peers(rows: list[Row]) -> str:
    return "; ".join(f"{r.name} {_peer(r)}" for r in rows if r.kind == "call") or "-"


def table(records: list[CompareRecord]) -> str:
    head = ("| task | workload | kernel ms | eager | compile | library peers | kernel of ceiling "
            "| timing |\n|---|---|---|---|---|---|---|---|")
    lines = [head]
    for rec in sorted(records, key=lambda r: r.task):
        for wl in rec.workloads:
            by = {r.name: r for r in wl.rows}
            kernel = next((r for r in wl.rows if r.kind == "kernel"), None)
            if kernel is None:
                lines.append(f"| {rec.task} | {wl.label()} | - | - | - | - | - | {wl.note or 'no rows'} |")
                continue
            ms = getattr(kernel, rec.basis)
            fig = f"{ms:.4g}" if kernel.status == "ok" and ms is not None else kernel.status
            cells = [rec.task, wl.label(), fig,
                     *(_peer(by[k]) if k in by else "skipped" for k in ("eager", "compile")),
                     _peers(wl.rows),
                     f"{100 * kernel.of_ceiling:.3g}%" if kernel.of_ceiling is not None else "-",
                     f"{rec.label}, {rec.device}"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sources(records: list[CompareRecord], paths: list[Path]) -> str:
    out = []
    for rec, path in sorted(zip(records, paths, strict=True), key=lambda p: p[0].task):
        out.append(f"- `{path}`: {rec.task} on {rec.device} [{rec.label}], {rec.date}, commit "
                   f"`{rec.commit[:12]}`, " + ", ".join(f"{k} {v}" for k, v in rec.versions.items()))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="+", type=Path, help="compare JSON files (one per task)")
    ap.add_argument("--readme", type=Path, help="replace the table between the markers in this file")
    ap.add_argument("--marker", default=MARKER, help="the markers' name (several tables in one file)")
    args = ap.parse_args(argv)
    start, end = f"<!-- {args.marker}:START -->", f"<!-- {args.marker}:END -->"
    paths = [p for p in args.json if "workloads" in json.loads(p.read_text())]
    for p in sorted(set(args.json) - set(paths)):  # compare_summary.json, say
        sys.stderr.write(f"{p}: not a compare record, left out\n")
    records = [load(p) for p in paths]
    block = f"{start}\n{table(records)}\n\nFrom:\n\n{sources(records, paths)}\n{end}"
    if args.readme is None:
        sys.stdout.write(block + "\n")
        return 0
    text = args.readme.read_text()
    if start not in text or end not in text:
        sys.stderr.write(f"{args.readme}: no {start} ... {end} markers\n")
        return 2
    head, rest = text.split(start, 1)
    args.readme.write_text(head + block + rest.split(end, 1)[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
