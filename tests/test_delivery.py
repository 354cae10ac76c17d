"""The process boundary: every way a worker can end becomes data, never a crash or hang."""

from __future__ import annotations

import pytest

from forgekernel.delivery import Job, make_runner

ECHO = "forgekernel.delivery.echo_worker"


def _run(act: str, **kw):
    runner = make_runner("cpu")
    return runner.run(Job(module=ECHO, payload={"act": act, **kw}, timeout_s=3, output_cap_bytes=1 << 20))


def test_echo_round_trip_under_interpreter():
    res = _run("echo", value=7)
    assert res.ok
    assert res.result["echo"]["value"] == 7
    assert res.result["delivery"] == "cpu"
    assert res.result["interpret"] == "1"


@pytest.mark.parametrize(
    ("act", "expect"),
    [("sleep", "timed out"), ("exit", "exited with code 3"), ("segv", "SIGSEGV"),
     ("flood", "flooded"), ("forge", "tampered")],
)
def test_failures_become_descriptions(act, expect):
    res = _run(act, seconds=30)
    assert not res.ok
    assert expect in res.describe_failure()
    assert res.wall_s < 10


def test_unknown_delivery():
    with pytest.raises(ValueError, match="unknown delivery"):
        make_runner("carrier-pigeon")
