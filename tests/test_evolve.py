"""Self-evolution chains on the CPU: scripted agents, a small real judge (evolve_support),
plain-PyTorch candidates whose speed is set by a sleep (so which is faster is known)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from evolve_support import chain_judge, chains
from forgekernel.agents.base import ArchitectContext
from forgekernel.agents.builtin import BuiltinArchitect
from forgekernel.cli import main
from forgekernel.delivery import make_runner
from forgekernel.evolve import carry as evolve_carry
from forgekernel.evolve import generations as evolve
from forgekernel.evolve import lineage as evolve_lineage
from forgekernel.evolve import reference as evolve_ref
from forgekernel.records import Attempt, Status, Verdict, WorkloadResult
from forgekernel.run import rundir
from forgekernel.run.ledger import read
from forgekernel.task import load_task

REPO = Path(__file__).resolve().parents[1]


def _run_chain(tmp: Path, kernels: list[list[str]], generations: int, rule: str = "on"):
    pattern = chains.write_scripts(tmp, kernels)
    root = chains.new_chain(tmp, generations, rule)
    events: list = []
    outcome = evolve.evolve(root, chains.parts(pattern, events))
    return root, outcome, evolve_lineage.load(root), events


def _attempts(run_dir: Path) -> list[Attempt]:
    return [e for e in read(run_dir / "ledger.jsonl")[0] if isinstance(e, Attempt)]


def test_chain_improves_twice_then_stops_on_the_noise_floor(tmp_path):
    root, outcome, data, events = _run_chain(tmp_path, [["sleep_30"], ["sleep_12"], ["sleep_20"]], 5)
    gens = data["generations"]
    assert [e["generation"] for e in gens] == [0, 1, 2]
    assert outcome.stop_kind == "noise_floor" and data["stop"]["generation"] == 2
    assert "noise floor" in outcome.stop_reason and "cpu-interpret" in outcome.stop_reason
    # each generation is timed against the previous generation's sealed best
    assert gens[0]["reference_hash"] == rundir.content_hash(root / "task")
    assert gens[1]["reference_hash"] == gens[0]["best_hash"]
    assert gens[2]["reference_hash"] == gens[1]["best_hash"]
    for e in gens:
        assert rundir.content_hash(root / e["sealed"]) == e["best_hash"]
    cfg = tomllib.loads((root / "gen_1" / "run.toml").read_text())
    assert cfg["perf_reference"] == {"dir": "../sealed/gen_0", "hash": gens[0]["best_hash"], "generation": 0}
    # two real gains beyond the noise floor, then a slower best that does not count
    assert gens[0]["speedup"] > 1 + gens[0]["noise_floor"] and gens[0]["beats_noise"]
    assert gens[1]["speedup"] > 1 + gens[1]["noise_floor"] and gens[1]["beats_noise"]
    assert gens[2]["speedup"] < 1 and gens[2]["beats_noise"] is False and not gens[2]["counts"]
    assert outcome.best["generation"] == 1 and outcome.best["hash"] == gens[1]["best_hash"]
    # the timing reference really was the previous best (30 ms, then 12 ms), not the 60 ms task reference
    ref_ms = [_attempts(root / f"gen_{k}")[0].verdict.workloads[0].reference_ms for k in range(3)]
    assert ref_ms[0] > 55 and 25 < ref_ms[1] < 50 and 10 < ref_ms[2] < 25
    # measured against the task's reference: generation 1 beats generation 0
    assert gens[1]["speedup_vs_original"] > gens[0]["speedup_vs_original"] > 1
    assert (root / "sealed" / "gen_1.original.json").is_file()
    analysed = [e.message for e in events if "analysing the reference" in e.message]
    assert analysed == ["gen 0: analysing the reference"]
    md = (root / "lineage.md").read_text()
    assert "| 2 | gen_2 | gen 1 `" + gens[1]["best_hash"] + "`" in md and "cpu-interpret" in md
    assert (root / "lineage.png").stat().st_size > 1000


def test_the_next_generation_starts_from_the_carried_outcome(tmp_path):
    root, _, data, _ = _run_chain(tmp_path, [["sleep_30"], ["sleep_12"]], 2)
    carried = json.loads((root / "gen_1" / "carry.json").read_text())
    assert carried["from_generation"] == 0 and carried["best"]["candidate"] == data["generations"][0]["best_hash"]
    assert carried["m0"]["title"] == "one fused pass per row" and carried["paid_off"] == ["M0.1"]
    assert carried["best"]["summary"] == "sleep_30"
    plan = tomllib.loads((root / "gen_1" / "curriculum.v1.toml").read_text())
    assert "kept M0 'one fused pass per row' from generation 0" in plan["reason"]
    assert "[evolve:" not in tomllib.loads((root / "gen_0" / "curriculum.v1.toml").read_text())["reason"]


@pytest.mark.parametrize("kernels, where", [([["sleep_30"], ["wrong"]], 1), ([["wrong"]], 0)])
def test_chain_stops_when_a_generation_finds_nothing_correct(tmp_path, kernels, where):
    root, outcome, data, _ = _run_chain(tmp_path, kernels, 4)
    assert outcome.stop_kind == "nothing_correct" and data["stop"]["generation"] == where
    assert f"generation {where} found no correct kernel" in outcome.stop_reason
    assert data["generations"][-1]["best_hash"] is None
    assert not (root / "sealed" / f"gen_{where}").exists()
    if where:
        assert outcome.best["generation"] == 0 and outcome.exit_code == 0
    else:
        assert outcome.best is None and outcome.exit_code == 2
        assert "chain best: none" in (root / "lineage.md").read_text()


def test_cpu_interpret_timings_do_not_stop_the_chain_under_auto(tmp_path):
    root, outcome, data, _ = _run_chain(tmp_path, [["sleep_12"], ["sleep_20"], ["sleep_30"]], 3, rule="auto")
    gens = data["generations"]
    assert len(gens) == 3 and outcome.stop_kind == "generations"
    assert gens[1]["speedup"] < 1 and gens[1]["beats_noise"] is False and gens[1]["decision"] == "continue"
    assert all(e["rule"].startswith("not applied: cpu-interpret") for e in gens)
    assert gens[2]["reference_hash"] == gens[1]["best_hash"]
    assert "the noise rule was not applied (not applied: cpu-interpret" in (root / "lineage.md").read_text()


def test_a_generation_whose_best_is_its_reference_stops_the_chain(tmp_path):
    root, outcome, data, _ = _run_chain(tmp_path, [["sleep_30"], ["sleep_30"], ["sleep_12"]], 3, rule="auto")
    g0, g1 = data["generations"]
    assert g1["best_hash"] == g1["reference_hash"] == g0["best_hash"]
    assert outcome.stop_kind == "unchanged" and "is its reference itself" in outcome.stop_reason
    assert outcome.best["generation"] == 0 and not g1["counts"]
    assert not (root / "sealed" / "gen_1.original.json").exists()


def _verdict(x: float | None, noise: float, label: str = "device", status: Status = Status.PASSED) -> Verdict:
    if status is not Status.PASSED:
        return Verdict(status=status, reason="a timed call drifted")
    wl = WorkloadResult(axes={"M": 1}, median_ms=1.0, reference_ms=x, speedup=x, timing_label=label)
    return Verdict(status=status, speedup=x, noise_floor=noise, workloads=(wl,))


@pytest.mark.parametrize("verdict, rule, gen, kind, counts", [
    (None, "auto", 0, "nothing_correct", False),
    (_verdict(1.5, 0.01, status=Status.WRONG_VALUES), "auto", 0, "confirmation_failed", False),
    (_verdict(1.005, 0.01), "auto", 1, "noise_floor", False),
    (_verdict(0.9, 0.01), "auto", 1, "noise_floor", False),
    (_verdict(1.05, 0.01), "auto", 1, None, True),
    (_verdict(1.05, 0.01), "auto", 2, "generations", True),
    (_verdict(0.001, 0.01, "cpu-interpret"), "auto", 0, None, True),
    (_verdict(0.001, 0.01, "cpu-interpret"), "on", 0, "noise_floor", False),
    (_verdict(1.005, 0.01), "off", 0, None, True),
])
def test_stop_rule(verdict, rule, gen, kind, counts):
    d = evolve.decide(gen, 3, rule, verdict)
    assert d.stop_kind == kind and d.counts == counts
    if verdict is not None and verdict.passed:
        same = evolve.decide(gen, 3, rule, verdict, unchanged=True)
        assert same.stop_kind == "unchanged" and not same.counts


def test_a_modified_sealed_kernel_is_refused(tmp_path, capsys):
    root, _, data, _ = _run_chain(tmp_path, [["sleep_30"]], 1)
    before = (root / "lineage.json").read_text()
    assert main(["evolve", str(root)]) == 0  # a finished chain: nothing is run again
    assert "1 generation(s); stopped after 1 generation(s)" in capsys.readouterr().out
    assert (root / "lineage.json").read_text() == before
    sealed = root / "sealed" / "gen_0"
    judge = evolve_ref.ReferenceJudge(chain_judge.judge, sealed, data["generations"][0]["best_hash"])
    task = load_task(root / "task")
    cand = tmp_path / "cand"
    cand.mkdir()
    (cand / "kernel.py").write_text((chains.KERNELS / "sleep_12.py").read_text())
    assert judge(task, cand, make_runner("cpu")).passed
    with (sealed / "kernel.py").open("a") as fh:
        fh.write("# edited after sealing\n")
    with pytest.raises(evolve_ref.SealError, match="modified after sealing"):
        judge(task, cand, make_runner("cpu"))
    assert main(["evolve", str(root)]) == 2
    assert "modified after sealing" in capsys.readouterr().err


def test_an_evolve_dir_keeps_its_options(tmp_path, capsys):
    root = chains.new_chain(tmp_path, 2)
    assert main(["evolve", str(root), "--generations", "5"]) == 2
    assert "options are fixed" in capsys.readouterr().err
    assert main(["evolve", str(tmp_path / "nothing")]) == 2
    assert "neither an evolve dir" in capsys.readouterr().err
    with pytest.raises(evolve.EvolveError, match="noise-rule"):
        evolve.ChainOptions(noise_rule="sometimes")


def _builtin_plan(extra: dict):
    task = load_task(REPO / "tasks" / "rmsnorm")
    ctx = ArchitectContext(task=task, reference_source=(REPO / "tasks" / "rmsnorm" / "reference.py").read_text(),
                           extra={"delivery": "local", **extra})
    return BuiltinArchitect().plan(ctx).curriculum


def test_builtin_architect_starts_from_the_previous_best_point():
    fresh = _builtin_plan({})
    point = '{"template":"rownorm_multirow","knobs":{"MAX_TILE":8192,"NUM_WARPS":8,"ROWS":2}}'
    carried = {"from_generation": 0, "best": {"candidate": "abc", "summary": point, "speedup": 2.0},
               "m0": {"title": fresh.milestones[0].title, "status": "passed", "frozen": True, "rows": []},
               "rows": [], "paid_off": ["M0.1"]}
    cur = _builtin_plan({"evolve": carried})
    row = cur.milestones[0].rows[0]
    assert row.params["template"] == "rownorm_multirow"
    assert row.params["knobs"] == {"MAX_TILE": 8192, "NUM_WARPS": 8, "ROWS": 2}
    assert cur.milestones[0].gate.performance == "" and fresh.milestones[0].gate.performance
    assert all(r.params["template"] == "rownorm_multirow" for m in cur.milestones for r in m.rows)
    assert "previous generation's best" in cur.reason
    wrapped = evolve_carry.CarryArchitect(BuiltinArchitect(), carried)
    ctx = ArchitectContext(task=load_task(REPO / "tasks" / "rmsnorm"),
                           reference_source=(REPO / "tasks" / "rmsnorm" / "reference.py").read_text())
    res = wrapped.plan(ctx)
    assert "revised M0 from generation 0's" in res.curriculum.reason
    assert res.curriculum.milestones[0].rows[0].params["knobs"]["ROWS"] == 2


def test_a_bad_agent_or_out_dir_stops_before_an_evolve_dir_is_made(tmp_path, capsys):
    task = Path(__file__).resolve().parents[1] / "tasks" / "rmsnorm"
    out = tmp_path / "chain"
    assert main(["evolve", str(task), "--agent", "nosuch", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown agent 'nosuch'" in err[0] and not out.exists()
    (tmp_path / "file").write_text("")
    assert main(["evolve", str(task), "--delivery", "cpu", "--out", str(tmp_path / "file" / "chain")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("forge: error: ") and "cannot create the evolve dir" in err[0]
