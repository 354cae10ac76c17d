"""The example tasks load and their references run; malformed task dirs give one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from forgekernel.errors import ForgeError
from forgekernel.profile.roofline import formula_flops, input_bytes, minimal_bytes, output_specs
from forgekernel.records import FAMILIES, TaskSpec, TensorSpec, Workload
from forgekernel.task import TaskError, check_reference_module, load_task, numel, shape_of

TASKS = Path(__file__).resolve().parents[1] / "tasks"
EXAMPLES = ("rmsnorm", "fused_add_rmsnorm", "layernorm", "softmax", "swiglu", "cross_entropy",
            "rope", "matmul")
SMOKE_MAX_ELEMENTS = 65536
"""Per tensor: what the Triton CPU interpreter handles in a test without dragging."""


def draw(spec: TensorSpec, axes: dict[str, int], gen: torch.Generator) -> torch.Tensor:
    """One input drawn as its TensorSpec says (the tests' own simple version)."""
    shape = shape_of(spec, axes)
    d = spec.dist
    if d.kind == "randint":
        return torch.randint(int(d.low), int(d.high), shape, generator=gen).to(getattr(torch, spec.dtype))
    if d.kind == "normal":
        t = torch.randn(shape, generator=gen, dtype=torch.float64) * d.std + d.mean
    else:
        low, high = (d.low, d.high) if d.kind == "uniform" else (d.low or 0.5, d.high or 1.5)
        t = torch.rand(shape, generator=gen, dtype=torch.float64) * (high - low) + low
    return t.to(getattr(torch, spec.dtype))


def inputs_for(task: TaskSpec, module, wl: Workload, seed: int = 0) -> tuple[torch.Tensor, ...]:
    make = getattr(module, "make_inputs", None)
    if make is not None:
        return tuple(make(dict(wl.axes), seed))
    gen = torch.Generator().manual_seed(seed)
    return tuple(draw(spec, wl.axes, gen) for spec in task.inputs.values())


def as_tuple(out) -> tuple[torch.Tensor, ...]:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


# ------------------------------------------------------------------ the example tasks


def expected_shapes(name: str, a: dict[str, int]) -> list[tuple[int, ...]]:
    if name == "fused_add_rmsnorm":
        return [(a["M"], a["N"])] * 2
    if name == "cross_entropy":
        return [()]
    if name == "rope":
        return [(a["B"], a["S"], a["H"], a["D"])]
    return [(a["M"], a["N"])]


def smoke_cases():
    for name in EXAMPLES:
        task = load_task(TASKS / name)
        for wl in task.smoke_workloads():
            yield pytest.param(name, wl, id=f"{name}-{'-'.join(map(str, wl.axes.values()))}")


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_task_is_complete(name):
    task = load_task(TASKS / name)
    assert task.name == name and task.description
    assert task.family in FAMILIES and task.family != "other"
    assert all(spec.description for spec in task.axes.values())
    assert "torch.compile" in task.policy.forbid
    assert task.cost.flops
    smoke, gpu = task.smoke_workloads(), task.gpu_workloads()
    assert len(smoke) >= 2 and len(gpu) >= 5
    for wl in smoke:
        for spec in task.inputs.values():
            assert numel(shape_of(spec, wl.axes)) <= SMOKE_MAX_ELEMENTS, (name, wl.axes)
    # realistic GPU shapes: every GPU workload reads at least 16 MiB (past the small-buffer
    # end of the bandwidth table), and the largest at least 256 MiB
    sizes = [input_bytes(task, wl) for wl in gpu]
    assert min(sizes) >= 16 << 20 and max(sizes) >= 256 << 20, (name, sizes)


@pytest.mark.parametrize(("name", "wl"), list(smoke_cases()))
def test_reference_runs_at_smoke_workload(name, wl):
    task = load_task(TASKS / name)
    module = check_reference_module(task)
    inputs = inputs_for(task, module, wl)
    assert [tuple(t.shape) for t in inputs] == [shape_of(s, wl.axes) for s in task.inputs.values()]
    assert [str(t.dtype) for t in inputs] == [f"torch.{s.dtype}" for s in task.inputs.values()]
    outs = as_tuple(module.run(*inputs))
    assert all(type(o) is torch.Tensor and torch.isfinite(o).all() for o in outs)
    assert [tuple(o.shape) for o in outs] == expected_shapes(name, wl.axes)
    # what a dry run infers on meta tensors agrees with the real run
    meta = output_specs(task, module, wl)
    assert meta == [(tuple(o.shape), str(o.dtype).removeprefix("torch.")) for o in outs]


def f64(*ts: torch.Tensor) -> list[torch.Tensor]:
    return [t.to(torch.float64) for t in ts]


def independent(name: str, inputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    """Each reference's operator computed another way, in float64."""
    if name == "rmsnorm":
        x, w = f64(*inputs)
        return (F.rms_norm(x, (x.shape[-1],), w, eps=1e-6),)
    if name == "fused_add_rmsnorm":
        x, r, w = inputs
        h = (x.double() + r.double()).to(x.dtype)
        return F.rms_norm(h.double(), (x.shape[-1],), w.double(), eps=1e-6), h.double()
    if name == "layernorm":
        x, w, b = f64(*inputs)
        return (F.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5),)
    if name == "softmax":
        return (torch.softmax(inputs[0].double(), -1),)
    if name == "swiglu":
        g, u = f64(*inputs)
        return (g / (1 + torch.exp(-g)) * u,)
    if name == "cross_entropy":
        return (F.cross_entropy(inputs[0].double(), inputs[1]),)
    if name == "rope":
        q, cos, sin = f64(*inputs)
        half = q.shape[-1] // 2
        q1, q2 = q[..., :half], q[..., half:]
        c, s = cos[None, :, None, :], sin[None, :, None, :]
        return (torch.cat((q1 * c[..., :half] - q2 * s[..., :half],
                           q2 * c[..., half:] + q1 * s[..., half:]), -1),)
    a, b = f64(*inputs)
    return (torch.einsum("mk,kn->mn", a, b),)


@pytest.mark.parametrize(("name", "wl"), list(smoke_cases()))
def test_reference_computes_its_operator(name, wl):
    task = load_task(TASKS / name)
    module = check_reference_module(task)
    inputs = inputs_for(task, module, wl, seed=1)
    got = as_tuple(module.run(*inputs))
    want = independent(name, inputs)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g.double(), w, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize(("name", "wl"), list(smoke_cases()))
def test_reference_runs_as_the_float64_oracle(name, wl):
    """The judge's oracle is the reference on float64 copies of the floating inputs."""
    task = load_task(TASKS / name)
    module = check_reference_module(task)
    inputs = inputs_for(task, module, wl, seed=2)
    up = [t.double() if t.is_floating_point() else t for t in inputs]
    for own, oracle in zip(as_tuple(module.run(*inputs)), as_tuple(module.run(*up)), strict=True):
        assert oracle.shape == own.shape
        torch.testing.assert_close(own.double(), oracle.double(), rtol=2e-2, atol=2e-2)


def test_make_inputs_is_seeded_and_in_range():
    task = load_task(TASKS / "cross_entropy")
    module = check_reference_module(task)
    axes = {"M": 64, "V": 300}
    a, b, c = module.make_inputs(axes, 3), module.make_inputs(axes, 3), module.make_inputs(axes, 4)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])
    assert int(a[1].min()) >= 0 and 256 <= int(a[1].max()) < 300  # the whole range, not [0, 256)
    meta = module.make_inputs(axes, 3, device="meta")
    assert [(t.device.type, tuple(t.shape), t.dtype) for t in meta] == [
        ("meta", (64, 300), torch.bfloat16), ("meta", (64,), torch.int64)]
    # the spec's fallback bound stays valid at every workload
    assert all(task.inputs["targets"].dist.high <= w.axes["V"] for w in task.workloads)


