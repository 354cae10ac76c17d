"""The process Nsight Compute profiles: ``python -m forgekernel.profile.ncu_target SPEC.json``.

SPEC holds ``task`` (task dir), ``kernel`` (candidate path or null), ``axes`` and ``seed``.
The subject is warmed up (Triton compiles, caches fill) outside any NVTX range, then called
once inside the range ``forge`` that ncu is told to include.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    import torch

    from forgekernel.profile.subject import load_subject, make_inputs, subject_at
    from forgekernel.task import load_task

    spec = json.loads(Path(argv[0]).read_text())
    task = load_task(spec["task"], check_reference=False)
    ref, subject = load_subject(task, spec.get("kernel"))
    fn = subject_at(subject, spec["axes"])
    inputs = make_inputs(task, ref, spec["axes"], seed=int(spec.get("seed", 0)), device="cuda")
    for _ in range(2):
        fn(*inputs)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("forge")
    fn(*inputs)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
