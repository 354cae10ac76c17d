"""Which sandbox mechanism works on this machine, or why none does."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from forgekernel.sandbox.launch import Mechanism, command
from forgekernel.sandbox.spec import SandboxSpec, python_paths

MECHANISMS = ("bwrap", "stdlib")
"""In order of preference."""
NO_SANDBOX_FIX = ("apt-get install bubblewrap, or allow user namespaces "
                  "(sysctl kernel.unprivileged_userns_clone=1; on Ubuntu "
                  "kernel.apparmor_restrict_unprivileged_userns=0); otherwise judging needs "
                  "--unsafe-no-sandbox")


@dataclass(frozen=True)
class Detection:
    """What :func:`probe` found: the mechanism to use (None when none works), one line
    saying why, and one line per preferred mechanism that was passed over."""

    mechanism: Mechanism | None
    reason: str
    passed_over: tuple[str, ...] = ()


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _trial(mech: Mechanism) -> str:
    """Run ``python -c pass`` in a default sandbox; '' when it worked, else why not."""
    with tempfile.TemporaryDirectory(prefix="forge-sandbox-probe-") as tmp:
        spec = SandboxSpec(scratch=Path(tmp), readonly=python_paths([]))
        launch = command(mech, spec, [sys.executable, "-I", "-S", "-c", "pass"])
        try:
            out = subprocess.run(**launch.popen_kwargs(), capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{mech.name} did not start: {exc}"
    if out.returncode == 0:
        return ""
    why = _first_line(out.stderr) or f"exit status {out.returncode}"
    return f"{mech.name} cannot build a sandbox here: {why}"


def _bwrap(path: str | None) -> tuple[Mechanism | None, str]:
    found = path or shutil.which("bwrap")
    if not found:
        return None, "bwrap not found on PATH"
    if not (os.path.isfile(found) and os.access(found, os.X_OK)):
        return None, f"bwrap not found at {found}"
    try:
        out = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"bwrap at {found} does not run: {exc}"
    mech = Mechanism("bwrap", found, _first_line(out.stdout) or "bubblewrap")
    return mech, _trial(mech)


def _stdlib() -> tuple[Mechanism | None, str]:
    if sys.platform != "linux":
        return None, f"stdlib sandbox needs Linux namespaces (this is {sys.platform})"
    who = "as root" if os.geteuid() == 0 else "in a user namespace"
    mech = Mechanism("stdlib", sys.executable,
                     f"Linux namespaces via ctypes (Python {platform.python_version()}, "
                     f"Linux {os.uname().release}, {who})")
    return mech, _trial(mech)


_CACHE: dict[tuple, Detection] = {}


def probe(bwrap: str | None = None, mechanisms: Sequence[str] | None = None,
          refresh: bool = False) -> Detection:
    """Try each of ``mechanisms`` in order (``bwrap``: the given path, else FK_BWRAP, else
    PATH) by running a trivial sandbox; the first that works wins. ``mechanisms`` default:
    FK_SANDBOX when it names one (``bwrap`` or ``stdlib``), else all. Cached per process."""
    bwrap = bwrap or os.environ.get("FK_BWRAP") or None
    if mechanisms is None:
        chosen = os.environ.get("FK_SANDBOX", "auto")
        mechanisms = (chosen,) if chosen in MECHANISMS else MECHANISMS
    key = (bwrap, tuple(mechanisms))
    if key in _CACHE and not refresh:
        return _CACHE[key]
    passed: list[str] = []
    found = None
    for name in mechanisms:
        mech, why = _bwrap(bwrap) if name == "bwrap" else _stdlib()
        if mech is not None and not why:
            found = mech
            break
        passed.append(why)
    if found:
        reason = f"{found.name}: {found.version}"
    else:
        reason = "no sandbox: " + "; ".join(passed) if passed else "no sandbox mechanism asked for"
    _CACHE[key] = Detection(found, reason, tuple(passed))
    return _CACHE[key]


def detect(bwrap: str | None = None) -> Mechanism | None:
    """The mechanism to use (bubblewrap first, then the stdlib one), or None: see
    :func:`probe` for the reason."""
    return probe(bwrap).mechanism


def describe(bwrap: str | None = None) -> tuple[bool, str, str]:
    """(ok, detail, fix) for ``forge doctor``'s sandbox row."""
    det = probe(bwrap)
    if det.mechanism is None:
        return False, det.reason, NO_SANDBOX_FIX
    detail = det.reason
    if det.passed_over:
        detail += f" ({'; '.join(det.passed_over)})"
    if det.mechanism.name == "bwrap":
        return True, detail, ""
    if bwrap:
        return True, detail, f"the configured bwrap ({bwrap}) does not work: fix FK_BWRAP or unset it"
    return True, detail, "apt-get install bubblewrap (the preferred mechanism)"
