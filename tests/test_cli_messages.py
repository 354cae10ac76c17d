"""What a newcomer reads: fresh status, plurals, unknown agents, --help, oversized smoke workloads."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from engine_support.runs import REPO, new_run
from forgekernel.cli import main

RMSNORM = REPO / "tasks" / "rmsnorm"


def forge(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_status_of_a_fresh_run_dir_reads_plainly(capsys, tmp_path):
    code, out, _ = forge(capsys, "status", new_run(tmp_path))
    assert code == 0
    assert "vNone" not in out and "none open" not in out
    assert "plan      not made yet: the architect plans when `forge run` starts" in out


def test_dry_run_counts_rows_in_words(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = forge(capsys, "new", RMSNORM, "--dry-run", "--delivery", "cpu")
    assert code == 0, out
    assert ", 1 row;" in out and "1 rows" not in out


@pytest.mark.parametrize("args", [["--agent", "gpt5"], ["--architect", "gpt5"]])
@pytest.mark.parametrize("dry", [True, False])
def test_an_unknown_agent_is_named_with_the_known_ones(capsys, tmp_path, monkeypatch, args, dry):
    monkeypatch.chdir(tmp_path)
    code, out, err = forge(capsys, "new", RMSNORM, "--delivery", "cpu", *args,
                           *(["--dry-run"] if dry else ["--out", tmp_path / "never"]))
    assert code == 2 and out == ""
    assert err == ("forge: error: unknown agent 'gpt5'; known: builtin, scripted, claude-code, "
                   "anthropic, openai\n")
    assert not (tmp_path / "never").exists()


def helptext(*args: str) -> str:
    env = {**os.environ, "COLUMNS": "80"}
    proc = subprocess.run([sys.executable, "-m", "forgekernel.cli", *args, "--help"], capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_help_names_every_delivery_and_never_truncates_an_option():
    for command in ("run", "new", "evolve"):
        text = " ".join(helptext(command).split())
        assert "cpu, local, ssh, ray or auto" in text or "auto, cpu, local, ssh or ray" in text, command
    evolve = helptext("evolve")
    assert "--measure-original / --no-measure-original" in evolve and "…" not in evolve


def test_a_smoke_workload_too_large_for_the_interpreter_gets_one_warning(capsys, tmp_path, monkeypatch):
    task = tmp_path / "big"
    shutil.copytree(RMSNORM, task)
    toml = (task / "task.toml").read_text().replace("M = 16\nN = 256\nsmoke = true",
                                                    "M = 1048576\nN = 1048576\nsmoke = true")
    (task / "task.toml").write_text(toml)
    monkeypatch.chdir(tmp_path)
    code, out, _ = forge(capsys, "new", task, "--dry-run", "--delivery", "cpu")
    warnings = [line for line in out.splitlines() if line.startswith("warning")]
    assert code == 0 and len(warnings) == 1, out
    assert "smoke workload M=1048576 N=1048576 moves 4.0 TiB of tensors" in warnings[0]
    assert "keep smoke workloads under 64.0 MiB" in warnings[0]
    code, out, _ = forge(capsys, "new", task, "--dry-run", "--delivery", "cpu", "--json")
    assert len(json.loads(out)["warnings"]) == 1
    code, out, _ = forge(capsys, "new", RMSNORM, "--dry-run", "--delivery", "cpu")
    assert "warning" not in out
