"""KernelBench compatibility: turn a KernelBench-style problem file into a task directory.

A KernelBench problem is one Python file defining ``class Model(nn.Module)``,
``get_inputs()`` (the forward arguments) and ``get_init_inputs()`` (the constructor
arguments), with its sizes in module-level constants. :func:`convert` keeps that file
unchanged as the task's ``reference.py`` and writes a ``task.toml`` with
``format = "kernelbench"``: the constants that shape the problem become axes (sizes free to
scale, semantic ones such as kernel_size pinned; :mod:`forgekernel.kbaxes`), the problem's
own values are the GPU workload and a scaled-down one the smoke workload, the inputs are
described as get_inputs() makes them, and [judge] says how KernelBench judges (module mode,
tolerances per dtype, TF32). Everything is read on the meta device: nothing the size of the
problem is ever allocated, and get_inputs() never runs for real at the problem's own size.
"""

from __future__ import annotations

import ast
import inspect
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from forgekernel import kbaxes, kbprobe, kbsource
from forgekernel.errors import ForgeError
from forgekernel.records import DTYPES

REQUIRED = ("Model", "get_inputs", "get_init_inputs")
ANALYSE_DEADLINE_S = 120.0
"""How long reading a problem (imports aside) may take before it counts as hanging."""
SMOKE_MAX_ELEMENTS = kbaxes.SMOKE_ELEMENTS
_SCALARS = (bool, int, float)


class KernelBenchError(ForgeError, ValueError):
    """A file that cannot be converted; the message is one line naming the file."""


@dataclass
class Problem:
    """What conversion found in a KernelBench file."""

    src: Path
    module: ModuleType
    base: kbprobe.Probe
    names: list[str]
    axes: list[kbaxes.Axis]
    smoke: list[dict[str, int]] = field(default_factory=list)
    smoke_probes: list[kbprobe.Probe] = field(default_factory=list)
    """The probes at the scaled smoke workload (or the problem's own) and the odd one."""
    outputs: list[tuple[tuple[int, ...], str]] | None = None
    outputs_note: str = ""
    smoke_outputs: list[tuple[tuple[int, ...], str]] | None = None
    """Output shapes from a real call at the smoke workload (a forward meta cannot run)."""
    smoke_note: str = ""
    own_is_smoke: bool = False
    """The problem's own sizes are small enough to be the smoke workload."""
    description: str = ""


def is_kernelbench_file(path: str | Path) -> bool:
    """True if ``path`` is a Python file defining Model, get_inputs and get_init_inputs."""
    p = Path(path)
    if p.suffix != ".py" or not p.is_file():
        return False
    try:
        tree = ast.parse(p.read_text(), filename=str(p))
    except (SyntaxError, ValueError, UnicodeDecodeError):
        return False
    return not _missing(tree)


def convert(py_path: str | Path, out_dir: str | Path, *, deadline_s: float = ANALYSE_DEADLINE_S) -> Path:
    """Write the task directory ``out_dir`` (new or empty) for a KernelBench file; return it.
    ``deadline_s`` bounds reading the problem (a get_inputs() or forward that never returns)."""
    from forgekernel import kbtoml

    src, out = Path(py_path), Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise KernelBenchError(f"{out}: exists and is not an empty directory; pick a new --out")
    problem = inspect_file(src, deadline_s=deadline_s)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, out / "reference.py")
    (out / "task.toml").write_text(kbtoml.render(problem))
    from forgekernel.task import load_task

    load_task(out)  # what was written must load; a failure here is a bug in this module
    return out


# ------------------------------------------------------------------ reading the file


def _missing(tree: ast.Module) -> list[str]:
    defined: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Assign):
            defined.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.ImportFrom, ast.Import)):
            defined.update((a.asname or a.name).split(".")[0] for a in node.names)
    return [name for name in REQUIRED if name not in defined]


def _parse(src: Path) -> str:
    if not src.is_file():
        raise KernelBenchError(f"{src}: no such file")
    try:
        text = src.read_text()
        tree = ast.parse(text, filename=str(src))
    except UnicodeDecodeError:
        raise KernelBenchError(f"{src}: not UTF-8 text") from None
    except SyntaxError as exc:
        raise KernelBenchError(f"{src}: cannot parse: SyntaxError: {exc.msg} (line {exc.lineno})") from None
    missing = _missing(tree)
    if missing:
        raise KernelBenchError(f"{src}: not a KernelBench-style file: it does not define "
                               f"{', '.join(missing)} (needs class Model(nn.Module), get_inputs() "
                               "and get_init_inputs())")
    return text


def inspect_file(src: Path, *, deadline_s: float = ANALYSE_DEADLINE_S) -> Problem:
    """Read a KernelBench file: its axes, workloads, inputs and outputs (all on meta)."""
    from forgekernel.task import _deadline, _ImportDeadline

    text = _parse(src)
    module = _import(src)
    try:
        with _deadline(deadline_s):
            return _analyse(src, text, module)
    except _ImportDeadline:
        raise KernelBenchError(f"{src}: reading the problem on meta tensors did not finish within "
                               f"{deadline_s:g} s (does get_inputs(), Model or forward loop or "
                               "wait?)") from None


