"""``_inductor_run``: which of a generated candidate's lowerings a call runs.

A candidate may carry several lowerings of the same reference (:mod:`forgekernel.generate.
variants`): the first, traced at the example workload; one more for each workload whose sizes
break the first's guards (a Python loop whose trip count follows a size is unrolled at the
traced size); and one lowered with sizes from 0 up (suffix ``_s01``) for calls where a size
is 0 or 1. Each comes with ``_inductor_fits<suffix>``, its guards as Python
(:mod:`forgekernel.generate.guards`). A call runs the first traced lowering whose guards hold
(the 0/1 ones aside), else the ``_s01`` one where its guards hold, or its equalities hold and a
size is 0 or 1, else the one whose guards the call breaks fewest of, equalities (which pin a
lowering to its example: a loop's trip count) counted first, the first on a tie. Guards are
conservative: many only steer a choice that is right either way, and a lowering traced at a
workload like the call's breaks few. The choice is made once per shapes and cached.
"""

from __future__ import annotations

from forgekernel.generate.inductor import Lowered


def render(traced: list[tuple[Lowered, str]], small: tuple[Lowered, str] | None = None) -> str:
    """The dispatch over ``traced`` lowerings (with their suffixes, the first's ``""``) and
    the optional ``small`` one."""
    if len(traced) == 1 and small is None:
        return "def _inductor_run(flat, model=None):\n    return _inductor_call(_inductor_args(flat, model))\n"
    first = traced[0][0]
    every = [*traced, *([small] if small else [])]
    sizes = [a.expression("flat") for a in first.args if a.kind == "size"]
    read = dict.fromkeys(sizes + [a.expression("flat") for low, _ in every for _, a in low.guards.symbols
                                  if a.kind == "size"])  # a model's attributes are the same at every call: id(model)
    lines = ["def _inductor_choose(flat, model):",
             "    misses = [" + "".join(f"_inductor_fits{s}_misses(flat, model), " for _, s in every) + "]",
             "    first = misses[:" + str(len(traced)) + "]",
             "    if (0, 0) in first:",
             "        return first.index((0, 0))"]
    if small is not None:
        tiny = f"min(({''.join(s + ', ' for s in sizes)}), default=2) < 2" if sizes else "False"
        lines.append(f"    if misses[-1] == (0, 0) or (misses[-1][0] == 0 and {tiny}):\n"
                     f"        return {len(traced)}")
    lines.append("    return misses.index(min(misses))  # none holds: the one that breaks fewest")
    variants = "".join(f"(_inductor_call{s}, _inductor_args{s}), " for _, s in every)
    return ("_INDUCTOR_CHOICE = {}\n\n\n" + "\n".join(lines) + "\n\n\n"
            f"_INDUCTOR_VARIANTS = ({variants})\n\n\n"
            "def _inductor_run(flat, model=None):\n"
            f"    key = (id(model), {''.join(r + ', ' for r in read)})  # the sizes the choice reads\n"
            "    which = _INDUCTOR_CHOICE.get(key)\n"
            "    if which is None:\n"
            "        try:\n            which = _inductor_choose(flat, model)\n"
            "        except Exception:  # a guard this call cannot evaluate: the first, as traced\n"
            "            which = 0\n"
            "        _INDUCTOR_CHOICE[key] = which\n"
            "    call, args = _INDUCTOR_VARIANTS[which]\n"
            "    return call(args(flat, model))\n")
