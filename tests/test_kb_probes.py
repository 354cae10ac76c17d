"""Probes on the CPU: their kernels under the interpreter, their pure-Python analysis, and
the worker's refusal to time anything without a GPU."""

from __future__ import annotations

import warnings

import pytest

from forgekernel.delivery import Job, make_runner
from forgekernel.kb.certify import run_probes
from forgekernel.kb.probes import PROBES, ProbeContext, groups, l2, loads, rows, run_probe
from forgekernel.kb.selfcheck import CHECKS
from forgekernel.kb.store import KBError


def test_probe_kernels_are_correct_under_the_interpreter():
    res = make_runner("cpu").run(Job(module="forgekernel.kb.worker", payload={"check": list(CHECKS)},
                                     timeout_s=240))
    assert res.ok, res.describe_failure() + res.stderr_tail
    checks = res.result["checks"]
    assert set(checks) == set(CHECKS)
    bad = {k: v.get("error") for k, v in checks.items() if not v["ok"]}
    assert not bad
    assert checks["loads"]["notes"]["pointer"] == "ok"


def test_worker_refuses_to_probe_without_a_gpu():
    with pytest.raises(KBError, match="no CUDA GPU"):
        run_probes(["copy_large"], make_runner("cpu"), timeout_s=120)


def _ptx(kernel, signature: dict, constexprs: dict) -> str:
    import triton
    from triton.backends.compiler import GPUTarget

    attrs = {(i,): [["tt.divisibility", 16]] for i, (k, v) in enumerate(signature.items())
             if v != "constexpr" and k != "stride"}
    src = triton.compiler.ASTSource(fn=kernel, signature=signature, constexprs=constexprs, attrs=attrs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["ptx"]


def test_load_widths_read_from_sm90_ptx():
    sig = {"X": "*bf16", "Y": "*bf16", "n": "i32", "BLOCK": "constexpr"}
    vec = loads.load_widths(_ptx(loads._scale_vec, sig, {"BLOCK": loads.BLOCK}))
    sig_s = {"X": "*bf16", "Y": "*bf16", "n": "i32", "stride": "i32", "BLOCK": "constexpr"}
    scalar = loads.load_widths(_ptx(loads._scale_strided, sig_s, {"BLOCK": loads.BLOCK}))
    assert set(vec) == {"16"} and vec["16"] >= 1
    assert set(scalar) == {"2"} and scalar["2"] >= 8 * vec["16"]


def test_load_widths_parser_counts_modifiers():
    ptx = ("@%p1 ld.global.L1::evict_last.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];\n"
           "ld.global.b16 %rs1, [%rd2];\nld.global.v2.f32 {%f1, %f2}, [%rd3];\nst.global.b32 [%rd4], %r9;\n")
    assert loads.load_widths(ptx) == {"16": 1, "2": 1, "8": 1}


def test_pure_analysis_of_other_probes():
    assert l2.analyse({l2.HOT_MIB: 6.0, l2.COLD_MIB: 4.0}) == pytest.approx(1.5)
    times = {"a": {"median_ms": 2.0}, "b": {"median_ms": 1.0}, "c": {"median_ms": 1.6}}
    assert rows.speedup(times, "a", ["b", "c"]) == (2.0, "b")
    assert rows.default_warps(1024) == 4 and rows.default_warps(4096) == 8
    assert rows.default_warps(16384) == 16


def test_registry_groups_and_units():
    assert groups(["rows_persistent", "copy_small", "copy_large"]) == {
        "copy": ["copy_large", "copy_small"], "rows": ["rows_persistent"]}
    assert all(spec.unit for spec in PROBES.values())
    with pytest.raises(KeyError):
        run_probe("no_such_probe", ProbeContext(device="cpu"))
