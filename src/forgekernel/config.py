"""Configuration, merged once at the edge: defaults < local.env < environment < CLI flags.

This is the only module that reads environment variables. Inner code receives a resolved
:class:`Settings` (and, for SDK credentials, calls :func:`secret`). Secret values are never
stored in Settings or printed; only whether they are present.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from forgekernel.errors import ForgeError

ENV_KEYS = {
    "FK_DELIVERY": "delivery",
    "FK_GPU": "gpu",
    "FK_GPU_SHARE_GB": "gpu_share_gb",
    "FK_GPU_LOCK_LOG": "gpu_lock_log",
    "REMOTE_HOST": "remote_host",
    "REMOTE_WORKDIR": "remote_workdir",
    "FK_AGENT": "agent",
    "FK_ARCHITECT": "architect",
    "FK_MODEL": "model",
    "FK_ARTIFACTS": "artifacts",
    "ANTHROPIC_BASE_URL": "anthropic_base_url",
    "OPENAI_BASE_URL": "openai_base_url",
    "FK_CLAUDE_BIN": "claude_bin",
    "FK_KB_DIR": "kb_dir",
    "FK_REMOTE_PYTHON": "remote_python",
    "FK_SSH_CONFIG": "ssh_config",
    "RAY_ADDRESS": "ray_address",
    "FK_REMOTE_DEVICE": "remote_device",
    "FK_BWRAP": "bwrap",
    "FK_PRICE": "price",
    "FK_EFFORT": "effort",
}
"""Environment / local.env variable -> Settings field."""

SECRET_KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN")
"""Credentials: reported as present or missing, never stored in Settings."""

DELIVERIES = ("auto", "cpu", "local", "ssh", "ray")
EFFORTS = ("low", "medium", "high")


class ConfigError(ForgeError, ValueError):
    """A bad configuration value (names the key and where it came from)."""


class Settings(BaseModel):
    """Resolved configuration for one command."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    delivery: Literal["auto", "cpu", "local", "ssh", "ray"] = "auto"
    """Where judge jobs run; ``auto`` = ``local`` when a CUDA GPU is visible, else ``cpu``."""
    gpu: int | None = None
    """GPU index for the ``local`` delivery (CUDA_VISIBLE_DEVICES for the worker)."""
    gpu_share_gb: float | None = None
    """``local`` delivery: judgements whose estimated device footprint is at most this many
    GiB run their untimed phases (correctness) beside other jobs on the same GPU; timing
    always has it alone. None: each job holds the GPU alone from its first GPU work."""
    gpu_lock_log: str | None = None
    """``local`` delivery: append one JSON line per job to this file (module, modes granted,
    seconds waiting for the GPU and holding it), to see where a shared GPU's time goes."""
    remote_host: str | None = None
    """ssh alias of the GPU host (``ssh`` delivery)."""
    remote_workdir: str | None = None
    """Directory on the remote host where jobs run (``ssh`` delivery)."""
    agent: str | None = None
    """Coder backend; None = ``builtin``."""
    architect: str | None = None
    """Architect backend; None = the same as the coder."""
    model: str | None = None
    """Model name for LLM backends."""
    artifacts: str = ".artifacts"
    """Where `forge new` puts run directories."""
    anthropic_base_url: str | None = None
    openai_base_url: str | None = None
    claude_bin: str | None = None
    """Path of the `claude` CLI (default: found on PATH)."""
    remote_python: str | None = None
    """Python on the remote host (``ssh`` delivery); None = ``python3``."""
    ssh_config: str | None = None
    """ssh client config file for the ``ssh`` delivery (``ssh -F``); None = ssh's usual ones."""
    ray_address: str | None = None
    """Ray cluster address (``ray`` delivery); None = start a local Ray cluster."""
    remote_device: str | None = None
    """``gpu`` (default) or ``cpu`` (Triton interpreter) for jobs on the ``ssh``/``ray`` delivery."""
    kb_dir: str | None = None
    """Hardware knowledge base directory (default: ``hw_kb/`` at the repository root)."""
    bwrap: str | None = None
    """bubblewrap binary for the worker sandbox (default: ``bwrap`` on PATH)."""
    price: str | None = None
    """``IN,OUT``: USD per million input and output tokens of the LLM, for a model the price
    table does not know (a local server: ``0,0``)."""
    effort: Literal["low", "medium", "high"] | None = None
    """How hard the model thinks before it answers (opt-in): extended thinking on anthropic,
    ``reasoning_effort`` on openai, ``--effort`` for the claude CLI. None: the provider's
    default (no extended thinking)."""
    secrets_present: dict[str, bool] = Field(default_factory=dict)
    sources: dict[str, str] = Field(default_factory=dict)
    """Field -> where its value came from (default, local.env, environment, flag)."""


