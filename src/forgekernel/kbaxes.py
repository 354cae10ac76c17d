"""Axes and workloads of a KernelBench problem, found by perturbing its constants on meta.

Every root integer constant of the file (:func:`forgekernel.kbsource.constants`) is doubled
(0 becomes 1) and the problem probed again on meta (:func:`forgekernel.kbprobe.probe`):

* nothing changes (no input, parameter or output shape, no get_init_inputs() value, no
  input values): not an axis;
* the problem still runs and some input or output dimension that had the constant's value
  now has the doubled value: a **size** axis, free to scale (with ``multiple_of`` when only
  some steps are valid, as channels under ``groups``);
* anything else (the forward fails, only a weight's shape or the init values change, the
  output shape changes without following it, the model gains or loses parameters: a count
  of layers or experts): a **semantic** constant (kernel_size, stride, padding, dilation,
  groups, a reduction dim, ...), pinned with ``min = max = value``.

The smoke workload scales the size axes down, greedily halving the one that shrinks the
largest tensor (and the flops) most, every candidate validated on meta, until every input,
parameter and output has at most :data:`SMOKE_ELEMENTS` elements and the forward at most
:data:`SMOKE_FLOPS` flops (then on toward :data:`SMOKE_AIM`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from forgekernel.kbprobe import Key, Probe
from forgekernel.kbsource import Constant

Look = Callable[[dict[Key, int]], Probe]
"""Probe the problem with some constants overridden (kbprobe.probe, bound to the module)."""

SMOKE_ELEMENTS = 65536
"""A smoke workload's largest tensor (input, parameter or output) in elements, at most."""
SMOKE_AIM = 16384
"""... and what the search goes on toward while every size stays >= SMOKE_MIN_SIZE."""
SMOKE_MIN_SIZE = 8
SMOKE_FLOPS = 2.0**25
"""A smoke workload's flops (by PyTorch's counter), at most."""
BALANCE = 1.3
"""Halving steps whose result is within this factor of the best one count as equally good."""
SEMANTIC = re.compile(r"kernel|stride|pad|dilation|group", re.IGNORECASE)
"""Names that stay semantic when only parameter dimensions follow them (a kernel size can
leave the output's shape unchanged under 'same' padding, a hidden width always does)."""
STEPS = (1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 48, 64)
"""Steps tried when the next value up (v + 1) is not valid: the smallest valid one becomes
``multiple_of`` (channels divisible by groups)."""


@dataclass
class Axis:
    """One constant (or several that must stay equal) that shapes the problem."""

    const: Constant
    size: bool
    why: str
    multiple_of: int = 1
    doubled: Probe | None = None
    tied: tuple[Constant, ...] = ()
    """Other constants of the same value that only change together with this one."""
    shapes_only: bool = False
    """A semantic constant that only shapes tensors (a parameter's shape, or shapes no input or
    output dimension follows): :func:`promote_for_smoke` may scale it."""
    smoke_scaled: bool = False
    """A semantic constant that only the smoke workloads scale (:func:`promote_for_smoke`)."""
    follows: Axis | None = None
    """A semantic constant that divides one size axis (num_groups of the channels): it keeps
    the problem's ratio to that axis in every workload instead of staying pinned."""

    def following(self, lead_value: int) -> int:
        """This (following) axis's value where the axis it follows is ``lead_value``."""
        assert self.follows is not None
        return lead_value * self.const.value // self.follows.const.value

    @property
    def keys(self) -> list[Key]:
        return [(c.name, c.index) for c in (self.const, *self.tied)]

    @property
    def ref(self) -> str:
        """How task.toml's ``constant`` names what this axis sets."""
        return ", ".join(c.ref for c in (self.const, *self.tied))

    def at(self, value: int) -> dict[Key, int]:
        return {k: value for k in self.keys}


def _pairs(base: Probe, other: Probe, params: bool, outputs: bool = True) -> list[tuple[tuple, tuple]]:
    pairs = list(zip([i.shape for i in base.inputs], [i.shape for i in other.inputs], strict=False))
    if outputs and base.outputs is not None and other.outputs is not None:
        pairs += list(zip([s for s, _ in base.outputs], [s for s, _ in other.outputs], strict=False))
    if params:
        pairs += [(s, other.params[n]) for n, s in base.params.items() if n in other.params]
    return pairs


