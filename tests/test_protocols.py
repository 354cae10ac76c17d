"""The seams of forgekernel.protocols: the concrete parts satisfy them, and a runner's
batch capability is an isinstance check."""

from __future__ import annotations

from forgekernel.agents.builtin import make_architect, make_coder
from forgekernel.delivery import make_runner
from forgekernel.judge.batch import judge_each
from forgekernel.protocols import Architect, BatchRunner, Coder, Runner


class TwoAtOnce:
    """A runner with run_many (it runs the jobs through the CPU runner)."""

    name, timing_label = "cpu", "cpu-interpret"

    def __init__(self) -> None:
        self.inner, self.calls = make_runner("cpu"), 0

    def run(self, job):
        return self.inner.run(job)

    def describe(self):
        return self.inner.describe()

    def run_many(self, jobs):
        self.calls += 1
        return [self.inner.run(j) for j in jobs]


def test_the_builtin_agents_are_a_coder_and_an_architect():
    assert isinstance(make_coder(), Coder) and isinstance(make_architect(), Architect)
    assert not isinstance(make_coder(), Architect)


def test_batch_capability_is_an_isinstance_check():
    cpu = make_runner("cpu")
    assert isinstance(cpu, Runner) and not isinstance(cpu, BatchRunner)
    both = TwoAtOnce()
    assert isinstance(both, Runner) and isinstance(both, BatchRunner)


def test_judge_each_uses_run_many_only_on_a_batch_runner(tmp_path):
    seen = []

    def judge(task, cand, runner):
        seen.append(type(runner).__name__)
        return cand

    cands = [tmp_path / "a", tmp_path / "b"]
    assert judge_each(judge, None, cands, make_runner("cpu")) == cands
    assert seen == ["CpuRunner", "CpuRunner"]
    seen.clear()
    assert sorted(judge_each(judge, None, cands, TwoAtOnce())) == sorted(cands)
    assert seen == ["_Gather", "_Gather"]
