"""The built-in agent: curricula for every example task, re-plans, and the coder's search."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from forgekernel import curriculum, templates
from forgekernel.agents import backend_module, builtin
from forgekernel.agents import builtin_search as search
from forgekernel.agents.base import (
    AgentError,
    ArchitectContext,
    AttemptNote,
    CoderContext,
    NothingToTry,
)
from forgekernel.agents.builtin import make_architect, make_coder
from forgekernel.config import load_settings
from forgekernel.records import Profile
from forgekernel.task import load_task

REPO = Path(__file__).resolve().parents[1]
TASKS = ("rmsnorm", "fused_add_rmsnorm", "layernorm", "softmax", "swiglu", "cross_entropy",
         "rope", "matmul")


def _task(name: str):
    task = load_task(REPO / "tasks" / name)
    return task, (REPO / "tasks" / name / "reference.py").read_text()


def _plan(name: str, **kw):
    task, src = _task(name)
    return make_architect(load_settings({})).plan(ArchitectContext(task=task, reference_source=src, **kw))


def _rows(cur):
    return [r for m in cur.milestones for r in m.rows]


@pytest.mark.parametrize("name", TASKS)
def test_initial_plan_is_valid_and_round_trips(name):
    res = _plan(name)
    cur = res.curriculum
    assert curriculum.check(cur) == []
    assert curriculum.loads(curriculum.dumps(cur)) == cur
    m0 = cur.milestones[0]
    assert m0.kind == "architecture" and len(m0.rows) == 1
    tpl = templates.template(m0.rows[0].params["template"])
    assert m0.rows[0].params["knobs"] == tpl.defaults()
    assert all(m.kind == "tuning" and m.rows for m in cur.milestones[1:])
    assert all(templates.template(r.params["template"]).name == tpl.name for r in _rows(cur))
    launch = "launches <= 2" if name == "cross_entropy" else "launches == 1"
    assert launch in m0.gate.mechanism and m0.gate.performance == ""  # CPU: no timing line
    target = f"speedup >= {round(load_task(REPO / 'tasks' / name).target.speedup, 2)}"
    assert all(m.gate.performance == target for m in cur.milestones[1:])  # sweeps keep running
    assert res.cost.agent == "builtin" and res.notes == cur.reason


def test_structure_follows_row_length():
    task, src = _task("rmsnorm")
    short = task.model_copy(update={"workloads": tuple(
        w.model_copy(update={"axes": {"M": 65536, "N": 512}}) for w in task.workloads)})
    long = task.model_copy(update={"workloads": tuple(
        w.model_copy(update={"axes": {"M": 64, "N": 131072}}) for w in task.workloads)})
    pick = {}
    for label, t in (("default", task), ("short", short), ("long", long)):
        cur = make_architect().plan(ArchitectContext(task=t, reference_source=src)).curriculum
        pick[label] = cur.milestones[0].rows[0].params["template"]
    assert pick == {"default": "rownorm_row", "short": "rownorm_multirow", "long": "rownorm_looped"}


def _gpu_profiles(name: str, sol: float, launches: int, bound: str = "memory"):
    task, _ = _task(name)
    return tuple(Profile(axes=w.axes, metrics={"sol_pct": sol, "launches": launches, "bound": bound})
                 for w in task.gpu_workloads())


def test_gpu_profile_sets_performance_and_sol_lines():
    cur = _plan("rmsnorm", profiles=_gpu_profiles("rmsnorm", 7.5, 9)).curriculum
    m0, m1 = cur.milestones[:2]
    # predicted 75 / 7.5 = 10x; the M0 line is half of that, capped at the task's target 1.2
    assert m0.gate.performance == "speedup >= 1.2"
    assert m0.gate.mechanism == ("launches == 1",) and "sol_pct >= 70" in m1.gate.mechanism
    assert "9 launches" in m0.rows[0].lever and "speedup ~10.0" in m0.rows[0].predict
    mm = _plan("matmul", profiles=_gpu_profiles("matmul", 90.0, 1, "compute")).curriculum
    assert mm.milestones[0].gate.performance == "speedup >= 0.33"  # 0.5 * 60 / 90
    assert "sol_pct >= 45" in mm.milestones[1].gate.mechanism


def _note(seq: int, row: str, cfg: templates.Config, speedup: float | None, status="PASSED"):
    return AttemptNote(seq=seq, row=row, status=status, speedup=speedup, summary=cfg.key())


def test_replan_after_stall_reopens_m0_with_another_structure():
    first = _plan("rmsnorm").curriculum
    tpl = templates.template("rownorm_row")
    history = (_note(1, "M0.1", templates.complete(tpl), 1.5),
               _note(2, "M1.1", templates.complete(tpl, {"NUM_WARPS": 4}), 1.4))
    task, src = _task("rmsnorm")
    res = make_architect().plan(ArchitectContext(task=task, reference_source=src, current=first,
                                                 reason="stall: 6 attempts without a new best",
                                                 history=history))
    cur = res.curriculum
    assert curriculum.check(cur) == [] and cur != first and cur.version == 2
    m0 = cur.milestones[0]
    assert m0.status == "open" and not m0.frozen and m0.rows[-1].status == "open"
    new = m0.rows[-1].params["template"]
    assert new in ("rownorm_multirow", "rownorm_looped")
    assert "re-opened M0" in cur.reason and "stall" in cur.reason
    assert cur.milestones[-1].rows[0].params["template"] == new


def test_replan_with_high_sol_keeps_structure_and_drops_stalled_row():
    first = _plan("rmsnorm", profiles=_gpu_profiles("rmsnorm", 7.5, 9)).curriculum
    tpl = templates.template("rownorm_row")
    history = (_note(1, "M0.1", templates.complete(tpl), 10.0),)
    task, src = _task("rmsnorm")
    ctx = ArchitectContext(task=task, reference_source=src, current=first, reason="stall",
                           history=history, best={"speedup": 10.0, "workloads": [
                               {"sol_pct": 27.6}, {"sol_pct": 97.7}, {"sol_pct": 97.1}]},
                           profiles=_gpu_profiles("rmsnorm", 7.5, 9))
    cur = make_architect().plan(ctx).curriculum
    assert len(cur.milestones[0].rows) == 1  # no new structure at a median of 97% SOL
    # M0.1 was judged (exhausted); M1.1 is the stalled row; at 92% SOL the run may end
    assert "dropped exhausted rows M0.1" in cur.reason and "dropped stalled row M1.1" in cur.reason
    assert curriculum.check(cur) == []


def test_replan_tries_another_structure_when_the_best_is_searched_out_at_high_sol():
    """Every rownorm_row point judged, the best at 96% SOL but the target unmet: the re-plan
    moves to the next structure instead of stopping (an H100 layernorm run stopped there)."""
    profiles = _gpu_profiles("layernorm", 7.5, 9)
    first = _plan("layernorm", profiles=profiles).curriculum
    tpl = templates.template("rownorm_row")
    assert first.milestones[0].rows[0].params["template"] == tpl.name
    history = tuple(_note(i, "M0.1" if i == 1 else "M1.1", templates.complete(tpl, {"NUM_WARPS": w}),
                          16.5 - i / 10) for i, w in enumerate(tpl.knob("NUM_WARPS").space, 1))
    task, src = _task("layernorm")
    best = {"speedup": 16.4, "workloads": [{"sol_pct": 96.0}, {"sol_pct": 95.5}]}
    ctx = ArchitectContext(task=task, reference_source=src, current=first, reason="rows exhausted",
                           history=history, best=best, profiles=profiles)
    cur = make_architect().plan(ctx).curriculum
    m0 = cur.milestones[0]
    assert m0.status == "open" and m0.rows[-1].status == "open"
    assert m0.rows[-1].params["template"] in ("rownorm_multirow", "rownorm_looped")
    assert "every point near the best rownorm_row tried" in cur.reason
    assert "nothing left to try" not in cur.reason and curriculum.check(cur) == []


def test_replan_when_everything_is_exhausted_says_so():
    task, src = _task("rope")
    cur = _plan("rope").curriculum
    tpl = templates.template("rope_rows")
    history = []
    for rows, warps, layout in itertools.product(*(k.space for k in tpl.knobs)):
        cfg = templates.complete(tpl, {"LAYOUT": layout, "ROWS": rows, "NUM_WARPS": warps})
        history.append(_note(len(history), "M1.1", cfg, 1.0 + rows / 1000 - warps / 1000 + layout / 100))
    ctx = ArchitectContext(task=task, reference_source=src, current=cur, reason="rows exhausted",
                           history=tuple(history))
    new = make_architect().plan(ctx).curriculum
    assert "nothing left to try" in new.reason
    assert not any(r.status == "open" for r in _rows(new))
    assert all(m.status != "open" for m in new.milestones)
    assert curriculum.check(new) == []


def test_structure_is_decided_by_semantics_not_names(tmp_path):
    """A renamed task with another family still gets its template; a reference that computes
    something else with the same name gets a generated candidate, not the template."""
    task, src = _task("rmsnorm")
    renamed = task.model_copy(update={"family": "other", "name": "weirdnorm"})
    assert builtin.supports(renamed, src).op == "rmsnorm"
    fake = tmp_path / "rmsnorm"
    fake.mkdir()
    (fake / "task.toml").write_text((REPO / "tasks" / "rmsnorm" / "task.toml").read_text())
    other = "import torch\n\ndef run(x, weight):\n    return torch.tanh(x) * weight\n"
    (fake / "reference.py").write_text(other)
    match = builtin.supports(load_task(fake), other)
    assert match.op == "generated" and "pointwise" in match.graph


def test_untraceable_reference_needs_an_llm_agent(tmp_path):
    task, src = _task("rmsnorm")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "task.toml").write_text((REPO / "tasks" / "rmsnorm" / "task.toml").read_text())
    text = "import torch\n\ndef run(x, weight):\n    return x * float(weight.sum().item())\n"
    (bad / "reference.py").write_text(text)
    with pytest.raises(AgentError, match="use an LLM agent: --agent claude-code"):
        make_architect().plan(ArchitectContext(task=load_task(bad), reference_source=text))


def _coder_ctx(task, src, cur, milestone, history, workspace, row=None):
    return CoderContext(task=task, reference_source=src, workspace=workspace, curriculum=cur,
                        milestone=milestone, row=row or milestone.rows[0], history=tuple(history))


def test_coder_climbs_never_repeats_and_exhausts(tmp_path):
    """On a made-up speed landscape the coder walks each sweep row to its optimum."""
    task, src = _task("matmul")
    cur = _plan("matmul").curriculum
    peak = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "NUM_STAGES": 4, "GROUP_M": 8}

    def speed(k):
        return 2.0 - sum(abs(k[n] - v) / v for n, v in peak.items())

    coder, history, seen = make_coder(), [], set()
    for m in cur.milestones:
        for row in m.rows:
            for _ in range(40):
                try:
                    res = coder.implement(_coder_ctx(task, src, cur, m, history, tmp_path, row))
                except NothingToTry as exc:
                    assert "exhausted" in str(exc)
                    break
                cfg = templates.Config.parse(res.summary)
                assert cfg is not None and cfg.key() == res.summary and res.summary not in seen
                assert f"BLOCK_M = {cfg.knobs['BLOCK_M']}\n" in (tmp_path / "kernel.py").read_text()
                seen.add(res.summary)
                history.append(_note(len(history), row.id, cfg, speed(cfg.knobs)))
            else:
                pytest.fail(f"row {row.id} never exhausted")
    best = max(history, key=lambda n: n.speedup)
    assert {k: v for k, v in json.loads(best.summary)["knobs"].items() if k in peak} == peak
    assert len(history) < 40


def test_coder_reads_its_configuration_from_data_not_the_summary(tmp_path):
    """The built-in coder hands its configuration back as data; the history's summary may be
    any text (an old ledger's summary alone still works: test_coder_climbs_never_repeats)."""
    task, src = _task("matmul")
    cur = _plan("matmul").curriculum
    m = cur.milestones[1]
    first = make_coder().implement(_coder_ctx(task, src, cur, m, [], tmp_path))
    assert first.data == templates.Config.parse(first.summary).data()
    note = AttemptNote(seq=1, row=m.rows[0].id, status="PASSED", speedup=1.0, summary="free text",
                       data=first.data)
    again = make_coder().implement(_coder_ctx(task, src, cur, m, [note], tmp_path))
    assert again.summary != first.summary


def test_coder_stops_at_a_failed_value():
    """A compile error above the centre ends that direction (larger values are not tried)."""
    task, src = _task("rmsnorm")
    tpl = templates.template("rownorm_looped")
    params = {"template": tpl.name, "space": {"BLOCK_N": list(tpl.knob("BLOCK_N").space)},
              "mode": "climb"}
    history = [_note(1, "r", templates.complete(tpl), 2.0),
               _note(2, "r", templates.complete(tpl, {"BLOCK_N": 8192}), None, "COMPILE_ERROR"),
               _note(3, "r", templates.complete(tpl, {"BLOCK_N": 2048}), 1.5)]
    assert search.next_config(params, history) is None
    assert search.next_config(params, history[:2]).knobs["BLOCK_N"] == 2048
    # a sweep (the default for one knob) still tries every value, nearest to the centre first
    sweep = {k: v for k, v in params.items() if k != "mode"}
    order = []
    while (cfg := search.next_config(sweep, history)) is not None:
        order.append(cfg.knobs["BLOCK_N"])
        history.append(_note(len(history) + 1, "r", cfg, 1.0))
    assert order == [1024, 16384]


@pytest.mark.parametrize("name", TASKS)
def test_every_rendering_passes_the_judges_source_policy(name, tmp_path):
    from forgekernel.judge import policy

    task, src = _task(name)
    match = builtin.supports(task, src)
    for tpl in match.templates:
        (tmp_path / "kernel.py").write_text(templates.render(
            templates.complete(tpl), match.op, match.params, match.constants, call=match.call))
        checked = policy.check_sources(tmp_path, task.policy.forbid)
        assert not checked.syntax_error and not checked.violations, (tpl.name, checked.violations)
        assert checked.own_kernels


def _judge_m0(name: str, tmp_path: Path):
    from forgekernel.delivery import make_runner
    from forgekernel.judge import JudgeOptions, judge

    task, src = _task(name)
    cur = _plan(name).curriculum
    res = make_coder().implement(_coder_ctx(task, src, cur, cur.milestones[0], (), tmp_path))
    assert res.error == ""
    return judge(task, tmp_path, make_runner("cpu"), JudgeOptions(timing=False))


def test_coder_kernel_passes_the_judge_on_cpu(tmp_path):
    """The M0 kernel for rmsnorm, through the real judge (hidden odd shapes included)."""
    verdict = _judge_m0("rmsnorm", tmp_path)
    assert verdict.passed, verdict.feedback
    assert any(w.hidden for w in verdict.workloads)


@pytest.mark.slow
@pytest.mark.parametrize("name", [t for t in TASKS if t != "rmsnorm"])
def test_coder_kernels_pass_the_judge_on_cpu(name, tmp_path):
    verdict = _judge_m0(name, tmp_path)
    assert verdict.passed, verdict.feedback


def test_registry_and_bad_params():
    mod = backend_module("builtin")
    assert mod.make_coder(load_settings({})).name == "builtin"
    assert mod.make_architect(load_settings({})).name == "builtin"
    task, src = _task("softmax")
    cur = _plan("softmax").curriculum
    m0 = cur.milestones[0]
    bad = m0.rows[0].model_copy(update={"params": {"template": "rownorm_row"}})
    with pytest.raises(AgentError, match="does not implement softmax"):
        make_coder().implement(_coder_ctx(task, src, cur, m0, (), Path("/nonexistent"), bad))
    bad = m0.rows[0].model_copy(update={"params": {"template": "softmax_row", "space": {"NOPE": [1]}}})
    with pytest.raises(AgentError, match="no knob NOPE"):
        make_coder().implement(_coder_ctx(task, src, cur, m0, (), Path("/nonexistent"), bad))


def test_replan_tries_another_structure_for_one_lagging_sizable_workload():
    first = _plan("softmax", profiles=_gpu_profiles("softmax", 6.8, 7)).curriculum
    tpl = templates.template("softmax_row")
    history = (_note(1, "M0.1", templates.complete(tpl), 13.0),)
    task, src = _task("softmax")

    def ctx(workloads):
        return ArchitectContext(task=task, reference_source=src, current=first, reason="the rows of M1 "
                                "are exhausted", history=history, best={"speedup": 13.0, "workloads": workloads},
                                profiles=_gpu_profiles("softmax", 6.8, 7))

    # the H200 run of benchmarks/results/engine_h200_2026-12-03c: 97-102 % SOL but 72.6 % at N = 32000
    lagging = [{"axes": {"M": 4096, "N": 4096}, "median_ms": 0.0212, "sol_pct": 102.5},
               {"axes": {"M": 16384, "N": 8192}, "median_ms": 0.1318, "sol_pct": 98.6},
               {"axes": {"M": 8192, "N": 32000}, "median_ms": 0.3458, "sol_pct": 72.6}]
    cur = make_architect().plan(ctx(lagging)).curriculum
    assert "re-opened M0" in cur.reason and "73% at M=8192 x N=32000" in cur.reason
    assert cur.milestones[0].rows[-1].params["template"] != "softmax_row"
    # a small workload (floor under SIZABLE_FLOOR_MS) lagging alone changes nothing
    small = [dict(lagging[0], sol_pct=40.0), lagging[1], dict(lagging[2], sol_pct=95.0)]
    assert "re-opened M0" not in make_architect().plan(ctx(small)).curriculum.reason