def _follows(base: Probe, other: Probe, v: int, alt: int, params: bool = False) -> bool:
    """Some input or output (or parameter) dimension that was ``v`` is ``alt`` now. A 1
    becoming 2 counts in the inputs only: elsewhere it is as often a broadcast dimension."""
    return any(len(a) == len(b) and any(x == v and y == alt for x, y in zip(a, b, strict=True))
               for a, b in _pairs(base, other, params and v > 1, outputs=v > 1))


def _same_io(base: Probe, other: Probe) -> bool:
    return [i.shape for i in other.inputs] == [i.shape for i in base.inputs] and other.outputs == base.outputs


def _judge(const: Constant, base: Probe, p: Probe, alt: int, tied: tuple = ()) -> Axis:
    v = const.value
    if set(p.params) != set(base.params):  # code written for the model unrolls its layers
        return Axis(const, False, "it sets how many parameters the model has (a count of "
                    "layers, heads or experts built in __init__)", doubled=p)
    if _follows(base, p, v, alt):
        return Axis(const, True, "input or output dimensions follow it", doubled=p, tied=tied)
    if _same_io(base, p) and _follows(base, p, v, alt, params=True) and not SEMANTIC.search(const.name):
        if p.geometry != base.geometry:  # a kernel width under 'same' padding, not a hidden width
            return Axis(const, False, "it sets a layer's kernel size, stride, padding or dilation "
                        "(parameter dimensions follow it, inputs and outputs keep their shapes)",
                        doubled=p)
        return Axis(const, True, "a hidden width: parameter dimensions follow it, inputs and "
                    "outputs keep their shapes", doubled=p, tied=tied)
    if _same_io(base, p):
        what = "a parameter's shape" if p.params != base.params else \
            "get_init_inputs() values" if p.init != base.init else "input values"
        return Axis(const, False, f"changing it changes only {what}", doubled=p,
                    shapes_only=p.params != base.params)
    return Axis(const, False, "changing it changes shapes, but no input or output dimension "
                "follows it", doubled=p, shapes_only=True)


def classify(look: Look, base: Probe, const: Constant, others: list[Constant] = ()) -> Axis | None:
    """Size axis, semantic (pinned) axis, or None when the constant changes nothing.
    ``others``: constants not yet classified, tried together with this one (same value)
    when it cannot change alone (a problem whose shapes need batch_size == features)."""
    v = const.value
    if v < 0:
        return None
    alt = 2 * v if v > 0 else 1
    p = look({(const.name, const.index): alt})
    if p.ok and p.signature() == base.signature():
        return None
    if p.ok:
        return _judge(const, base, p, alt)
    tied = tuple(c for c in others if c.value == v and c != const)
    if tied and v > 1:
        q = look({(c.name, c.index): alt for c in (const, *tied)})
        if q.ok and _follows(base, q, v, alt):
            return _judge(const, base, q, alt, tied)
    error = p.error if len(p.error) <= 100 else p.error[:97] + "..."
    return Axis(const, False, f"at {alt} the problem fails on meta in {p.stage} ({error})")


def find_multiple(look: Look, axis: Axis) -> int:
    """1 when v + 1 is valid, else the smallest step in STEPS that is (and divides v)."""
    v = axis.const.value
    for step in (*STEPS, *(1 << k for k in range(7, 20))):
        if step > v:
            break
        if look(axis.at(v + step)).ok:
            return step if v % step == 0 else 1
    return 1


def couple(look: Look, base: Probe, axes: list[Axis]) -> None:
    """Semantic constants that divide exactly one size axis (its ``multiple_of`` is a multiple
    of theirs: num_groups and the channels) follow that axis at the problem's ratio, checked
    on meta at one step past both; the size axis then steps by the ratio. Scaled down
    otherwise, the size axis would end at one channel per group. A constant whose change
    alone changes an input or output shape (an upscale factor, a kernel size) is no such
    divisor and stays pinned."""
    sizes = [a for a in axes if a.size]
    for s in axes:
        v = s.const.value
        if s.size or v < 2:
            continue
        governed = [a for a in sizes if a.multiple_of > 1 and a.multiple_of % v == 0]
        if len(governed) != 1 or governed[0].const.value % v:
            continue
        lead = governed[0]
        ratio = lead.const.value // v
        if not _divides(look, s, lead.const.value):
            continue
        q = look({**lead.at(ratio * (v + 1)), **s.at(v + 1)})
        if q.ok and _only_follows(base, q, lead.const.value, ratio * (v + 1)):
            s.follows, lead.multiple_of = lead, ratio
            s.why = f"it divides {lead.const.axis}, {lead.const.value} / {v} = {ratio}"


