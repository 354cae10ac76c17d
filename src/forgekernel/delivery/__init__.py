"""Where a job runs: the Runner protocol and its backends.

``cpu``: a fresh local process under the Triton interpreter (correctness only, timings
labelled ``cpu-interpret``). ``local``: a fresh local process on this machine's GPU.
"""

from forgekernel.delivery.base import Job, JobResult
from forgekernel.delivery.registry import make_runner
from forgekernel.protocols import Runner

__all__ = ["Job", "JobResult", "Runner", "make_runner"]
