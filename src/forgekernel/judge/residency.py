"""Where the verifier keeps its own copies of a workload's tensors, and how much device memory
it plans with.

A correctness trial holds, besides the candidate's staging pool and its executor's buffers,
the pristine inputs, both runs' outputs, the inputs after the first run and the float64
oracle: with everything on the device that is about DEVICE_COPIES times the workload's input
and output bytes. A workload over that share of the device's free memory (KernelBench's
largest level-1 problems move 6-13 GB per call; an 80 GB card then ran out of memory in the
verifier and the candidate was told it had) keeps the copies the verifier only compares in
host memory, and the comparisons stream them back a bounded piece at a time
(:mod:`forgekernel.judge.values`); only the staging pool, the executor's buffers and the
oracle stay on the device. Whatever the plan, the verifier gives its cached blocks back
before each candidate call of a workload over RELEASE_SHARE of the device, since its
executor is another process and cannot use them.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import Any

DEVICE_COPIES = 8
"""Device bytes a trial keeps per byte of the workload's inputs and outputs when every copy
is on the device (pristine inputs, staging, two outputs, inputs after, oracle, executor)."""
RELEASE_SHARE = 1 / 64
"""Share of the device's memory above which a workload's calls start from an emptied cache."""


@dataclass(frozen=True)
class Residency:
    """The plan for one workload: copies in host memory or not, cache emptied before calls."""

    host: bool = False
    release: bool = False

    def keep(self, t: Any) -> Any:
        """A copy of ``t`` (a tensor) where the verifier keeps its copies."""
        return t.to("cpu", copy=True) if self.host else t.clone()

    def keep_all(self, args: list[Any]) -> list[Any]:
        import torch

        return [self.keep(a) if isinstance(a, torch.Tensor) else a for a in args]

    def hold(self, args: list[Any]) -> list[Any]:
        """``args`` moved to host memory under a host plan (their device copies then freed
        once the caller drops them), else ``args`` themselves."""
        return self.keep_all(args) if self.host else args


def staging_bytes(need: int, slots: list[Any]) -> int:
    """The size of a new staging pool: what this call ``need``s, or the largest workload's
    calls (``slot.staged_bytes``, from calibration) if more. A pool is freed only with its
    executor: grown call by call, it kept each smaller one (24 GiB for a 6.4 GB ReLU whose
    hidden workload was slightly larger than its visible one)."""
    return max([need] + [s.staged_bytes for s in slots])


def io_bytes(args: list[Any], out_bytes: int) -> int:
    """Bytes of a call's tensor inputs and its outputs (``out_bytes``)."""
    import torch

    return out_bytes + sum(a.numel() * a.element_size() for a in args if isinstance(a, torch.Tensor))


def plan(io: int, device_bytes: int | None) -> Residency:
    """The residency of a workload moving ``io`` bytes per call on a device with
    ``device_bytes`` free (None: not a GPU, everything stays where it is)."""
    if device_bytes is None:
        return Residency()
    return Residency(host=io * DEVICE_COPIES > device_bytes, release=io > RELEASE_SHARE * device_bytes)


def release(torch: Any) -> None:
    """The verifier's unused cached device blocks back to the driver (for its executors)."""
    gc.collect()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def free_bytes(torch: Any, cuda: bool, planned_gib: float | None) -> int | None:
    """The device memory to plan with: ``planned_gib`` when given (``forge judge
    --device-memory``), else what the device reports free now; None off the GPU unless given."""
    if planned_gib is not None:
        return int(planned_gib * (1 << 30))
    if not cuda:
        return None
    return int(torch.cuda.mem_get_info()[0])
