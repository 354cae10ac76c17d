"""What this machine offers forgekernel: each check ok or missing, with the fix."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from importlib import metadata

from forgekernel.config import Settings


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = False


def _tool_version(cmd: list[str]) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[-1] if out.returncode == 0 and text else None


def _python() -> Check:
    ok = sys.version_info >= (3, 11)
    return Check("python", ok, f"{platform.python_version()} ({sys.executable})",
                 "" if ok else "use Python 3.11 or newer", required=True)


def installed(dist: str) -> str | None:
    """The installed version of a distribution, from its metadata (nothing is imported)."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _torch_and_gpu() -> list[Check]:
    version = installed("torch")
    if version is None:
        return [Check("torch", False, "not installed", "bash scripts/install.sh", required=True)]
    from forgekernel.delivery.base import cpu_only_torch

    if cpu_only_torch():  # no CUDA in this build: nothing to ask torch, no import
        fix = NO_GPU_FIX if not shutil.which("nvidia-smi") else (
            "nvidia-smi is here but torch is a CPU build: FK_TORCH_SPEC=torch bash scripts/install.sh")
        return [Check("torch", True, f"{version} (CPU build)", required=True),
                Check("gpu", False, "none usable: this torch is a CPU build", fix)]
    import torch  # a CUDA build: only torch can say whether it sees a GPU

    build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "CPU build"
    checks = [Check("torch", True, f"{version} ({build})", required=True)]
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability(0)
        checks.append(Check("gpu", True, f"{torch.cuda.get_device_name(0)} (sm{major}{minor}), "
                            f"{torch.cuda.device_count()} visible"))
    else:
        checks.append(Check("gpu", False, "no CUDA GPU visible to torch", NO_GPU_FIX))
    return checks


NO_GPU_FIX = ("runs use the cpu delivery (Triton interpreter, correctness only); for timings use "
              "a GPU machine or FK_DELIVERY=ssh")


def _triton() -> Check:
    version = installed("triton")
    if version is None:
        return Check("triton", False, "not installed", "pip install triton", required=True)
    return Check("triton", True, version, required=True)


def _tools() -> list[Check]:
    out = []
    for name, args, fix in (
        ("git", ["--version"], "apt-get install git (run workspaces are git repos)"),
        ("nvcc", ["--version"], "install the CUDA toolkit (CUDA candidates, compile reports)"),
        ("ncu", ["--version"], "install Nsight Compute (hardware-counter profiles)"),
        ("compute-sanitizer", ["--version"], "ships with the CUDA toolkit (race/memory checks)"),
    ):
        path = shutil.which(name)
        version = _tool_version([path, *args]) if path else None
        out.append(Check(name, bool(version), version or "not found", "" if version else fix,
                         required=name == "git"))
    out.append(_cute())
    return out


def _cute() -> Check:
    """The CuTe DSL from package metadata (importing cutlass takes a second)."""
    from forgekernel.delivery.base import cpu_only_torch

    cute = installed("nvidia-cutlass-dsl")
    if not cute:
        return cute_check(None, [], None)
    libs = [v for v in ("cu12", "cu13") if installed(f"nvidia-cutlass-dsl-libs-{v}")]
    if cpu_only_torch() or installed("torch") is None:  # nothing to run CuTe kernels with here
        return cute_check(cute, libs, None)
    import torch  # a CUDA build, imported by the torch check already

    return cute_check(cute, libs, torch.version.cuda)


def cute_check(cute: str | None, libs: list[str], torch_cuda: str | None) -> Check:
    """The doctor's line for the CuTe DSL ``cute`` (its version, None: not installed) with
    libraries for ``libs`` (cu12, cu13) beside a torch built for CUDA ``torch_cuda``."""
    if not cute:
        return Check("CuTe DSL", False, "not installed", "pip install 'forgekernel[cute]' (CuTe DSL candidates)",
                     required=False)
    detail = f"nvidia-cutlass-dsl {cute}, libraries for {', '.join(libs) or 'no CUDA'}"
    want = f"cu{torch_cuda.split('.')[0]}" if torch_cuda else None
    if want and want not in libs:
        return Check("CuTe DSL", False, f"{detail}; torch is built for CUDA {torch_cuda}",
                     f"pip install nvidia-cutlass-dsl-libs-{want}=={cute} (with the cu12 libraries "
                     "beside a CUDA 13 torch a CuTe kernel's first launch never completed)", required=False)
    return Check("CuTe DSL", True, detail, required=False)


def _agents(settings: Settings) -> list[Check]:
    from forgekernel.cli.plan import _bundled_claude

    claude = settings.claude_bin or shutil.which("claude") or _bundled_claude()
    version = _tool_version([claude, "--version"]) if claude else None
    checks = [Check("claude CLI", bool(version), f"{version} ({claude})" if version else "not found",
                    "" if version else "pip install 'forgekernel[llm]' (bundles it) or set FK_CLAUDE_BIN")]
    if version:
        checks.append(_claude_login(settings))
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        present = settings.secrets_present.get(key, False)
        checks.append(Check(key, present, "set (value not shown)" if present else "not set",
                            "" if present else "export it or put it in local.env"))
    for sdk in ("anthropic", "openai"):  # versions from metadata: importing them takes seconds
        version = installed(sdk)
        checks.append(Check(f"{sdk} SDK", bool(version), version or "not installed",
                            "" if version else "pip install 'forgekernel[llm]'"))
    return checks


def _claude_login(settings: Settings) -> Check:
    """The CLI's own `claude auth status` (local; what `--agent claude-code` checks first)."""
    from forgekernel.agents import claude_code
    from forgekernel.agents.base import AgentError

    try:
        how = claude_code.check_login(settings, probe=False)
    except AgentError as exc:
        return Check("claude login", False, "not logged in", claude_code.LOGIN_FIX if
                     "not logged in" in str(exc) else str(exc))
    return Check("claude login", True, how)


def _delivery(settings: Settings) -> list[Check]:
    checks = [Check("delivery", True, f"{settings.delivery} (from {settings.sources.get('delivery', 'default')})")]
    try:
        from forgekernel.delivery.checks import check_delivery
    except ImportError:
        return checks
    for name, ok, detail in check_delivery(settings):
        checks.append(Check(name, ok, detail))
    return checks


def _sandbox(settings: Settings) -> Check:
    """Which sandbox runs untrusted workers (bubblewrap, the stdlib launcher) or what is missing."""
    from forgekernel.sandbox import describe

    ok, detail, fix = describe(settings.bwrap)
    return Check("sandbox", ok, detail, fix)


def run_checks(settings: Settings) -> list[Check]:
    return [_python(), *_torch_and_gpu(), _triton(), *_tools(), _sandbox(settings),
            *_agents(settings), *_delivery(settings)]


def as_json(checks: list[Check]) -> list[dict]:
    return [asdict(c) for c in checks]