def _divides(look: Look, s: Axis, lead_value: int) -> bool:
    """Whether ``s`` must divide the lead axis: at the first value above its own that does not
    divide ``lead_value``, the problem fails on meta (heads of a width, groups of channels).
    An MLP's expansion ratio runs at any value: coupled, it made a DiT block's width step by
    1152 / 4 = 288 and left the block no smoke workload."""
    for alt in range(s.const.value + 1, s.const.value + 64):
        if lead_value % alt:
            return not look(s.at(alt)).ok
    return False


def _only_follows(base: Probe, other: Probe, v: int, alt: int) -> bool:
    """Every input and output dimension of ``other`` is as in ``base``, or ``alt`` where it
    was ``v``: nothing but the lead axis moved the shapes."""
    return all(len(a) == len(b) and all(x == y or (x == v and y == alt)
                                        for x, y in zip(a, b, strict=True))
               for a, b in _pairs(base, other, params=False))


def with_followers(axes: list[Axis], values: dict[str, int]) -> dict[str, int]:
    """``values`` (size axes) with the value of every axis that follows one of them."""
    out = dict(values)
    for a in axes:
        if a.follows is not None and a.follows.const.axis in values:
            out[a.const.axis] = a.following(values[a.follows.const.axis])
    return out


def analyse(look: Look, base: Probe, consts: list[Constant]) -> list[Axis]:
    """The axes of a problem: every constant that matters, classified."""
    axes: list[Axis] = []
    done: set[Constant] = set()
    for i, const in enumerate(consts):
        if const in done:
            continue
        axis = classify(look, base, const, [c for c in consts[i + 1:] if c not in done])
        if axis is None:
            continue
        done.update(axis.tied)
        if axis.size:
            axis.multiple_of = find_multiple(look, axis)
        axes.append(axis)
    couple(look, base, axes)
    return axes


def promote_for_smoke(look: Look, axes: list[Axis]) -> list[Axis]:
    """Pinned constants that only shape tensors (``Axis.shapes_only``: a table's rows, a frame's
    length; not a count of layers or a value; not named like a kernel's geometry; at least
    SMOKE_MIN_SIZE) become size axes that the smoke workloads alone scale:
    for a problem whose size axes cannot make it small (an embedding table of 100000 rows, a
    DFT basis of the frame length). The GPU workloads keep their values. Returns them."""
    promoted = []
    for a in axes:
        if (not a.size and a.follows is None and a.shapes_only
                and not SEMANTIC.search(a.const.name) and a.const.value >= SMOKE_MIN_SIZE):
            a.size, a.smoke_scaled = True, True
            a.multiple_of = find_multiple(look, a)
            promoted.append(a)
    return promoted


def demote(axes: list[Axis]) -> None:
    """Undo :func:`promote_for_smoke` (it did not help)."""
    for a in axes:
        a.size, a.smoke_scaled, a.multiple_of = False, False, 1


def _fits(p: Probe, elements: int, loose: int = 1) -> bool:
    return p.max_elements() <= elements * loose and p.flops <= SMOKE_FLOPS * loose


SMOKE_LOOSE = 4
"""Where no valid set fits the bounds (promoted literals and constants included), the
converter tries again with the bounds times this factor (RAFT's four-level pyramid: every
level of 2 pixels or more needs 16 x 16, 83 k elements, and smaller sizes give NaN)."""


def cheap_to_run(p: Probe) -> bool:
    """Whether the problem at ``p`` runs on the CPU in well under a second (64 times a smoke
    workload's bound): small enough to check for real on the way down to one."""
    return p.max_elements() <= 64 * SMOKE_ELEMENTS and p.flops <= 64 * SMOKE_FLOPS


