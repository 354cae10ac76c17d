"""Worker process for probes: ``python -m forgekernel.kb.worker`` (started by a Runner).

Payload ``{"probes": [names]}`` runs those probes on this process's GPU and answers
``{"env": ProbeEnv, "results": {name: ProbeResult | {"error": ...}}}``; a probe that raises
is recorded as an error (with the traceback tail) and the others still run. Without a CUDA
GPU (the ``cpu`` delivery) it answers ``{"error": ...}`` and runs nothing: probes time
hardware. Payload ``{"check": [modules]}`` instead runs each module's kernels once on tiny
inputs on whatever device there is (the Triton interpreter on the CPU) and answers
``{"checks": {module: "" | error}}``.
"""

from __future__ import annotations

import traceback

from forgekernel.delivery.channel import receive


def _error(exc: BaseException) -> dict:
    return {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-4000:]}


def main() -> None:
    env = receive()
    if "check" in env.payload:
        from forgekernel.kb.selfcheck import run_checks

        env.reply({"checks": run_checks(list(env.payload["check"]))})
        return
    import torch

    from forgekernel.kb.envinfo import probe_env
    from forgekernel.kb.probes import PROBES, ProbeContext, run_probe

    if env.delivery == "cpu" or not torch.cuda.is_available():
        env.reply({"error": f"no CUDA GPU in this worker (delivery {env.delivery}); "
                            "probes time hardware and cannot run here"})
        return
    ctx = ProbeContext(device="cuda")
    results: dict[str, dict] = {}
    for name in env.payload.get("probes", []):
        if name not in PROBES:
            results[name] = {"error": f"unknown probe {name!r}"}
            continue
        try:
            results[name] = run_probe(name, ctx).model_dump(mode="json")
        except Exception as exc:  # recorded as this probe's error; the other probes still run
            results[name] = _error(exc)
    env.reply({"env": probe_env().model_dump(mode="json"), "results": results})


if __name__ == "__main__":
    main()
