"""Correctness of the probes' own kernels on tiny inputs, on any device.

On the CPU this runs under the Triton interpreter (the ``cpu`` delivery sets it), so the
kernels the probes time on a GPU are checked for correctness without one. Used by the
worker's ``check`` payload.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

CHECKS = ("rows", "loads", "l2", "launch")


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def check_rows() -> dict[str, Any]:
    import torch

    from forgekernel.kb.probes import rows

    dev = _device()
    x = torch.randn(7, 384, dtype=torch.bfloat16, device=dev)
    w = (1 + 0.1 * torch.randn(384, device=dev)).to(torch.bfloat16)
    ref = rows.reference(x, w)
    errs = {}
    for name, variant in {"rows1": {"rows": 1}, "rows4": {"rows": 4},
                          "persistent": {"rows": 2, "programs": 2}}.items():
        y = torch.full_like(x, float("nan"))
        rows.rmsnorm(x, w, y, **variant)
        errs[name] = rows.max_rel_err(y, ref)
        if not errs[name] < 2e-2:
            raise AssertionError(f"rmsnorm {name}: max rel err {errs[name]:.3g}")
    return errs


def check_loads() -> dict[str, Any]:
    import torch

    from forgekernel.kb.probes import loads

    dev = _device()
    x = torch.randn(2 * loads.BLOCK, dtype=torch.bfloat16, device=dev)
    for vec in (True, False):
        y = torch.full_like(x, float("nan"))
        loads.scale(x, y, vec)
        if not torch.equal(y, x * 2):
            raise AssertionError(f"scale kernel (vectorised={vec}) wrote wrong values")
    t = torch.randn(2 * loads.BM, 2 * loads.BN, dtype=torch.bfloat16, device=dev)
    out = torch.empty_like(t)
    notes = {name: loads.try_variant(launch, t, out) or "ok"
             for name, launch in loads.tile_launchers(t, out).items()}
    if notes["pointer"] != "ok":
        raise AssertionError(f"pointer tile kernel: {notes['pointer']}")
    return notes


def check_l2() -> dict[str, Any]:
    import torch

    from forgekernel.kb.probes import l2

    x = torch.randn(4 * l2.BLOCK, dtype=torch.bfloat16, device=_device())
    err = l2.check(x, passes=3, programs=3)
    if not err < 1e-3:
        raise AssertionError(f"read kernel total off by {err:.3g} (relative)")
    return {"rel_err": err}


def check_launch() -> dict[str, Any]:
    import torch

    from forgekernel.kb.probes import launch

    x = torch.randn(1024, device=_device())
    before = x.clone()
    launch._bump[(1,)](x, x.numel(), BLOCK=1024)
    if not torch.allclose(x, before + 1):
        raise AssertionError("bump kernel did not add one")
    return {}


_FUNCS: dict[str, Callable[[], dict[str, Any]]] = {
    "rows": check_rows, "loads": check_loads, "l2": check_l2, "launch": check_launch}


def run_checks(names: list[str]) -> dict[str, dict[str, Any]]:
    """Run the named checks; each answers {ok, notes} or {ok: False, error, traceback}."""
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        if name not in _FUNCS:
            out[name] = {"ok": False, "error": f"unknown check {name!r}; known: {', '.join(CHECKS)}"}
            continue
        try:
            out[name] = {"ok": True, "notes": _FUNCS[name]()}
        except Exception as exc:  # recorded per check; the caller reports it
            out[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                         "traceback": traceback.format_exc()[-3000:]}
    return out