def _score(p: Probe) -> float:
    return max(p.max_elements() / SMOKE_ELEMENTS, p.flops / SMOKE_FLOPS)


def _down(value: int, step: int, factor: int = 2) -> int:
    return max(step, (value // factor) // step * step)


def _steps_down(value: int, step: int, factor: int) -> list[int]:
    """The next smaller values to try for an axis: ``value`` divided by ``factor`` (rounded to
    its multiple), then the power of two below that, which meets divisibility that involves
    several axes at once (4-bit weights in blocks of 64 x 256 of in x out features: 11008 =
    43 x 256 halves to no value that fits beside a small in_features)."""
    first = _down(value, step, factor)
    pow2 = 1 << (first.bit_length() - 1)
    return [first] + ([pow2] if pow2 != first and pow2 % step == 0 else [])


def overrides(axes: list[Axis], values: dict[str, int]) -> dict[Key, int]:
    out: dict[Key, int] = {}
    for a in axes:
        if a.size:
            out.update(a.at(values[a.const.axis]))
        elif a.follows is not None:
            out.update(a.at(a.following(values[a.follows.const.axis])))
    return out


def smoke(look: Look, base: Probe, axes: list[Axis], loose: int = 1) -> tuple[dict[str, int], Probe] | None:
    """Size-axis values (axis name -> value) small enough for the CPU interpreter, with
    their probe; None when no valid scaled set fits (``loose``: the bounds times that)."""
    sizes = [a for a in axes if a.size]
    cur = {a.const.axis: a.const.value for a in sizes}
    p = base
    for _ in range(256):
        aim = _fits(p, SMOKE_ELEMENTS) and p.max_elements() > SMOKE_AIM
        if _fits(p, SMOKE_ELEMENTS) and not aim:
            return with_followers(axes, cur), p
        floor = SMOKE_MIN_SIZE if aim else 1
        found = []
        for a in sizes:
            name = a.const.axis
            tried: set[int] = set()
            for nv in _steps_down(cur[name], a.multiple_of, 4 if _score(p) > 64 else 2):
                if a.smoke_scaled and nv < SMOKE_MIN_SIZE and not aim:  # too far in one step
                    nv = -(-SMOKE_MIN_SIZE // a.multiple_of) * a.multiple_of
                if nv in tried:  # both steps clamped to the floor: probed once
                    continue
                tried.add(nv)
                if nv >= cur[name] or (aim and nv < floor) or (a.smoke_scaled and nv < SMOKE_MIN_SIZE):
                    continue
                q = look(overrides(axes, {**cur, name: nv}))
                if q.ok:
                    found.append((_score(q), cur[name], name, nv, q))
                    break
        if not found:
            return (with_followers(axes, cur), p) if _fits(p, SMOKE_ELEMENTS, loose) else None
        # among the steps that shrink about as much as the best one, the largest size goes
        # first, so the shapes stay balanced instead of one axis going down to 1
        best = min(s for s, *_ in found)
        _, _, name, nv, p = max((f for f in found if f[0] <= best * BALANCE), key=lambda f: f[1])
        cur = {**cur, name: nv}
    return (with_followers(axes, cur), p) if _fits(p, SMOKE_ELEMENTS, loose) else None


def odd(look: Look, axes: list[Axis], values: dict[str, int]) -> tuple[dict[str, int], Probe] | None:
    """A second smoke workload with odd (or non-power-of-two) sizes near 3/4 of ``values``,
    each change kept only when the problem stays valid and small; None if nothing changed."""
    cur, probed = dict(values), None
    for a in axes:
        name, step, v = a.const.axis, a.multiple_of, values.get(a.const.axis)
        if not a.size or a.smoke_scaled or v is None or v < 3:  # one smoke-scaled value in all
            continue
        for cand in range(max(step, (v * 3 // 4) // step * step), v + 1, step):
            if cand & (cand - 1) and (step > 1 or cand % 2):
                trial = {**cur, name: cand}
                q = look(overrides(axes, trial))
                if q.ok and _fits(q, SMOKE_ELEMENTS):
                    cur, probed = trial, q
                break
    return (with_followers(axes, cur), probed) if cur != values and probed is not None else None