def test_rmsnorm_minimal_bytes():
    task = load_task(TASKS / "rmsnorm")
    module = check_reference_module(task)
    for wl in task.workloads:
        m, n = wl.axes["M"], wl.axes["N"]
        assert minimal_bytes(task, wl, output_specs(task, module, wl)) == 2 * m * n * 2 + 2 * n


def test_matmul_flops_and_bytes():
    task = load_task(TASKS / "matmul")
    module = check_reference_module(task)
    wl = next(w for w in task.workloads if w.axes == {"M": 4096, "N": 4096, "K": 4096})
    assert formula_flops(task, wl) == 2 * 4096**3
    assert minimal_bytes(task, wl, output_specs(task, module, wl)) == 3 * 4096 * 4096 * 2


# ------------------------------------------------------------------ malformed task dirs

BASE_TOML = """\
name = "t"
description = "a small task"
arch = "sm90"
language = "triton"
family = "rownorm"

[axes]
M = { description = "rows" }
N = { description = "cols" }

[inputs.x]
dtype = "bfloat16"
shape = ["M", "N"]
dist = { kind = "normal", mean = 0.0, std = 1.0 }

[[workload]]
M = 4
N = 8
smoke = true

[cost]
flops = "M * N"

[policy]
forbid = ["torch.compile"]
"""
GOOD_REF = "import torch\n\n\ndef run(x):\n    return x * 2\n"


