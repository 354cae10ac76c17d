"""Run the ``claude`` CLI once and read its ``stream-json`` events into a :class:`ClaudeRun`.

Events are dispatched on ``type`` (and ``subtype`` for ``system``), never on their position.
What is used: ``system/init`` (session id, model), ``system/api_retry`` (an auth failure,
401/403, ends the process at once instead of waiting through the CLI's retries) and
``result`` (``is_error``, ``num_turns``, ``usage``, ``total_cost_usd``, ``result``,
``errors``, ``api_error_status``). Everything else is counted and ignored.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FATAL_RETRY_STATUS = (401, 403)
"""An ``api_retry`` with one of these statuses will not get better: stop the CLI."""


@dataclass
class ClaudeRun:
    """What one CLI invocation did."""

    session: str = ""
    model: str = ""
    has_result: bool = False
    is_error: bool = False
    turns: int = 0
    total_cost: float = 0.0
    """``total_cost_usd``: cumulative over the session when it was resumed."""
    cost_since_last: float | None = None
    """This invocation's cost, when the CLI reports it per invocation."""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0
    result_text: str = ""
    errors: list[str] = field(default_factory=list)
    api_status: int | None = None
    terminal: str = ""
    retries: list[Any] = field(default_factory=list)
    returncode: int | None = None
    timed_out: bool = False
    stderr: str = ""
    events: Counter = field(default_factory=Counter)
    noise: list[str] = field(default_factory=list)
    """Lines of stdout that were not JSON events (first few)."""

    @property
    def session_missing(self) -> bool:
        """A ``--resume`` whose session the CLI does not know."""
        text = " ".join(self.errors) + self.stderr
        return self.is_error and self.turns == 0 and "No conversation found" in text

    def message(self) -> str:
        """One line saying what went wrong (or what the CLI said)."""
        parts = list(self.errors) or ([self.result_text] if self.result_text else [])
        if self.terminal and self.terminal != "completed":
            parts.append(f"terminal reason {self.terminal}")
        if not parts and self.stderr.strip():
            parts.append(self.stderr.strip().splitlines()[-1])
        if not parts and self.noise:
            parts.append(self.noise[-1])
        return " ".join(" | ".join(parts).split())[:400] or "no output"

    # ------------------------------------------------------------ events
    def feed(self, line: str) -> bool:
        """Take one stdout line; True when the run must be stopped now."""
        line = line.strip()
        if not line:
            return False
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            if len(self.noise) < 20:
                self.noise.append(line[:300])
            return False
        if not isinstance(event, dict):
            return False
        kind = str(event.get("type", ""))
        self.events[kind] += 1
        handler = getattr(self, f"_on_{kind}", None)
        return bool(handler(event)) if handler else False

    def _on_system(self, e: dict[str, Any]) -> bool:
        if e.get("subtype") == "init":
            self.session = str(e.get("session_id") or self.session)
            self.model = str(e.get("model") or self.model)
        elif e.get("subtype") == "api_retry":
            self.retries.append(e.get("error_status"))
            if e.get("error_status") in FATAL_RETRY_STATUS:
                self.api_status = int(e["error_status"])
                self.errors.append(f"API error {e['error_status']} ({e.get('error', '')}) "
                                   "while the CLI kept retrying")
                return True
        return False

    def _on_result(self, e: dict[str, Any]) -> bool:
        self.has_result = True
        self.is_error = bool(e.get("is_error"))
        self.session = str(e.get("session_id") or self.session)
        self.turns = int(e.get("num_turns") or 0)
        self.total_cost = float(e.get("total_cost_usd") or 0.0)
        usage = e.get("usage") or {}
        self.input_tokens = sum(int(usage.get(k) or 0) for k in (
            "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
        self.output_tokens = int(usage.get("output_tokens") or 0)
        self.cache_read = int(usage.get("cache_read_input_tokens") or 0)
        self.cache_write = int(usage.get("cache_creation_input_tokens") or 0)
        since = e.get("model_usage_since_last_result")
        if isinstance(since, dict):
            self.cost_since_last = sum(float(m.get("costUSD") or 0.0) for m in since.values()
                                       if isinstance(m, dict))
        self.result_text = str(e.get("result") or "")
        self.errors += [str(x) for x in e.get("errors") or []]
        status = e.get("api_error_status")
        self.api_status = int(status) if isinstance(status, int) else self.api_status
        self.terminal = str(e.get("terminal_reason") or e.get("subtype") or "")
        return False


def _kill(proc: subprocess.Popen, run: ClaudeRun, timed_out: bool) -> None:
    run.timed_out = run.timed_out or timed_out
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_cli(argv: Sequence[str], prompt: str, cwd: Path, env: dict[str, str],
            timeout_s: float) -> ClaudeRun:
    """Start the CLI in its own process group, feed the prompt on stdin, parse its events;
    kill the group on timeout or on a fatal event."""
    run = ClaudeRun()
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(list(argv), cwd=cwd, env=env, text=True, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err, start_new_session=True)
        timer = threading.Timer(timeout_s, _kill, (proc, run, True))
        timer.start()
        try:
            try:
                proc.stdin.write(prompt)
                proc.stdin.close()
            except BrokenPipeError:
                pass
            for line in proc.stdout:
                if run.feed(line):
                    _kill(proc, run, False)
                    break
            proc.stdout.close()
            run.returncode = proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:
                _kill(proc, run, False)
                proc.wait()
        err.seek(0)
        run.stderr = err.read()[-4000:]
    return run
