"""Cost model and roofline: minimal bytes, flops, the floor time and %SOL.

Minimal bytes = every input, parameter and buffer read once plus every output written once.
Flops come from the task's ``[cost] flops`` formula when it has one, else from PyTorch's
flop counter over the reference on meta tensors (:mod:`forgekernel.refplan`). The floor is
max(bytes / bandwidth, flops / peak), with the bandwidth taken size-matched from the
device's measured copy ceiling and the peak for the task's compute dtype (float32 tasks
with ``[judge] tf32 = true``: the TF32 tensor-core peak).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from forgekernel import exprs
from forgekernel.records import DTYPE_BYTES, TaskSpec, Workload
from forgekernel.task import numel, shape_of


class Ceilings(BaseModel):
    """Measured device ceilings used for floors; ``source`` says where they came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    device: str
    bandwidth_tbs: float
    """Large-buffer copy bandwidth (bytes read + written) in TB/s."""
    bandwidth_by_mib: dict[int, float] = Field(default_factory=dict)
    """Size-matched copy bandwidth: buffer MiB -> TB/s."""
    tflops: dict[str, float] = Field(default_factory=dict)
    """dtype (or ``tf32``) -> dense matrix peak in TFLOP/s."""
    tflops_sources: dict[str, str] = Field(default_factory=dict)
    """Where a peak came from when it is not ``source`` (a datasheet lead is not a measurement)."""
    launch_us: float | None = None
    source: str = ""


H200_SHARED = Ceilings(
    device="NVIDIA H200",
    bandwidth_tbs=4.27,
    bandwidth_by_mib={16: 2.64, 32: 3.09, 64: 3.62, 128: 3.97, 256: 4.13, 512: 4.18, 1024: 4.25,
                      4096: 4.30},
    tflops={"bfloat16": 686.0, "float32": 67.0, "tf32": 494.7},
    tflops_sources={"float32": "datasheet lead, not measured (H200 SXM: FP32 67 TFLOP/s)",
                    "tf32": "datasheet lead, not measured (H200 SXM: TF32 tensor core 989 "
                            "TFLOP/s with sparsity, 494.7 dense)"},
    source="benchmarks/results/h200_baseline_2026-12-02.json (measured on an H200, 2026-12-02)",
)
"""The H200 baseline's ceilings (benchmarks/results/h200_baseline_2026-12-02.json); used until
the knowledge base certifies its own. The float32 and TF32 peaks are NVIDIA's datasheet
figures (leads until a probe measures them)."""


