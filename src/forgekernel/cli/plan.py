"""What a run would do, without doing it: the plan behind `forge new --dry-run`.

Every field is computed from the task, the settings and the measured ceilings; nothing is
written anywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from forgekernel.config import Settings
from forgekernel.records import TaskSpec
from forgekernel.task import check_reference_module


def workload_costs(task: TaskSpec, module: Any) -> list[dict[str, Any]]:
    """Per workload: minimal bytes, flops, floor time and bound against the ceilings."""
    from forgekernel.profile import roofline

    ceilings, source = ceilings_for_task(task)
    dtype = roofline.compute_dtype(task)
    rows = []
    for w in task.workloads:
        cost = roofline.workload_cost(task, module, w)
        nbytes = roofline.cost_bytes(task, w, cost)
        f = roofline.floor(nbytes, cost.flops, ceilings, dtype)
        row = {"axes": dict(w.axes), "smoke": w.smoke, "bytes": nbytes, "param_bytes": cost.param_bytes,
               "flops": cost.flops, "flops_source": cost.flops_source,
               "outputs": [{"shape": list(s), "dtype": d} for s, d in cost.outputs or []],
               "floor_ms": f.floor_ms, "bound": f.bound, "peak": dtype, "peak_tflops": f.peak_tflops,
               "peak_source": f.peak_source, "bandwidth_tbs": round(f.bandwidth_tbs, 3), "ceilings": source}
        if cost.note:
            row["note"] = cost.note
        rows.append(row)
    return rows


SMOKE_LIMIT_BYTES = 64 * 1024 * 1024
"""Tensor bytes above which a smoke workload is too large for the Triton CPU interpreter."""


def human_bytes(n: float) -> str:
    """1536 -> '1.5 KiB'."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def smoke_warnings(rows: list[dict[str, Any]]) -> list[str]:
    """One line per smoke workload whose tensors are too large for the CPU interpreter."""
    out = []
    for w in rows:
        if w["smoke"] and w["bytes"] > SMOKE_LIMIT_BYTES:
            axes = " ".join(f"{k}={v}" for k, v in w["axes"].items())
            out.append(f"smoke workload {axes} moves {human_bytes(w['bytes'])} of tensors: the CPU "
                       f"interpreter runs every smoke workload (`forge check` too) and will not "
                       f"finish; keep smoke workloads under {human_bytes(SMOKE_LIMIT_BYTES)}")
    return out


def ceilings_for_task(task: TaskSpec):
    """Certified knowledge-base ceilings for the task's arch when there are any, else the H200
    baseline (profile.roofline.H200_SHARED)."""
    from forgekernel.profile import roofline

    arch = "sm90" if task.arch == "any" else task.arch
    try:
        from forgekernel.kb import ceilings_for
    except ImportError:
        ceilings_for = None
    if ceilings_for is not None:
        found = ceilings_for(arch, "NVIDIA H200")
        if found is not None:
            return found, found.source or f"hw_kb/{arch} (certified)"
    return roofline.H200_SHARED, roofline.H200_SHARED.source


def agent_choice(settings: Settings) -> dict[str, Any]:
    """Which coder and architect a run would use, why, and what they are missing."""
    coder = settings.agent or "builtin"
    why = (f"{settings.sources.get('agent')}: {coder}" if settings.agent
           else "no --agent / FK_AGENT given: the built-in search agent (no LLM)")
    architect = settings.architect or coder
    return {"coder": coder, "coder_why": why, "architect": architect,
            "model": settings.model, "missing": agent_missing(coder, settings)
            + ([] if architect == coder else agent_missing(architect, settings))}


def agent_missing(name: str, settings: Settings) -> list[str]:
    """What backend ``name`` needs that this machine lacks (empty when it is usable)."""
    import shutil

    from forgekernel.agents import BACKENDS

    if name not in BACKENDS:
        return [f"unknown agent '{name}' (known: {', '.join(BACKENDS)})"]
    if name == "claude-code":
        if not (settings.claude_bin or shutil.which("claude") or _bundled_claude()):
            return ["the `claude` CLI (pip install 'forgekernel[llm]', or set FK_CLAUDE_BIN)"]
    if name == "anthropic" and not settings.secrets_present.get("ANTHROPIC_API_KEY"):
        return ["ANTHROPIC_API_KEY (not set)"]
    if name == "openai" and not settings.secrets_present.get("OPENAI_API_KEY") \
            and not settings.openai_base_url:
        return ["OPENAI_API_KEY (not set) or OPENAI_BASE_URL for a local server"]
    return []