def edit(old: str, new: str) -> str:
    assert old in BASE_TOML
    return BASE_TOML.replace(old, new, 1)


# (case id, task.toml text, reference.py text or None for missing, file blamed, words the
# line must contain: the key and, where there is a closed set, what is allowed)
MALFORMED = [
    ("unknown-top-key", 'colour = "red"\n' + BASE_TOML, GOOD_REF, "task.toml", ["'colour'", "allowed"]),
    ("unknown-input-key", edit('shape = ["M", "N"]', 'shape = ["M", "N"]\nlayout = "rows"'),
     GOOD_REF, "task.toml", ["inputs.x.layout", "allowed", "dtype"]),
    ("unknown-target-key", BASE_TOML + "\n[target]\nspeed = 2.0\n", GOOD_REF, "task.toml",
     ["target.speed", "speedup"]),
    ("unknown-axis-key", edit('M = { description = "rows" }', 'M = { description = "rows", size = 3 }'),
     GOOD_REF, "task.toml", ["axes.M.size", "multiple_of"]),
    ("wrong-type-name", edit('name = "t"', "name = 3"), GOOD_REF, "task.toml", ["name", "string"]),
    ("wrong-type-speedup", BASE_TOML + '\n[target]\nspeedup = "fast"\n', GOOD_REF, "task.toml",
     ["target.speedup", "number"]),
    ("wrong-type-number-as-string", BASE_TOML + '\n[budget]\nminutes = "90"\n', GOOD_REF, "task.toml",
     ["budget.minutes", "number", "'90'"]),
    ("wrong-type-bool-as-int", BASE_TOML + "\n[budget]\niterations = true\n", GOOD_REF, "task.toml",
     ["budget.iterations", "integer"]),
    ("wrong-type-shape-entry", edit('shape = ["M", "N"]', 'shape = ["M", 2.5]'), GOOD_REF, "task.toml",
     ["inputs.x.shape[1] = 2.5", "axis names"]),
    ("wrong-type-forbid", edit('forbid = ["torch.compile"]', 'forbid = "torch.compile"'),
     GOOD_REF, "task.toml", ["policy.forbid", "list"]),
    ("wrong-type-axis-value", edit("M = 4\n", 'M = "big"\n'), GOOD_REF, "task.toml",
     ["workload[0].M", "integer"]),
    ("axis-value-zero", edit("M = 4\n", "M = 0\n"), GOOD_REF, "task.toml", ["workload[0].M", ">= 1"]),
    ("smoke-not-bool", edit("smoke = true", 'smoke = "yes"'), GOOD_REF, "task.toml",
     ["workload[0].smoke", "true or false"]),
    ("unknown-dtype", edit('dtype = "bfloat16"', 'dtype = "bf16"'), GOOD_REF, "task.toml",
     ["inputs.x.dtype", "'bf16'", "bfloat16"]),
    ("unknown-arch", edit('arch = "sm90"', 'arch = "sm80"'), GOOD_REF, "task.toml", ["arch", "sm90"]),
    ("unknown-language", edit('language = "triton"', 'language = "rust"'), GOOD_REF, "task.toml",
     ["language", "cute-dsl"]),
    ("unknown-family", edit('family = "rownorm"', 'family = "norm"'), GOOD_REF, "task.toml",
     ["family", "rownorm"]),
    ("axis-not-table", edit('M = { description = "rows" }', "M = 5"), GOOD_REF, "task.toml",
     ["axes.M", "table"]),
    ("axis-undefined", edit('shape = ["M", "N"]', 'shape = ["M", "K"]'), GOOD_REF, "task.toml",
     ["inputs.x", "'K'"]),
    ("no-inputs", BASE_TOML.replace('[inputs.x]\ndtype = "bfloat16"\nshape = ["M", "N"]\n'
                                    'dist = { kind = "normal", mean = 0.0, std = 1.0 }\n', ""),
     GOOD_REF, "task.toml", ["inputs"]),
    ("workload-missing-axis", edit("N = 8\n", ""), GOOD_REF, "task.toml", ["workload[0]", "'N'"]),
    ("workload-unknown-axis", edit("N = 8\n", "N = 8\nQ = 2\n"), GOOD_REF, "task.toml",
     ["workload[0]", "'Q'"]),
    ("workload-off-multiple", edit('N = { description = "cols" }',
                                   'N = { description = "cols", multiple_of = 16 }'),
     GOOD_REF, "task.toml", ["workload[0].N", "multiple of 16"]),
    ("workload-not-array", BASE_TOML.replace("[[workload]]\nM = 4\nN = 8\nsmoke = true\n", "")
     .replace('name = "t"', 'name = "t"\nworkload = 3'), GOOD_REF, "task.toml", ["workload", "[[workload]]"]),
    ("input-not-table", edit('[inputs.x]\ndtype = "bfloat16"\nshape = ["M", "N"]\n'
                             'dist = { kind = "normal", mean = 0.0, std = 1.0 }\n', "[inputs]\nx = 5\n"),
     GOOD_REF, "task.toml", ["inputs.x", "table"]),
    ("no-workloads", BASE_TOML.replace("[[workload]]\nM = 4\nN = 8\nsmoke = true\n", ""),
     GOOD_REF, "task.toml", ["workload"]),
    ("dist-uniform-no-bounds", edit('dist = { kind = "normal", mean = 0.0, std = 1.0 }',
                                    'dist = { kind = "uniform" }'),
     GOOD_REF, "task.toml", ["inputs.x.dist", "low", "high"]),
    ("dist-unknown-kind", edit('kind = "normal"', 'kind = "gaussian"'), GOOD_REF, "task.toml",
     ["inputs.x.dist.kind", "'gaussian'", "normal"]),
    ("dist-bounds-reversed", edit('dist = { kind = "normal", mean = 0.0, std = 1.0 }',
                                  'dist = { kind = "uniform", low = 1.0, high = 0.0 }'),
     GOOD_REF, "task.toml", ["inputs.x.dist", "high"]),
    ("dist-bound-axis-name", edit('dist = { kind = "normal", mean = 0.0, std = 1.0 }',
                                  'dist = { kind = "randint", low = 0, high = "N" }'),
     GOOD_REF, "task.toml", ["inputs.x.dist.high", "make_inputs"]),
    ("cost-unparsable", edit('flops = "M * N"', 'flops = "M *"'), GOOD_REF, "task.toml", ["cost.flops"]),
    ("cost-unknown-name", edit('flops = "M * N"', 'flops = "M * Q"'), GOOD_REF, "task.toml",
     ["cost.flops", "'Q'"]),
    ("cost-refused-call", edit('flops = "M * N"', 'flops = "__import__(1)"'), GOOD_REF, "task.toml",
     ["cost.flops"]),
    ("forbid-not-dotted", edit('forbid = ["torch.compile"]', 'forbid = ["torch compile"]'),
     GOOD_REF, "task.toml", ["policy.forbid", "dotted"]),
    ("bad-toml", BASE_TOML.replace('name = "t"', "name = "), GOOD_REF, "task.toml", ["TOML", "line"]),
    ("missing-reference", BASE_TOML, None, "reference.py", ["reference.py", "run"]),
    ("reference-without-run", BASE_TOML, "def forward(x):\n    return x\n", "reference.py", ["run"]),
    ("reference-syntax-error", BASE_TOML, "def run(x)\n    return x\n", "reference.py",
     ["SyntaxError", "line 1"]),
    ("reference-import-error", BASE_TOML, "import not_a_real_module_xyz\n" + GOOD_REF, "reference.py",
     ["ModuleNotFoundError", "not_a_real_module_xyz"]),
    ("reference-raises", BASE_TOML, GOOD_REF + "raise RuntimeError('boom\\nsecond line')\n",
     "reference.py", ["RuntimeError", "boom"]),
    ("reference-exits", BASE_TOML, "import sys\nsys.exit(3)\n" + GOOD_REF, "reference.py", ["exit", "3"]),
    ("reference-run-not-callable", BASE_TOML, "run = 3\n", "reference.py", ["run"]),
    ("make-inputs-not-callable", BASE_TOML, GOOD_REF + "make_inputs = (1, 2)\n", "reference.py",
     ["make_inputs"]),
]


