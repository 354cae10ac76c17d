"""Wall milliseconds a sandbox adds to one process spawn, per mechanism and PID mode.

    python benchmarks/sandbox_overhead.py [--runs 30] [--out FILE] [--gpu]

Each sample is one ``subprocess.run`` of ``python -I -S -c pass``, plain and sandboxed
(the same environment; the default readonly set of the judge: this Python's paths). The
added time is the difference of the medians. ``--gpu`` also binds the NVIDIA device nodes
and driver directories, as a GPU job would.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _median_ms(argv: list[str], env: dict, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True, capture_output=True, timeout=60)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def measure(runs: int, gpu: bool) -> dict:
    from forgekernel import sandbox as sb
    from forgekernel.sandbox.detect import MECHANISMS

    argv = [sys.executable, "-I", "-S", "-c", "pass"]
    rows: dict = {}
    for name in MECHANISMS:
        det = sb.probe(mechanisms=(name,))
        if det.mechanism is None:
            rows[name] = {"available": False, "reason": det.reason}
            continue
        rows[name] = {"available": True, "version": det.mechanism.version}
        for pidns in (True, False):
            with tempfile.TemporaryDirectory() as tmp:
                spec = sb.SandboxSpec(scratch=Path(tmp), readonly=sb.python_paths(),
                                      env=sb.filter_env(os.environ), pid_namespace=pidns, gpu=gpu)
                launch = sb.command(det.mechanism, spec, argv)
                plain = _median_ms(argv, launch.env, runs)
                boxed = _median_ms(list(launch.argv), launch.env, runs)
            rows[name]["pidns" if pidns else "no-pidns"] = {
                "plain_ms": round(plain, 1), "sandboxed_ms": round(boxed, 1),
                "added_ms": round(boxed - plain, 1)}
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--gpu", action="store_true")
    args = ap.parse_args()
    result = {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
              "kernel": os.uname().release, "root": os.geteuid() == 0, "runs": args.runs,
              "gpu_binds": args.gpu, "mechanisms": measure(args.runs, args.gpu)}
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
