"""The generator's library kernels (forgekernel.generate.library): gemm.py, conv.py, sort.py,
scatter.py.

The numeric checks run in fresh processes with TRITON_INTERPRET=1 (tests/library_check.py):
every case of mm/addmm/bmm/baddbmm and convolution in fp32, fp16 and bf16 against the aten
op on float64 copies (sort/topk: values and indices equal to torch's stable sort; scatter_reduce
amax/amin/mean against the aten op), once at the default knobs and once (fp32) with 16-wide blocks so that
every loop runs several steps and the grouped order and batch chunking are exercised. The
sm_90 check compiles representative launches ahead of time (tests/library_static.py).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from forgekernel.generate import library

REPO = Path(__file__).resolve().parents[1]
CHECK = REPO / "tests" / "library_check.py"
STATIC = REPO / "tests" / "library_static.py"
SMALL_KNOBS = {"GEMM_BLOCK_M": 16, "GEMM_BLOCK_N": 16, "GEMM_BLOCK_K": 16, "GEMM_GROUP_M": 2,
               "GEMM_ALLOW_TF32": 0, "_gemm_grid_y_max": 2, "CONV_BLOCK_M": 16,
               "CONV_BLOCK_N": 16, "CONV_BLOCK_K": 16, "CONV_ALLOW_TF32": 0, "CONV_COPY_NHWC": 0,
               "SORT_MAX_ROW": 64, "SCATTER_BLOCK": 16,
               # the interpreter's own tile sizes (the GPU knobs above do not apply there)
               "_gemm_cpu_blocks": [16, 16, 16], "_conv_cpu_blocks": [16, 16, 16], "_conv_cpu_direct": 64,
               # rnn: states over one program take a launch per step (at the default blocks the
               # interpreter runs every case's whole sequence in one program)
               "_rnn_cpu_blocks": [16, 16, 16]}
KNOBS = {
    "gemm": ("GEMM_BLOCK_M = 128", "GEMM_BLOCK_N = 128", "GEMM_BLOCK_K = 32", "GEMM_GROUP_M = 8",
             "GEMM_NUM_WARPS = 8", "GEMM_NUM_STAGES = 3", "GEMM_ALLOW_TF32 = 1"),
    "conv": ("CONV_BLOCK_M = ", "CONV_BLOCK_N = ", "CONV_BLOCK_K = ", "CONV_NUM_WARPS = ",
             "CONV_NUM_STAGES = ", "CONV_ALLOW_TF32 = 1", "CONV_DIRECT_BLOCK = ",
             "CONV_DIRECT_WARPS = ", "CONV_COPY_NHWC = 1", "CONV_LIBRARY = 0"),
    "sort": ("SORT_MAX_ROW = ", "SORT_PROGRAM_ELEMS = "),
    "scatter": ("SCATTER_BLOCK = ",),
    "rnn": ("RNN_BLOCK_B = ", "RNN_BLOCK_H = ", "RNN_BLOCK_K = ", "RNN_NUM_WARPS = ", "RNN_SEQ_WARPS = ",
            "RNN_ALLOW_TF32 = 1"),
}
PUBLIC = {"gemm": {"mm", "addmm", "bmm", "baddbmm"}, "conv": {"convolution"}, "sort": {"sort", "topk"},
          "scatter": {"scatter_reduce"}, "rnn": {"rnn_tanh", "rnn_relu", "gru", "lstm"}}
PREFIX = {"gemm": ("GEMM_", "_gemm_"), "conv": ("CONV_", "_conv_"), "sort": ("SORT_", "_sort_"),
          "scatter": ("SCATTER_", "_scatter_"), "rnn": ("RNN_", "_rnn_")}


def _run(script: Path, *args: str, interpret: bool = True) -> list[dict]:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "",
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    env.pop("TRITON_INTERPRET", None)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    proc = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          env=env, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def _assert_rows(rows: list[dict], families: set[str]) -> None:
    assert {r["family"] for r in rows} == families
    bad = [r for r in rows if not (r["ok"] and r["is_out"] and r["layout_ok"])]
    assert not bad, json.dumps(bad, indent=1)


def test_source_and_names():
    assert library.NAMES == ("gemm", "conv", "sort", "scatter", "rnn")
    for name in library.NAMES:
        assert library.source(name).startswith('"""forge library ')
    with pytest.raises(KeyError):
        library.source("nope")


