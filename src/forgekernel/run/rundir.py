"""The run directory: layout, creation, run.toml, and the candidate store.

Layout (``.artifacts/<task>_<stamp>/``)::

    task/                 snapshot of the task dir (task.toml, reference.py, ...)
    run.toml              resolved configuration (no secrets)
    reference.json        reference analysis: roofline floors, profiles when available
    curriculum.toml       the current plan with live statuses (a view of the ledger)
    curriculum.v<N>.toml  every version the architect made, as made
    ledger.jsonl          the append-only record (see forgekernel.run.ledger)
    workspace/            git repo the coder edits; HEAD is the best kernel so far
    candidates/<id>/      src/ (the judged files), agent.json, verdict.json, profile.json
    best/                 kernel.py (+ other files) and verdict.json of the best
    report.md, plots/     written at the end of every `forge run`
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import tomli_w

from forgekernel import __version__, candidate
from forgekernel.config import Settings
from forgekernel.errors import ForgeError
from forgekernel.records import TaskSpec
from forgekernel.run import runconfig
from forgekernel.task import load_task

IGNORED = candidate.IGNORED
"""Patterns git ignores in the workspace (dotfiles and caches are never part of a candidate)."""

ENGINE_DEFAULTS = runconfig.ENGINE_DEFAULTS
"""Engine knobs written into run.toml's [engine] table."""


class RunDirError(ForgeError, ValueError):
    """Not a run dir, or one that cannot be created."""


@dataclass(frozen=True)
class RunDir:
    """Paths of one run directory."""

    root: Path

    @property
    def task_dir(self) -> Path:
        return self.root / "task"

    @property
    def git_dir(self) -> Path:
        """The workspace's git repository, outside the workspace (out of an agent's reach)."""
        return self.root / "workspace.git"

    @property
    def run_toml(self) -> Path:
        return self.root / "run.toml"

    @property
    def ledger(self) -> Path:
        return self.root / "ledger.jsonl"

    @property
    def curriculum(self) -> Path:
        return self.root / "curriculum.toml"

    def curriculum_version(self, n: int) -> Path:
        return self.root / f"curriculum.v{n}.toml"

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def candidates(self) -> Path:
        return self.root / "candidates"

    def candidate(self, cid: str) -> Path:
        return self.candidates / cid

    def candidate_src(self, cid: str) -> Path:
        return self.candidates / cid / "src"

    @property
    def best(self) -> Path:
        return self.root / "best"

    @property
    def best_kernel(self) -> Path:
        return self.best / "kernel.py"

    @property
    def best_verdict(self) -> Path:
        return self.best / "verdict.json"

    @property
    def report(self) -> Path:
        return self.root / "report.md"

    @property
    def reference(self) -> Path:
        return self.root / "reference.json"

    @property
    def plots(self) -> Path:
        return self.root / "plots"

    @property
    def lock(self) -> Path:
        return self.root / ".lock"

    @cached_property
    def config(self) -> runconfig.RunConfig:
        """run.toml, read and checked once (a damaged file is a one-line RunConfigError)."""
        return runconfig.load(self.run_toml)

    def ledger_key(self) -> bytes | None:
        """The key that signs this run's ledger (None for a run dir made before sealing)."""
        from forgekernel.run import seal

        return seal.key_for(self.config.id, self.root)

    def task(self) -> TaskSpec:
        """The task snapshot (the reference is imported by the judge, not here), with the
        run's own target speedup (run.toml, which `forge run --target` sets)."""
        task = load_task(self.task_dir, check_reference=False)
        speedup = self.config.target
        if speedup is not None and speedup != task.target.speedup:
            task = task.model_copy(update={"target": task.target.model_copy(update={"speedup": speedup})})
        return task

    @property
    def target(self) -> float:
        """The run's target speedup: run.toml's [target], else the task's."""
        return self.task().target.speedup


def open(run_dir: str | Path) -> RunDir:  # noqa: A001 - the module is used as rundir.open
    """Open an existing run dir; a one-line error if ``run_dir`` is not one."""
    root = Path(run_dir).resolve()
    if not (root / "run.toml").is_file() or not (root / "task" / "task.toml").is_file():
        raise RunDirError(f"{run_dir}: not a run directory (no run.toml and task/); "
                          "create one with `forge new TASK_DIR`")
    rd = RunDir(root)
    rd.config  # noqa: B018 - read and checked once, here
    return rd


