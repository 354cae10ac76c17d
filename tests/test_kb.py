"""Knowledge base: entry validation, claim checks, records written back, ceilings, ranking."""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

import pytest
import tomli_w

from forgekernel import kb
from forgekernel.kb.certify import apply_run
from forgekernel.kb.claims import evaluate, holds
from forgekernel.kb.probes import PROBES, ProbeResult
from forgekernel.kb.probes import copy as copy_probe
from forgekernel.kb.store import KBError, load_with_paths
from forgekernel.task import load_task
from kb_helpers import REPO, copy_sweep, env, kb_copy, matmul_result, run_dict


def test_committed_sm90_entries_validate():
    entries = kb.load("sm90")
    assert len(entries) >= 12
    assert {e.probe for e in entries} == set(PROBES)
    for e in entries:
        assert e.threshold is not None and e.unit in e.claim and e.prescription
        assert kb.get(e.id) == e


def _mutate(kb_dir: Path, name: str, change) -> Path:
    path = kb_dir / "sm90" / f"{name}.toml"
    raw = tomllib.loads(path.read_text())
    change(raw)
    path.write_text(tomli_w.dumps(raw))
    return path


@pytest.mark.parametrize(("change", "key"), [
    (lambda r: r.update(speed="fast"), "speed"),
    (lambda r: r.pop("threshold"), "threshold"),
    (lambda r: r.update(families=["rownorm", "teleport"]), "families"),
    (lambda r: r.update(bottlenecks=["memory", "vibes"]), "bottlenecks"),
    (lambda r: r.update(id="sm90.other"), "id"),
    (lambda r: r.update(arch="sm100"), "arch"),
    (lambda r: r.update(probe="no_such_probe"), "probe"),
    (lambda r: r.update(unit="GB/s"), "unit"),
    (lambda r: r.update(comparison="=="), "comparison"),
    (lambda r: r.update(threshold=4.5), "claim"),
    (lambda r: r.update(certification={"device": "x", "date": "d", "measured": 1.0}), "certification"),
])
def test_bad_entry_is_one_line_naming_file_and_key(tmp_path, change, key):
    kb_dir = kb_copy(tmp_path)
    path = _mutate(kb_dir, "copy_large", change)
    with pytest.raises(KBError) as info:
        kb.load("sm90", kb_dir)
    msg = str(info.value)
    assert "\n" not in msg
    assert str(path) in msg and key in msg


def test_bad_toml_and_missing_dir(tmp_path):
    kb_dir = kb_copy(tmp_path)
    (kb_dir / "sm90" / "broken.toml").write_text("id = [unclosed\n")
    with pytest.raises(KBError, match=r"broken\.toml: not valid TOML"):
        kb.load("sm90", kb_dir)
    with pytest.raises(KBError, match="no knowledge-base directory"):
        kb.load("sm90", tmp_path / "nowhere")
    with pytest.raises(KBError, match="no knowledge-base entry 'sm90.nope'"):
        kb.get("sm90.nope", kb_copy(tmp_path / "again"))


def test_holds():
    assert holds(4.0, ">=", 3.9) and not holds(3.8, ">=", 3.9)
    assert holds(0.6, "<=", 0.8) and not holds(0.9, "<", 0.8)
    assert not holds(math.nan, ">=", 0.0)


