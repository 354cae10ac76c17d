"""The verifier's side of the executor: start it sandboxed, ask, wait, kill.

One executor per judgement, started before the candidate is needed and ended with the
judgement (its whole process tree killed). Each request has a deadline; an executor that
misses it, dies, floods its output or answers with something that is not a message ends
the judgement as the candidate's failure (TIMEOUT, RUNTIME_ERROR, REJECTED), never the
judge's.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forgekernel.judge import kernel_cache, wire
from forgekernel.sandbox.spec import SCRATCH_DIRS

OUTPUT_CAP = 4 * 1024 * 1024
"""Bytes of executor stdout+stderr before it counts as a flood."""
_TAIL = 16 * 1024
STABLE_CACHE = "/tmp/forge-cache"
"""Inside the sandbox (its private /tmp): a link to the cache directory, one name at every
verdict (torch extension builds name their files by it)."""
CACHE = SCRATCH_DIRS["XDG_CACHE_HOME"]
"""The executor's cache directory under its scratch directory (the sandbox points
XDG_CACHE_HOME there; TRITON_CACHE_DIR and torch's extension builds live inside it)."""


@dataclass(frozen=True)
class ExecutorSpec:
    """How to start an executor."""

    candidate_dir: Path
    device: str
    interpret: bool
    sandbox: bool = True
    """False only with --unsafe-no-sandbox (the verdict says so)."""
    gpu_index: int | None = None


