"""The smoke workloads `forge new` would give KernelBench-format problems, one JSON line per
file: whether a constant was promoted to a smoke-scaled axis, the smoke workloads and the
converter's note. Run it with two versions of forge (PYTHONPATH=<other checkout>/src) to
compare what a change to the smoke search does.

    python benchmarks/smoke_workloads.py OUT.jsonl [FILE.py ...]   # default: .kb/level1, .kb/level2, benchmarks/ops
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from forgekernel import kbaxes, kernelbench


def main() -> None:
    out, only = Path(sys.argv[1]), [Path(a) for a in sys.argv[2:]]
    files = only or [*sorted(Path(".kb/level1").glob("*.py")), *sorted(Path(".kb/level2").glob("*.py")),
                     *sorted(Path("benchmarks/ops").glob("*.py"))]
    promoted = {"any": False}
    original = kbaxes.promote_for_smoke

    def watching(look, axes):
        made = original(look, axes)
        promoted["any"] = promoted["any"] or bool(made)
        return made

    kbaxes.promote_for_smoke = watching  # read by kernelbench through the module
    with out.open("w") as fh:
        for f in files:
            promoted["any"] = False
            try:
                p = kernelbench.inspect_file(f)
                row = {"file": str(f), "promoted": promoted["any"], "smoke": p.smoke, "note": p.smoke_note}
            except Exception as exc:  # noqa: BLE001 - one line per problem that does not convert
                row = {"file": str(f), "error": str(exc)[:200]}
            fh.write(json.dumps(row) + "\n")
            fh.flush()


if __name__ == "__main__":
    main()
