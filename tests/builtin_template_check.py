"""Check built-in templates against a task's reference under the Triton interpreter.

Run as a script in a fresh process with TRITON_INTERPRET=1 set (the tests do this):
``python tests/builtin_template_check.py [--op OP] TASK_DIR TEMPLATE [TEMPLATE ...]``. For every
template it renders a kernel (default knobs and, with --knobs, the extremes of the space),
runs it at the task's smoke workloads and at odd shapes, and compares it with the
reference evaluated on float64 copies of the inputs. Prints one JSON line per check.
"""

from __future__ import annotations

import json
import sys
import types

import torch

from forgekernel import templates
from forgekernel.agents import builtin, builtin_ops
from forgekernel.profile.launches import capture_launches
from forgekernel.records import Workload
from forgekernel.task import load_module, load_task, shape_of


def odd_workloads(task) -> list[Workload]:
    """Ones, +1 and about 1.5x+1 of the first smoke workload (kept on axis multiples)."""
    base = task.smoke_workloads()[0].axes

    def fix(name: str, v: int) -> int:
        mult = task.axes[name].multiple_of
        return max(mult, (v + mult - 1) // mult * mult)

    shapes = [{a: fix(a, 1) for a in base}, {a: fix(a, v + 1) for a, v in base.items()},
              {a: fix(a, v * 3 // 2 + 1) for a, v in base.items()}]
    return [Workload(axes=s) for s in shapes]


def make_inputs(task, module, axes: dict[str, int], seed: int) -> tuple:
    if hasattr(module, "make_inputs"):
        return tuple(module.make_inputs(dict(axes), seed))
    gen = torch.Generator().manual_seed(seed)
    out = []
    for spec in task.inputs.values():
        shape = shape_of(spec, axes)
        d = spec.dist
        if d.kind == "randint":
            t = torch.randint(int(d.low), int(d.high), shape, generator=gen)
        elif d.kind == "uniform":
            t = torch.rand(shape, generator=gen) * (d.high - d.low) + d.low
        else:
            t = torch.randn(shape, generator=gen) * d.std + d.mean
        out.append(t.to(getattr(torch, spec.dtype)))
    return tuple(out)


def _tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def rel_error(got, want) -> float:
    """max |got - want| / max(|want|, 1e-6) over all outputs (inf on shape/dtype mismatch)."""
    worst = 0.0
    for g, w in zip(_tuple(got), _tuple(want), strict=True):
        if g.shape != w.shape or not torch.isfinite(g.double()).all():
            return float("inf")
        scale = max(w.abs().max().item(), 1e-6)
        worst = max(worst, (g.double() - w).abs().max().item() / scale)
    return worst


def check(task, module, source: str, tpl, knobs: dict, op: str | None = None) -> list[dict]:
    m = builtin.supports(task, source)
    if op is not None:  # the tests' negative control: deliberately the wrong operator
        m = builtin_ops.OpMatch(op, m.params, m.constants, m.templates, call=m.call)
    cfg = templates.complete(tpl, knobs)
    text = templates.render(cfg, m.op, m.params, m.constants, call=m.call)
    kernel = types.ModuleType("candidate_kernel")
    exec(compile(text, f"<{tpl.name}>", "exec"), kernel.__dict__)
    rows = []
    smoke = make_inputs(task, module, task.smoke_workloads()[0].axes, seed=0)
    launches = capture_launches(lambda: kernel.run(*smoke), device="cpu").launches if not knobs else None
    for wl in [*task.smoke_workloads(), *odd_workloads(task)]:
        inputs = make_inputs(task, module, wl.axes, seed=1)
        got = kernel.run(*inputs)
        dtypes_ok = all(g.dtype == w.dtype for g, w in zip(_tuple(got), _tuple(module.run(*inputs)), strict=True))
        want = module.run(*[t.double() if t.is_floating_point() else t for t in inputs])
        ref_err = rel_error(module.run(*inputs), _tuple(want))
        rows.append({"template": tpl.name, "knobs": cfg.knobs, "axes": wl.axes,
                     "err": rel_error(got, _tuple(want)), "ref_err": ref_err, "dtype_ok": dtypes_ok,
                     "launches": launches})
    return rows


STRESS = {
    "rownorm_looped": {"BLOCK_N": 64}, "rownorm_multirow": {"ROWS": 8, "MAX_TILE": 1024},
    "softmax_looped": {"BLOCK_N": 64}, "softmax_multirow": {"ROWS": 8, "MAX_TILE": 1024},
    "xent_looped": {"BLOCK_V": 64}, "gated_flat": {"BLOCK": 128},
    "gated_rows": {"BLOCK_N": 64, "ROWS": 2}, "rope_rows": {"ROWS": 2, "LAYOUT": 1},
    "matmul_tiled": {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2, "SKINNY_M": 0, "TMA_MIN_M": 16},
}
"""Knobs outside the searched space that force several blocks at smoke shapes."""


def variants(tpl) -> list[dict]:
    out = [{}, {k.name: k.space[0] for k in tpl.knobs}, {k.name: k.space[-1] for k in tpl.knobs},
           STRESS.get(tpl.name, {})]
    unique = []
    for v in out:
        if templates.complete(tpl, v) not in [templates.complete(tpl, u) for u in unique]:
            unique.append(v)
    return unique


def main(argv: list[str]) -> None:
    op = None
    if argv[0] == "--op":
        op, argv = argv[1], argv[2:]
    task = load_task(argv[0])
    source = (__import__("pathlib").Path(task.root) / "reference.py").read_text()
    module = load_module(__import__("pathlib").Path(task.root) / "reference.py")
    for name in argv[1:]:
        tpl = templates.template(name)
        for knobs in variants(tpl):
            for row in check(task, module, source, tpl, knobs, op):
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
