"""The trust boundary: candidate code runs in a sandboxed executor, never beside the verdict.

Each test judges a kernel on the CPU and checks what the verifier/executor split and the
sandbox guarantee: the candidate's process holds nothing to tamper with, sees no credential,
reaches no network, writes nowhere but its scratch, and plants nothing for later judges.
"""

from __future__ import annotations

import http.server
import json
import shutil
import site
import threading
from pathlib import Path

import pytest

from forgekernel.delivery import make_runner
from forgekernel.judge import JudgeOptions, judge
from forgekernel.records import Status
from forgekernel.task import load_task

ROOT = Path(__file__).resolve().parents[1]
CHEATING = ROOT / "tests" / "fixtures" / "kernels" / "cheating"
CORRECT = ROOT / "tests" / "fixtures" / "kernels" / "correct" / "rmsnorm_rowwise"
RMSNORM = load_task(ROOT / "tasks" / "rmsnorm", check_reference=False)


def _judge(kernel: Path, **kw):
    opts = {"trials": 2, "timing": False, "hidden": False, "timeout_s": 120, **kw}
    return judge(RMSNORM, kernel, make_runner("cpu"), JudgeOptions(**opts))


class _Sink(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        _Sink.hits.append(self.path)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_a_kernel_that_tries_to_escape_gets_nothing_out_and_a_clear_verdict(tmp_path, monkeypatch):
    server = http.server.HTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    ledger = run_dir / "ledger.jsonl"
    ledger.write_text('{"seq": 1}\n')
    outside = tmp_path / "outside.txt"
    kernel = tmp_path / "kernel"
    shutil.copytree(CHEATING / "rmsnorm_exfiltrate", kernel)
    (kernel / "targets.json").write_text(json.dumps(
        {"port": server.server_address[1], "ledger": str(ledger), "outside": str(outside)}))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-should-never-leave")
    try:
        verdict = _judge(kernel)
    finally:
        server.shutdown()
        server.server_close()
    assert verdict.status is Status.REJECTED, verdict.reason
    assert any(w in verdict.reason for w in ("credential", "network", "outside"))
    assert _Sink.hits == []
    assert ledger.read_text() == '{"seq": 1}\n' and not outside.exists()


def test_a_planted_import_hook_reaches_no_later_judgement(tmp_path):
    before = {p: set(Path(p).glob("*.pth")) for p in site.getsitepackages() if Path(p).is_dir()}
    verdict = _judge(CHEATING / "rmsnorm_plant_pth")
    assert verdict.status is Status.REJECTED, verdict.reason
    after = {p: set(Path(p).glob("*.pth")) for p in before}
    assert after == before
    assert _judge(CORRECT).passed


@pytest.mark.parametrize("name", ["rmsnorm_patch_oracle_pydoc", "rmsnorm_frame_walk_tolerance",
                                  "rmsnorm_override_reference_aten"])
def test_tampering_with_the_judge_reaches_nothing_that_decides(name):
    """With the static scan off, the cheats run: they find no judge in their process."""
    verdict = _judge(CHEATING / name, static=False)
    assert verdict.status in (Status.REJECTED, Status.WRONG_VALUES), verdict.reason
    assert verdict.status is not Status.PASSED


def test_the_verdict_says_which_sandbox_ran_the_candidate():
    verdict = _judge(CORRECT)
    assert verdict.passed, verdict.feedback
    assert verdict.profile["sandbox"].split()[0] in ("bwrap", "stdlib")
    unsafe = _judge(CORRECT, unsafe_no_sandbox=True)
    assert unsafe.passed and "unsafe" in unsafe.profile["sandbox"]