def _analyse(src: Path, text: str, module: ModuleType) -> Problem:
    _check_get_inputs(module, src)
    first = kbprobe.probe(module)
    if not first.ok and not first.forward_error:
        raise KernelBenchError(f"{src}: {first.stage} fails: {first.error}")
    _check_inputs(first, src)
    forward = first.outputs is not None

    def look(overrides: dict[kbprobe.Key, int]) -> kbprobe.Probe:
        return kbprobe.probe(module, overrides, forward=forward)

    base = first if forward else look({})
    axes = kbaxes.analyse(look, base, kbsource.constants(text))
    problem = Problem(src=src, module=module, base=base, names=_input_names(module.Model, len(base.inputs)),
                      axes=axes, outputs=base.outputs, description=_description(module, src))
    _workloads(problem, look)
    if not problem.smoke and not problem.own_is_smoke and kbsource.literals(text):
        # the module's constants cannot make it small: the sizes get_inputs() writes as
        # literals become axes too (torch.rand(batch_size, 3, 224, 224))
        problem.axes = axes + kbaxes.analyse(look, base, kbsource.literals(text))
        _workloads(problem, look)
    if not problem.smoke and not problem.own_is_smoke:
        promoted = kbaxes.promote_for_smoke(look, problem.axes)
        if promoted:
            _workloads(problem, look)
            if not problem.smoke:
                kbaxes.demote(promoted)
                _workloads(problem, look)
    if not problem.smoke and not problem.own_is_smoke:  # the last resort: larger than usual
        _workloads(problem, look, kbaxes.SMOKE_LOOSE)
    if not forward:
        _outputs_for_real(problem, first.forward_error)
    return problem


def _workloads(problem: Problem, look: kbaxes.Look, loose: int = 1) -> None:
    problem.smoke_note = ""
    found = kbaxes.smoke(look, problem.base, problem.axes, loose)
    real_ok = True
    if found is not None and _fails_for_real(problem, found[0]):
        # meta tensors have no values: a size only real ones reject (ids drawn up to a literal
        # 4096 indexing a scaled-down vocabulary) is found by running the small sizes for real;
        # where the CPU rejects every one (an op it lacks), the sizes found on meta stay
        real_look = _for_real(problem, look)
        again = kbaxes.smoke(real_look, problem.base, problem.axes, loose)
        if again is None and loose == 1:  # every small set fails for real: a larger one may not
            again = kbaxes.smoke(real_look, problem.base, problem.axes, kbaxes.SMOKE_LOOSE)
            loose = kbaxes.SMOKE_LOOSE if again is not None else 1
        if again is not None:
            look, found = real_look, again
        real_ok = again is not None
    if found is None:
        problem.smoke_note = (f"no smoke workload: no scaled-down set of the size axes "
                              f"({', '.join(a.const.axis for a in problem.axes if a.size) or 'none'}) "
                              f"keeps every tensor under {SMOKE_MAX_ELEMENTS} elements and the "
                              f"forward under {kbaxes.SMOKE_FLOPS:.3g} flops")
        return
    values, probed = found
    base_values = kbaxes.with_followers(problem.axes, {a.const.axis: a.const.value
                                                       for a in problem.axes if a.size})
    problem.own_is_smoke = values == base_values
    problem.smoke = [] if problem.own_is_smoke else [values]
    problem.smoke_probes = [probed]
    if loose > 1:
        problem.smoke_note = (f"the smoke workload is over the usual {SMOKE_MAX_ELEMENTS} elements: "
                              "no smaller set of sizes runs without failing or giving NaN")
    second = kbaxes.odd(look, problem.axes, values)
    if second is not None and real_ok and _fails_for_real(problem, second[0]):
        second = kbaxes.odd(_for_real(problem, look), problem.axes, values)
    if second is not None:
        problem.smoke.append(second[0])
        problem.smoke_probes.append(second[1])


def _for_real(problem: Problem, look: kbaxes.Look) -> kbaxes.Look:
    """``look``, and for a set of values cheap enough also a real CPU call: a probe that fails
    there is not ok (checked on the way down, so that the search does not step onto a size
    that only real values reject and then find nothing smaller that runs)."""
    def real(overrides: dict[kbprobe.Key, int]) -> kbprobe.Probe:
        q = look(overrides)
        if q.ok and kbaxes.cheap_to_run(q):
            err = _real_error(problem.module, overrides, seeds=(0,))
            if err:
                return kbprobe.Probe(ok=False, error=err, stage="forward on the CPU")
        return q

    return real


def _fails_for_real(problem: Problem, values: dict[str, int]) -> bool:
    return bool(_real_error(problem.module, kbaxes.overrides(problem.axes, values)))