def read_env_file(path: Path) -> dict[str, str]:
    """Parse KEY=VALUE lines (comments and blanks ignored, optional quotes stripped)."""
    out: dict[str, str] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[7:].lstrip()
        if "=" not in line:
            raise ConfigError(f"{path}:{n}: expected KEY=VALUE, got {line!r}")
        key, value = (s.strip() for s in line.split("=", 1))
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key] = value
    return out


def _layers(cwd: Path) -> list[tuple[str, dict[str, str]]]:
    layers = []
    env_file = cwd / "local.env"
    if env_file.is_file():
        layers.append(("local.env", read_env_file(env_file)))
    layers.append(("environment", {k: v for k, v in os.environ.items() if k in ENV_KEYS or k in SECRET_KEYS}))
    return layers


def load_settings(flags: dict[str, Any] | None = None, cwd: Path | None = None) -> Settings:
    """Merge defaults, local.env, the environment and CLI flags (None flags are unset)."""
    cwd = cwd or Path.cwd()
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    secrets: dict[str, bool] = {k: False for k in SECRET_KEYS}
    for where, layer in _layers(cwd):
        for key, value in layer.items():
            if key in SECRET_KEYS:
                secrets[key] = secrets[key] or bool(value)
            elif key in ENV_KEYS and value != "":
                values[ENV_KEYS[key]] = value
                sources[ENV_KEYS[key]] = where
    for key, value in (flags or {}).items():
        if value is not None:
            values[key] = value
            sources[key] = "flag"
    if "gpu" in values:
        try:
            values["gpu"] = int(values["gpu"])
        except (TypeError, ValueError):
            raise ConfigError(f"FK_GPU ({sources['gpu']}) must be a GPU index, got {values['gpu']!r}") from None
    if "gpu_share_gb" in values:
        try:
            share = float(values["gpu_share_gb"])
        except (TypeError, ValueError):
            share = -1.0
        if not share > 0:
            raise ConfigError(f"FK_GPU_SHARE_GB ({sources['gpu_share_gb']}) must be a positive number of "
                              f"GiB, got {values['gpu_share_gb']!r}")
        values["gpu_share_gb"] = share
    if values.get("delivery", "auto") not in DELIVERIES:
        raise ConfigError(f"delivery {values['delivery']!r} ({sources.get('delivery')}) is not "
                          f"one of {', '.join(DELIVERIES)}")
    if values.get("effort") not in (None, *EFFORTS):
        raise ConfigError(f"effort {values['effort']!r} ({sources.get('effort')}) is not one of "
                          f"{', '.join(EFFORTS)}")
    if values.get("price") is not None:
        from forgekernel.prices import PriceError, parse

        try:
            parse(values["price"])
        except PriceError as exc:
            raise ConfigError(f"FK_PRICE ({sources['price']}): {exc}") from None
    return Settings(**values, secrets_present=secrets, sources=sources)


def secret(name: str, cwd: Path | None = None) -> str | None:
    """A credential's value for an SDK (environment first, then local.env); None if unset."""
    if name not in SECRET_KEYS:
        raise KeyError(name)
    if os.environ.get(name):
        return os.environ[name]
    env_file = (cwd or Path.cwd()) / "local.env"
    if env_file.is_file():
        return read_env_file(env_file).get(name) or None
    return None


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a child process this package starts (agents' CLIs, workers)."""
    env = dict(os.environ)
    env.update(extra or {})
    return env


WORKER_ENV_ALLOW: tuple[str, ...] = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "LANG", "LANGUAGE", "LC_*", "TZ", "TERM",
    "XDG_*", "VIRTUAL_ENV", "CONDA_PREFIX", "PYTHON*", "CC", "CXX", "LD_LIBRARY_PATH",
    "CUDA_*", "NVIDIA_*", "TRITON_*", "TORCH_*", "TORCHINDUCTOR_*", "PYTORCH_*", "OMP_*", "MKL_*",
    "FK_*",
)
"""Environment names (patterns) a worker process (the judge's verifier, the profiler) gets:
what Python, CUDA, Triton and forge read. API keys, tokens and cloud credentials are not
among them; names that look like one are dropped even when a pattern matches."""
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE")


def worker_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a worker process: :data:`WORKER_ENV_ALLOW` of this one, no name
    that looks like a credential, then ``extra``."""
    import fnmatch

    env = {k: v for k, v in os.environ.items()
           if any(fnmatch.fnmatchcase(k, p) for p in WORKER_ENV_ALLOW)
           and not any(w in k.upper() for w in _SECRET_WORDS)}
    env.update(extra or {})
    return env


def state_home() -> Path:
    """forge's own state directory (ledger keys): FK_STATE_DIR, else
    $XDG_STATE_HOME/forgekernel, else ~/.local/state/forgekernel."""
    if os.environ.get("FK_STATE_DIR"):
        return Path(os.environ["FK_STATE_DIR"])
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "forgekernel"

