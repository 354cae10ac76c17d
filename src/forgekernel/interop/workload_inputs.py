"""Inputs of an imported FlashInfer-Trace task, made as FlashInfer-Bench makes them.

A task imported by ``forge new definition.json`` keeps the Definition (``definition.json``)
and the workloads it was given (``workloads.json``: each row's uuid, axes and input
descriptors, safetensors files copied under ``data/``). Its reference's ``make_inputs``
calls :func:`make`, which builds every input for a workload's axes:

* ``random``: a fresh tensor from ``seed`` as FlashInfer-Bench draws one (normal(0, 1) for
  floating dtypes; integers uniform in [-128, 128) for int8 and [-1024, 1024) otherwise;
  bool uniform);
* ``scalar``: the row's value, a Python number;
* ``safetensors``: the stored tensor (the same for every seed).

Axes that no row has (a hidden workload the judge derives) get random tensors and the first
row's scalars; a task with safetensors inputs is imported with hidden workloads off.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from forgekernel.interop import safetensors

INT_RANGES = {"int8": (-128, 128)}
INT_RANGE = (-1024, 1024)


def load_rows(root: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    definition = json.loads((root / "definition.json").read_text())
    path = root / "workloads.json"
    rows = json.loads(path.read_text()) if path.is_file() else []
    return definition, rows


def full_axes(definition: dict[str, Any], var: dict[str, int]) -> dict[str, int]:
    """A row's axes with the Definition's constant axes added."""
    const = {k: a["value"] for k, a in definition["axes"].items() if a.get("type") == "const"}
    return {k: var[k] if k in var else const[k] for k in definition["axes"]}


def shape_at(spec: dict[str, Any], axes: dict[str, int]) -> tuple[int, ...] | None:
    dims = spec.get("shape")
    return None if dims is None else tuple(axes[d] for d in dims)


def random_tensor(dtype: str, shape: tuple[int, ...], gen: Any) -> Any:
    import torch

    if dtype in ("float32", "float16", "bfloat16"):
        return torch.randn(shape, generator=gen, dtype=torch.float32).to(getattr(torch, dtype))
    if dtype == "bool":
        return torch.randint(0, 2, shape, generator=gen).to(torch.bool)
    low, high = INT_RANGES.get(dtype, INT_RANGE)
    return torch.randint(low, high, shape, generator=gen, dtype=torch.int64).to(getattr(torch, dtype))


def scalar(dtype: str, value: Any) -> Any:
    if dtype == "bool":
        return bool(value)
    return float(value) if dtype.startswith(("float", "bfloat")) else int(value)


def make(root: Path, axes: dict[str, int], seed: int, device: str = "cpu") -> tuple[Any, ...]:
    """Every input of the task in ``root`` at ``axes``, in the Definition's order."""
    import torch

    definition, rows = load_rows(Path(root))
    row = next((r for r in rows if full_axes(definition, r["axes"]) == dict(axes)), None)
    first = rows[0] if rows else None
    gen = torch.Generator().manual_seed(seed)
    out: list[Any] = []
    for name, spec in definition["inputs"].items():
        desc = (row or {}).get("inputs", {}).get(name) or {"type": "random"}
        if row is None and spec.get("shape") is None and first is not None:
            desc = first["inputs"][name]
        shape = shape_at(spec, axes)
        if desc["type"] == "scalar":
            out.append(scalar(spec["dtype"], desc["value"]))
        elif device == "meta":
            out.append(torch.empty(shape or (), dtype=getattr(torch, spec["dtype"]), device="meta"))
        elif desc["type"] == "safetensors":
            out.append(safetensors.load(Path(root) / desc["path"], desc["tensor_key"]).to(device))
        elif shape is None:
            raise ValueError(f"input '{name}' is a scalar and no workload gives its value")
        else:
            out.append(random_tensor(spec["dtype"], shape, gen).to(device))
    return tuple(out)
