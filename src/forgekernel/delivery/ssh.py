"""The ``ssh`` delivery: judge jobs run on a GPU host reached with the system's OpenSSH client.

``REMOTE_HOST`` is an ssh alias (or ``user@host``) that logs in without a prompt. Every
connection uses ``BatchMode=yes`` (a prompt would be a failure, not a hang) and ssh's usual
host-key checking. Once per runner the host is probed (Python, pydantic, torch, triton,
CUDA) and the judge bundle (this forgekernel package, named by version and content hash)
is installed under ``REMOTE_WORKDIR/judge/`` if it is not there yet. Each job then runs
through :mod:`forgekernel.delivery.remote_exec` on the host, which gives it the local
runners' guarantees there and sends the result back in a frame signed with a per-job key.

A connection lost mid-job (ssh exits 255 with no complete frame) is retried a bounded
number of times and then raises :class:`DeliveryError`: it never becomes a verdict.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from forgekernel.delivery import remote_boot
from forgekernel.delivery.base import Job, JobResult
from forgekernel.delivery.channel import verify_frames
from forgekernel.delivery.remote_exec import DELIMITER, EXIT_ABORTED
from forgekernel.delivery.shipping import DeliveryError, judge_bundle, pack_inputs

_BOOT_MARK = "FORGEKERNEL-BOOT "
_SSH_LOST = 255
DEVICES = ("gpu", "cpu")


class _Lost(Exception):
    """The connection went away before a complete answer came back (retryable)."""


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "no message"


class SshRunner:
    """Runs each job on ``host`` under ``workdir`` through the system ``ssh`` client."""

    name = "ssh"

    def __init__(self, host: str, workdir: str, *, python: str | None = None,
                 ssh_config: str | Path | None = None, gpu: int | None = None,
                 device: str | None = None, retries: int = 2, connect_timeout_s: float = 20,
                 lock_wait_s: float = 900, ssh_bin: str = "ssh") -> None:
        device = device or "gpu"
        if device not in DEVICES:
            raise DeliveryError(f"FK_REMOTE_DEVICE must be gpu or cpu, got {device!r}")
        self.host, self.workdir, self.python = host, workdir, python or "python3"
        self.ssh_config = str(ssh_config) if ssh_config else None
        self.gpu, self.device, self.retries = gpu, device, retries
        self.connect_timeout_s, self.lock_wait_s, self.ssh_bin = connect_timeout_s, lock_wait_s, ssh_bin
        self.remote: dict[str, Any] | None = None
        self._prepare_lock = threading.Lock()
        self.lost: list[str] = []
        """One line per connection lost mid-job (each was retried or ended in DeliveryError)."""

    @property
    def timing_label(self) -> str:
        return "cpu-interpret" if self.device == "cpu" else "device"

    def describe(self) -> dict[str, Any]:
        info = {"delivery": self.name, "timing": self.timing_label, "host": self.host,
                "workdir": self.workdir, "python": self.python, "device": self.device, "gpu": self.gpu}
        if self.remote:
            info["remote"] = {k: self.remote.get(k) for k in ("host", "python", "gpu", "bundle")}
        return info

    # -- ssh plumbing
    def ssh_argv(self, *remote_argv: str) -> list[str]:
        """The ssh command line running ``remote_argv`` (quoted for the remote shell)."""
        argv = [self.ssh_bin]
        if self.ssh_config:
            argv += ["-F", self.ssh_config]
        argv += ["-T", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={int(self.connect_timeout_s)}",
                 "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=4", "--", self.host,
                 " ".join(shlex.quote(a) for a in remote_argv)]
        return argv

    def _boot(self, command: str, bundle: str, data: bytes = b"") -> dict[str, Any]:
        source = Path(remote_boot.__file__).read_text()
        argv = self.ssh_argv(self.python, "-c", source, command, self.workdir, bundle)
        try:
            proc = subprocess.run(argv, input=data, capture_output=True, timeout=300)
        except FileNotFoundError:
            raise DeliveryError(f"the ssh client '{self.ssh_bin}' is not installed "
                                "(Debian: apt-get install openssh-client)") from None
        except subprocess.TimeoutExpired:
            raise DeliveryError(f"ssh {self.host}: '{command}' took over 300 s") from None
        out, err = proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
        if proc.returncode == _SSH_LOST:
            raise DeliveryError(f"cannot reach '{self.host}' over ssh: {_last_line(err)}")
        for line in out.splitlines():
            if line.startswith(_BOOT_MARK):
                return json.loads(line[len(_BOOT_MARK):])
        if proc.returncode == 127:
            raise DeliveryError(f"'{self.python}' is not found on '{self.host}' "
                                "(set FK_REMOTE_PYTHON to the Python that has torch there)")
        raise DeliveryError(f"ssh {self.host}: remote '{command}' failed (exit "
                            f"{proc.returncode}): {_last_line(err)}")

    # -- once per run
    def probe(self) -> dict[str, Any]:
        """What the host has (Python, modules, CUDA, work dir, bundle); raises if unreachable."""
        return self._boot("probe", judge_bundle()[0])

    def prepare(self) -> dict[str, Any]:
        """Probe the host and install the judge bundle there (once); return what was found."""
        with self._prepare_lock:
            if self.remote is None:
                self.remote = self._prepare()
            return self.remote

    def _prepare(self) -> dict[str, Any]:
        bundle, data = judge_bundle()
        info = self.probe()
        problem = remote_problem(info, device=self.device, gpu=self.gpu)
        if problem:
            raise DeliveryError(f"remote host '{self.host}' ({self.python}, Python "
                                f"{info.get('python')}): {problem}")
        if not info["bundle_present"]:
            self._boot("install", bundle, data)
        info["bundle"] = bundle
        info["bundle_dir"] = f"{info['workdir']}/judge/{bundle}"
        return info

    # -- one job
    def run(self, job: Job) -> JobResult:
        remote = self.prepare()
        payload, inputs = pack_inputs(job.payload)
        spec = job.model_dump()
        spec["payload"], spec["cwd"] = payload, None
        for attempt in range(self.retries + 1):
            try:
                return self._attempt(remote, spec, inputs, job.timeout_s)
            except _Lost as lost:
                self.lost.append(f"attempt {attempt + 1}: {lost}")
                if attempt < self.retries:
                    time.sleep(min(2.0 * (attempt + 1), 10.0))
        raise DeliveryError(f"lost the ssh connection to '{self.host}' {self.retries + 1} times "
                            f"while judging; last: {self.lost[-1]}")

    def _attempt(self, remote: dict, spec: dict, inputs: bytes, timeout_s: float) -> JobResult:
        key = secrets.token_hex(32)
        request = {"key": key, "job": spec, "inputs_len": len(inputs), "device": self.device,
                   "gpu": self.gpu, "workdir": remote["workdir"]}
        argv = self.ssh_argv("env", f"PYTHONPATH={remote['bundle_dir']}", self.python, "-m",
                             "forgekernel.delivery.remote_exec")
        backstop = timeout_s + self.lock_wait_s + self.connect_timeout_s + 60
        data = json.dumps(request).encode() + b"\n" + inputs
        rc, out, err, expired = _converse(argv, data, backstop, cap=2 * spec["output_cap_bytes"] + (1 << 20))
        if expired:
            raise _Lost(f"no answer within {backstop:.0f} s (the remote job was ended)")
        parts = out.split(DELIMITER)
        if len(parts) > 2:
            return JobResult(channel_error="more than one result frame on the ssh stream",
                             stderr_tail=err[-4096:])
        body, problem = verify_frames(parts[1], key) if len(parts) == 2 else (None, "")
        if body is not None and not problem:
            return JobResult(**body["job"])
        if rc in (_SSH_LOST, EXIT_ABORTED):
            raise _Lost(f"ssh exit {rc}: {_last_line(err)}")
        if len(parts) == 1:
            raise DeliveryError(f"the remote launcher on '{self.host}' failed (exit {rc}): "
                                f"{_last_line(err)}")
        return JobResult(channel_error=f"ssh result frame: {problem}", stderr_tail=err[-4096:])


def remote_problem(info: dict[str, Any], *, device: str, gpu: int | None) -> str:
    """What the probed host lacks for this delivery, as one phrase ('' when nothing)."""
    problems = []
    if not info.get("python_ok"):
        problems.append("Python 3.11.4 or newer is needed")
    if info.get("workdir_error"):
        problems.append(f"REMOTE_WORKDIR is not writable ({info['workdir_error']})")
    missing = [f"{m} ({info['modules'][m].get('error')})" for m in ("pydantic", "torch")
               if not info["modules"][m]["ok"]]
    if missing:
        problems.append("missing " + ", ".join(missing) +
                        " (pip install 'pydantic>=2.6' torch there, or set FK_REMOTE_PYTHON)")
    cuda = info.get("gpu", {})
    if device == "gpu" and info["modules"]["torch"]["ok"] and not cuda.get("available"):
        problems.append("torch sees no CUDA GPU (set FK_REMOTE_DEVICE=cpu to judge under the "
                        "Triton interpreter there: correctness only)")
    elif device == "gpu" and gpu is not None and gpu >= cuda.get("count", 0):
        problems.append(f"FK_GPU={gpu} but the host has {cuda.get('count', 0)} GPU(s)")
    return "; ".join(problems)


def _converse(argv: list[str], data: bytes, timeout_s: float, cap: int) -> tuple[int, bytes, str, bool]:
    """Run ssh: send ``data`` and keep stdin open until it exits (closing it = hang-up)."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    out, err = bytearray(), bytearray()

    def send() -> None:
        with contextlib.suppress(BrokenPipeError, OSError, ValueError):
            proc.stdin.write(data)
            proc.stdin.flush()

    def drain(stream, buf: bytearray) -> None:
        with stream:
            while chunk := stream.read1(65536):
                if len(buf) < cap:
                    buf += chunk

    threads = [threading.Thread(target=send, daemon=True),
               threading.Thread(target=drain, args=(proc.stdout, out), daemon=True),
               threading.Thread(target=drain, args=(proc.stderr, err), daemon=True)]
    for t in threads:
        t.start()
    expired = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        expired = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    for t in threads[1:]:
        t.join(timeout=10)
    with contextlib.suppress(BrokenPipeError, OSError):
        proc.stdin.close()
    return proc.returncode, bytes(out), err.decode(errors="replace"), expired


DEFAULT_WORKDIR = "~/.cache/forgekernel/remote"


def ssh_runner(settings: Any, *, gpu: int | None = None) -> SshRunner:
    """The SshRunner that ``settings`` describe (REMOTE_HOST is required)."""
    if not settings.remote_host:
        raise DeliveryError("FK_DELIVERY=ssh needs REMOTE_HOST (an ssh alias that logs in "
                            "without a prompt); set it in local.env or the environment")
    return SshRunner(settings.remote_host, settings.remote_workdir or DEFAULT_WORKDIR,
                     python=settings.remote_python, ssh_config=settings.ssh_config, gpu=gpu,
                     device=settings.remote_device)
