"""Markdown tables from benchmarks/results/profile_*.json (what docs/profile.md quotes).

    python benchmarks/summarize_profile.py
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def short(name: str) -> str:
    """A readable name for a demangled CUDA kernel: its template plus the operation it runs."""
    head = name.split("<", 1)[0].replace("void ", "").split("::")[-1]
    binary = re.search(r"BinaryFunctor<([\w:]+),.*?binary_internal::(\w+)", name)
    if binary:
        return f"{head}({binary.group(2)}, {binary.group(1).split('::')[-1]})"
    m = re.search(r"(\w+_kernel_cuda|\w+_kernel_impl|\w+Ops|\w*Functor\w*)", name)
    return f"{head}({m.group(1)})" if m and m.group(1) != head else head


def load(name: str) -> dict:
    return json.loads((RESULTS / f"profile_{name}.json").read_text())


def reference_table() -> list[str]:
    rows = ["| task | workload | median ms | launches | TB/s (minimal bytes) | %SOL | bound |",
            "|---|---|---|---|---|---|---|"]
    for path in sorted(RESULTS.glob("profile_ref_*.json")):
        doc = json.loads(path.read_text())
        for p in doc["profiles"]:
            m = p["metrics"]
            axes = " x ".join(str(v) for v in p["axes"].values())
            rows.append(f"| {doc['task']} | {axes} | {m['median_ms']:.4f} | {m['launches']} | "
                        f"{m['achieved_tbs']:.2f} | {m['sol_pct']:.1f} | {m['bound']} |")
    return rows


def kernels_table(name: str, index: int = 0) -> list[str]:
    p = load(name)["profiles"][index]
    rows = [f"{' x '.join(f'{k}={v}' for k, v in p['axes'].items())}: {p['metrics']['launches']} launches, "
            f"{p['metrics']['median_ms']:.4f} ms", "", "| kernel | count | ms | share |",
            "|---|---|---|---|"]
    rows += [f"| {short(k['name'])} | {k['count']} | {k['time_ms']:.4f} | {100 * k['share']:.1f}% |"
             for k in p["kernels"]]
    return rows


NCU_COLS = ("median_ms", "sol_pct", "ncu_ms", "dram_pct", "dram_tbs", "dram_bytes", "l2_hit_pct",
            "occupancy_pct", "occupancy_theoretical_pct", "regs", "smem_bytes", "local_st_insts",
            "tensor_pct", "stall_top")


def ncu_table(names: list[str]) -> list[str]:
    rows = ["| subject | workload | " + " | ".join(NCU_COLS) + " |",
            "|---|---|" + "---|" * len(NCU_COLS)]
    for name in names:
        doc = load(name)
        for p in doc["profiles"]:
            m = p["metrics"]
            cells = [f"{m[c]:.4g}" if isinstance(m.get(c), float) else str(m.get(c, "-")) for c in NCU_COLS]
            axes = " x ".join(str(v) for v in p["axes"].values())
            rows.append(f"| {name} | {axes} | " + " | ".join(cells) + " |")
    return rows


def main() -> int:
    doc = load("ref_rmsnorm")
    print(f"device {doc['device']}, {doc['date']}, {doc['versions']}, commit {doc['commit'][:8]}; "
          f"ceilings: {doc['profiles'][0]['sources']['ceilings']}\n")
    print("\n".join(reference_table()), "\n")
    print("\n".join(kernels_table("ref_rmsnorm", 1)), "\n")
    print("\n".join(ncu_table(["rmsnorm_triton", "rmsnorm_ref_ncu", "matmul_triton"])))
    for name in ("rmsnorm_ref_ncu", "rmsnorm_triton"):
        for p in load(name)["profiles"]:
            m = p["metrics"]
            axes = " x ".join(str(v) for v in p["axes"].values())
            print(f"\n{name} {axes}: ncu dram_bytes / minimal bytes = {m['dram_bytes'] / m['bytes']:.2f}",
                  end="")
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
