"""run.toml read once into a RunConfig; damaged or read-only run dirs are one line, exit 2."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from engine_support.runs import REPO, new_run
from forgekernel.cli import main
from forgekernel.run import engine, runconfig, rundir
from forgekernel.run.state import Limits


def forge(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_error(err: str, *texts: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("forge: error: "), err
    for text in texts:
        assert text in lines[0], err
    return lines[0]


def edit_run_toml(root: Path, old: str, new: str) -> None:
    path = root / "run.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(("old", "new", "texts"), [
    ("iterations = 40", 'iterations = "many"', ["[budget] iterations = 'many'", "whole number >= 1"]),
    ("[budget]", "[budget", ["run.toml: not valid TOML", "line"]),
    ('delivery = "cpu"', 'delivery = "gpu"', ["delivery = 'gpu'", "one of auto, cpu, local, ssh, ray"]),
    ("max_retries = 3", "max_retries = 0", ["[engine] max_retries = 0", "whole number >= 1"]),
    ("noise_floor = 0.02", "noise_flor = 0.02", ["[engine] noise_flor: unknown key",
                                                 "max_retries, stall_after, max_replans, noise_floor"]),
    ("speedup = 1000.0", 'speedup = "fast"', ["[target] speedup = 'fast'", "number > 0"]),
    ('agent = "scripted"', "agent = 7", ["agent = 7: must be a non-empty string"]),
    ('task = "rmsnorm"', 'model = [1]\ntask = "rmsnorm"', ["model = [1]: must be a string"]),
    ("minutes = 90", "minutes = -1", ["[budget] minutes = -1", "number > 0"]),
])
def test_a_damaged_run_toml_is_one_line_for_status_and_run(capsys, tmp_path, old, new, texts):
    root = new_run(tmp_path)
    edit_run_toml(root, old, new)
    for argv in (["status", root], ["status", root, "--json"], ["run", root, "--delivery", "cpu"]):
        code, _, err = forge(capsys, *argv)
        assert code == 2, err
        one_error(err, str(root / "run.toml"), *texts)


def test_run_config_defaults_once(tmp_path):
    root = new_run(tmp_path)
    edit_run_toml(root, "[engine]", "[old_engine]")  # an older run.toml without [engine]
    cfg = rundir.open(root).config
    assert cfg.engine == runconfig.EngineKnobs() and cfg.budget.batch == 1
    assert cfg.raw["old_engine"]["max_retries"] == 3  # unknown tables are kept for their owners
    lim = Limits.from_config(cfg, 2.0, iterations=5, batch=None)
    assert (lim.iterations, lim.target, lim.max_retries, lim.noise_floor, lim.batch) == (5, 2.0, 3, 0.02, 1)
    assert engine.load_state(rundir.open(root)).max_retries == 3


def test_without_a_target_table_the_tasks_target_is_the_runs(tmp_path):
    root = new_run(tmp_path)
    edit_run_toml(root, "[target]\nspeedup = 1000.0", "")
    rd = rundir.open(root)
    assert rd.config.target is None and rd.target == rd.task().target.speedup == 1.2


def test_writers_keep_the_file_valid(tmp_path):
    rd = rundir.open(new_run(tmp_path))
    data = rd.config.data()
    data["budget"]["iterations"] = "many"
    with pytest.raises(runconfig.RunConfigError, match="iterations"):
        rundir.write_config(rd, data)
    assert rundir.open(rd.root).config.budget.iterations == 40  # nothing was written


# ------------------------------------------------------------------ read-only run dirs


def _readonly_prefix(path: Path) -> list[str] | None:
    """A command prefix that runs a command with ``path`` mounted read-only (a private mount
    namespace), or None where that is not permitted."""
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", 'mount --bind -o ro "$0" "$0" && ! touch "$0/x"',
                            str(path)], capture_output=True, text=True)
    if probe.returncode != 0:
        return None
    return ["unshare", "-rm", "sh", "-c", 'mount --bind -o ro "$0" "$0" && shift && exec "$@"', str(path), "-"]


def test_a_read_only_run_dir_is_one_line_and_status_still_reads_it(tmp_path):
    base = Path(tempfile.mkdtemp(prefix="fk-ro-"))
    try:
        root = new_run(base)
        prefix = _readonly_prefix(root)
        if prefix is None:
            pytest.skip("cannot mount a directory read-only here (unshare -rm not permitted)")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO / "tests")])}
        cli = [sys.executable, "-m", "forgekernel.cli"]
        run = subprocess.run([*prefix, *cli, "run", str(root), "--agent", "builtin", "--delivery", "cpu",
                              "--max-iterations", "3"], capture_output=True, text=True, env=env, timeout=120)
        assert run.returncode == 2, run.stderr
        one_error(run.stderr, f"{root}: the run dir is not writable (Read-only file system)")
        status = subprocess.run([*prefix, *cli, "status", str(root)], capture_output=True, text=True,
                                env=env, timeout=120)
        assert status.returncode == 0 and "not started" in status.stdout, status.stderr
        assert rundir.open(root).config.budget.iterations == 40  # the flag was not written either
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_run_dir_that_cannot_be_written_is_refused_before_the_engine(tmp_path):
    rd = rundir.open(new_run(tmp_path))
    rd.lock.mkdir()  # a lock that cannot be opened for writing
    with pytest.raises(rundir.RunDirError, match="the run dir is not writable"):
        rundir.require_writable(rd)
