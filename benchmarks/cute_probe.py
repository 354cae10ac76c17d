"""Which CuTe DSL kernels finish on this GPU: from a one-line store up to the built-in RMSNorm.

The built-in ``rownorm_cute`` launched and never finished on the lent H100 and H200 (cu12
and cu13 libraries alike: ``benchmarks/results/languages_*_cute/``). Each probe here is a
small kernel of its own, compiled, launched and synchronised in a fresh child process with a
deadline, so the first feature that hangs shows:

1. ``store``: every thread writes its index (static layout, the DSL's default stream);
2. ``store_stream``: the same on torch's current stream (as the template launches);
3. ``store_dynamic``: the same with ``mark_layout_dynamic`` tensors;
4. ``loop``: a strided loop over a dynamic row length (no shared memory, no barrier);
5. ``warp_reduce``, ``barrier_only``, ``smem_only``: a warp reduction, a CTA barrier, shared
   memory (``SmemAllocator``), each alone; ``if_only`` (a reduction and a lane-0 branch),
   ``smem_if`` (that branch writing shared memory, no barrier), ``smem_noif`` (every lane
   writes, then a barrier), ``smem_unrolled`` (the three together, the read loop unrolled);
6. ``smem_barrier``: the three together (no loop), and ``smem_sized`` the same launched with
   an explicit shared-memory size;
7. ``template``: the built-in ``rownorm_cute`` at 16 x 256 (16-byte vector copies);
   ``template_odd`` at 16 x 250 (the width-1 kernel).

    python3 benchmarks/cute_probe.py --out $OUT/cute_probe --commit SHA [--deadline 60]
    python3 benchmarks/cute_probe.py --compile-only ...    # here, without a GPU: sm_90a compile

Writes OUT/cute_probe.json (device, date, versions, commit, per probe: finished, seconds,
values right, the child's last lines; a probe that hangs dumps its Python stack to stderr
eight seconds before the deadline).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

CHILD = r'''
import faulthandler, os, sys, time
import torch
import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack

probe, device = sys.argv[1], sys.argv[2]
if os.environ.get("PROBE_DUMP_S"):  # where a hung probe is stuck, on stderr before it is killed
    faulthandler.dump_traceback_later(float(os.environ["PROBE_DUMP_S"]))


@cute.kernel
def k_store(mY: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    mY[tidx] = tidx.to(cutlass.Float32)


@cute.jit
def j_store(mY: cute.Tensor):
    k_store(mY).launch(grid=(1, 1, 1), block=(128, 1, 1))


@cute.jit
def j_store_stream(mY: cute.Tensor, stream: cuda.CUstream):
    k_store(mY).launch(grid=(1, 1, 1), block=(128, 1, 1), stream=stream)


@cute.kernel
def k_loop(mX: cute.Tensor, mY: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    row, _, _ = cute.arch.block_idx()
    for j in cutlass.range(tidx, mX.shape[1], 128):
        mY[row, j] = mX[row, j] * 2.0


@cute.jit
def j_loop(mX: cute.Tensor, mY: cute.Tensor, stream: cuda.CUstream):
    k_loop(mX, mY).launch(grid=(mX.shape[0], 1, 1), block=(128, 1, 1), stream=stream)


@cute.kernel
def k_smem(mX: cute.Tensor, mY: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    smem = cutlass.utils.SmemAllocator()
    partial = smem.allocate_tensor(cutlass.Float32, cute.make_layout(4), byte_alignment=16)
    v = cute.arch.warp_reduction_sum(mX[tidx])
    if cute.arch.lane_idx() == 0:
        partial[cute.arch.warp_idx()] = v
    cute.arch.barrier()
    total = cutlass.Float32(0.0)
    for w in cutlass.range_constexpr(4):
        total += partial[w]
    mY[tidx] = total


@cute.jit
def j_smem(mX: cute.Tensor, mY: cute.Tensor, stream: cuda.CUstream):
    k_smem(mX, mY).launch(grid=(1, 1, 1), block=(128, 1, 1), stream=stream)


@cute.kernel
def k_if_only(mX: cute.Tensor, mY: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    v = cute.arch.warp_reduction_sum(mX[tidx])
    if cute.arch.lane_idx() == 0:
        mY[cute.arch.warp_idx()] = v


@cute.jit
def j_if_only(mX: cute.Tensor, mY: cute.Tensor, stream: cuda.CUstream):
    k_if_only(mX, mY).launch(grid=(1, 1, 1), block=(128, 1, 1), stream=stream)


@cute.kernel
def k_smem_noif(mX: cute.Tensor, mY: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    smem = cutlass.utils.SmemAllocator()
    partial = smem.allocate_tensor(cutlass.Float32, cute.make_layout(4), byte_alignment=16)
    v = cute.arch.warp_reduction_sum(mX[tidx])
    partial[cute.arch.warp_idx()] = v
    cute.arch.barrier()
    total = cutlass.Float32(0.0)
    for w in cutlass.range_constexpr(4):
        total += partial[w]
    mY[tidx] = total


@cute.jit
def j_smem_noif(mX: cute.Tensor, mY: cute.Tensor, stream: cuda.CUstream):
    k_smem_noif(mX, mY).launch(grid=(1, 1, 1), block=(128, 1, 1), stream=stream)


@cute.kernel
def k_smem_if(mX: cute.Tensor, mY: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    smem = cutlass.utils.SmemAllocator()
    partial = smem.allocate_tensor(cutlass.Float32, cute.make_layout(4), byte_alignment=16)
    v = cute.arch.warp_reduction_sum(mX[tidx])
    if cute.arch.lane_idx() == 0:
        partial[cute.arch.warp_idx()] = v
    mY[tidx] = v


@cute.jit
def j_smem_if(mX: cute.Tensor, mY: cute.Tensor, stream: cuda.CUstream):
    k_smem_if(mX, mY).launch(grid=(1, 1, 1), block=(128, 1, 1), stream=stream)


@cute.kernel
def k_smem_unrolled(mX: cute.Tensor, mY: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    smem = cutlass.utils.SmemAllocator()
    partial = smem.allocate_tensor(cutlass.Float32, cute.make_layout(4), byte_alignment=16)
    v = cute.arch.warp_reduction_sum(mX[tidx])
    if cute.arch.lane_idx() == 0:
        partial[cute.arch.warp_idx()] = v
    cute.arch.barrier()
    mY[tidx] = partial[0] + partial[1] + partial[2] + partial[3]


@cute.jit
def j_smem_unrolled(mX: cute.Tensor, mY: cute.Tensor, stream: cuda.CUstream):
    k_smem_unrolled(mX, mY).launch(grid=(1, 1, 1), block=(128, 1, 1), stream=stream)


@cute.kernel
def k_warp(mX: cute.Tensor, mY: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    mY[tidx] = cute.arch.warp_reduction_sum(mX[tidx])


@cute.jit
def j_warp(mX: cute.Tensor, mY: cute.Tensor, stream: cuda.CUstream):
    k_warp(mX, mY).launch(grid=(1, 1, 1), block=(128, 1, 1), stream=stream)


@cute.kernel
def k_barrier(mX: cute.Tensor, mY: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    v = mX[tidx] * 2.0
    cute.arch.barrier()
    mY[tidx] = v


@cute.jit
def j_barrier(mX: cute.Tensor, mY: cute.Tensor, stream: cuda.CUstream):
    k_barrier(mX, mY).launch(grid=(1, 1, 1), block=(128, 1, 1), stream=stream)


@cute.kernel
def k_smem_only(mX: cute.Tensor, mY: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    smem = cutlass.utils.SmemAllocator()
    buf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(128), byte_alignment=16)
    buf[tidx] = mX[tidx]
    mY[tidx] = buf[tidx] * 2.0


@cute.jit
def j_smem_only(mX: cute.Tensor, mY: cute.Tensor, stream: cuda.CUstream):
    k_smem_only(mX, mY).launch(grid=(1, 1, 1), block=(128, 1, 1), stream=stream)


@cute.jit
def j_smem_sized(mX: cute.Tensor, mY: cute.Tensor, stream: cuda.CUstream):
    k_smem(mX, mY).launch(grid=(1, 1, 1), block=(128, 1, 1), smem=1024, stream=stream)


def stream_of(t):
    return cuda.CUstream(torch.cuda.current_stream().cuda_stream if t.is_cuda else 0)


y = torch.zeros(128, device=device)
want = None
start = time.perf_counter()


def compiled_call(jit, *args):
    fn = cute.compile(jit, *args)
    print("compiled", round(time.perf_counter() - start, 3), flush=True)
    fn(*args)


PAIRS = {"warp_reduce": (j_warp, lambda x: x.view(4, 32).sum(1).repeat_interleave(32)),
         "barrier_only": (j_barrier, lambda x: x * 2), "smem_only": (j_smem_only, lambda x: x * 2),
         "smem_sized": (j_smem_sized, lambda x: x.sum().expand(128)),
         "if_only": (j_if_only, lambda x: torch.cat([x.view(4, 32).sum(1), torch.zeros(124, device=x.device)])),
         "smem_noif": (j_smem_noif, lambda x: x.sum().expand(128)),
         "smem_if": (j_smem_if, lambda x: x.view(4, 32).sum(1).repeat_interleave(32)),
         "smem_unrolled": (j_smem_unrolled, lambda x: x.sum().expand(128))}
if probe == "store":
    cute.compile(j_store, from_dlpack(y))(from_dlpack(y))
    want = torch.arange(128, device=device, dtype=torch.float32)
elif probe == "store_stream":
    cute.compile(j_store_stream, from_dlpack(y), stream_of(y))(from_dlpack(y), stream_of(y))
    want = torch.arange(128, device=device, dtype=torch.float32)
elif probe == "store_dynamic":
    a = from_dlpack(y).mark_layout_dynamic()
    cute.compile(j_store_stream, a, stream_of(y))(a, stream_of(y))
    want = torch.arange(128, device=device, dtype=torch.float32)
elif probe == "loop":
    x = torch.randn(16, 300, device=device)
    y = torch.zeros_like(x)
    a, b = from_dlpack(x).mark_layout_dynamic(), from_dlpack(y).mark_layout_dynamic()
    cute.compile(j_loop, a, b, stream_of(x))(a, b, stream_of(x))
    want = x * 2
elif probe == "smem_barrier":
    x = torch.randn(128, device=device)
    a, b = from_dlpack(x), from_dlpack(y)
    compiled_call(j_smem, a, b, stream_of(x))
    want = x.sum().expand(128)
elif probe in PAIRS:
    x = torch.randn(128, device=device)
    a, b = from_dlpack(x), from_dlpack(y)
    compiled_call(PAIRS[probe][0], a, b, stream_of(x))
    want = PAIRS[probe][1](x)
elif probe in ("template", "template_odd"):
    from forgekernel import templates
    import importlib.util, tempfile
    from pathlib import Path
    src = Path(templates.__file__).with_name("rownorm_cute.py").read_text()
    path = Path(tempfile.mkdtemp()) / "k.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("k", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    n = 256 if probe == "template" else 250  # 250: no 16-byte chunks, the width-1 kernel
    x = torch.randn(16, n, device=device, dtype=torch.bfloat16)
    w = torch.randn(n, device=device, dtype=torch.bfloat16)
    y = mod.rmsnorm(x, w)
    h = x.float()
    want = ((h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w)
print("launched", round(time.perf_counter() - start, 3), flush=True)
if device == "cuda":
    torch.cuda.synchronize()
    print("finished", round(time.perf_counter() - start, 3), flush=True)
    print("right", bool(torch.allclose(y.float(), want.float(), atol=2e-2, rtol=2e-2)), flush=True)
'''
PROBES = ("store", "store_stream", "store_dynamic", "loop", "warp_reduce", "barrier_only", "smem_only",
          "smem_barrier", "smem_sized", "if_only", "smem_noif", "smem_if", "smem_unrolled", "template",
          "template_odd")


def run_probe(probe: str, device: str, deadline: float, env: dict, child: Path) -> dict:
    start = time.perf_counter()
    try:  # from a file: the DSL reads its kernels' source
        proc = subprocess.run([sys.executable, str(child), probe, device], capture_output=True, text=True,
                              timeout=deadline, env=env)
        out, err, rc = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        err, rc = "timed out; " + err, None
    lines = out.splitlines()
    return {"probe": probe, "rc": rc, "seconds": round(time.perf_counter() - start, 2),
            "compiled": any(x.startswith("compiled") for x in lines),
            "launched": any(x.startswith("launched") for x in lines),
            "finished": any(x.startswith("finished") for x in lines),
            "right": "right True" in lines, "stdout": lines[-4:], "stderr_tail": err[-1200:]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--commit", default="")
    ap.add_argument("--deadline", type=float, default=60.0)
    ap.add_argument("--compile-only", action="store_true", help="CPU tensors, sm_90a (no GPU needed)")
    ap.add_argument("--probes", default=",".join(PROBES))
    a = ap.parse_args()
    env = {**os.environ, "PROBE_DUMP_S": str(max(1.0, a.deadline - 8)), "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    device = "cpu" if a.compile_only else "cuda"
    if a.compile_only:
        env["CUTE_DSL_ARCH"] = "sm_90a"
    import cutlass

    doc = {"what": "CuTe DSL probes, each in a fresh process", "commit": a.commit, "device": device,
           "cutlass_dsl": cutlass.__version__, "probes": []}
    if device == "cuda":
        sys.path.insert(0, str(REPO / "benchmarks"))
        from gpu_judge import meta

        doc["meta"] = meta(a.commit)
    a.out.mkdir(parents=True, exist_ok=True)
    child = Path(tempfile.mkdtemp(prefix="cute-probe-")) / "probe_child.py"
    child.write_text(CHILD)
    for probe in a.probes.split(","):
        row = run_probe(probe, device, a.deadline, env, child)
        doc["probes"].append(row)
        (a.out / "cute_probe.json").write_text(json.dumps(doc, indent=1))
        print(f"{probe:14s} compiled={row['compiled']} launched={row['launched']} finished={row['finished']} right={row['right']} "
              f"rc={row['rc']} {row['seconds']} s {row['stderr_tail'][-300:] if not row['launched'] else ''}",
              flush=True)


if __name__ == "__main__":
    main()
