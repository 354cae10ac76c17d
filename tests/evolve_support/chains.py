"""Chains for the self-evolution tests: per-generation scripts and the parts a chain runs with."""

from __future__ import annotations

import json
from pathlib import Path

from evolve_support import chain_judge
from forgekernel.agents.scripted import ScriptedArchitect, ScriptedCoder, load_script
from forgekernel.config import Settings
from forgekernel.delivery import make_runner
from forgekernel.evolve import generations as evolve

TESTS = Path(__file__).resolve().parents[1]
FIX = TESTS / "fixtures" / "evolve"
TASK = FIX / "slow_rmsnorm"
KERNELS = FIX / "kernels"


def write_scripts(tmp: Path, generations: list[list[str]]) -> str:
    """One scripted-agent script per generation (kernel fixture names, one per attempt);
    returns the path pattern with ``{generation}``."""
    for k, kernels in enumerate(generations):
        data = {"plan": [{"file": str(FIX / "plan.toml"), "notes": f"generation {k} plan"}],
                "step": [{"summary": name, "files": {"kernel.py": {"file": str(KERNELS / f"{name}.py")}}}
                         for name in kernels]}
        (tmp / f"gen{k}.json").write_text(json.dumps(data, indent=1))
    return str(tmp / "gen{generation}.json")


def parts(pattern: str, events: list | None = None) -> evolve.Parts:
    """Scripted agents per generation, the chain judge, the cpu runner."""
    def agents(k: int):
        script = load_script(pattern.format(generation=k))
        return ScriptedCoder(script), ScriptedArchitect(script)

    return evolve.Parts(agents=agents, judge=chain_judge.judge, runner=make_runner("cpu"),
                        settings=Settings(delivery="cpu", agent="scripted"),
                        progress=events.append if events is not None else None)


def new_chain(tmp: Path, generations: int, rule: str = "on", **kw) -> Path:
    opts = evolve.ChainOptions(generations=generations, noise_rule=rule, agent="scripted",
                               architect="scripted", delivery="cpu", profile=False, **kw)
    return evolve.create(TASK, opts, Settings(delivery="cpu", agent="scripted"), tmp / "chain")
