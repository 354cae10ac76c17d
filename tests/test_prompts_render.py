"""What the LLM agents see: every prompt rendered for a CPU run and a GPU run.

The scenes are staged by ``benchmarks/prompt_sizes.py`` (the same ones whose sizes it
reports): a run dir from tests/fixtures/prompts (an H200 verdict and reference profile with
PyTorch's long demangled kernel names; a cpu-interpret verdict), a RunState folded from
ledger events, the contexts built by forgekernel.run.agent_views as the engine builds them.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path

import pytest

from forgekernel.agents import kernel_names, prompting
from forgekernel.records import AgentCost, Attempt, KernelStat, Profile, Status, Verdict
from forgekernel.run import agent_views as views
from forgekernel.run import rundir
from forgekernel.run.state import RunState

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import prompt_sizes as ps  # noqa: E402 - the scenes live with the script that sizes them

FIX = REPO / "tests" / "fixtures" / "prompts"
INTERNALS = ("tolerances", "phases", "own_kernels", "sandbox", "hidden_workloads", "native_threads",
             "at::native", "no price known")
HIDDEN_VALUES = ("777", "0.125", "0.375", "0.01786")
"""The hidden workload's label, its times and its floor (HIDDEN_MS / 7)."""
RUN_IDS = [f"{k}-run" for k in ps.KINDS]
"""Test ids (a bare "gpu" id would mark the test as needing a GPU, see conftest)."""


@pytest.fixture(scope="module")
def scenes(tmp_path_factory):
    return ps.scenes(tmp_path_factory.mktemp("prompts"))


def every(scenes):
    return [(kind, name, text) for kind, sc in scenes.items() for name, text in sc.texts.items()]


def test_every_prompt_is_filled_and_shows_nothing_hidden(scenes):
    assert {n for _, n, _ in every(scenes)} == set(ps.PROMPTS)
    for kind, name, text in every(scenes):
        where = f"{kind}/{name}"
        assert not re.search(r"\$[A-Za-z_{]", text), where  # every placeholder filled
        assert "seed" not in text.lower(), where
        for value in HIDDEN_VALUES:
            assert value not in text, (where, value)
        for word in INTERNALS:
            assert word not in text, (where, word)


@pytest.mark.parametrize("kind", ps.KINDS, ids=RUN_IDS)
def test_the_coder_starts_from_the_kernel_it_is_shown(scenes, kind):
    sc = scenes[kind]
    best = ps.best_kernel().rstrip()
    first, nxt, retry = sc.texts["coder"], sc.texts["coder_next"], sc.texts["coder_retry"]
    for text in (first, nxt, retry):
        assert f"```python\n{best}\n```" in text
        assert "reset to the best kernel so far (attempt #1)" in text
        assert "| workload | ms | reference ms | speedup | %SOL | timing |" in text
        assert "Geometric-mean speedup:" in text and "noise floor" in text
    assert sc.coder_first.current_source.rstrip() == best and sc.coder_first.retry_diff == ""
    assert "Your last attempt at this row" not in first and "Your last attempt at this row" not in nxt
    assert "(first attempt at this row)" in first
    # the retry: the judge's feedback, then the failed attempt as a diff against the kernel above
    assert "Your last attempt was discarded; the workspace was reset" in retry
    fb = retry.index("## Feedback from the judge")
    diff = retry.index("### Your last attempt at this row (diff against the kernel above)")
    assert fb < diff < retry.index("## What to do now")
    assert "+++ kernel.py (attempt #3)" in retry
    assert "-    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=0) / N + eps)" in retry
    assert "+    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=0) / N)" in retry
    assert "WRONG_VALUES" in retry and "retry 2 of this row" in retry
    # the hardware sheet in the first turn (a resumed session has seen it)
    assert "## Hardware\n\nNVIDIA H200 (sm90, Hopper)" in first and "## Hardware\n" not in nxt
    for fact in ("132 SMs", "L2 50 MiB", "228 KiB per SM (227 KiB usable by one block)",
                 "65536 32-bit registers per SM", "1024 threads per block", "warp of 32",
                 "TB/s", "float32 67 (datasheet lead, not measured)"):
        assert fact in first, fact
    # history without bookkeeping; summaries kept
    assert "#1 row M0.1: PASSED" in first and "one program per row, the row in registers" in first


def test_gpu_profiles_show_what_the_kernels_do(scenes):
    text = scenes["gpu"].texts["coder"]
    assert "kernels: mul (elementwise) x2 42%; direct_copy (unrolled_elementwise) 22%" in text
    assert "mean (reduce)" in text and "void " not in text and "TensorIteratorBase" not in text
    for line in text.splitlines():
        if line.strip().startswith("kernels:"):
            assert len(line.split(":", 1)[1].split(";")) <= 7  # at most 6, then "N more"
    assert "| M=4096 x N=4096 | 0.06605 | 0.242 | 3.66x | 32.9 | device |" in text
    assert "Geometric-mean speedup: 9.82x; noise floor 0.06%" in text
    cpu = scenes["cpu"].texts["coder"]
    assert "kernels: mean 35%; _to_copy x2 33%" in cpu
    assert "they say nothing about speed on the GPU" in cpu