@pytest.mark.parametrize("name", ["gemm", "conv", "sort", "scatter", "rnn"])
def test_file_shape(name):
    """Knob header, docstring, imports, prefixed names, small functions."""
    text = library.source(name)
    header = re.search(r"^# --- knobs ---\n(.*?)^# --- end ---$", text, re.S | re.M)
    assert header, "no knobs header"
    lines = header.group(1).strip().splitlines()
    assert len(lines) == len(KNOBS[name])
    for line, want in zip(lines, KNOBS[name], strict=True):
        assert line.startswith(want) and re.fullmatch(r"[A-Z_0-9]+ = \d+", line), line
    tree = ast.parse(text)
    assert ast.get_docstring(tree) and "knob" in ast.get_docstring(tree).lower()
    imports = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imports <= {"torch", "triton", "triton.language", "math"}
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    defined = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
            assert node.end_lineno - node.lineno < 60, f"{node.name} is long"
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined |= {t.id for t in targets if isinstance(t, ast.Name)}
    assert PUBLIC[name] <= defined
    assert all(d in PUBLIC[name] or d.startswith(PREFIX[name]) for d in defined), defined


def test_files_paste_into_one_module(tmp_path):
    path = tmp_path / "kernel.py"
    path.write_text("\n\n".join(library.source(n) for n in library.NAMES))
    spec = importlib.util.spec_from_file_location("candidate_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert all(callable(getattr(mod, f)) for f in ("mm", "addmm", "bmm", "baddbmm", "convolution", "sort", "topk",
                                                   "scatter_reduce", "rnn_tanh", "rnn_relu", "gru", "lstm"))
    assert mod.GEMM_BLOCK_M == 128 and mod.CONV_ALLOW_TF32 == 1


