"""Profile worker: ``python -m forgekernel.profile.worker``, run through a delivery Runner.

Payload: ``mode`` ('profile' or 'static'), ``task`` (dir), ``kernel`` (candidate path or
null), ``workloads`` (list of axis dicts), ``ncu`` ('auto'|'on'|'off'), ``seed``.
Reply: ``{"profiles": [...], "device": ..., "versions": {...}}`` for 'profile',
``{"static": [report per workload], ...}`` for 'static', or ``{"error": "one line"}``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from forgekernel.delivery import channel


def main() -> None:
    env = channel.receive()
    try:
        payload = env.payload
        if payload.get("mode") == "static":
            result = _static(payload, env.device)
        else:
            result = _profile(payload, env.timing_label, env.device)
    except Exception as exc:  # the one answer says what went wrong; the parent raises it
        import traceback

        from forgekernel.errors import ForgeError

        traceback.print_exc()  # to the worker's stderr, which the runner keeps a tail of

        kind = "" if isinstance(exc, ForgeError) else f"{type(exc).__name__}: "
        result = {"error": f"{kind}{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"}
    env.reply(result)


def _workloads(payload: dict[str, Any]) -> list[Any]:
    from forgekernel.records import Workload

    return [Workload(axes=dict(w)) for w in payload["workloads"]]


def _static(payload: dict[str, Any], device: Any) -> dict[str, Any]:
    from forgekernel.profile.static import static_report
    from forgekernel.task import load_task

    device("X")  # imports done; the kernel's code is next (the job is gated: Job.gated)

    task = load_task(payload["task"], check_reference=False)
    inside = bool(payload.get("sandboxed"))
    reports = [static_report(task, Path(payload["kernel"]), workloads=(wl,), inside=inside).model_dump()
               for wl in _workloads(payload)]
    return {"static": reports}


def versions() -> dict[str, str]:
    import torch

    out = {"torch": torch.__version__}
    try:
        import triton

        out["triton"] = triton.__version__
    except ImportError:
        out["triton"] = "absent"
    return out


def _profile(payload: dict[str, Any], timing_label: str, device_fn: Any) -> dict[str, Any]:
    import torch

    from forgekernel.profile import ncu as ncu_mod
    from forgekernel.profile.ceilings import resolve_ceilings
    from forgekernel.profile.measure import measure_launch_us, profile_workload
    from forgekernel.profile.subject import load_subject, make_inputs, subject_at
    from forgekernel.task import load_task

    device_fn("X")  # imports done: the GPU alone from here (everything below is timed or counted)

    task = load_task(payload["task"], check_reference=False)
    ref, subject = load_subject(task, payload.get("kernel"))
    on_gpu = torch.cuda.is_available()
    device = "cuda" if on_gpu else "cpu"
    name = torch.cuda.get_device_name(0) if on_gpu else "cpu"
    ceilings = resolve_ceilings(task.arch, name if on_gpu else None, on_gpu)
    launch_us = None
    if on_gpu and (ceilings is None or ceilings.launch_us is None):
        launch_us = measure_launch_us()
    ncu_path = ncu_mod.check_mode(payload.get("ncu", "auto")) if on_gpu else None
    profiles = []
    for wl in _workloads(payload):
        inputs = make_inputs(task, ref, wl.axes, seed=int(payload.get("seed", 0)), device=device)
        prof = profile_workload(task, ref, subject_at(subject, wl.axes), wl, inputs, device=device,
                                timing_label=timing_label, ceilings=ceilings, launch_us=launch_us)
        del inputs
        if ncu_path is not None:
            prof = _with_ncu(prof, ncu_path, payload, wl, task.judge.timeout_s)
        elif on_gpu:
            why = "off" if payload.get("ncu") == "off" else "not on PATH"
            prof = prof.model_copy(update={"notes": (*prof.notes, f"ncu {why}: no hardware counters")})
        where = {"device": name, "versions": ", ".join(f"{k} {v}" for k, v in versions().items())}
        prof = prof.model_copy(update={"sources": {**prof.sources, **where}})
        profiles.append(prof.model_dump())
    if not on_gpu and payload.get("ncu") == "on":
        raise ncu_mod.NcuError("--ncu on needs a GPU delivery; this worker has no CUDA device")
    info = {"device": name, "versions": versions(), "launch_us": launch_us}
    return {"profiles": profiles, **info}


def _with_ncu(prof: Any, ncu_path: str, payload: dict[str, Any], wl: Any, timeout_s: float) -> Any:
    """Run ncu on one workload and merge its metrics (measured ones override nothing else)."""
    from forgekernel.config import child_env
    from forgekernel.profile import ncu as ncu_mod

    keep = payload.get("ncu_dir")
    tmp = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="fk-ncu-"))
    tmp.mkdir(parents=True, exist_ok=True)
    label = "_".join(f"{k}{v}" for k, v in wl.axes.items())
    spec = tmp / f"spec_{label}.json"
    spec.write_text(json.dumps({"task": payload["task"], "kernel": payload.get("kernel"),
                                "axes": wl.axes, "seed": payload.get("seed", 0)}))
    regex = _kernel_regex(prof) if payload.get("kernel") else None
    env = child_env()
    res = ncu_mod.run_ncu(ncu_path, spec, tmp / f"ncu_{label}.csv", kernel_regex=regex,
                          timeout_s=timeout_s, env=env, launches=prof.metrics.get("launches"))
    metrics = {**prof.metrics, **res.metrics}
    sources = dict(prof.sources)
    if res.metrics:
        sources["ncu"] = (f"Nsight Compute raw metrics, {len(res.kernels)} kernel(s)"
                          + (f" matching /{regex}/" if regex else " in NVTX range 'forge'"))
    return prof.model_copy(update={"metrics": metrics, "sources": sources,
                                   "notes": (*prof.notes, *res.notes)})


def _kernel_regex(prof: Any) -> str | None:
    import re

    names = [k.name for k in prof.kernels]
    if not names or len(names) > 16:
        return None  # the NVTX range alone restricts the run
    return "|".join(re.escape(n) for n in names)


if __name__ == "__main__":
    main()