def write_config(rd: RunDir, data: dict[str, Any]) -> RunDir:
    """Check ``data`` as run.toml would be read, write it atomically, and reopen the run dir."""
    text = tomli_w.dumps(data)
    runconfig.parse(rd.run_toml, text)
    atomic_write(rd.run_toml, text)
    return open(rd.root)


def require_writable(rd: RunDir) -> None:
    """A one-line error unless `forge run` can write the run dir (its lock, records, files)."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".write-probe-", dir=rd.root)
        os.close(fd)
        os.unlink(probe)
        os.close(os.open(rd.lock, os.O_RDWR | os.O_CREAT, 0o644))
    except OSError as exc:
        raise RunDirError(f"{rd.root}: the run dir is not writable ({exc.strerror or exc}); "
                          "`forge run` records every attempt there: make it writable, or copy it "
                          "(cp -r) and run the copy; `forge status` reads it as it is") from None


def is_run_dir(path: Path) -> bool:
    return (path / "run.toml").is_file() and (path / "task").is_dir()


def create(task_path: Path, settings: Settings, out: Path | None = None,
           languages: list[str] | None = None, gpu: bool = False) -> Path:
    """Make a run dir for the task at ``task_path`` and return its path.

    ``out`` names the directory (it must not exist or be empty); by default it is
    ``<settings.artifacts>/<task>_<stamp>``. ``languages`` (the first one the run's own)
    replace the task's in the run's copy of task.toml. ``gpu``: the run judges on a GPU, so
    the copy's smoke workloads keep smoke-scaled axes at the problem's own values
    (:func:`forgekernel.kbtoml.own_values_in_smoke`).
    """
    from forgekernel import kbtoml
    from forgekernel.run import workspace

    task = load_task(task_path)
    root = Path(out) if out is not None else _fresh_dir(Path(settings.artifacts), task.name)
    if root.exists() and any(root.iterdir()):
        raise RunDirError(f"{root}: already exists and is not empty")
    made = not root.exists()
    try:
        root.mkdir(parents=True, exist_ok=True)
        rd = RunDir(root.resolve())
        shutil.copytree(task.root, rd.task_dir, ignore=shutil.ignore_patterns(*IGNORED))
        if languages:
            set_languages(rd.task_dir / "task.toml", languages)
            task = load_task(rd.task_dir)
        if gpu and kbtoml.own_values_in_smoke(rd.task_dir / "task.toml", task):
            task = load_task(rd.task_dir)
        atomic_write(rd.run_toml, tomli_w.dumps(run_config(task, settings)))
        rd.candidates.mkdir()
        workspace.Workspace(rd.workspace, rd.git_dir).init({"kernel.py": stub_kernel(task)})
    except (OSError, ForgeError) as exc:
        if made:  # no half-made run dir is left behind
            shutil.rmtree(root, ignore_errors=True)
        if isinstance(exc, ForgeError):
            raise
        raise RunDirError(f"{root}: cannot create the run dir: {exc.strerror or exc}") from None
    return rd.root


_LANGUAGE_LINE = re.compile(r'^languages?\s*=.*\n?', re.M)


def set_languages(toml_path: Path, languages: list[str]) -> None:
    """Set the top-level ``language`` (and ``languages`` when there are several) of a
    task.toml; the rest of the text is kept as it is."""
    text = toml_path.read_text()
    head_end = re.search(r"^\[", text, re.M)
    cut = head_end.start() if head_end else len(text)
    lines = f'language = "{languages[0]}"\n'
    if len(languages) > 1:
        lines += "languages = [" + ", ".join(f'"{x}"' for x in languages) + "]\n"
    head = _LANGUAGE_LINE.sub("", text[:cut])
    atomic_write(toml_path, lines + head + text[cut:])


def _fresh_dir(base: Path, name: str) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    root = base / f"{name}_{stamp}"
    n = 1
    while root.exists():
        n += 1
        root = base / f"{name}_{stamp}-{n}"
    return root


def run_config(task: TaskSpec, settings: Settings) -> dict[str, Any]:
    """The resolved configuration written to run.toml (no secrets, no None values)."""
    agent = settings.agent or "builtin"
    from forgekernel.run import seal

    cfg: dict[str, Any] = {
        "id": seal.new_run_id(), "task": task.name,
        "created": datetime.now().astimezone().isoformat(timespec="seconds"),
        "forgekernel": __version__, "delivery": settings.delivery, "agent": agent,
        "architect": settings.architect or agent,
        "budget": {"iterations": task.budget.iterations, "minutes": task.budget.minutes,
                   "dollars": task.budget.dollars},
        "target": {"speedup": task.target.speedup},
        "engine": dict(ENGINE_DEFAULTS),
    }
    if settings.model:
        cfg["model"] = settings.model
    if settings.gpu is not None:
        cfg["gpu"] = settings.gpu
    return cfg


def _model_signatures(reference: Path) -> tuple[str, str]:
    """The argument lists of the reference Model's __init__ and forward (with self)."""
    import ast

    found = {"__init__": "self, *args", "forward": "self, *inputs"}
    try:
        tree = ast.parse(reference.read_text())
    except (OSError, SyntaxError, ValueError):
        return found["__init__"], found["forward"]
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name in found:
                    found[fn.name] = ast.unparse(fn.args)
    return found["__init__"], found["forward"]


def stub_kernel(task: TaskSpec) -> str:
    """The workspace's starting kernel.py: the reference's signature, no implementation."""
    if task.format == "kernelbench":
        init, forward = _model_signatures(Path(task.root) / "reference.py")
        return (f'"""Candidate for {task.name}: ModelNew takes the reference Model\'s constructor '
                'arguments and forward inputs."""\n\nimport torch\n\n\nclass ModelNew(torch.nn.Module):\n'
                f'    def __init__({init}):\n        super().__init__()\n\n'
                f'    def forward({forward}):\n'
                '        raise NotImplementedError("write the kernel here")\n')
    args = ", ".join(task.inputs)
    return (f'"""Candidate for {task.name}: run({args}) must match reference.run."""\n\n\n'
            f"def run({args}):\n"
            '    raise NotImplementedError("write the kernel here")\n')


# ---------------------------------------------------------------- files

content_hash = candidate.source_hash
"""A candidate's identity (:func:`forgekernel.candidate.source_hash`, the judge's too)."""
candidate_files = candidate.source_files
copy_files = candidate.copy_files


def store_candidate(rd: RunDir, cid: str, src: Path, info: dict[str, Any]) -> Path:
    """Save the files of candidate ``cid`` under candidates/<id>/src (atomically) once."""
    final = rd.candidate_src(cid)
    if not final.exists():
        rd.candidate(cid).mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".src-", dir=rd.candidate(cid)))
        copy_files(src, tmp)
        _fsync_tree(tmp)
        os.replace(tmp, final)
    write_json(rd.candidate(cid) / "agent.json", info)
    return final


