"""Certify the sm90 knowledge base on this machine's GPU, or tabulate a saved run.

On the GPU machine (after `source scripts/gpu_env.sh`)::

    python3 benchmarks/gpu_kb.py run --out DIR --commit SHA

runs every sm90 probe through the local delivery (as `forge kb probe` does), writes the raw
run to DIR/kb_sm90_<date>.json and prints the claim checks plus the key measurements. Back on a
development machine, `forge kb probe --from-json benchmarks/results/kb_sm90_<date>.json`
records the run in hw_kb/sm90, and::

    python3 benchmarks/gpu_kb.py table benchmarks/results/kb_sm90_<date>.json

prints the markdown table of hw_kb/sm90/README.md, every number taken from that file.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def key_details(probe: str, r: dict) -> str:
    """The few numbers behind a probe's value, as one line."""
    d = r.get("details", {})
    if "error" in r:
        return f"error: {r['error']}"
    if probe in ("copy_large", "copy_small", "l2_reuse"):
        return "TB/s by MiB: " + ", ".join(f"{k}: {_fmt(v)}" for k, v in d["by_mib"].items())
    if probe.startswith("matmul"):
        return ", ".join(f"{n}^3: {_fmt(x['tflops'])} TFLOP/s" for n, x in d["by_n"].items())
    if probe.startswith("launch"):
        extra = f"; triton launch host cost {_fmt(d['triton_host_us'])} us" if "triton_host_us" in d else ""
        return f"median {_fmt(d['median_us'])} us, IQR {_fmt(d['spread_us'])} us per kernel{extra}"
    if probe == "load_width":
        return "; ".join(f"{k}: {_fmt(d[k]['tbs'])} TB/s, PTX load bytes {d[k]['ptx_load_bytes']}"
                         for k in ("vector16", "scalar"))
    if probe == "tma_loads":
        return "; ".join(f"{k}: {_fmt(v['tbs']) + ' TB/s' if v.get('supported') else v.get('reason')}"
                         for k, v in d.items() if isinstance(v, dict))
    if probe in ("rows_multirow", "rows_num_warps"):
        return "; ".join(
            f"N={n}: " + ", ".join(f"{k} {_fmt(v['tbs'])}" for k, v in x.items() if isinstance(v, dict))
            + f" TB/s (best {x['best']}, x{_fmt(x['speedup'])})" for n, x in d["by_n"].items())
    if probe == "rows_persistent":
        return ", ".join(f"{k}: {_fmt(v['tbs'])} TB/s" for k, v in d.items()
                         if isinstance(v, dict)) + f"; best {d['best']}"
    return ""


def table(run: dict) -> str:
    """Markdown table: entry, claim, measured, state and the numbers behind it."""
    from forgekernel import kb
    from forgekernel.kb.claims import evaluate, state
    from forgekernel.kb.probes import ProbeEnv, ProbeResult

    env = ProbeEnv(device=run["device"], driver=run.get("driver", ""),
                   versions=run.get("versions", {}), date=run["date"])
    lines = ["| entry | claim | measured | result | behind it |", "|---|---|---|---|---|"]
    for e in kb.load("sm90"):
        r = run["results"].get(e.probe)
        if r is None:
            continue
        if "error" in r:
            lines.append(f"| {e.id} | {e.claim} | n/a | ERROR | {key_details(e.probe, r)} |")
            continue
        cert = evaluate(e, ProbeResult.model_validate(r), env)
        st = state(e.model_copy(update={"certification": cert}))
        lines.append(f"| {e.id} | {e.claim} | {_fmt(cert.measured)} {e.unit} | {st} | "
                     f"{key_details(e.probe, r)} |")
    return "\n".join(lines)


def run_on_gpu(out_dir: Path, commit: str) -> int:
    """Run every sm90 probe through the local delivery (no CLI: fewer moving parts there)."""
    from forgekernel.delivery import make_runner
    from forgekernel.kb.certify import run_probes
    from forgekernel.kb.store import load_with_paths

    targets = load_with_paths("sm90")
    run = run_probes(sorted({e.probe for e, _ in targets}), make_runner("local"))
    run["commit"] = commit
    out_dir.mkdir(parents=True, exist_ok=True)
    final = out_dir / f"kb_sm90_{run['date'][:10]}.json"
    final.write_text(json.dumps(run, indent=1) + "\n")
    print(f"raw run: {final}; jobs: {run['jobs']}")
    print(f"device {run['device']}, driver {run.get('driver')}, versions {run.get('versions')}")
    for probe, r in run["results"].items():
        print(f"{probe:16} {_fmt(r.get('value'))} {r.get('unit', '')}  {key_details(probe, r)}")
    print(table(run))
    return 1 if any("error" in r for r in run["results"].values()) else 0


def main_() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--commit", default="unknown")
    t = sub.add_parser("table")
    t.add_argument("run_json", type=Path)
    args = ap.parse_args()
    if args.cmd == "run":
        return run_on_gpu(args.out, args.commit)
    print(table(json.loads(args.run_json.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main_())
