"""The runner for a delivery name: the one place that knows every backend (the backends
import only :mod:`forgekernel.delivery.base`, so nothing imports back into here)."""

from __future__ import annotations

from typing import Any

from forgekernel.protocols import Runner


def make_runner(name: str, *, gpu: int | None = None, settings: Any = None) -> Runner:
    """Build the runner for a delivery name; unknown names raise ValueError.

    ``ssh`` and ``ray`` read their host, work dir, Python, ssh config, cluster address and
    device from ``settings`` (a :class:`forgekernel.config.Settings`; loaded afresh when
    not given); ``gpu`` overrides ``settings.gpu``. Nothing connects until the first job.
    """
    from forgekernel.delivery.local import CpuRunner, LocalGpuRunner

    if name == "cpu":
        return CpuRunner()
    if name == "local":
        if settings is None:
            return LocalGpuRunner(gpu=gpu)
        return LocalGpuRunner(gpu=gpu, share_gb=settings.gpu_share_gb, lock_log=settings.gpu_lock_log)
    if name in ("ssh", "ray"):
        from forgekernel.config import load_settings

        settings = settings or load_settings()
        gpu = gpu if gpu is not None else settings.gpu
        if name == "ssh":
            from forgekernel.delivery.ssh import ssh_runner

            return ssh_runner(settings, gpu=gpu)
        from forgekernel.delivery.ray_runner import RayRunner

        return RayRunner(settings.ray_address, device=settings.remote_device)
    raise ValueError(f"unknown delivery '{name}'; use cpu, local, ssh or ray")
