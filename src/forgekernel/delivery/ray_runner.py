"""The ``ray`` delivery: judge jobs as Ray tasks that each hold one GPU.

With ``RAY_ADDRESS`` the runner joins that cluster and ships this forgekernel package to
it (Ray's ``py_modules``); without it, it starts a local Ray cluster on this machine. Each
job is one task asking for one GPU, so Ray never places two on the same GPU; inside the
task the job runs as on a local delivery, in a fresh worker process with its own process
group, hard timeout, output cap, signed result pipe and the node's per-GPU flock (which
also keeps out jobs started outside Ray). :meth:`RayRunner.run_many` judges a batch at
once, as many in parallel as the cluster has GPUs.

Ray is an optional dependency (``pip install 'forgekernel[ray]'``), imported on first use.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from forgekernel.delivery.base import Job, JobResult
from forgekernel.delivery.shipping import DeliveryError, pack_inputs

DEVICES = ("gpu", "cpu")


def import_ray():
    """The ``ray`` module, or a one-line DeliveryError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise DeliveryError("the ray delivery needs Ray: pip install 'forgekernel[ray]'") from None
    return ray


def ray_job(spec: dict[str, Any], inputs: bytes, device: str) -> dict[str, Any]:
    """Body of one Ray task: run the job in a fresh local worker on this task's GPU."""
    import ray

    from forgekernel.delivery.remote_exec import local_runner
    from forgekernel.delivery.shipping import unpack_inputs

    gpu_ids = [str(g) for g in ray.get_gpu_ids()]
    gpu = int(gpu_ids[0]) if gpu_ids and gpu_ids[0].isdigit() else None
    jobdir = Path(tempfile.mkdtemp(prefix="forgekernel-ray-"))
    try:
        (jobdir / "cwd").mkdir()
        spec = {**spec, "payload": unpack_inputs(spec["payload"], inputs, jobdir),
                "cwd": str(jobdir / "cwd")}
        started = time.time()
        result = local_runner(device, gpu, "ray").run(Job(**spec))
        ended = time.time()
    finally:
        shutil.rmtree(jobdir, ignore_errors=True)
    return {"job": result.model_dump(), "gpu_ids": gpu_ids, "node": socket.gethostname(),
            "started": started, "ended": ended}


class RayRunner:
    """Runs jobs as one-GPU Ray tasks; :meth:`run_many` runs a batch concurrently."""

    name = "ray"

    def __init__(self, address: str | None = None, *, device: str | None = None,
                 num_gpus: int | None = None, num_cpus: int | None = None,
                 init_kwargs: dict[str, Any] | None = None, max_retries: int = 2) -> None:
        device = device or "gpu"
        if device not in DEVICES:
            raise DeliveryError(f"FK_REMOTE_DEVICE must be gpu or cpu, got {device!r}")
        self.address, self.device, self.max_retries = address, device, max_retries
        self.num_gpus, self.num_cpus = num_gpus, num_cpus
        self.init_kwargs = dict(init_kwargs or {})
        self.placements: list[dict[str, Any]] = []
        """For the last batch, per job: the GPU ids, node and wall-clock start/end of its task."""
        self._task = None
        self._lock = threading.Lock()

    @property
    def timing_label(self) -> str:
        return "cpu-interpret" if self.device == "cpu" else "device"

    def describe(self) -> dict[str, Any]:
        return {"delivery": self.name, "timing": self.timing_label, "device": self.device,
                "address": self.address or "local cluster"}

    def connect(self) -> dict[str, float]:
        """Join (or start) the cluster once; return its resources. Needs at least one GPU."""
        with self._lock:
            return self._connect()

    def _connect(self) -> dict[str, float]:
        ray = import_ray()
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                      "logging_level": "ERROR"}
            if self.address:
                import forgekernel

                kwargs["runtime_env"] = {"py_modules": [str(Path(forgekernel.__file__).parent)]}
            else:
                kwargs.update(num_gpus=self.num_gpus, num_cpus=self.num_cpus,
                              object_store_memory=128 * 1024 * 1024)
            ray.init(address=self.address or "local", **{**kwargs, **self.init_kwargs})
        resources = ray.cluster_resources()
        if resources.get("GPU", 0) < 1:
            raise DeliveryError(f"the Ray cluster ({self.address or 'local'}) has no GPU resources "
                                "(start its workers with --num-gpus, or use another delivery)")
        if self._task is None:
            self._task = ray.remote(ray_job).options(num_gpus=1, max_retries=self.max_retries)
        return resources

    def run(self, job: Job) -> JobResult:
        return self.run_many([job])[0]

    def run_many(self, jobs: list[Job]) -> list[JobResult]:
        """Judge ``jobs`` concurrently, one GPU each; results in the order of ``jobs``."""
        ray = import_ray()
        self.connect()
        refs = []
        for job in jobs:
            payload, inputs = pack_inputs(job.payload)
            spec = {**job.model_dump(), "payload": payload, "cwd": None}
            refs.append(self._task.remote(spec, inputs, self.device))
        try:
            answers = ray.get(refs)
        except ray.exceptions.RayError as exc:
            for ref in refs:
                with contextlib.suppress(ray.exceptions.RayError, ValueError, TypeError):
                    ray.cancel(ref, force=True)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise DeliveryError(f"a Ray judge task failed after {self.max_retries} retries: "
                                f"{type(exc).__name__}: {first}") from None
        self.placements = [{k: a[k] for k in ("gpu_ids", "node", "started", "ended")} for a in answers]
        return [JobResult(**a["job"]) for a in answers]

    def shutdown(self) -> None:
        """Disconnect from the cluster (and stop it, if this runner started it)."""
        ray = import_ray()
        if ray.is_initialized():
            ray.shutdown()
        self._task = None