def install_best(rd: RunDir, cid: str, verdict: Any | None) -> None:
    """Replace ``best/`` with candidate ``cid``'s files (and its verdict) in one rename."""
    tmp = rd.root / ".best-tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    copy_files(rd.candidate_src(cid), tmp)
    if verdict is not None:
        write_json(tmp / "verdict.json", verdict.model_dump(mode="json"))
    shutil.rmtree(rd.best, ignore_errors=True)
    os.replace(tmp, rd.best)


def clean_partial(rd: RunDir) -> None:
    """Remove half-copied candidate dirs a kill left behind."""
    if rd.candidates.is_dir():
        for tmp in rd.candidates.glob("*/.src-*"):
            shutil.rmtree(tmp)


def _fsync_tree(root: Path) -> None:
    for rel in candidate.all_files(root):
        fd = os.open(root / rel, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: Path, text: str) -> None:
    """Write a whole file or nothing: temp file, fsync, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes 0600; these are ordinary, readable files
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, data: Any) -> None:
    atomic_write(path, json.dumps(data, indent=2, default=str) + "\n")


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def set_aside_if_made_elsewhere(run_dir: Path) -> Path | None:
    """A started run whose ledger key is not on this machine cannot be resumed here (nothing
    in its ledger can be checked): renamed beside itself, kept, so that it can start again.
    Returns the new name (None: nothing to set aside, or damaged in another way, which
    opening it reports)."""
    from datetime import UTC

    from forgekernel.run import seal

    if not (run_dir / "run.toml").is_file():
        return None
    try:
        open(run_dir).ledger_key()
        return None
    except seal.SealError:
        aside = run_dir.with_name(f"{run_dir.name}.elsewhere-{datetime.now(UTC):%Y%m%dT%H%M%S}")
    except ForgeError:
        return None
    run_dir.rename(aside)
    return aside
