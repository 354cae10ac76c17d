"""Helpers for the sandbox tests: the mechanisms present, a spec, a run of ``python -I -c``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forgekernel import sandbox as sb
from forgekernel.sandbox.detect import MECHANISMS
from forgekernel.sandbox.launch import Launch


def _mechanisms():
    out = []
    for name in MECHANISMS:
        det = sb.probe(mechanisms=(name,))
        marks = () if det.mechanism else pytest.mark.skip(reason=det.reason)
        out.append(pytest.param(det.mechanism, id=name, marks=marks))
    return out


MECHS = _mechanisms()


def make_spec(tmp_path: Path, readonly=(), **kw) -> sb.SandboxSpec:
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    kw.setdefault("env", sb.filter_env(os.environ))
    return sb.SandboxSpec(scratch=scratch, readonly=(*sb.python_paths(), *readonly), **kw)


def launch_code(mech, spec, code: str, *args: str) -> Launch:
    return sb.command(mech, spec, [sys.executable, "-I", "-c", code, *args])


def run(mech, spec, code: str, *args: str, pass_fds=()) -> dict:
    """Run CODE in the sandbox; the JSON it printed last (fails with its stderr otherwise)."""
    launch = launch_code(mech, spec, code, *args)
    out = subprocess.run(**launch.popen_kwargs(), capture_output=True, text=True, timeout=60,
                         pass_fds=pass_fds)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])