@pytest.mark.parametrize(("large", "small", "large_state", "small_state"), [
    (4.2, 2.6, "CERTIFIED", "CERTIFIED"),
    (3.5, 3.4, "FAILED", "FAILED"),
])
def test_copy_probe_results_certify_or_fail(tmp_path, large, small, large_state, small_state):
    kb_dir = kb_copy(tmp_path)
    large_res, small_res = copy_probe.results_from_sweep(copy_sweep(large, small))
    assert large_res.value == pytest.approx(large)
    assert small_res.value == pytest.approx(small / large)
    targets = load_with_paths("sm90", kb_dir)
    outcomes = {o.entry.id: o for o in apply_run(run_dict([large_res, small_res]), targets)}
    assert set(outcomes) == {"sm90.copy_large", "sm90.copy_small"}
    assert outcomes["sm90.copy_large"].state == large_state
    assert outcomes["sm90.copy_small"].state == small_state
    reloaded = kb.get("sm90.copy_large", kb_dir)
    assert reloaded.certification.measured == pytest.approx(large)
    assert reloaded.certification.passed is (large_state == "CERTIFIED")
    assert reloaded.certification.details["by_mib"]["4096"] == pytest.approx(large)
    assert reloaded.certification.device == "NVIDIA H200"


def test_errors_leave_records_and_unsupported_is_not_certified(tmp_path):
    kb_dir = kb_copy(tmp_path)
    targets = load_with_paths("sm90", kb_dir)
    unsupported = ProbeResult(probe="tma_loads", value=None, unit="x", supported=False,
                              reason="no tensor-descriptor path works")
    run = run_dict([unsupported])
    run["results"]["matmul_bf16"] = {"error": "RuntimeError: CUDA out of memory"}
    outcomes = {o.entry.id: o for o in apply_run(run, targets)}
    assert outcomes["sm90.matmul_bf16"].error.startswith("RuntimeError")
    assert kb.get("sm90.matmul_bf16", kb_dir).certification is None
    tma = kb.get("sm90.tma_loads", kb_dir)
    assert kb.state(tma) == "UNSUPPORTED" and not tma.certified
    assert math.isnan(tma.certification.measured)
    assert tma.certification.details["reason"] == "no tensor-descriptor path works"


def test_evaluate_rejects_wrong_probe_or_unit():
    entry = kb.get("sm90.copy_large")
    with pytest.raises(KBError, match="probe"):
        evaluate(entry, matmul_result("matmul_bf16", 1.5), env())
    with pytest.raises(KBError, match="measured in 'GB/s'"):
        evaluate(entry, ProbeResult(probe="copy_large", value=4.0, unit="GB/s"), env())


def _certify(kb_dir: Path, results: list[ProbeResult], device: str = "NVIDIA H200") -> None:
    apply_run(run_dict(results, device), load_with_paths("sm90", kb_dir))


def test_ceilings_for_from_certified_entries(tmp_path):
    kb_dir = kb_copy(tmp_path)
    assert kb.ceilings_for("sm90", "NVIDIA H200", kb_dir) is None
    large, small = copy_probe.results_from_sweep(copy_sweep(4.25, 2.7))
    _certify(kb_dir, [large, small, matmul_result("matmul_bf16", 1.45),
                      matmul_result("matmul_fp16", 2.5)])
    c = kb.ceilings_for("sm90", "NVIDIA H200", kb_dir)
    assert c is not None and c.device == "NVIDIA H200"
    assert c.bandwidth_tbs == pytest.approx(4.25)
    assert c.bandwidth_by_mib[16] == pytest.approx(2.7) and 4096 in c.bandwidth_by_mib
    assert c.tflops["bfloat16"] == pytest.approx(2 * 8192 ** 3 / 1.45e-3 / 1e12)
    assert "float16" not in c.tflops  # 440 TFLOP/s fails the 650 claim: not a ceiling
    assert "sm90.copy_large" in c.source
    assert kb.ceilings_for("sm90", "NVIDIA H100 80GB HBM3", kb_dir) is None
    _certify(kb_dir, [copy_probe.results_from_sweep(copy_sweep(3.0, 2.0))[0]])
    assert kb.ceilings_for("sm90", "NVIDIA H200", kb_dir) is None