class ExecutorGone(RuntimeError):
    """The executor did not answer: ``kind`` is timeout, died, flood or protocol."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _Drain(threading.Thread):
    def __init__(self, stream: Any, counter: list[int], on_flood: Any) -> None:
        super().__init__(daemon=True)
        self.stream, self.counter, self.on_flood, self.tail = stream, counter, on_flood, bytearray()

    def run(self) -> None:
        while chunk := self.stream.read1(65536):
            self.counter[0] += len(chunk)
            self.tail += chunk
            del self.tail[:-_TAIL]
            if self.counter[0] > OUTPUT_CAP:
                self.on_flood()
        with contextlib.suppress(OSError):
            self.stream.close()


class ExecutorClient:
    """A running executor process and the channel to it."""

    def __init__(self, spec: ExecutorSpec) -> None:
        self.spec = spec
        self._tmp = tempfile.TemporaryDirectory(prefix="forge-exec-")
        self.scratch = Path(self._tmp.name)
        os.chmod(self.scratch, 0o777)
        self.cache_key = kernel_cache.key(spec.candidate_dir)  # its own kernels, compiled before
        self.cache_restored = kernel_cache.restore(self.cache_key, self.scratch / CACHE)
        self.flooded = False
        self.sandbox_note = ""
        self._start()

    # -- lifecycle
    def _start(self) -> None:
        # the page only, not the gate's kernels: no Triton import before the executor starts
        from forgekernel.judge.hostwords import HostWords

        cmd_r, cmd_w = os.pipe()
        res_r, res_w = os.pipe()
        self.words = HostWords() if self.spec.device == "cuda" else None
        words_fd = self.words.fd if self.words is not None else -1
        argv = [str(cmd_r), str(res_w), str(self.scratch), self.spec.device,
                "1" if self.spec.interpret else "0", str(words_fd),
                STABLE_CACHE if self.spec.sandbox else ""]  # the sandbox's /tmp is its own
        kwargs = self._launch(argv)
        fds = (cmd_r, res_w) + ((words_fd,) if words_fd >= 0 else ())
        self.proc = subprocess.Popen(**kwargs, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, pass_fds=fds, start_new_session=True)
        os.close(cmd_r)
        os.close(res_w)
        self.cmd, self.res = cmd_w, res_r
        counter = [0]
        self.drains = [_Drain(self.proc.stdout, counter, self._flood),
                       _Drain(self.proc.stderr, counter, self._flood)]
        for d in self.drains:
            d.start()

    def _launch(self, argv: list[str]) -> dict[str, Any]:
        from forgekernel import sandbox

        env = _env(self.spec)
        self.launch = None
        if not self.spec.sandbox:
            self.sandbox_note = "none (--unsafe-no-sandbox)"
            return {"args": sandbox.python_argv("forgekernel.judge.executor", argv),
                    "env": {**env, "TRITON_CACHE_DIR": str(self.scratch / CACHE)},
                    "cwd": str(self.scratch)}
        mech = sandbox.detect()
        if mech is None:
            raise RuntimeError(f"no sandbox for candidate code: {sandbox.probe().reason}")
        spec = sandbox.SandboxSpec(scratch=self.scratch,
                                   readonly=(*sandbox.python_paths(), self.spec.candidate_dir),
                                   env=env, gpu=self.spec.device == "cuda", pid_namespace=True)
        launch = sandbox.command(mech, spec, sandbox.python_argv("forgekernel.judge.executor", argv))
        self.sandbox_note = f"{mech.name} {mech.version}".strip()
        self.launch = launch
        return launch.popen_kwargs()

    def _flood(self) -> None:
        self.flooded = True
        self.kill()

    def kill(self) -> None:
        from forgekernel import sandbox

        with contextlib.suppress(ProcessLookupError, OSError):
            sandbox.kill_tree(self.proc)

    def close(self) -> None:
        with contextlib.suppress(wire.WireError, OSError):
            wire.send(self.cmd, {"op": "exit"})
            wire.recv(self.res, timeout_s=5)
        self.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        for fd in (self.cmd, self.res):
            with contextlib.suppress(OSError):
                os.close(fd)
        for d in self.drains:
            d.join(timeout=5)
        kernel_cache.keep(self.cache_key, self.scratch / CACHE)
        self._tmp.cleanup()

    def tail(self) -> str:
        text = b"".join(bytes(d.tail) for d in self.drains).decode(errors="replace")
        return text.strip()[-1500:]

    # -- requests
    def ask(self, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one request and wait for its answer (ExecutorGone when there is none)."""
        try:
            wire.send(self.cmd, message)
            return wire.recv(self.res, timeout_s=timeout_s)
        except wire.WireTimeout:
            self.kill()
            for d in self.drains:  # what it printed before the kill, for tail()
                d.join(timeout=2)
            raise ExecutorGone("timeout", f"no answer within {timeout_s:.0f} s") from None
        except (wire.WireError, OSError) as exc:
            with contextlib.suppress(subprocess.TimeoutExpired):  # its own end first (a segfault
                self.proc.wait(timeout=5)  # reads as SIGSEGV, not as the SIGKILL of the cleanup)
            self.kill()
            self.proc.wait()
            if self.flooded:
                raise ExecutorGone("flood", "printed more than the output cap") from None
            raise ExecutorGone("died" if "closed" in str(exc) else "protocol",
                               f"the candidate's process {self.ended()}") from None

    def ended(self) -> str:
        """How the executor process ended, in words (the sandbox's exit status decoded)."""
        import signal

        rc = self.proc.returncode
        if rc is None:
            return "did not answer"
        code, sig = self.launch.status(rc) if self.launch is not None else (
            (None, -rc) if rc < 0 else (rc, None))
        if sig is not None:
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = "unknown"
            return f"was killed by signal {sig} ({name})"
        return f"exited with code {code} before answering"


def _env(spec: ExecutorSpec) -> dict[str, str]:
    """The executor's environment: the sandbox allow-list, plus how to run Triton."""
    from forgekernel import sandbox

    env = sandbox.filter_env(os.environ)
    env.update({"TRITON_INTERPRET": "1" if spec.interpret else "0", "PYTHONUNBUFFERED": "1",
                "PYTHONDONTWRITEBYTECODE": "1", "PYTHONFAULTHANDLER": "1"})
    if spec.device != "cuda":
        env["CUDA_VISIBLE_DEVICES"] = ""
    elif spec.gpu_index is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(spec.gpu_index)
    return env
