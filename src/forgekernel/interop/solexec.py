"""Write a run's best kernel as a SOL-ExecBench ``solution.json``.

SOL-ExecBench reads FlashInfer-Trace Solutions with its own build spec: ``languages`` (a
list) instead of ``language``, ``target_hardware`` from its own list (``B200`` or
``LOCAL``: the GPU it runs on), optional ``compile_options`` for C++. The sources and entry
point are those of the FlashInfer-Trace Solution (:mod:`.flashinfer_export`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from forgekernel.interop import schema
from forgekernel.interop.flashinfer_export import definition_of, solution_of
from forgekernel.interop.flashinfer_import import InteropError

if TYPE_CHECKING:
    from forgekernel.interop.best_kernel import Best

HARDWARE = {"sm100": ["B200", "LOCAL"]}
"""forge arch -> SOL-ExecBench targets (anything but Blackwell runs as LOCAL)."""


def solution(best: Best, *, dps: bool = True) -> dict[str, Any]:
    definition = definition_of(best.task, best.task_dir)
    fi = solution_of(best, definition, dps)
    spec = fi["spec"]
    out = {**fi, "spec": {
        "languages": ["triton"] if spec["language"] == "triton" else ["pytorch"],
        "target_hardware": HARDWARE.get(best.task.arch, ["LOCAL"]),
        "entry_point": spec["entry_point"], "dependencies": spec["dependencies"],
        "destination_passing_style": dps, "binding": None}}
    found = schema.problems("solexec_solution", out)
    if found:
        raise InteropError(f"the exported SOL-ExecBench solution does not validate: {found[0]}")
    return out


def export(best: Best, out: Path, *, dps: bool = True) -> list[Path]:
    path = out / "solution.json"
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(solution(best, dps=dps), indent=2) + "\n")
    return [path]
