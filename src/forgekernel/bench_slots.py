"""Which GPU each of `forge bench`'s jobs runs on, and when a problem must have its GPU alone.

With ``--share-gpu`` several problems run on one GPU at once; their judgements check
correctness side by side and take turns to time (:mod:`forgekernel.delivery.gpu_gate`). A
problem too big to share (its judge's estimated footprint over the share) still ran beside
problems whose verifiers kept their inputs and oracle outputs on the device while they waited
for their turn to time: on the H200 the 6 GB level-1 problems (ReLU, GELU, ELU, HardTanh at
4096 x 393216) found a few hundred MiB free of 140 GiB and failed. Such a problem now runs
its `forge run` with its GPU to itself: it gives back its job's slot, waits until the GPU's
other problems have finished (no new one starts there meanwhile), and holds the GPU alone.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path


class GpuSlots:
    """``jobs`` slots spread round-robin over ``gpus`` GPUs (index None for all when there
    are none): :meth:`take` and :meth:`give` a slot, :meth:`alone` for a GPU to oneself."""

    def __init__(self, jobs: int, gpus: int) -> None:
        self.free: Counter = Counter(i % gpus if gpus > 0 else None for i in range(max(1, jobs)))
        self.busy: Counter = Counter()
        self.claims: Counter = Counter()  # problems waiting for, or holding, a GPU alone
        self.owner: dict = {}
        self.cond = threading.Condition()

    def take(self) -> int | None:
        """A free slot's GPU, on a GPU no problem is waiting to have alone (blocks)."""
        with self.cond:
            while True:
                open_ = [g for g, n in self.free.items() if n > 0 and not self.claims[g]]
                if open_:  # the least busy GPU (the first of those): round-robin from the start
                    gpu = min(open_, key=lambda g: self.busy[g])
                    self.free[gpu] -= 1
                    self.busy[gpu] += 1
                    return gpu
                self.cond.wait()

    def give(self, gpu: int | None) -> None:
        with self.cond:
            self.free[gpu] += 1
            self.busy[gpu] -= 1
            self.cond.notify_all()

    @contextlib.contextmanager
    def alone(self, gpu: int | None) -> Iterator[None]:
        """From a problem holding one of ``gpu``'s slots: that GPU with no other problem on it
        for the block (waits for the running ones to finish; none starts there meanwhile)."""
        me = threading.get_ident()
        with self.cond:
            self.claims[gpu] += 1
            self.busy[gpu] -= 1  # its own slot waits too: two such problems never deadlock
            while self.busy[gpu] > 0 or self.owner.get(gpu) is not None:
                self.cond.wait()
            self.busy[gpu] += 1
            self.owner[gpu] = me
        try:
            yield
        finally:
            with self.cond:
                self.owner[gpu] = None
                self.claims[gpu] -= 1
                self.cond.notify_all()


def too_big_to_share(run_dir: Path, share_gb: float) -> bool:
    """Whether the judge's estimated device footprint for the task in ``run_dir`` (its largest
    workload, as the judge sizes it when asking for the GPU) is over ``share_gb`` GiB. A task
    that cannot be loaded here is not (its `forge run` says what is wrong with it)."""
    from forgekernel.judge.problem import Problem
    from forgekernel.judge.worker import FOOTPRINT_FACTOR
    from forgekernel.task import load_task

    try:
        task = load_task(run_dir / "task", check_reference=False)
        footprint = FOOTPRINT_FACTOR * Problem(task, "cpu").footprint(list(task.workloads))
    except Exception:  # noqa: BLE001 - bench.run_problem never raises
        return False
    return footprint > share_gb * (1 << 30)
