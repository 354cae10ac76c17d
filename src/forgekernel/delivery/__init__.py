"""Where a job runs: the Runner protocol and its backends.

``cpu``: a fresh local process under the Triton interpreter (correctness only, timings
labelled ``cpu-interpret``). ``local``: a fresh local process on this machine's GPU.
"""

from forgekernel import lazy

_ORIGIN = {"Job": "forgekernel.delivery.base", "JobResult": "forgekernel.delivery.base",
           "make_runner": "forgekernel.delivery.registry", "Runner": "forgekernel.protocols"}
"""Imported on first use (:mod:`forgekernel.lazy`)."""

__all__ = sorted(_ORIGIN)
__getattr__ = lazy.attributes(__name__, _ORIGIN)
