"""The built-in coder's search: which configuration to try next, from what was measured.

Everything is derived from the attempt history: each built-in attempt's summary is the
canonical JSON of its configuration (:meth:`templates.Config.key`), so the set of judged
configurations and their speedups survive restarts without any state of our own.

A row's ``params`` say what to search::

    {"template": "rownorm_row", "knobs": {"NUM_WARPS": 8}}            # exactly this point
    {"template": "rownorm_row", "space": {"NUM_WARPS": [4, 8, 16]}}   # search these values

A point row proposes its configuration once. A space row searches around a centre: the
best passed configuration of that template so far (else the template's defaults with the
row's knobs), which moves whenever a better one is measured. ``"mode": "sweep"`` (the
default for one or two knobs) tries every value of each knob with the others at the
centre, nearest first; ``"mode": "climb"`` (the default for more knobs) tries only the
nearest value on each side along each knob, never stepping past a value already judged
(it was no better, or the centre would have moved there). When nothing is left the row
is exhausted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from forgekernel import templates
from forgekernel.agents.base import AttemptNote
from forgekernel.templates import Config


@dataclass(frozen=True)
class Outcome:
    """What happened to one configuration: the judge's status and speedup (if PASSED)."""

    config: Config
    status: str
    speedup: float | None

    @property
    def passed(self) -> bool:
        return self.status == "PASSED" and self.speedup is not None


def outcomes(history: Iterable[AttemptNote]) -> dict[str, Outcome]:
    """Config key -> latest outcome, from the history's built-in summaries."""
    out: dict[str, Outcome] = {}
    for note in history:
        cfg = Config.of(note.data, note.summary)
        if cfg is None:
            continue
        out[cfg.key()] = Outcome(cfg, note.status, note.speedup)
    return out


def best(tried: Mapping[str, Outcome], template: str | None = None) -> Outcome | None:
    """The passed configuration with the highest speedup (of ``template``, if given)."""
    passed = [o for o in tried.values() if o.passed and template in (None, o.config.template)]
    return max(passed, key=lambda o: o.speedup or 0.0) if passed else None


def _valid(tpl: templates.Template, knobs: Mapping[str, Any]) -> bool:
    names = {k.name for k in tpl.knobs}
    return set(knobs) <= names


def centre(params: Mapping[str, Any], tried: Mapping[str, Outcome]) -> Config:
    """The point a row searches around (see the module docstring)."""
    tpl = templates.template(params["template"])
    fixed = dict(params.get("knobs") or {})
    top = best(tried, tpl.name)
    if top is not None and _valid(tpl, top.config.knobs):
        return templates.complete(tpl, {**top.config.knobs, **fixed})
    return templates.complete(tpl, fixed)


def _order(values: list[int], current: int) -> tuple[list[int], list[int]]:
    """Values below and above ``current``, each nearest first."""
    vals = sorted(set(values))
    return [v for v in reversed(vals) if v < current], [v for v in vals if v > current]


def candidates(params: Mapping[str, Any], tried: Mapping[str, Outcome]) -> list[Config]:
    """Untried configurations the row may propose next, best guess first."""
    tpl = templates.template(params["template"])
    mid = centre(params, tried)
    space = params.get("space") or {}
    if mid.key() not in tried:
        return [mid]
    sweep = params.get("mode", "sweep" if len(space) <= 2 else "climb") == "sweep"
    found: list[tuple[int, Config]] = []
    for name, values in space.items():
        tpl.knob(name)
        for side in _order([int(v) for v in values], mid.knobs[name]):
            for dist, value in enumerate(side):
                cfg = Config(tpl.name, {**mid.knobs, name: value})
                if cfg.key() not in tried:
                    found.append((dist, cfg))
                elif not sweep:
                    break  # climb: one judged there was no better than the centre
                if not sweep:
                    break  # climb: only the nearest value on each side
    return [cfg for _, cfg in sorted(found, key=lambda t: t[0])]


def next_config(params: Mapping[str, Any], history: Iterable[AttemptNote]) -> Config | None:
    """The configuration to judge next for a row, or None when the row is exhausted."""
    found = candidates(params, outcomes(history))
    return found[0] if found else None


def exhausted(params: Mapping[str, Any], history: Iterable[AttemptNote]) -> bool:
    return next_config(params, history) is None