@pytest.mark.parametrize("kind", ps.KINDS, ids=RUN_IDS)
def test_the_architect_sees_the_engine_facts(scenes, kind):
    sc = scenes[kind]
    initial, replan = sc.texts["architect"], sc.texts["architect_replan"]
    for text in (initial, replan):
        assert "## Hardware\n\nNVIDIA H200 (sm90, Hopper)" in text and "132 SMs" in text
        assert f"- Delivery: {ps.DELIVERY[kind][0]}; timing: {ps.DELIVERY[kind][1]}." in text
        assert "| workload | floor ms | bound by | reference ms | speedup bound |" in text
        assert "| M=65536 x N=1024 |" in text
    assert "- Budget left: 40 of 40 iterations, 90 of 90 minutes, 20.00 of 20.00 USD." in initial
    assert "- Budget left: 37 of 40 iterations" in replan
    assert "(none: write the first plan)" in initial and "(no correct kernel yet)" in initial
    for line in ("[met] correct", "[not met] speedup >= 12", "[met] launches == 1 (launches=1)"):
        assert line in replan, line
    assert "- Gate of M0 against the best kernel:" in replan
    best = ps.best_kernel().rstrip()
    assert f"Its `kernel.py`:\n\n```python\n{best}\n```" in replan and best not in initial
    example = replan[replan.index("## Curriculum format"):]
    if kind == "cpu":
        for text in (initial, replan):
            assert "Speed cannot be measured here" in text
            assert "Performance gates must not require speedup >= 1" in text
        assert "[unknown] sol_pct >= 80 (not measured: sol_pct)" in replan
        assert "performance =" not in example and "speedup" not in example
        assert "0.03774 (cpu-interpret) | - |" in replan  # no bound from host times
    else:
        assert "Speed cannot be measured" not in replan
        assert "[not met] sol_pct >= 80" in replan and 'performance = "speedup >= 3"' in example
        assert "| M=4096 x N=4096 | 0.02136 | memory | 0.2432 | 11.4x |" in replan
        assert "Geometric mean of the bounds: 12.6x" in replan


def test_first_coder_turn_fits_the_budget(scenes):
    for kind, sc in scenes.items():
        text = sc.texts["coder"]
        assert len(text) <= 24000 and ps.tokens(text) <= 6000, (kind, len(text))


