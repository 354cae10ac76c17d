"""`forge evolve tasks/rmsnorm` end to end on the CPU: the built-in agent, forgekernel's real
judge (Triton interpreter). The timings are cpu-interpret; what is checked is the mechanics."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from forgekernel.evolve import lineage as evolve_lineage
from forgekernel.records import Attempt
from forgekernel.run import rundir
from forgekernel.run.ledger import read

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_builtin_chain_on_the_real_judge(tmp_path):
    chain = tmp_path / "chain"
    proc = subprocess.run([sys.executable, "-m", "forgekernel.cli", "evolve", str(REPO / "tasks" / "rmsnorm"),
                           "--generations", "2", "--max-iterations", "1", "--delivery", "cpu",
                           "--no-profile", "--out", str(chain)],
                          capture_output=True, text=True, timeout=500, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # one attempt per generation: generation 1's first (and only) candidate is generation 0's
    # best point rendered again, the same files: the chain stops, whatever the CPU timings say
    assert "2 generation(s); stopped: generation 1's best is its reference itself" in proc.stdout

    data = evolve_lineage.load(chain)
    g0, g1 = data["generations"]
    assert g0["reference_hash"] == rundir.content_hash(chain / "task")
    assert g1["reference_hash"] == g0["best_hash"] and g0["timing"] == g1["timing"] == "cpu-interpret"
    assert g1["rule"].startswith("not applied: cpu-interpret")
    # the real judge timed generation 1 against generation 0's interpreted Triton kernel,
    # which is far slower on a CPU than the PyTorch reference generation 0 was timed against
    first = [[e for e in read(chain / f"gen_{k}" / "ledger.jsonl")[0] if isinstance(e, Attempt)][0]
             for k in (0, 1)]
    assert all(a.verdict.passed for a in first)
    ref_ms = [a.verdict.workloads[0].reference_ms for a in first]
    assert ref_ms[1] > 20 * ref_ms[0]
    assert g1["best_hash"] == g0["best_hash"] and data["stop"]["kind"] == "unchanged"
    assert data["best"]["generation"] == 0
    # the built-in architect of generation 1 started from generation 0's best point
    plan = tomllib.loads((chain / "gen_1" / "curriculum.v1.toml").read_text())
    m0 = plan["milestone"][0]["row"][0]
    best = json.loads(g0["best_summary"])
    assert m0["params"]["template"] == best["template"] and m0["params"]["knobs"] == best["knobs"]
    assert "[evolve: generation 1 starts from generation 0's outcome" in plan["reason"]
    assert (chain / "lineage.png").is_file() and "cpu-interpret" in (chain / "lineage.md").read_text()
