"""The sandbox on a GPU machine: what it binds, CUDA and Triton inside, CUDA IPC across it.

    python3 benchmarks/sandbox_gpu_check.py [--out FILE]

For each mechanism present and both PID modes: a sandboxed ``python -I`` with ``gpu=True``
initialises CUDA, multiplies two matrices, compiles and runs a Triton kernel. Then CUDA IPC
through the driver API (libcuda, ctypes): a buffer exported by a process outside and
opened by one inside, and the other way round, with and without PID (and IPC)
namespaces. Writes one JSON document.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GPU_PROBE = '''
import json, os, sys, time
t0 = time.time()
import torch, triton, triton.language as tl

@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + i, tl.load(x + i, mask=i < n) + tl.load(y + i, mask=i < n), mask=i < n)

res = {"cuda": torch.cuda.is_available(), "pid": os.getpid()}
if res["cuda"]:
    res["device"] = torch.cuda.get_device_name(0)
    a = torch.randn(1024, 1024, device="cuda")
    res["matmul_ok"] = bool(torch.allclose(a @ a, (a.double() @ a.double()).float(), atol=1e-2))
    x, y = torch.randn(10000, device="cuda"), torch.randn(10000, device="cuda")
    out = torch.empty_like(x)
    add[(triton.cdiv(10000, 1024),)](x, y, out, 10000, BLOCK=1024)
    res["triton_ok"] = bool(torch.equal(out, x + y))
    res["triton_cache_files"] = sum(len(f) for _, _, f in os.walk(os.environ["TRITON_CACHE_DIR"]))
res["dev"] = sorted(n for n in os.listdir("/dev") if n.startswith("nvidia"))
res["wall_s"] = round(time.time() - t0, 2)
print(json.dumps(res))
'''

TORCH_IPC = '''
import json, pickle, sys, torch
from torch.multiprocessing.reductions import rebuild_cuda_tensor, reduce_tensor
if sys.argv[1] == "export":
    t = torch.arange(1024, device="cuda", dtype=torch.int32)
    print(json.dumps({"handle": pickle.dumps(reduce_tensor(t)[1]).hex()}), flush=True)
    sys.stdin.readline()
else:
    try:
        t = rebuild_cuda_tensor(*pickle.loads(bytes.fromhex(sys.argv[2])))
        print(json.dumps({"sum_ok": int(t.sum()) == 1024 * 1023 // 2}))
    except Exception as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {str(exc)[:200]}"}))
'''

IPC = '''
import ctypes, json, sys
cu = ctypes.CDLL("libcuda.so.1")
class Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]
def ck(ret, what):
    if ret:
        name = ctypes.c_char_p()
        cu.cuGetErrorName(ret, ctypes.byref(name))
        print(json.dumps({"error": f"{what}: {name.value.decode()}"}), flush=True)
        sys.exit(0)
ck(cu.cuInit(0), "cuInit")
dev, ctx = ctypes.c_int(), ctypes.c_void_p()
ck(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ck(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
ck(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
N = 1024
if sys.argv[1] == "export":
    ptr, handle = ctypes.c_uint64(), Handle()
    ck(cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(4 * N)), "cuMemAlloc")
    data = (ctypes.c_uint32 * N)(*range(N))
    ck(cu.cuMemcpyHtoD_v2(ptr, data, ctypes.c_size_t(4 * N)), "cuMemcpyHtoD")
    ck(cu.cuIpcGetMemHandle(ctypes.byref(handle), ptr), "cuIpcGetMemHandle")
    print(json.dumps({"handle": ctypes.string_at(ctypes.addressof(handle), 64).hex()}), flush=True)
    sys.stdin.readline()
else:
    handle = Handle.from_buffer_copy(bytes.fromhex(sys.argv[2]))
    ptr = ctypes.c_uint64()
    cu.cuIpcOpenMemHandle_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), Handle, ctypes.c_uint]
    ck(cu.cuIpcOpenMemHandle_v2(ctypes.byref(ptr), handle, 1), "cuIpcOpenMemHandle")
    data = (ctypes.c_uint32 * N)()
    ck(cu.cuMemcpyDtoH_v2(data, ptr, ctypes.c_size_t(4 * N)), "cuMemcpyDtoH")
    print(json.dumps({"sum_ok": sum(data) == N * (N - 1) // 2}), flush=True)
'''


def facts() -> dict:
    from forgekernel.sandbox.plan import _libcuda_dirs

    def sh(cmd: str) -> str:
        out = subprocess.run(cmd, shell=True, capture_output=True, text=True)
        return (out.stdout + out.stderr).strip()[-2000:]

    return {"euid": os.geteuid(), "kernel": os.uname().release, "python": sys.version.split()[0],
            "bwrap": sh("command -v bwrap && bwrap --version"), "unshare": sh("command -v unshare"),
            "dev_nvidia": sorted(glob.glob("/dev/nvidia*")), "libcuda_dirs": list(_libcuda_dirs()),
            "nvidia_mounts": sh("grep -i nvidia /proc/mounts"),
            "max_user_namespaces": sh("cat /proc/sys/user/max_user_namespaces"),
            "ld_library_path": os.environ.get("LD_LIBRARY_PATH", "")}


def _spec(tmp: Path, prog: Path, pid_namespace: bool):
    from forgekernel import sandbox as sb

    scratch = tmp / f"scratch-{time.monotonic_ns()}"
    scratch.mkdir()
    return sb.SandboxSpec(scratch=scratch, readonly=(*sb.python_paths(), prog), gpu=True,
                          env=sb.filter_env(os.environ), pid_namespace=pid_namespace)


def _with_ipc_ns(argv: list[str], mech: str) -> list[str]:
    """The same command line with a private IPC namespace added."""
    at = argv.index("--mode") + 2 if mech == "stdlib" else next(
        i for i, a in enumerate(argv) if a.endswith("bwrap")) + 1
    return [*argv[:at], "--unshare-ipc", *argv[at:]]


def gpu_probe(mech, tmp: Path, prog: Path, pidns: bool) -> dict:
    from forgekernel import sandbox as sb

    launch = sb.command(mech, _spec(tmp, prog, pidns), [sys.executable, "-I", str(prog / "gpu_probe.py")])
    start = time.monotonic()
    out = subprocess.run(**launch.popen_kwargs(), capture_output=True, text=True, timeout=300)
    row = {"rc": out.returncode, "spawn_to_exit_s": round(time.monotonic() - start, 2)}
    try:
        row.update(json.loads(out.stdout.strip().splitlines()[-1]))
    except (IndexError, ValueError):
        row["stderr"] = out.stderr[-1500:]
    return row


def ipc(mech, tmp: Path, prog: Path, pidns: bool, inside: str, private_ipc: bool,
        api: str = "ipc.py") -> dict:
    """CUDA IPC (``api``: the driver's, or PyTorch's storage sharing) with the ``inside``
    side ('export' or 'import', or 'none': the control) in the sandbox."""
    from forgekernel import sandbox as sb

    script = [sys.executable, "-I", str(prog / api)]
    launch = sb.command(mech, _spec(tmp, prog, pidns), [*script, "export"])
    argv = list(launch.argv)
    if private_ipc:
        argv = _with_ipc_ns(argv, mech.name)
    boxed_export = inside == "export"
    exp_argv = argv if boxed_export else [*script, "export"]
    exporter = subprocess.Popen(exp_argv, env=launch.env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = exporter.stdout.readline()
        if not line:
            return {"export": {"error": "exporter said nothing", "stderr": exporter.stderr.read()[-800:]}}
        first = json.loads(line)
        if "handle" not in first:
            return {"export": first}
        imp = [*script, "import", first["handle"]]
        if inside == "import":
            imp = sb.command(mech, _spec(tmp, prog, pidns), imp).argv
            imp = _with_ipc_ns(list(imp), mech.name) if private_ipc else list(imp)
        out = subprocess.run(imp, env=launch.env, capture_output=True, text=True, timeout=120)
        try:
            return json.loads(out.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            return {"rc": out.returncode, "stderr": out.stderr[-800:]}
    finally:
        exporter.communicate("\n", timeout=60)


def main() -> None:
    from forgekernel import sandbox as sb
    from forgekernel.sandbox.detect import MECHANISMS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    result: dict = {"facts": facts(), "control": {}, "mechanisms": {}}
    with tempfile.TemporaryDirectory() as t:
        tmp, prog = Path(t), Path(t) / "prog"
        prog.mkdir()
        (prog / "gpu_probe.py").write_text(GPU_PROBE)
        (prog / "ipc.py").write_text(IPC)
        (prog / "torch_ipc.py").write_text(TORCH_IPC)
        stdlib = sb.probe(mechanisms=("stdlib",)).mechanism
        for api in ("ipc.py", "torch_ipc.py"):  # no sandbox on either side
            result["control"][api] = ipc(stdlib, tmp, prog, False, "none", False, api)
        for name in MECHANISMS:
            det = sb.probe(mechanisms=(name,))
            row: dict = {"reason": det.reason}
            result["mechanisms"][name] = row
            if det.mechanism is None:
                continue
            for pidns in (True, False):
                key = "pidns" if pidns else "no-pidns"
                row[key] = {"gpu": gpu_probe(det.mechanism, tmp, prog, pidns)}
                for inside in ("import", "export"):
                    for private in (True, False) if not pidns else (True,):
                        label = f"ipc_{inside}_inside" + ("_private_ipc" if private else "")
                        row[key][label] = ipc(det.mechanism, tmp, prog, pidns, inside, private)
                    row[key][f"torch_ipc_{inside}_inside"] = ipc(
                        det.mechanism, tmp, prog, pidns, inside, pidns, "torch_ipc.py")
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