def test_sizes_script_writes_json(tmp_path, capsys):
    out = tmp_path / "sizes.json"
    assert ps.main(["--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["prompt_version"] == prompting.PROMPT_VERSION == "v2"
    assert set(data["prompts"]) == {"cpu", "gpu"}
    assert set(data["prompts"]["gpu"]) == set(ps.PROMPTS)
    assert "coder_retry" in capsys.readouterr().out


# ---------------------------------------------------------------- pieces


def test_short_kernel_names():
    names = [k["name"] for k in ps._json("reference_gpu.json")["profiles"][0]["kernels"]]
    short = [kernel_names.short_kernel_name(n) for n in names]
    assert short == ["mul (elementwise)", "direct_copy (unrolled_elementwise)", "mul (elementwise)",
                     "pow_tensor_scalar (vectorized_elementwise)", "mean (reduce)",
                     "bfloat16_copy (vectorized_elementwise)", "add (vectorized_elementwise)",
                     "rsqrt (vectorized_elementwise)"]
    assert all(len(s) <= kernel_names.KERNEL_NAME_CHARS for s in short)
    assert kernel_names.short_kernel_name("aten::mean") == "mean"
    assert kernel_names.short_kernel_name("_rownorm_row") == "_rownorm_row"
    softmax = ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, float, float, float, "
               "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)")
    assert kernel_names.short_kernel_name(softmax) == "cunn_SoftMaxForward"
    long = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute"
    got = kernel_names.short_kernel_name(long)
    assert len(got) == kernel_names.KERNEL_NAME_CHARS and got.endswith("...") and got.startswith("sm90_xmma_gemm")


def test_kernels_line_keeps_six_largest():
    ks = tuple(KernelStat(name=f"k{i}", count=1, share=(10 - i) / 55) for i in range(10))
    line = prompting.kernels_line(Profile(axes={"M": 1}, kernels=ks))
    assert line.startswith("k0 18%; k1 16%") and line.count(";") == 6 and line.endswith("4 more")


def test_summaries_lose_bookkeeping_notes():
    note = "no price known for model 'x': cost recorded as $0 (tokens recorded)"
    assert prompting.clean_summary(f"fused the row; {note}; stopped: 40 turns without finish") == \
        "fused the row; stopped: 40 turns without finish"
    assert prompting.clean_summary(note) == ""


def test_no_hardware_sheet_off_sm90(scenes):
    ctx = scenes["gpu"].coder_first
    task = ctx.task.model_copy(update={"arch": "sm100"})
    text = prompting.coder_prompt(dataclasses.replace(ctx, task=task), "go")
    assert "## Hardware\n\n(no sheet for this arch)" in text and "132 SMs" not in text


def test_a_first_row_starts_from_the_stub(tmp_path):
    from llm_agent_support import START_KERNEL, coder_ctx, workspace

    ctx = coder_ctx(workspace(tmp_path), current_source=START_KERNEL)
    text = prompting.coder_prompt(ctx, "go")
    assert "The workspace was reset to the starting stub: `kernel.py` holds exactly this:" in text
    assert f"```python\n{START_KERNEL.rstrip()}\n```" in text and "(no correct kernel yet)" in text


def _attempt(seq, row, cid="", passed=None, error=""):
    verdict = None if passed is None else Verdict(status=Status.PASSED if passed else Status.WRONG_VALUES,
                                                  candidate=cid, feedback="" if passed else "wrong")
    return Attempt(seq=seq, time="2026-12-03T00:00:00+00:00", row=row, candidate=cid,
                   agent=AgentCost(agent="t"), verdict=verdict, error=error,
                   accepted=bool(passed), best=bool(passed))


def _stored(rd, cid, text):
    (rd.candidate_src(cid)).mkdir(parents=True)
    (rd.candidate_src(cid) / "kernel.py").write_text(text)


def test_retry_diff_follows_the_newest_failed_candidate_of_the_row(tmp_path):
    rd = rundir.RunDir(tmp_path)
    state = RunState()
    current = "".join(f"line {i}\n" for i in range(300))
    _stored(rd, "aaaa", current.replace("line 5\n", "LINE 5\n"))
    _stored(rd, "bbbb", current.replace("line 7\n", "LINE 7\n"))
    state.apply(_attempt(1, "R", "aaaa", passed=False))
    state.apply(_attempt(2, "R", "bbbb", passed=False))
    state.apply(_attempt(3, "R", error="agent error: made no edit"))  # no candidate: skipped
    state.apply(_attempt(4, "S", "cccc", passed=False))  # another row
    diff = views.retry_diff(rd, state, "R", current)
    assert "+LINE 7" in diff and "LINE 5" not in diff and "(attempt #2)" in diff
    assert views.retry_diff(rd, state, "T", current) == ""  # a first try
    state.apply(_attempt(5, "R", "dddd", passed=True))
    assert views.retry_diff(rd, state, "R", current) == ""  # the last try passed: no retry
    # a long diff is cut with a note
    _stored(rd, "eeee", "".join(f"other {i}\n" for i in range(300)))
    state.apply(_attempt(6, "R", "eeee", passed=False))
    long = views.retry_diff(rd, state, "R", current).splitlines()
    assert len(long) == views.RETRY_DIFF_LINES + 1 and long[-1].endswith("more diff lines cut)")


def test_the_engine_gives_the_coder_its_start_and_the_diff_and_the_architect_its_facts(tmp_path):
    from engine_support.fake_judge import judge_in_process
    from engine_support.runs import KERNELS, agents, new_run, step, write_script
    from forgekernel.agents.scripted import ScriptedArchitect, load_script
    from forgekernel.delivery import make_runner
    from forgekernel.run import engine

    class RecordingArchitect(ScriptedArchitect):
        def __init__(self, script):
            super().__init__(script)
            self.seen = []

        def plan(self, ctx):
            self.seen.append(ctx)
            return super().plan(ctx)

    root = new_run(tmp_path)
    steps = [step("wrong.py", "M0.1"), step("torch_fast.py", "M0.1"), step("torch_slow.py", "M1.1")]
    script = write_script(tmp_path / "script.json", steps)
    coder, _ = agents(script)
    architect = RecordingArchitect(load_script(script))
    engine.run(root, coder, architect, judge_in_process, make_runner("cpu"), limits={"iterations": 3})
    stub = rundir.stub_kernel(rundir.open(root).task())
    first, retry, third = coder.seen[:3]
    assert first.current_source == stub and first.retry_diff == ""
    assert retry.current_source == stub and retry.retry == 1
    assert "+++ kernel.py (attempt #1)" in retry.retry_diff and "+    return x * weight" in retry.retry_diff
    assert third.current_source == (KERNELS / "torch_fast.py").read_text() and third.retry_diff == ""
    extra = architect.seen[0].extra
    assert extra["delivery"] == "cpu" and extra["timing"] == "cpu-interpret"
    assert extra["budget"]["iterations"] == {"used": 0, "limit": 3} and extra["best_source"] == ""
    assert [b["axes"] for b in extra["bounds"]][:2] == [{"M": 16, "N": 256}, {"M": 7, "N": 384}]