def _matmul_task(tmp_path: Path):
    if (REPO / "tasks" / "matmul" / "task.toml").is_file():
        return load_task(REPO / "tasks" / "matmul")
    d = tmp_path / "matmul"
    d.mkdir()
    (d / "task.toml").write_text(
        'name = "matmul"\nfamily = "matmul"\n[axes]\nM = {}\nN = {}\nK = {}\n'
        '[inputs.a]\ndtype = "bfloat16"\nshape = ["M", "K"]\n'
        '[inputs.b]\ndtype = "bfloat16"\nshape = ["K", "N"]\n'
        '[[workload]]\nM = 64\nN = 64\nK = 64\nsmoke = true\n'
        '[[workload]]\nM = 8192\nN = 8192\nK = 8192\n')
    (d / "reference.py").write_text("def run(a, b):\n    return a @ b\n")
    return load_task(d)


def test_prescribe_ranks_memory_first_for_rmsnorm_and_compute_first_for_matmul(tmp_path):
    rms = kb.prescribe(load_task(REPO / "tasks" / "rmsnorm"))
    assert "memory" in rms[0].entry.bottlenecks
    assert all("matmul" not in p.entry.families for p in rms)
    kinds = ["memory" in p.entry.bottlenecks for p in rms]
    assert kinds == sorted(kinds, reverse=True)  # every memory entry before any other
    mm = kb.prescribe(_matmul_task(tmp_path))
    assert "compute" in mm[0].entry.bottlenecks
    assert [p.score for p in mm] == sorted((p.score for p in mm), reverse=True)
    assert "compute-bound" in mm[0].why


def test_agent_sees_certified_facts_only(tmp_path):
    kb_dir = kb_copy(tmp_path)
    task = load_task(REPO / "tasks" / "rmsnorm")
    assert kb.prescriptions_for_agent(task, kb_dir=kb_dir) == ()
    large, small = copy_probe.results_from_sweep(copy_sweep(4.2, 3.9))  # small ratio fails
    _certify(kb_dir, [large, small])
    assert kb.prescriptions_for_agent(task, kb_dir=kb_dir) == ()  # a planning fact: not the coder's
    lines = kb.prescriptions_for_agent(task, kb_dir=kb_dir, role="architect")
    assert len(lines) == 1
    assert "4.2 TB/s" in lines[0] and "NVIDIA H200" in lines[0]
    assert kb.get("sm90.copy_large", kb_dir).prescription.rstrip(".") in lines[0]
    ranked = kb.prescribe(task, kb_dir=kb_dir)
    assert "NVIDIA H200" in ranked[0].floors  # floors now come from the certified entries


def test_prescriptions_reach_only_their_role_and_operator():
    """Judge-side practice (graph replay, flushing the L2) never reaches an agent; tensor-core
    and TMA advice never reaches a row normalisation."""
    rms = load_task(REPO / "tasks" / "rmsnorm")
    for role in ("coder", "architect"):
        text = " ".join(kb.prescriptions_for_agent(rms, role=role))
        assert text and "graph" not in text.lower() and "flush" not in text.lower()
        assert "tl.dot" not in text and "TMA" not in text
    judge_only = [e.id for e in kb.load("sm90") if "coder" not in e.roles and "architect" not in e.roles]
    assert judge_only == ["sm90.launch_graph"]


def test_committed_records_match_committed_probe_runs():
    runs = {}
    for path in sorted((REPO / "benchmarks" / "results").glob("kb_sm90_*.json")):
        run = json.loads(path.read_text())
        runs[run["date"]] = run
    for entry in kb.load("sm90"):
        cert = entry.certification
        if cert is None:
            continue
        run = runs[cert.date]  # every record comes from a committed raw run
        raw = run["results"][entry.probe]
        again = evaluate(entry, ProbeResult.model_validate(raw), env(run["device"]).model_copy(
            update={"date": run["date"], "driver": run["driver"], "versions": run["versions"]}))
        assert again.passed == cert.passed, entry.id
        if raw["value"] is not None:
            assert cert.measured == pytest.approx(raw["value"]), entry.id
        assert cert.device == run["device"] and cert.versions == run["versions"]