def measure_copy_ceilings(device: str, sizes_mib: tuple[int, ...] = (16, 64, 256), reps: int = 5,
                          batch_ms: float = 1.0) -> Ceilings:
    """This process's GPU's copy bandwidth, measured now: the memory ceilings of a device
    without a table. The clocks are spun up first; per size, CUDA events around a batch of
    back-to-back copies of about ``batch_ms``, and the fastest of ``reps`` batches (a ceiling
    is what the device can do, so the best reading, not the typical one). One copy between
    two events read 16 MiB at 1.7 TB/s on an H100 (event and launch latency in the time) and
    rejected an honest kernel that moved 64 MiB at 2.5 TB/s. A copy of a size that fits the
    L2 reads from it, so small floors come out lenient, not strict."""
    import torch

    torch.cuda._sleep(5_000_000)  # a few ms of spinning: clocks up before the first copy
    table = {}
    for mib in sizes_mib:
        src = torch.zeros(mib << 20, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        one = _copy_batch_ms(src, dst, 1)
        n = max(1, min(200, round(batch_ms / max(one, 1e-3))))
        best = min(_copy_batch_ms(src, dst, n) for _ in range(reps)) / n
        table[mib] = round(2 * (mib << 20) / (best * 1e-3) / 1e12, 3)
        del src, dst
    return Ceilings(device=device, bandwidth_tbs=max(table.values()), bandwidth_by_mib=table,
                    source=f"copy bandwidth measured on this {device} by the judge (CUDA events around "
                           f"batches of copies, best of {reps})")


def _copy_batch_ms(src: Any, dst: Any, n: int) -> float:
    """Device ms of ``n`` back-to-back copies of ``src`` into ``dst`` (after one untimed)."""
    import torch

    dst.copy_(src)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(n):
        dst.copy_(src)
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def bandwidth_for(ceilings: Ceilings, nbytes: int) -> float:
    """TB/s a streaming kernel moving ``nbytes`` (read + written) can expect.

    A copy of buffer size S moves 2*S bytes, so the matching buffer is nbytes / 2; sizes
    between table points are interpolated linearly, outside the table clamped.
    """
    table = sorted(ceilings.bandwidth_by_mib.items())
    if not table:
        return ceilings.bandwidth_tbs
    mib = nbytes / 2 / (1 << 20)
    if mib <= table[0][0]:
        return table[0][1]
    for (s0, b0), (s1, b1) in zip(table, table[1:], strict=False):
        if mib <= s1:
            return b0 + (b1 - b0) * (mib - s0) / (s1 - s0)
    return table[-1][1]


def tensor_bytes(dtype: str, shape: tuple[int, ...]) -> int:
    return numel(shape) * DTYPE_BYTES[dtype]


def input_bytes(task: TaskSpec, workload: Workload) -> int:
    return sum(tensor_bytes(s.dtype, shape_of(s, workload.axes)) for s in task.inputs.values())


def minimal_bytes(task: TaskSpec, workload: Workload, outputs: list[tuple[tuple[int, ...], str]],
                  *, params: int = 0, inputs: int | None = None) -> int:
    """Inputs (default: from the specs) and ``params`` bytes read once plus outputs written
    once, or the task's [cost] bytes formula."""
    if task.cost.bytes:
        return int(exprs.evaluate(task.cost.bytes, workload.axes))
    out = sum(tensor_bytes(dtype, shape) for shape, dtype in outputs)
    return (input_bytes(task, workload) if inputs is None else inputs) + params + out


def workload_cost(task: TaskSpec, module: Any, workload: Workload) -> Any:
    """The reference's :class:`forgekernel.refplan.Cost` at ``workload`` (meta tensors)."""
    from forgekernel import refplan

    return refplan.cost(task, module, workload)


def cost_bytes(task: TaskSpec, workload: Workload, cost: Any) -> int:
    """Minimal bytes of a workload from its Cost (the [cost] bytes formula wins)."""
    return minimal_bytes(task, workload, cost.outputs or [], params=cost.param_bytes,
                         inputs=cost.input_bytes)


def formula_flops(task: TaskSpec, workload: Workload) -> float | None:
    if not task.cost.flops:
        return None
    return float(exprs.evaluate(task.cost.flops, workload.axes))


def main_dtype(task: TaskSpec) -> str:
    """The floating dtype most input bytes are in (picks the matrix peak)."""
    sizes: dict[str, int] = {}
    for spec in task.inputs.values():
        sizes[spec.dtype] = sizes.get(spec.dtype, 0) + 1
    floats = [d for d in sizes if d.startswith(("bfloat", "float"))]
    return max(floats, key=lambda d: sizes[d]) if floats else "float32"


def compute_dtype(task: TaskSpec) -> str:
    """The key of the matrix peak the floor uses: the main dtype, or ``tf32`` for a float32
    task whose [judge] allows TF32."""
    dtype = main_dtype(task)
    return "tf32" if dtype == "float32" and task.judge.tf32 else dtype


class Floor(BaseModel):
    """The roofline floor of one workload."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bytes: int
    flops: float | None
    memory_ms: float
    compute_ms: float | None
    floor_ms: float
    bound: Literal["memory", "compute"]
    bandwidth_tbs: float
    peak_tflops: float | None
    ceilings_source: str
    peak_source: str | None = None
    """Where the peak came from when not from ``ceilings_source`` (a datasheet lead)."""

    def sol_pct(self, median_ms: float) -> float:
        """Speed of light: floor / measured, in percent."""
        return 100.0 * self.floor_ms / median_ms if median_ms > 0 else 0.0


def floor(nbytes: int, flops: float | None, ceilings: Ceilings, dtype: str = "bfloat16") -> Floor:
    bw = bandwidth_for(ceilings, nbytes)
    mem_ms = nbytes / (bw * 1e12) * 1e3
    peak = ceilings.tflops.get(dtype)
    peak_source = ceilings.tflops_sources.get(dtype)
    if peak is None and "H200" in ceilings.device and dtype in H200_SHARED.tflops:
        peak = H200_SHARED.tflops[dtype]  # certified ceilings without this peak: the shared one
        peak_source = H200_SHARED.tflops_sources.get(dtype, H200_SHARED.source)
    comp_ms = flops / (peak * 1e12) * 1e3 if flops is not None and peak else None
    bound = "compute" if comp_ms is not None and comp_ms > mem_ms else "memory"
    return Floor(bytes=nbytes, flops=flops, memory_ms=mem_ms, compute_ms=comp_ms,
                 floor_ms=max(mem_ms, comp_ms or 0.0), bound=bound, bandwidth_tbs=bw,
                 peak_tflops=peak, ceilings_source=ceilings.source,
                 peak_source=peak_source if peak else None)


def output_specs(task: TaskSpec, module: Any, workload: Workload) -> list[tuple[tuple[int, ...], str]]:
    """Output (shape, dtype) at a workload: a forge task's declared [outputs], else the
    reference on meta tensors (:func:`forgekernel.refplan.cost`)."""
    if task.outputs and task.format != "kernelbench":
        return [(shape_of(s, workload.axes), s.dtype) for s in task.outputs.values()]
    from forgekernel import refplan

    cost = refplan.cost(task, module, workload)
    if cost.outputs is None:
        raise refplan.ReferenceFailure(f"{task.root}/reference.py: {cost.note}")
    return cost.outputs