@pytest.mark.parametrize(("toml_text", "ref_text", "blamed", "words"),
                         [pytest.param(*case[1:], id=case[0]) for case in MALFORMED])
def test_malformed_task_is_one_line(tmp_path, toml_text, ref_text, blamed, words):
    root = tmp_path / "task"
    root.mkdir()
    (root / "task.toml").write_text(toml_text)
    if ref_text is not None:
        (root / "reference.py").write_text(ref_text)
    with pytest.raises(TaskError) as info:
        load_task(root)
    msg = str(info.value)
    assert isinstance(info.value, ForgeError)
    assert "\n" not in msg and msg.strip() == msg and len(msg) < 400, msg
    assert msg.startswith(str(root / blamed)), msg
    for word in words:
        assert word in msg, (word, msg)


def test_base_of_the_malformed_battery_is_valid(tmp_path):
    (tmp_path / "task.toml").write_text(BASE_TOML)
    (tmp_path / "reference.py").write_text(GOOD_REF)
    task = load_task(tmp_path)
    assert task.name == "t" and task.workloads[0].axes == {"M": 4, "N": 8}


def test_missing_directory_and_missing_toml(tmp_path):
    with pytest.raises(TaskError, match="no such task directory"):
        load_task(tmp_path / "nope")
    with pytest.raises(TaskError, match="no task.toml"):
        load_task(tmp_path)


