"""The executor's start, before any candidate code: what each step took (reported with the
load as data, never used for a verdict) and the GPU work every candidate needs first."""

from __future__ import annotations

import time


class Boot:
    """Seconds each step of the executor's start took (reported with the load, as data)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.last = time.perf_counter()

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = round(now - self.last, 3)
        self.last = now


def warm_cuda() -> None:
    """What every GPU candidate needs first, done before it is known (while the verifier
    calibrates): the CUDA context and Triton's driver utilities (a C module Triton builds
    with the host compiler into this executor's own cache on first use)."""
    import torch

    torch.cuda.init()
    torch.empty(1, device="cuda")
    try:
        from triton.runtime import driver

        driver.active.utils  # noqa: B018  (the property builds and loads the module)
    except Exception:  # no Triton or no driver here: the candidate's import says so itself
        pass
