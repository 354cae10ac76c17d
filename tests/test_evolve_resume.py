"""A real `forge evolve` process killed (SIGKILL) mid-chain and re-run continues the chain:
no generation repeated, each one timed against its predecessor's sealed best."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from evolve_support import chains
from forgekernel.evolve import lineage as evolve_lineage
from forgekernel.records import Attempt
from forgekernel.run import rundir
from forgekernel.run.ledger import SessionEvent, StartedEvent, read

TESTS = Path(__file__).resolve().parent


def _forge(args: list[str], log: Path, command: str = "evolve") -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    with log.open("a") as out:
        return subprocess.Popen([sys.executable, "-m", "forgekernel.cli", command, *args], env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _kill_when(proc: subprocess.Popen, ready, timeout: float = 180.0) -> bool:
    """SIGKILL the process group once ``ready()`` holds; False if the process ended first."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if ready():
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    raise AssertionError("the kill point was never reached")


def _has(path: Path, text: str) -> bool:
    return path.is_file() and text in path.read_text()


def test_killed_chain_resumes_without_repeating_a_generation(tmp_path):
    pattern = chains.write_scripts(tmp_path, [["sleep_30", "sleep_20"], ["sleep_12"], ["sleep_20"]])
    chain, log = tmp_path / "chain", tmp_path / "forge.log"
    args = [str(chains.TASK), "--generations", "4", "--script", pattern, "--delivery", "cpu",
            "--judge", "evolve_support.chain_judge:judge", "--noise-rule", "on", "--no-profile",
            "--out", str(chain)]
    # killed while judging generation 0's first candidate, then inside generation 1
    killed = _kill_when(_forge(args, log), lambda: _has(chain / "gen_0" / "ledger.jsonl", '"started"'))
    assert _kill_when(_forge([str(chain)], log), lambda: _has(chain / "gen_1" / "ledger.jsonl", '"started"'))
    # generation 1 finished by hand with `forge run`: it judges against the sealed reference too
    by_hand = _forge([str(chain / "gen_1"), "--script", pattern.format(generation=1),
                      "--judge", "evolve_support.chain_judge:judge"], log, command="run")
    assert by_hand.wait(timeout=300) == 2, log.read_text()[-3000:]  # 2: the test target is out of reach
    # killed once generation 1 is sealed but not yet in the lineage; then run to the end
    killed += _kill_when(_forge([str(chain)], log), lambda: (chain / "sealed" / "gen_1").exists())
    assert killed >= 1, log.read_text()[-3000:]
    final = _forge([str(chain)], log)
    assert final.wait(timeout=300) == 0, log.read_text()[-3000:]

    data = evolve_lineage.load(chain)
    gens = data["generations"]
    assert [e["generation"] for e in gens] == [0, 1, 2]
    assert data["stop"]["kind"] == "noise_floor" and data["stop"]["generation"] == 2
    assert gens[0]["reference_hash"] == rundir.content_hash(chain / "task")
    for prev, e in zip(gens, gens[1:], strict=False):
        assert e["reference_hash"] == prev["best_hash"]
        assert rundir.content_hash(chain / prev["sealed"]) == prev["best_hash"]
    for k in range(3):
        events = read(chain / f"gen_{k}" / "ledger.jsonl")[0]
        seqs = [e.seq for e in events if isinstance(e, Attempt)]
        assert len(seqs) == len(set(seqs)) and seqs == sorted(seqs)
        assert {e.seq for e in events if isinstance(e, StartedEvent)} <= set(seqs)
    # every judgement of generation 1 was timed against generation 0's best (20 ms), not the task's (60 ms)
    refs = [e.verdict.workloads[0].reference_ms for e in read(chain / "gen_1" / "ledger.jsonl")[0]
            if isinstance(e, Attempt) and e.verdict is not None]
    assert refs and all(12 < r < 40 for r in refs), refs
    resumed = [k for k in range(3)
               if sum(isinstance(e, SessionEvent) for e in read(chain / f"gen_{k}" / "ledger.jsonl")[0]) > 1]
    assert resumed, "no generation's run was resumed"
    assert not list(chain.glob(".gen_*.tmp")) and not list((chain / "sealed").glob(".*"))
