"""Health checks of the configured delivery, for ``forge doctor``.

:func:`check_delivery` returns ``(name, ok, detail)`` rows; a failing row's detail says
what to fix. It never raises for a bad or unreachable configuration: that is what it
reports. The cpu and local deliveries run the echo worker once; ssh probes the host and
runs the echo worker there; ray checks the package and the cluster's GPU resources.
"""

from __future__ import annotations

import shutil
import time
from typing import Any

from forgekernel.errors import ForgeError

Row = tuple[str, bool, str]
ECHO = "forgekernel.delivery.echo_worker"


def _round_trip(name: str, runner: Any) -> Row:
    from forgekernel.delivery.base import Job

    start = time.monotonic()
    try:
        res = runner.run(Job(module=ECHO, payload={"act": "echo", "ping": 1}, timeout_s=120))
    except ForgeError as exc:
        return (name, False, str(exc))
    if not res.ok or res.result.get("echo", {}).get("ping") != 1:
        return (name, False, f"the echo worker did not answer: {res.describe_failure()}")
    return (name, True, f"echo worker answered in {time.monotonic() - start:.1f} s "
                        f"({runner.timing_label})")


def _local(settings: Any) -> list[Row]:
    from forgekernel.delivery.base import resolve_delivery
    from forgekernel.delivery.registry import make_runner

    try:
        chosen, why = resolve_delivery(settings.delivery)
    except ForgeError as exc:
        return [("delivery resolved", False, str(exc))]
    runner = make_runner(chosen, gpu=settings.gpu)
    return [("delivery resolved", True, f"{chosen}: {why}"), _round_trip("worker round trip", runner)]


def _module_row(info: dict[str, Any], module: str, required: bool) -> Row:
    found = info["modules"][module]
    if found["ok"]:
        return (f"remote {module}", True, found["version"])
    fix = f"pip install {module} with {info['executable']}"
    return (f"remote {module}", not required, f"{found['error']}; {fix}")


def _gpu_row(info: dict[str, Any], device: str) -> Row:
    gpu = info.get("gpu", {})
    if gpu.get("available"):
        return ("remote GPU", True, f"{gpu['count']} x {gpu['names'][0]} ({gpu.get('sm')}, CUDA {gpu.get('cuda')})")
    if device == "cpu":
        return ("remote GPU", True, "none; FK_REMOTE_DEVICE=cpu, so jobs run under the Triton "
                                    "interpreter (cpu-interpret, correctness only)")
    return ("remote GPU", False, "torch sees no CUDA GPU there; fix the host, or set "
                                 "FK_REMOTE_DEVICE=cpu for interpreter-only judging")


def _ssh(settings: Any) -> list[Row]:
    from forgekernel.delivery.ssh import ssh_runner

    if not shutil.which("ssh"):
        return [("ssh client", False, "not found; apt-get install openssh-client")]
    try:
        runner = ssh_runner(settings, gpu=settings.gpu)
        info = runner.probe()
    except ForgeError as exc:
        return [("ssh reachable", False, str(exc))]
    rows: list[Row] = [
        ("ssh reachable", True, f"{settings.remote_host} -> {info['host']}"),
        ("remote python", bool(info["python_ok"]), f"{info['python']} ({info['executable']})"
         + ("" if info["python_ok"] else "; needs 3.11.4 or newer (set FK_REMOTE_PYTHON)")),
        ("remote workdir", not info["workdir_error"], info["workdir_error"] or info["workdir"]),
        _module_row(info, "pydantic", True), _module_row(info, "torch", True),
        _module_row(info, "triton", False), _gpu_row(info, runner.device),
    ]
    if all(ok for _, ok, _ in rows):
        rows.append(_round_trip("ssh round trip", runner))
    return rows


def _ray(settings: Any) -> list[Row]:
    from forgekernel.delivery.ray_runner import RayRunner, import_ray

    try:
        ray = import_ray()
    except ForgeError as exc:
        return [("ray", False, str(exc))]
    rows: list[Row] = [("ray", True, ray.__version__)]
    if not settings.ray_address:
        from forgekernel.delivery.base import cuda_device_name

        gpu = cuda_device_name()
        ok = bool(gpu) or settings.remote_device == "cpu"
        rows.append(("ray cluster", ok, "RAY_ADDRESS unset: forge starts a local Ray cluster; "
                     + (f"this machine's GPU: {gpu}" if gpu else "this machine has no CUDA GPU")))
        return rows
    runner = RayRunner(settings.ray_address, device=settings.remote_device)
    try:
        res = runner.connect()
        nodes = len([n for n in ray.nodes() if n.get("Alive")])
        rows.append(("ray cluster", True, f"{settings.ray_address}: {nodes} node(s), "
                     f"{res.get('GPU', 0):g} GPU(s), {res.get('CPU', 0):g} CPU(s)"))
        rows.append(_round_trip("ray round trip", runner))
    except ForgeError as exc:
        rows.append(("ray cluster", False, str(exc)))
    except ConnectionError as exc:
        rows.append(("ray cluster", False, f"cannot connect to {settings.ray_address}: {exc}"))
    finally:
        runner.shutdown()
    return rows


def check_delivery(settings: Any) -> list[Row]:
    """Check the delivery ``settings`` configure: (name, ok, detail or fix) per check."""
    if settings.delivery == "ssh":
        return _ssh(settings)
    if settings.delivery == "ray":
        return _ray(settings)
    return _local(settings)
