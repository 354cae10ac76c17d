"""The sealed performance reference of a self-evolution generation.

When a generation of ``forge evolve`` ends with an accepted best, its files are *sealed*:
copied into the chain dir (``sealed/gen_<k>/``) and named by their content hash. The next
generation's run dir records that kernel in run.toml::

    [perf_reference]
    dir = "../sealed/gen_0"     # relative to the run dir (or absolute)
    hash = "3109c4b012ccc971"   # content hash of the sealed files
    generation = 0

Every judgement in that run times the candidate against the sealed kernel (the judge's
``JudgeOptions.perf_reference``); correctness is still checked against the task's
PyTorch reference in float64 by the judge. Before each use the sealed files are copied to
a private directory and re-hashed: a sealed kernel that changed on disk is an error, never
a silent new reference. ``forge run`` on such a run dir goes through :func:`for_run_dir`,
so resuming a generation by hand judges exactly as ``forge evolve`` does.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from forgekernel import candidate
from forgekernel.errors import ForgeError
from forgekernel.records import TaskSpec, Verdict
from forgekernel.run import rundir

TABLE = "perf_reference"
"""The run.toml table naming a run's sealed performance reference."""
CARRY_FILE = "carry.json"
"""In a generation's run dir: what the previous generation left (see forgekernel.evolve.carry)."""

Hasher = Callable[[Path], str]


class SealError(ForgeError, RuntimeError):
    """A sealed kernel is missing or its files no longer match the recorded hash."""


def verify(path: Path, expected: str, hasher: Hasher = rundir.content_hash) -> None:
    """Raise SealError unless the kernel files at ``path`` hash to ``expected``."""
    if not (path / "kernel.py").is_file():
        raise SealError(f"{path}: the sealed kernel is missing (expected hash {expected})")
    if not candidate.matches(path, expected, hasher):
        got = hasher(path)
        raise SealError(f"{path}: the sealed kernel's files hash to {got}, not the recorded "
                        f"{expected}; it was modified after sealing")


def seal(src: Path, dest: Path, expected: str, hasher: Hasher = rundir.content_hash) -> None:
    """Freeze the candidate files at ``src`` into ``dest`` (atomically; a no-op if sealed).

    ``src`` must hash to ``expected`` before the copy and the copy after it.
    """
    if dest.exists():
        verify(dest, expected, hasher)
        return
    verify(src, expected, hasher)
    tmp = dest.with_name(f".{dest.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    rundir.copy_files(src, tmp)
    for rel in candidate.all_files(tmp):
        fd = os.open(tmp / rel, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    verify(tmp, expected, hasher)
    os.replace(tmp, dest)


# ---------------------------------------------------------------- run.toml


def set_reference(run_dir: Path, sealed: Path, digest: str, generation: int) -> None:
    """Record ``sealed`` (hash ``digest``, from ``generation``) as the run's performance reference."""
    rd = rundir.RunDir(Path(run_dir))
    cfg = rd.config.data()
    cfg[TABLE] = {"dir": os.path.relpath(Path(sealed).resolve(), rd.root.resolve()),
                  "hash": digest, "generation": generation}
    rundir.write_config(rd, cfg)


def reference_of(rd: rundir.RunDir) -> tuple[Path, str] | None:
    """(sealed dir, hash) of the run's performance reference, or None for the task's own."""
    table = rd.config.raw.get(TABLE)
    if not table:
        return None
    if not isinstance(table, dict) or not isinstance(table.get("dir"), str) \
            or not isinstance(table.get("hash"), str):
        raise SealError(f"{rd.run_toml}: [{TABLE}] needs dir and hash strings")
    path = Path(table["dir"])
    return (path if path.is_absolute() else (rd.root / path).resolve()), table["hash"]


# ---------------------------------------------------------------- judging


def options_for(perf_reference: Path | None) -> Any:
    """The judge options that make ``perf_reference`` the timing reference."""
    from forgekernel.judge.options import JudgeOptions

    return JudgeOptions(perf_reference=perf_reference)


class ReferenceJudge:
    """A judge that times candidates against a sealed kernel (verified before each use).

    ``judge`` is called as ``judge(task, candidate_dir, runner, options=JudgeOptions(...))``:
    the real judge's signature; test judges that take part in a chain accept it too.
    """

    def __init__(self, judge: Callable[..., Verdict], sealed: Path, digest: str,
                 hasher: Hasher = rundir.content_hash) -> None:
        self.judge, self.sealed, self.digest, self.hasher = judge, Path(sealed), digest, hasher

    def __call__(self, task: TaskSpec, candidate_dir: Path, runner: Any) -> Verdict:
        with tempfile.TemporaryDirectory(prefix="forge-sealed-") as tmp:
            copy = Path(tmp) / "reference"
            verify(self.sealed, self.digest, self.hasher)
            rundir.copy_files(self.sealed, copy)
            verify(copy, self.digest, self.hasher)
            return self.judge(task, candidate_dir, runner, options=options_for(copy))


def for_run_dir(rd: rundir.RunDir, architect: Any, judge: Callable[..., Verdict],
                hasher: Hasher = rundir.content_hash) -> tuple[Any, Callable[..., Verdict]]:
    """The architect and judge a run dir made by ``forge evolve`` needs (others: unchanged).

    The judge times against the sealed reference named in run.toml; the architect sees the
    previous generation's outcome (``carry.json``) in its context.
    """
    from forgekernel.evolve.carry import CarryArchitect, load_carry

    ref = reference_of(rd)
    if ref is not None:
        verify(ref[0], ref[1], hasher)
        judge = ReferenceJudge(judge, ref[0], ref[1], hasher)
    carried = load_carry(rd.root / CARRY_FILE)
    if carried is not None:
        architect = CarryArchitect(architect, carried)
    return architect, judge
