"""More lowerings of one reference, for the task's workloads the first does not hold for.

Dynamo unrolls a Python loop at the traced sizes: a chunked recurrence (``for i in
range(seqlen // chunk)``) traced at three chunks is three chunks of code, and its guards say
so (``s6 // s36 == 3``). Such a lowering is wrong at a workload of one chunk, and no choice
of example serves every workload. torch.compile recompiles where a guard fails; a
standalone candidate cannot, so the reference is lowered again at each of the task's own
workloads (visible and smoke, smallest first) where no lowering made so far has guards that
hold (traced with its sizes of 1 made 2, as the first example is: tracing would fix them),
and the candidate carries them all (:mod:`forgekernel.generate.dispatch` chooses per
call). A workload whose sizes no lowering holds for still runs the first, as traced (often
right: many guards only steer a choice that is right either way); a user whose shapes vary
past the listed ones gets what the guards allow, no more.
"""

from __future__ import annotations

import time
from typing import Any

from forgekernel.generate import examples, guards
from forgekernel.generate.inductor import LOWERING_LIMIT_S, Lowered, LoweringError, lower, same_code
from forgekernel.records import TaskSpec, Workload

MAX_MORE = 3
"""Lowerings made besides the first at most (each costs a whole lowering's time)."""
MORE_LIMIT_S = LOWERING_LIMIT_S
"""Time all of them together may take."""
EXAMPLE_ELEMENTS = 1 << 26
"""A workload whose tensors have more elements than this is not lowered at (the example is
built on the CPU with real values)."""


def more(task: TaskSpec, first: Lowered, small: Lowered | None, **options: Any) -> tuple[Lowered, ...]:
    """Lowerings at the task's workloads that neither ``first`` nor ``small`` holds for
    (``options``: :func:`~forgekernel.generate.inductor.lower`'s)."""
    start, made = time.monotonic(), []
    _, module = examples.reference_function(task)
    for wl in _workloads(task):
        left = MORE_LIMIT_S - (time.monotonic() - start)
        if len(made) >= MAX_MORE or left < 10:
            break
        meta = _meta_arguments(task, module, wl)
        if any(holds(low, meta) for low in (first, *made, *([small] if small else ()))):
            continue
        if examples.elements(task, wl) > EXAMPLE_ELEMENTS:
            continue
        try:
            fn, args, names = examples.flat_example(task, seed=0, workload=examples.lifted(task, wl))
            low = lower(fn, args, **{**options, "names": names, "limit_s": left})
        except LoweringError:
            continue
        except Exception:  # noqa: BLE001 - the reference at this workload: the first serves it, as traced
            continue
        if holds(low, meta) and not any(same_code(low.code, m.code) for m in (first, *made)):
            made.append(low)
    return tuple(made)


def _workloads(task: TaskSpec) -> list[Workload]:
    """The task's distinct workloads, smoke ones first, each group smallest first."""
    seen, out = set(), []
    for wl in sorted(task.workloads, key=lambda w: (not w.smoke, examples.elements(task, w))):
        key = tuple(sorted(wl.axes.items()))
        if key not in seen:
            seen.add(key)
            out.append(wl)
    return out


def _meta_arguments(task: TaskSpec, module: Any, wl: Workload) -> tuple[list[Any], Any] | None:
    """The lowered function's flat arguments at ``wl`` on meta tensors, and the model (None
    where the reference cannot be built there)."""
    from forgekernel import instance

    try:
        inst = instance.build(task, module, wl, meta=True, seed=0)
    except Exception:  # noqa: BLE001 - a workload the reference rejects: no lowering holds there
        return None
    return [*inst.param_tensors(), *inst.inputs], inst.model


def holds(low: Lowered, arguments: tuple[list[Any], Any] | None) -> bool:
    """Whether ``low``'s guards (but the 0/1 ones) hold for ``arguments`` (from
    :func:`_meta_arguments`; a guard that cannot be evaluated there does not hold)."""
    if arguments is None:
        return False
    scope: dict[str, Any] = {}
    exec(guards.FAILING + guards.predicate(low.guards, "fits"), scope)  # noqa: S102 - forge's own text from Dynamo's guards
    try:
        return bool(scope["fits"](*arguments))
    except Exception:  # noqa: BLE001 - a size the predicate cannot read at this workload
        return False
