"""Where probes ran: device name, driver version, library versions, date (worker side)."""

from __future__ import annotations

import datetime
import platform
import shutil
import subprocess

from forgekernel.kb.probes import ProbeEnv


def driver_version() -> str:
    """The NVIDIA driver version from nvidia-smi ('' when nvidia-smi is absent or fails)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return ""
    proc = subprocess.run([exe, "--query-gpu=driver_version", "--format=csv,noheader"],
                          capture_output=True, text=True, timeout=30, check=False)
    lines = proc.stdout.strip().splitlines()
    return lines[0].strip() if proc.returncode == 0 and lines else ""


def probe_env() -> ProbeEnv:
    """Describe this process's GPU and software."""
    import torch
    import triton

    import forgekernel

    props = torch.cuda.get_device_properties(0)
    versions = {"torch": torch.__version__, "triton": triton.__version__,
                "cuda": str(torch.version.cuda), "python": platform.python_version(),
                "forgekernel": forgekernel.__version__,
                "sm": f"{props.major}.{props.minor}", "sms": str(props.multi_processor_count)}
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return ProbeEnv(device=torch.cuda.get_device_name(0), driver=driver_version(),
                    versions=versions, date=date)
