"""The evolve dir: its options (evolve.toml), paths, creation and lock.

Layout (``.artifacts/evolve_<task>_<stamp>/``): ``evolve.toml`` (options, fixed at
creation), ``task/`` (snapshot), ``gen_<k>/`` (run dirs), ``sealed/gen_<k>/`` (sealed
kernels, plus ``gen_<k>.original.json``: the sealed kernel judged against the task's
reference), ``lineage.json``, ``lineage.md``, ``lineage.png``.
"""

from __future__ import annotations

import contextlib
import shutil
import tomllib
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Any

import tomli_w

from forgekernel import __version__
from forgekernel.config import Settings
from forgekernel.errors import ForgeError
from forgekernel.run import lockfile, rundir
from forgekernel.task import load_task

NOISE_RULES = ("auto", "on", "off")
CPU_ITERATIONS = 4
"""`forge evolve`'s attempts per generation on the cpu delivery unless --max-iterations is given."""


class EvolveError(ForgeError, ValueError):
    """Not an evolve dir, bad chain options, or a chain whose records disagree."""


@dataclass(frozen=True)
class ChainOptions:
    """How a chain runs; written to evolve.toml at creation and fixed from then on."""

    generations: int = 3
    """Most generations, generation 0 included."""
    max_iterations: int | None = None
    """Attempts per generation (default: the task's budget)."""
    max_minutes: float | None = None
    """Wall minutes per generation (default: the task's budget)."""
    chain_minutes: float | None = None
    """No new generation starts once the generations' runs used this many minutes."""
    noise_rule: str = "auto"
    """'auto' (device timings only), 'on' or 'off': when the noise-floor stop applies."""
    measure_original: bool = True
    """Judge every sealed kernel of generation >= 1 against the task's reference too."""
    profile: bool = True
    delivery: str = "cpu"
    agent: str = "builtin"
    architect: str = "builtin"
    model: str = ""
    script: str = ""
    """Scripted agent only: the script path; ``{generation}`` in it is replaced by k."""
    judge: str = ""
    """module:attr of a judge callable (tests); empty for forgekernel's judge."""

    def __post_init__(self) -> None:
        if self.generations < 1:
            raise EvolveError(f"--generations {self.generations}: at least 1")
        if self.noise_rule not in NOISE_RULES:
            raise EvolveError(f"--noise-rule {self.noise_rule!r}: use one of {', '.join(NOISE_RULES)}")

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ChainOptions:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in names})

@dataclass(frozen=True)
class Chain:
    """Paths of one evolve dir."""

    root: Path

    @property
    def toml(self) -> Path:
        return self.root / "evolve.toml"

    @property
    def task_dir(self) -> Path:
        return self.root / "task"

    def gen(self, k: int) -> Path:
        return self.root / f"gen_{k}"

    def sealed(self, k: int) -> Path:
        return self.root / "sealed" / f"gen_{k}"

    def meta(self) -> dict[str, Any]:
        """evolve.toml as a dict."""
        return tomllib.loads(self.toml.read_text())

    def options(self) -> ChainOptions:
        return ChainOptions.from_dict(self.meta().get("options", {}))


def is_chain(path: Path) -> bool:
    return (Path(path) / "evolve.toml").is_file()


def open_chain(path: str | Path) -> Chain:
    root = Path(path).resolve()
    if not is_chain(root) or not (root / "task" / "task.toml").is_file():
        raise EvolveError(f"{path}: not an evolve dir (no evolve.toml and task/); "
                          "start one with `forge evolve TASK_DIR`")
    return Chain(root)


def create(task_path: Path, options: ChainOptions, settings: Settings, out: Path | None = None) -> Path:
    """Make an evolve dir for the task at ``task_path``; returns its path."""
    task = load_task(task_path)
    if out is None:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        out = Path(settings.artifacts) / f"evolve_{task.name}_{stamp}"
        n = 1
        while out.exists():
            n += 1
            out = Path(settings.artifacts) / f"evolve_{task.name}_{stamp}-{n}"
    root = Path(out)
    if root.exists() and any(root.iterdir()):
        raise EvolveError(f"{root}: already exists and is not empty")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EvolveError(f"{root}: cannot create the evolve dir: {exc.strerror or exc}") from None
    shutil.copytree(task.root, root / "task", ignore=shutil.ignore_patterns(*rundir.IGNORED))
    meta = {"task": task.name, "source": str(Path(task.root).resolve()), "forgekernel": __version__,
            "created": datetime.now().astimezone().isoformat(timespec="seconds"),
            "options": options.to_dict()}
    rundir.atomic_write(root / "evolve.toml", tomli_w.dumps(meta))
    return root.resolve()


def locked(path: Path) -> contextlib.AbstractContextManager[None]:
    """One `forge evolve` per chain; the lock dies with its process (even on SIGKILL)."""
    return lockfile.exclusive(path, EvolveError(f"{path.parent}: another `forge evolve` is using this chain"))
