"""Everything a run needs, checked before a run dir is created or a run resumes.

`forge run` (and `forge new`, `forge evolve`) pick the coder, the architect and the delivery
here and prove each usable: the agent's CLI or credential, and the claude CLI's login (its
own ``claude auth status``); the delivery and a GPU on it (``local``: torch sees one; ``ssh``:
the host is probed and prepared; ``ray``: the cluster, or this machine when it starts one,
has a GPU). A problem is one :class:`PreflightError` line and nothing has been written; the
built agents and runner are what the run then uses, so nothing is checked twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forgekernel.config import Settings
from forgekernel.errors import ForgeError


class PreflightError(ForgeError, ValueError):
    """Something a run needs is missing here (names it and the fix)."""


@dataclass(frozen=True)
class Wanted:
    """What run.toml (or, for a new run, the settings) says when no flag overrides it."""

    agent: str | None = None
    architect: str | None = None
    delivery: str = "auto"
    gpu: int | None = None


@dataclass
class Parts:
    """The checked coder, architect and runner of a run."""

    coder: Any
    architect: Any
    runner: Any
    delivery: str
    """The resolved delivery name (``auto`` never appears here)."""
    sandbox: str = ""
    """What will hold candidate code (:func:`sandbox_ready`)."""


def agent_names(agent: str | None, architect: str | None, wanted: Wanted,
                scripted: bool) -> tuple[str, str]:
    """(coder, architect): a flag wins, then run.toml / the settings, then ``builtin``."""
    coder = agent or ("scripted" if scripted else wanted.agent or "builtin")
    if agent or scripted:  # a coder chosen now brings its own architect unless one is named
        arch = architect or coder
    else:
        arch = architect or wanted.architect or coder
    if scripted and "scripted" not in (coder, arch):
        raise PreflightError("--script/--replay drive the scripted agent; drop --agent/--architect "
                             "or use 'scripted'")
    return coder, arch


def backend(name: str, role: str, settings: Settings, script: Path | None, login: bool = True) -> Any:
    """Build agent ``name`` for ``role``; its CLI, credential and (claude-code) login checked."""
    from forgekernel.agents import backend_module
    from forgekernel.cli.plan import agent_missing

    check_names(name)
    missing = agent_missing(name, settings)
    if missing:
        raise PreflightError(f"{role} agent '{name}' cannot run here: missing {'; '.join(missing)}")
    try:
        module = backend_module(name)
    except ImportError as exc:
        raise PreflightError(f"{role} agent '{name}' is not available in this install ({exc})") from None
    if login and hasattr(module, "check_login"):
        module.check_login(settings)
    kw = {"script": script} if name == "scripted" else {}
    make = module.make_coder if role == "coder" else module.make_architect
    return make(settings, **kw)


def runner(delivery: str, settings: Settings, gpu: int | None, connect: bool = True) -> tuple[Any, str]:
    """(runner, resolved name) for ``delivery``, proven usable: a GPU where one is needed.
    ``connect=False`` skips what needs the network (the ssh probe, joining a Ray cluster)."""
    from forgekernel.delivery.base import resolve_delivery
    from forgekernel.delivery.registry import make_runner

    name, _why = resolve_delivery(delivery)
    try:
        built = make_runner(name, gpu=gpu, settings=settings)
    except ValueError as exc:
        raise PreflightError(str(exc)) from None
    if name == "ray":
        _ray_ready(built, settings, connect)
    elif name == "ssh" and connect:
        built.prepare()  # probes the host (GPU included) and installs the judge there, once
    return built, name


def _ray_ready(built: Any, settings: Settings, connect: bool) -> None:
    import importlib.util

    from forgekernel.delivery.base import cuda_device_name

    if importlib.util.find_spec("ray") is None:
        raise PreflightError("the ray delivery needs Ray: pip install 'forgekernel[ray]'")
    if built.device == "cpu":
        return
    if not settings.ray_address:
        if cuda_device_name() is None:
            raise PreflightError("delivery 'ray' without RAY_ADDRESS starts a Ray cluster on this "
                                 "machine, which has no CUDA GPU; set RAY_ADDRESS to a cluster with "
                                 "GPUs, FK_REMOTE_DEVICE=cpu for interpreter-only judging, or use "
                                 "--delivery cpu")
        return
    if connect:
        try:
            built.connect()
        except ConnectionError as exc:
            raise PreflightError(f"cannot connect to the Ray cluster {settings.ray_address}: {exc}") from None


UNSAFE_NOTE = "none (--unsafe-no-sandbox: candidate code sees this user's files, network and environment)"


def sandbox_ready(delivery: str, unsafe: bool = False) -> str:
    """What will hold candidate code on ``delivery``: the sandbox found on this machine
    (cpu, local), or where the judge runs (ssh, ray: that machine's, checked there); a
    :class:`PreflightError` when none works here and ``unsafe`` (``--unsafe-no-sandbox``)
    was not given."""
    if unsafe:
        return UNSAFE_NOTE
    if delivery not in ("cpu", "local"):
        return f"the {delivery} worker's own (checked where it runs)"
    from forgekernel import sandbox

    ok, detail, fix = sandbox.describe()
    if not ok:
        raise PreflightError(f"no sandbox for candidate code on this machine ({detail}); fix: {fix}")
    return detail


def prepare(settings: Settings, wanted: Wanted, *, agent: str | None, architect: str | None,
            delivery: str | None, script: Path | None, unsafe_no_sandbox: bool = False) -> Parts:
    """Pick and check the coder, the architect, the runner (flags over ``wanted``) and the
    sandbox that will hold candidate code."""
    from forgekernel.delivery.base import resolve_delivery

    asked = delivery or (wanted.delivery if wanted.delivery != "auto" else settings.delivery)
    name = resolve_delivery(asked)[0]  # the cheap part first: `local` without a GPU, a bad name
    held = sandbox_ready(name, unsafe_no_sandbox)
    coder_name, arch_name = agent_names(agent, architect, wanted, script is not None)
    coder = backend(coder_name, "coder", settings, script)
    arch = backend(arch_name, "architect", settings, script, login=arch_name != coder_name)
    built, name = runner(name, settings, wanted.gpu if wanted.gpu is not None else settings.gpu)
    return Parts(coder, arch, built, name, held)


def check_names(*names: str) -> None:
    """A one-line error for an agent name no backend has."""
    from forgekernel.agents import BACKENDS

    for name in names:
        if name not in BACKENDS:
            raise PreflightError(f"unknown agent '{name}'; known: {', '.join(BACKENDS)}")


def login_problem(settings: Settings, *names: str) -> str:
    """Why an agent among ``names`` cannot call its model (claude-code's login), or ''."""
    if "claude-code" not in names:
        return ""
    from forgekernel.agents import claude_code
    from forgekernel.agents.base import AgentError

    try:
        claude_code.check_login(settings)
    except AgentError as exc:
        return str(exc)
    return ""


def price_problem(settings: Settings, *names: str) -> str:
    """Why an API agent among ``names`` could not be priced, when its model is known without
    asking a server (a local server's model is checked when `forge run` builds the agent)."""
    from forgekernel import prices
    from forgekernel.agents import anthropic_api, openai_api  # light: the SDKs load on use

    given = prices.parse(settings.price) if settings.price else None
    backends = {"anthropic": anthropic_api, "openai": openai_api}
    for name in dict.fromkeys(n for n in names if n in backends):
        model = backends[name].known_model(settings)
        if model and prices.missing(model, given):
            return f"{name} agent: {prices.missing(model, given)}"
    return ""


def check_new(settings: Settings, connect: bool = True, unsafe_no_sandbox: bool = False) -> str:
    """What `forge new` checks before it creates a run dir (the agents are built by `forge
    run`, which has the script a scripted agent needs); returns the resolved delivery."""
    from forgekernel.cli.plan import agent_missing

    coder = settings.agent or "builtin"
    names = (coder, settings.architect or coder)
    check_names(*names)
    for role, name in zip(("coder", "architect"), names, strict=True):
        missing = agent_missing(name, settings)
        if missing:
            raise PreflightError(f"{role} agent '{name}' cannot run here: missing {'; '.join(missing)}")
    problem = login_problem(settings, *names) or price_problem(settings, *names)
    if problem:
        raise PreflightError(problem)
    name = runner(settings.delivery, settings, settings.gpu, connect=connect)[1]
    sandbox_ready(name, unsafe_no_sandbox)
    return name


def judgeable(task: Any, delivery: str) -> None:
    """A task the delivery can judge: the cpu delivery (the Triton CPU interpreter) judges
    smoke workloads only, so a task without one stops here, before a run dir exists."""
    if delivery == "cpu" and not task.smoke_workloads():
        raise PreflightError(f"task {task.name} has no smoke workload, and the cpu delivery (the Triton "
                             "CPU interpreter) judges smoke workloads only (its task.toml says why); "
                             "run it on a GPU delivery (local, ssh, ray)")