def _real_error(module: ModuleType, overrides: dict[kbprobe.Key, int], seeds: tuple[int, ...] = (0, 1)) -> str:
    """Why the problem fails on the CPU with these constants (under each seed), or ''. An
    output with NaN counts as failing: a size the operator is not meant for (a pyramid level
    of one pixel, normalised by size - 1), where no kernel can be judged against it."""
    import torch

    from forgekernel import instance
    from forgekernel.records import Workload

    mod = kbsource.variant(module, overrides)
    try:
        with torch.no_grad():
            for seed in seeds:
                model = instance.model_at(kbprobe.STUB, mod, init_seed=seed)
                out = model(*instance.inputs_at(kbprobe.STUB, mod, Workload(axes={}), seed=seed))
                if any(t.is_floating_point() and bool(t.isnan().any())
                       for t in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(t, torch.Tensor)):
                    return "the reference's output has NaN at these sizes"
    except Exception as exc:  # noqa: BLE001 - the problem's own failure, as one line
        return kbprobe._one_line(exc)
    return ""


def _outputs_for_real(problem: Problem, why: str) -> None:
    """The forward cannot run on meta: one real CPU call at the smoke workload (seed 0)."""
    import torch

    from forgekernel import instance
    from forgekernel.records import Workload

    values = problem.smoke[0] if problem.smoke and not problem.own_is_smoke else {}
    if not problem.smoke and not problem.own_is_smoke:
        problem.outputs_note = f"forward fails on meta tensors ({why}); no smoke workload to call it on"
        return
    overrides: dict[kbprobe.Key, int] = {}
    for a in problem.axes:
        if a.size and a.const.axis in values:
            overrides.update(a.at(values[a.const.axis]))
    mod = kbsource.variant(problem.module, overrides)
    try:
        with torch.no_grad():
            model = instance.model_at(kbprobe.STUB, mod, init_seed=0)
            args = instance.inputs_at(kbprobe.STUB, mod, Workload(axes={}), seed=0)
            outs = instance.outputs_of(model(*args))
    except Exception as exc:  # the reason is written into task.toml
        problem.outputs_note = (f"forward fails on meta tensors ({why}) and on the CPU at the smoke "
                                f"workload ({kbprobe._one_line(exc)})")
        return
    problem.outputs_note = (f"forward cannot run on meta tensors ({why}); shapes from one CPU call "
                            "at the smoke workload")
    problem.smoke_outputs = [(tuple(o.shape), str(o.dtype).removeprefix("torch.")) for o in outs]


def _import(src: Path) -> ModuleType:
    from forgekernel.task import _deadline, _ImportDeadline, load_module

    try:
        with _deadline(120.0):
            module = load_module(src)
    except _ImportDeadline:
        raise KernelBenchError(f"{src}: importing it did not finish within 120 s") from None
    except SystemExit as exc:
        raise KernelBenchError(f"{src}: calls exit ({exc.code}) on import") from None
    except BaseException as exc:  # any import failure becomes one line
        raise KernelBenchError(f"{src}: fails to import: {kbprobe._one_line(exc)}") from None
    for name in REQUIRED:
        if not callable(getattr(module, name, None)):
            raise KernelBenchError(f"{src}: {name} must be callable")
    return module


def _check_get_inputs(module: ModuleType, src: Path) -> None:
    """get_inputs() on meta returns a non-empty list of tensors and plain numbers."""
    import torch

    from forgekernel import instance

    try:
        with instance.on_meta(values=True):
            values = module.get_inputs()
    except Exception as exc:
        raise KernelBenchError(f"{src}: get_inputs() fails on meta tensors: {kbprobe._one_line(exc)}") from None
    if isinstance(values, torch.Tensor):
        values = [values]
    if not isinstance(values, (list, tuple)) or not values:
        raise KernelBenchError(f"{src}: get_inputs() must return a non-empty list of tensors "
                               f"(got {type(values).__name__})")
    for i, v in enumerate(values):
        if not isinstance(v, (torch.Tensor, *_SCALARS)):
            raise KernelBenchError(f"{src}: get_inputs() item {i} is {type(v).__name__}; inputs "
                                   "must be tensors or plain numbers (other constants belong in "
                                   "get_init_inputs())")


def _check_inputs(base: kbprobe.Probe, src: Path) -> None:
    for i, item in enumerate(base.inputs):
        if item.value is None and item.dtype not in DTYPES:
            raise KernelBenchError(f"{src}: get_inputs() item {i} has dtype {item.dtype}; supported: "
                                   f"{', '.join(DTYPES)}")


def _input_names(model_cls: Any, count: int) -> list[str]:
    """The forward's parameter names when they fit, else in0, in1, ..."""
    fallback = [f"in{i}" for i in range(count)]
    try:
        params = list(inspect.signature(model_cls.forward).parameters.values())[1:]
    except (TypeError, ValueError):
        return fallback
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if (len(names) < count or any(p.kind is p.VAR_POSITIONAL for p in params[:count])
            or not all(n.isascii() for n in names)):
        return fallback
    return names[:count]


def _description(module: ModuleType, src: Path) -> str:
    for doc in (inspect.getdoc(module.Model), module.__doc__):
        if doc and doc.strip() and not doc.strip().startswith("Base class for all neural"):
            text = " ".join(doc.strip().split("\n\n")[0].split())
            return "".join(c for c in text if c.isprintable())
    return f"KernelBench problem {src.name}"
