"""Where a judgement's wall time goes, by the verifier's clock: its phases in order
(``profile['phases']``) and the time spent per kind of work, summed (``profile['spent']``)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator


class Phases:
    """Wall seconds of each phase of the judgement (``profile['phases']``)."""

    def __init__(self, into: dict[str, float]) -> None:
        self.into = into

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.into[name] = round(time.perf_counter() - start, 3)


class Spent:
    """Wall seconds the verifier spent per kind of work, summed (``profile['spent']``):
    where a verdict's time goes, by the verifier's clock (the executor's requests by name).
    Each kind also keeps its slowest single occurrence (``max``): a sum made of a few slow
    first calls reads differently from one of many equal ones."""

    def __init__(self) -> None:
        self.totals: dict[str, list[float]] = {}

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - start)

    def add(self, name: str, seconds: float) -> None:
        """Count ``seconds`` of work measured elsewhere under ``name``."""
        entry = self.totals.setdefault(name, [0, 0.0, 0.0])
        entry[0] += 1
        entry[1] += seconds
        entry[2] = max(entry[2], seconds)

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {k: {"n": int(n), "s": round(s, 3), "max": round(top, 3)}
                for k, (n, s, top) in sorted(self.totals.items())}
