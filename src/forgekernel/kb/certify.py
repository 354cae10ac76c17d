"""Running probes through a Runner and writing certification records into the entries.

``run_probes`` starts one worker process per probe module (so a crash in one cannot take
the others' results with it) and returns the raw run: environment plus each probe's result
or error. ``apply_run`` checks each entry's claim against that run and writes the record
into the entry's file; it works the same on a run just made or on one saved as JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forgekernel.delivery import Job, Runner
from forgekernel.kb.claims import evaluate, state
from forgekernel.kb.entry import KBEntry
from forgekernel.kb.probes import ProbeEnv, ProbeResult, groups
from forgekernel.kb.store import KBError, write_certification

WORKER = "forgekernel.kb.worker"


def run_probes(names: list[str], runner: Runner, timeout_s: float = 150.0) -> dict[str, Any]:
    """Run the probes; the raw run {device, driver, versions, date, delivery, results, jobs}."""
    env: dict[str, Any] | None = None
    results: dict[str, Any] = {}
    jobs = []
    for module, group in groups(names).items():
        res = runner.run(Job(module=WORKER, payload={"probes": group}, timeout_s=timeout_s))
        jobs.append({"module": module, "probes": group, "wall_s": round(res.wall_s, 2)})
        if not res.ok:
            why = f"worker for {module} probes: {res.describe_failure()}"
            results.update({n: {"error": why, "stderr_tail": res.stderr_tail[-2000:]} for n in group})
            continue
        if "error" in res.result:
            raise KBError(res.result["error"])
        env = env or res.result["env"]
        results.update(res.result["results"])
    if env is None:
        raise KBError("no probe worker answered: " + "; ".join(r["error"] for r in results.values()))
    return {**env, "delivery": runner.name, "results": results, "jobs": jobs}


@dataclass(frozen=True)
class Outcome:
    """What applying a run did to one entry: its new state, or why it was left alone."""

    entry: KBEntry
    state: str
    error: str = ""


def apply_run(run: dict[str, Any], targets: list[tuple[KBEntry, Path]], *,
              write: bool = True) -> list[Outcome]:
    """Check each target's claim against ``run`` and (when ``write``) record it in its file.

    Entries whose probe is absent from the run are skipped; a probe that errored leaves its
    entry's record unchanged (an error is not a measurement) and is reported.
    """
    try:
        env = ProbeEnv(device=run["device"], driver=run.get("driver", ""),
                       versions=run.get("versions", {}), date=run["date"])
    except KeyError as exc:
        raise KBError(f"probe run has no {exc.args[0]!r}; is it a `forge kb probe` result?") from None
    out = []
    for entry, path in targets:
        raw = run.get("results", {}).get(entry.probe)
        if raw is None:
            continue
        if "error" in raw:
            out.append(Outcome(entry, state(entry), error=raw["error"]))
            continue
        cert = evaluate(entry, ProbeResult.model_validate(raw), env)
        new = write_certification(path, cert) if write else entry.model_copy(update={"certification": cert})
        out.append(Outcome(new, state(new)))
    return out