@pytest.mark.parametrize("hang", ["while True:\n    pass\n", "import time\ntime.sleep(600)\n"])
def test_a_reference_that_hangs_at_import_is_one_line(tmp_path, hang):
    import signal

    (tmp_path / "task.toml").write_text(BASE_TOML)
    (tmp_path / "reference.py").write_text(GOOD_REF)
    task = load_task(tmp_path)
    (tmp_path / "reference.py").write_text(hang + GOOD_REF)
    before = signal.getsignal(signal.SIGALRM)
    outer_left = signal.getitimer(signal.ITIMER_REAL)[0]  # pytest-timeout's, if it uses a signal
    with pytest.raises(TaskError) as info:
        check_reference_module(task, deadline_s=0.5)
    msg = str(info.value)
    assert msg.startswith(str(tmp_path / "reference.py")) and "within 0.5 s" in msg and "\n" not in msg
    assert signal.getsignal(signal.SIGALRM) is before
    left = signal.getitimer(signal.ITIMER_REAL)[0]
    if outer_left > 0:  # the outer timer goes on with what it had left
        assert outer_left - 5 < left <= outer_left
    else:
        assert left == 0.0


def test_the_import_deadline_restores_an_outer_timer():
    import signal

    from forgekernel.task import _deadline

    fired = []
    old = signal.signal(signal.SIGALRM, lambda *a: fired.append(1))
    old_timer = signal.setitimer(signal.ITIMER_REAL, 30.0)
    try:
        with _deadline(2.0):
            pass
        left = signal.getitimer(signal.ITIMER_REAL)[0]
        assert 25.0 < left <= 30.0
        with _deadline(60.0):  # the outer timer fires first: no deadline of our own
            assert 25.0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 30.0
    finally:
        signal.setitimer(signal.ITIMER_REAL, *old_timer)
        signal.signal(signal.SIGALRM, old)
    assert not fired
