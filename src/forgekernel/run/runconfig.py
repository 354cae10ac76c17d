"""``run.toml``, resolved once into a typed :class:`RunConfig` when a run dir opens.

The engine's limits, `forge run`'s agent and delivery selection, `forge status` and the
report all read the record; nothing else parses run.toml or repeats its defaults. A damaged
file is one line naming the file, the key, what it holds and what is allowed::

    forge: error: RUN/run.toml: [budget] iterations = 'many': must be a whole number >= 1

Keys this module does not know (``[evolve]``, ``[perf_reference]``, ...) are kept as they
are in :attr:`RunConfig.raw` for the modules that own them.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forgekernel.errors import ForgeError

DELIVERIES = ("auto", "cpu", "local", "ssh", "ray")


class RunConfigError(ForgeError, ValueError):
    """run.toml is unreadable, not TOML, or holds a value a key does not allow."""


@dataclass(frozen=True)
class Budget:
    """``[budget]``: what the whole run may spend (all sessions together)."""

    iterations: int = 40
    minutes: float = 90.0
    dollars: float = 20.0
    batch: int = 1
    """Candidates the coder proposes per row before they are judged together."""


@dataclass(frozen=True)
class EngineKnobs:
    """``[engine]``: how the loop paces itself."""

    max_retries: int = 3
    """Failed attempts on one row before it is closed."""
    stall_after: int = 6
    """Attempts without a new best before the architect re-plans."""
    max_replans: int = 4
    noise_floor: float = 0.02
    """Relative gain a new best needs when the verdict carries no noise floor."""


ENGINE_DEFAULTS = dataclasses.asdict(EngineKnobs())
"""The [engine] table `forge new` writes."""


@dataclass(frozen=True)
class RunConfig:
    """run.toml as read: every key checked, defaults applied once."""

    path: Path
    id: str | None = None
    """The run's id: names its ledger key (:mod:`forgekernel.run.seal`); None before sealing."""
    task: str = ""
    delivery: str = "auto"
    agent: str | None = None
    architect: str | None = None
    model: str | None = None
    gpu: int | None = None
    target: float | None = None
    """``[target] speedup``; None: the task's own (see ``RunDir.task``)."""
    budget: Budget = field(default_factory=Budget)
    engine: EngineKnobs = field(default_factory=EngineKnobs)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The file's tables as parsed (unknown keys included); :meth:`data` copies it for writers."""

    def data(self) -> dict[str, Any]:
        """A deep copy of the parsed file, for a writer to change and write back."""
        return copy.deepcopy(dict(self.raw))


# ---------------------------------------------------------------- checks

Check = Callable[[Any], Any]
"""A value check: returns the value to use, or raises ValueError saying what is allowed."""


def _number(low: float, *, above: bool = False) -> Check:
    rule = f"a number {'>' if above else '>='} {low:g}"

    def check(v: Any) -> float:
        ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
        if not ok or v < low or (above and v == low):
            raise ValueError(f"must be {rule}")
        return float(v)
    return check


def _whole(low: int) -> Check:
    def check(v: Any) -> int:
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if not isinstance(v, int) or isinstance(v, bool) or v < low:
            raise ValueError(f"must be a whole number >= {low}")
        return v
    return check


def _text(v: Any) -> str:
    if not isinstance(v, str):
        raise ValueError("must be a string")
    return v


def _name(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ValueError("must be a non-empty string")
    return v


def _delivery(v: Any) -> str:
    if v not in DELIVERIES:
        raise ValueError(f"must be one of {', '.join(DELIVERIES)}")
    return v


TOP: dict[str, Check] = {"id": _text, "task": _text, "created": _text, "forgekernel": _text,
                         "delivery": _delivery, "agent": _name, "architect": _name,
                         "model": _text, "gpu": _whole(0)}
BUDGET: dict[str, Check] = {"iterations": _whole(1), "minutes": _number(0, above=True),
                            "dollars": _number(0), "batch": _whole(1)}
TARGET: dict[str, Check] = {"speedup": _number(0, above=True)}
ENGINE: dict[str, Check] = {"max_retries": _whole(1), "stall_after": _whole(1),
                            "max_replans": _whole(0), "noise_floor": _number(0)}
TABLES = {"budget": BUDGET, "target": TARGET, "engine": ENGINE}


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _table(path: Path, name: str, raw: Any, checks: dict[str, Check]) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise RunConfigError(f"{path}: {name} = {_show(raw)}: must be a table "
                             f"([{name}] with {', '.join(checks)})")
    out = {}
    for key, value in raw.items():
        where = f"[{name}] {key}" if name else key
        if key not in checks:
            if name:
                raise RunConfigError(f"{path}: [{name}] {key}: unknown key (allowed: "
                                     f"{', '.join(checks)})")
            continue
        try:
            out[key] = checks[key](value)
        except ValueError as exc:
            raise RunConfigError(f"{path}: {where} = {_show(value)}: {exc}") from None
    return out


def parse(path: Path, text: str) -> RunConfig:
    """Check the text of run.toml at ``path``; one-line RunConfigError when it is damaged."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RunConfigError(f"{path}: not valid TOML ({exc}); fix or restore it") from None
    top = _table(path, "", raw, TOP)
    tables = {name: _table(path, name, raw.get(name), checks) for name, checks in TABLES.items()}
    return RunConfig(path=path, id=top.get("id"), task=top.get("task", ""),
                     delivery=top.get("delivery", "auto"),
                     agent=top.get("agent"), architect=top.get("architect"), model=top.get("model"),
                     gpu=top.get("gpu"), target=tables["target"].get("speedup"),
                     budget=Budget(**tables["budget"]), engine=EngineKnobs(**tables["engine"]),
                     raw=raw)


def load(path: Path) -> RunConfig:
    """Read and check run.toml."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RunConfigError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise RunConfigError(f"{path}: not valid TOML (not UTF-8 text); fix or restore it") from None
    return parse(path, text)
