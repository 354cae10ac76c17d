"""The sizes a lowering holds for, as Python the candidate checks before it launches.

Tracing with symbolic sizes, Dynamo and Inductor still decide things from the example's
sizes and record each decision as a guard on the symbols: a size is 2 or more (Dynamo's 0/1
specialisation), a slice ``[:, :4]`` takes 4 because the row is longer, a 32-bit index
suffices. torch.compile checks these guards at every call and recompiles where one fails;
a standalone candidate cannot recompile, so it checks them (:func:`read` writes them as
Python over the call's sizes) to choose among its lowerings
(:func:`forgekernel.generate.assemble.render`). Guards are conservative: many only steer a
choice that is right either way (a tiling, a simplification that also holds past the bound),
so where none of the lowerings' guards hold the first runs, as traced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from forgekernel.errors import ForgeError


@dataclass(frozen=True)
class Guards:
    """``conditions`` (Python boolean expressions) over ``symbols`` (name, ArgSource)."""

    symbols: tuple[tuple[str, Any], ...] = ()
    conditions: tuple[str, ...] = ()
    soft: tuple[str, ...] = ()
    """Conditions that only keep one size off 0 or 1 (``s >= 2``, ``s != 1``: Dynamo's 0/1
    specialisation): code traced under them is most often right at such a size too (a mask
    covers it), so breaking only these does not move a call to another lowering."""


def shape_env() -> Any:
    """The ShapeEnv of the trace being compiled (inside a Dynamo backend), or None."""
    from torch._guards import TracingContext

    ctx = TracingContext.try_get()
    return getattr(getattr(ctx, "fake_mode", None), "shape_env", None)


def read(env: Any, to_arg: Any) -> Guards:
    """The guards of ``env`` whose symbols all come from the call's arguments, and each
    symbol's range, as Python; ``to_arg(source)``: the ArgSource of a Dynamo source (raises
    ForgeError for one the candidate cannot read, whose guards are then left out)."""
    if env is None:
        return Guards()
    try:
        return _read(env, to_arg)
    except Exception:  # a structure of Dynamo's this reader does not know: no guards, the
        return Guards()  # candidate then runs its first lowering at every size, as before


def _read(env: Any, to_arg: Any) -> Guards:
    from torch.utils._sympy.printers import PythonPrinter

    printer = PythonPrinter()
    symbols: dict[str, Any] = {}
    for sym, sources in env.var_to_sources.items():
        for source in sources:
            try:
                arg = to_arg(source)
            except ForgeError:
                continue
            if arg.kind != "attr" or _plain_attribute(arg.path):
                symbols[str(sym)] = arg
                break
    conditions: list[str] = []
    soft: list[str] = []
    exprs = [g.expr for g in env.guards] + _ranges(env)
    for expr in exprs:
        names = {str(s) for s in expr.free_symbols}
        if not names or not names <= symbols.keys():
            continue
        try:
            text = printer.doprint(expr)
        except Exception:  # an expression the printer has no Python for: left out
            continue
        kind = soft if _off_zero_one(expr) else conditions
        if text not in kind:
            kind.append(text)
    used = {n for c in conditions + soft for n in symbols if _mentions(c, n)}
    return Guards(tuple((n, a) for n, a in symbols.items() if n in used), tuple(conditions), tuple(soft))


def _off_zero_one(expr: Any) -> bool:
    """``s >= 2``, ``s > 1``, ``s >= 1``, ``s > 0``, ``s != 1`` or ``s != 0`` on one symbol."""
    import sympy

    if not isinstance(expr, (sympy.Ge, sympy.Gt, sympy.Ne)) or len(expr.free_symbols) != 1:
        return False
    if not (isinstance(expr.lhs, sympy.Symbol) and expr.rhs.is_Integer):
        return False
    bound = int(expr.rhs)
    return bound in {sympy.Ne: (0, 1), sympy.Ge: (1, 2), sympy.Gt: (0, 1)}[type(expr)]


def _plain_attribute(path: str) -> bool:
    """A module attribute the candidate can read back (``conv.groups``), not a closure's cell
    (``norm.cell_contents``: a value a function of the module closed over) or a dunder."""
    return all(part.isidentifier() and not part.startswith("_") and part != "cell_contents"
               for part in path.split("."))


def _ranges(env: Any) -> list[Any]:
    import sympy

    out = []
    for sym, vr in env.var_to_range.items():
        if vr.lower.is_finite and vr.lower > 0:
            out.append(sympy.Ge(sym, vr.lower, evaluate=False))
        if vr.upper.is_finite and vr.upper < 2**62:
            out.append(sympy.Le(sym, vr.upper, evaluate=False))
    return out


def _mentions(text: str, name: str) -> bool:
    import re

    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def predicate(guards: Guards, name: str) -> str:
    """``def name_misses(flat, model=None)``: how many of the guards (the soft ones aside) the
    call's sizes break, as (equalities, the others), one that raises counting as broken; and
    ``def name(flat, model=None)``: whether they break none. An equality is what pins a
    lowering to the example (a loop's trip count, ``n // 64 == 3``); an inequality broken at a
    size of 1 most often only steers a choice. Both use the candidate's ``_inductor_failing``
    (:data:`FAILING`)."""
    lines = [f"def {name}_misses(flat, model=None):"]
    lines += [f"    {sym} = {arg.expression('flat', 'model')}" for sym, arg in guards.symbols
              if any(_mentions(c, sym) for c in guards.conditions)]
    groups = [[c for c in guards.conditions if (" == " in c) == eq] for eq in (True, False)]
    calls = ["_inductor_failing(" + "".join(f"\n        lambda: ({c})," for c in group) + "\n    )" if group
             else "0" for group in groups]
    lines.append(f"    return ({calls[0]}, {calls[1]})")
    lines += ["", "", f"def {name}(flat, model=None):", f"    return {name}_misses(flat, model) == (0, 0)"]
    return "\n".join(lines) + "\n"


FAILING = """def _inductor_failing(*checks):
    \"\"\"How many of ``checks`` (a lowering's guards) are false or cannot be evaluated.\"\"\"
    failing = 0
    for check in checks:
        try:
            failing += not check()
        except Exception:  # a size this call does not have (a division by zero, say)
            failing += 1
    return failing
"""
"""The helper every generated candidate defines once for its lowerings' guards."""