def test_interpreter_provides_every_libdevice_function_inductor_emits(tmp_path):
    """Under the CPU interpreter a generated kernel's libdevice calls go to NumPy stand-ins; a
    name Inductor's Triton codegen can emit but the stand-in lacks failed at run time
    (erfinv did, as AttributeError on a namespace)."""
    import numpy as np
    import torch._inductor.codegen.triton as codegen

    text = Path(codegen.__file__).read_text()
    emitted = set(re.findall(r"libdevice\.([a-z_0-9]+)\(", text))
    assert {"erf", "erfinv", "lgamma", "ldexp"} <= emitted  # the scan still reads the codegen
    path = tmp_path / "kernel.py"
    path.write_text(library.source("runtime") + "\n\n" + library.source("interpret"))
    spec = importlib.util.spec_from_file_location("candidate_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    provided = mod._rt_interpret_libdevice()
    assert sorted(n for n in emitted if not hasattr(provided, n)) == []
    v = np.array([-0.9, 0.0, 0.5], dtype=np.float32)
    assert np.allclose(mod._rt_erfinv(v), torch.special.erfinv(torch.from_numpy(v)).double().numpy(), atol=1e-6)


def test_the_library_convolution_keeps_the_layout_the_caller_was_lowered_for(tmp_path):
    """``_rt_aten_conv`` (CONV_LIBRARY 1 and 2): PyTorch's convolution; at 2 on channels-last
    copies of contiguous operands, its output copied back to the contiguous layout the tail
    kernel and the caller index, a channels-last input left as it is."""
    import torch

    path = tmp_path / "kernel.py"
    path.write_text(library.source("runtime") + "\n\n" + library.source("interpret"))
    spec = importlib.util.spec_from_file_location("candidate_runtime", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x, w, b = torch.randn(2, 4, 9, 9), torch.randn(6, 4, 3, 3), torch.randn(6)
    want = torch.nn.functional.conv2d(x, w, b, stride=2, padding=1)
    args = (b, [2, 2], [1, 1], [1, 1], False, [0, 0], 1)
    for moved in (False, True):
        y = mod._rt_aten_conv(x, w, *args, channels_last=moved)
        assert y.is_contiguous() and torch.allclose(y, want, atol=1e-5)
    xl = x.contiguous(memory_format=torch.channels_last)
    y = mod._rt_aten_conv(xl, w, *args, channels_last=True)
    assert y.is_contiguous(memory_format=torch.channels_last) and torch.allclose(y, want, atol=1e-5)


def test_a_kernel_inductor_left_unmasked_gets_blocks_that_divide_its_length(tmp_path):
    """Inductor leaves out a mask (``xmask = tl.full([XBLOCK], True, tl.int1)``) where the
    length is a multiple of every block it would launch (8192 * batch * centroids in our
    operator 183, PointNet++); forge's runtime launched 16384-element blocks there under the
    interpreter and stored past the end of the buffer (heap corruption, SIGABRT). Blocks now
    divide such a length; masked axes keep the knob's block."""
    from forgekernel.generate.assemble import unmasked

    source = ("def k(in_out_ptr0, xnumel_c: tl.constexpr, XBLOCK : tl.constexpr):\n"
              "    xoffset = tl.program_id(0) * XBLOCK\n"
              "    xmask = tl.full([XBLOCK], True, tl.int1)[:]\n")
    assert unmasked(source) == (("XBLOCK", "xnumel"),)
    assert unmasked(source.replace("tl.full([XBLOCK], True, tl.int1)[:]", "xindex < xnumel")) == ()
    path = tmp_path / "kernel.py"
    path.write_text(library.source("runtime"))
    spec = importlib.util.spec_from_file_location("candidate_launch", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.RT_PW_BLOCK = 16384
    signature = {"in_out_ptr0": "*fp32", "xnumel": "i32", "XBLOCK": "constexpr"}
    bare = mod._RtLaunch(None, "pointwise", signature, "DEFAULT", unmasked=(("XBLOCK", "xnumel"),))
    grid, meta, _ = bare.plan([None, 8192 * 3])
    assert meta["XBLOCK"] == 8192 and grid[0] * meta["XBLOCK"] == 8192 * 3
    masked = mod._RtLaunch(None, "pointwise", signature, "DEFAULT")
    assert masked.plan([None, 8192 * 3])[1]["XBLOCK"] == 16384


def test_error_measure_flags_wrong_values():
    sys.path.insert(0, str(REPO / "tests"))
    try:
        import library_check
    finally:
        sys.path.remove(str(REPO / "tests"))
    want = torch.randn(40, 30, dtype=torch.float64)
    assert library_check.error(want.to(torch.bfloat16), want, torch.bfloat16) <= 1.0
    off = want.clone()
    off[3, 4] += 0.05 * want.pow(2).mean().sqrt()
    assert library_check.error(off.float(), want, torch.float32) > 1.0
    assert library_check.error(want.float().t(), want, torch.float32) == float("inf")


def test_library_matches_aten_under_interpreter():
    _assert_rows(_run(CHECK), {"gemm", "conv", "sort", "scatter", "rnn"})


def test_library_small_blocks_under_interpreter():
    _assert_rows(_run(CHECK, "--dtypes", "float32", "--knobs", json.dumps(SMALL_KNOBS)),
                 {"gemm", "conv", "sort", "scatter", "rnn"})  # sort: rows over 64 take the torch path


def test_library_compiles_for_sm90_without_spills():
    rows = _run(STATIC, interpret=False)
    assert {r["file"] for r in rows} == {"gemm", "conv", "sort", "scatter", "rnn"}
    assert {r["kernel"] for r in rows} == {"_gemm_kernel", "_gemm_split_sum", "_gemm_tiny_kernel", "_conv_kernel", "_conv_direct_kernel", "_sort_rows",
                                           "_scatter_init", "_scatter_combine", "_scatter_finish", "_rnn_step_kernel",
                                           "_rnn_seq_kernel"}
    for r in rows:
        where = f"{r['case']}: {r}"
        assert r["regs"] and r["regs"] > 0, where
        assert r["spill_stores"] == 0 and r["spill_loads"] == 0, where
    # the geometry and output sizes are constexprs: no run-time division per element or per row
    # (Triton 3.6 left 135-145 in a tile's position decode, 212 in the flat walk's tap decode);
    # a fused tail decoding its channel from run-time sizes divides per element (the case
    # that passes them plain), from the constexprs the generated code passes it does not
    conv = {r["case"]: r for r in rows if r["file"] == "conv"}
    plain = conv.pop("3x3 c64->128 NCHW fp32 + fused tail, sizes plain")
    assert conv and all(r["int_divisions"] <= 4 for r in conv.values()), conv
    assert plain["int_divisions"] > 4 * 8, plain
    big = [r for r in rows if "4096^3" in r["case"] or "c128" in r["case"]]
    assert big and all(r["uses_wgmma"] for r in big)  # Hopper tensor-core path at large tiles
    assert all(min(r["config"]["BLOCK_M"], r["config"]["BLOCK_N"]) >= 64 for r in big)


SM90_SMEM = 232448
"""Shared memory one sm_90 program may hold (227 KiB): a launch asking for more fails."""


def test_library_fits_sm90_shared_memory_at_its_knobs_largest_tiles():
    """Every launch within the program limit, the default knobs and the search's largest
    recurrent tiles alike (an LSTM step at RNN_BLOCK_H=128 asked an H100 for 264 KiB when
    its loop was pipelined three deep: the depth now follows the tile)."""
    rows = _run(STATIC, interpret=False) + _run(STATIC, "--only", "rnn", "--knobs",
                                                 json.dumps({"RNN_BLOCK_H": 128}), interpret=False)
    assert rows and all(r["smem_bytes"] <= SM90_SMEM for r in rows), [
        (r["case"], r["smem_bytes"]) for r in rows if r["smem_bytes"] > SM90_SMEM]


def test_pasted_library_passes_the_judge_policy(tmp_path):
    """Forbidden calls (the matmul task forbids torch.mm and its kin), imports, dunders."""
    from forgekernel.judge import policy
    from forgekernel.task import load_task

    (tmp_path / "kernel.py").write_text("\n\n".join(library.source(n) for n in library.NAMES))
    forbid = tuple(load_task(REPO / "tasks" / "matmul").policy.forbid)
    result = policy.check_sources(tmp_path, forbid)
    assert result.violations == [] and result.syntax_error is None
    assert {"_gemm_kernel", "_conv_kernel"} <= set(result.own_kernels)