def _bundled_claude() -> str | None:
    """The claude CLI bundled in the claude-agent-sdk wheel (found, not imported: importing
    the SDK takes seconds)."""
    import importlib.util

    spec = importlib.util.find_spec("claude_agent_sdk")
    for root in (spec.submodule_search_locations or []) if spec else []:
        bundled = Path(root) / "_bundled" / "claude"
        if bundled.is_file():
            return str(bundled)
    return None


def curriculum_outline(task: TaskSpec, coder: str, settings: Settings,
                       delivery: str = "cpu") -> dict[str, Any]:
    """The built-in architect's first plan when it covers the task, else a generic outline."""
    if coder == "builtin":
        try:
            from forgekernel.agents import backend_module, builtin_generated
            from forgekernel.agents.base import AgentError, ArchitectContext

            ref = (Path(task.root) / "reference.py").read_text()
            match = builtin_generated.preview(task, ref)
            if match.op == builtin_generated.GENERATED:
                return {"source": "built-in architect (preview)", "traced": match.graph,
                        "milestones": [
                            {"id": "M0", "kind": "architecture", "title": "a candidate generated from "
                             "the reference through TorchInductor's Triton code generation (lowered "
                             "when the run starts)", "rows": 1, "gate": []},
                            {"id": "M1..", "kind": "tuning", "title": "the launch knobs of the "
                             "generated kernels", "rows": None, "gate": []}]}
            arch = backend_module("builtin").make_architect(settings)
            timing = "cpu-interpret" if delivery == "cpu" else "device"
            extra = {"delivery": delivery, "timing": timing}
            cur = arch.plan(ArchitectContext(task=task, reference_source=ref, extra=extra)).curriculum
            return {"source": "built-in architect", "milestones": [
                {"id": m.id, "kind": m.kind, "title": m.title, "rows": len(m.rows),
                 "gate": [x for x in (m.gate.performance, *m.gate.mechanism) if x]}
                for m in cur.milestones]}
        except (ImportError, AttributeError):
            pass
        except AgentError as exc:
            return {"source": "none", "error": str(exc), "milestones": []}
    return {"source": "default outline (the architect writes the real one at run start)",
            "milestones": [
                {"id": "M0", "kind": "architecture", "title": "settle the structure: kernel split, "
                 "tiles, warps, register/shared-memory budget", "rows": None, "gate": []},
                {"id": "M1..Mk", "kind": "tuning", "title": "tune inside the M0 structure",
                 "rows": None, "gate": []}]}


def prescriptions(task: TaskSpec) -> list[str]:
    try:
        from forgekernel.kb import prescriptions_for_agent
    except ImportError:
        return []
    return list(prescriptions_for_agent(task))


def build_plan(task: TaskSpec, settings: Settings, delivery: tuple[str, str]) -> dict[str, Any]:
    """The whole dry-run plan as a JSON-able dict."""
    module = check_reference_module(task)
    agents = agent_choice(settings)
    workloads = workload_costs(task, module)
    return {
        "task": {"name": task.name, "description": task.description, "family": task.family,
                 "arch": task.arch, "language": task.language, "format": task.format,
                 "root": task.root, "axes": list(task.axes),
                 "inputs": {k: {"dtype": v.dtype, "shape": list(v.shape)} for k, v in task.inputs.items()},
                 "policy_forbid": list(task.policy.forbid)},
        "workloads": workloads,
        "warnings": smoke_warnings(workloads),
        "delivery": {"name": delivery[0], "why": delivery[1],
                     "timing": "cpu-interpret" if delivery[0] == "cpu" else "device"},
        "agent": agents,
        "budget": task.budget.model_dump(),
        "target": task.target.model_dump(),
        "curriculum": curriculum_outline(task, agents["coder"], settings, delivery[0]),
        "prescriptions": prescriptions(task),
    }
