"""Every built-in template computes its task's operator under the Triton interpreter.

Each check runs in a fresh process with TRITON_INTERPRET=1 (tests/builtin_template_check.py):
the template is rendered for the example task (default knobs, both ends of every knob's
space, and block sizes small enough to force several blocks), run at the smoke workloads and
at odd shapes (all ones, +1, about 1.5x+1), and compared with the reference on float64 inputs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forgekernel import templates
from forgekernel.agents import builtin
from forgekernel.task import load_task

REPO = Path(__file__).resolve().parents[1]
CHECK = REPO / "tests" / "builtin_template_check.py"
TASKS = ("rmsnorm", "fused_add_rmsnorm", "layernorm", "softmax", "swiglu", "cross_entropy",
         "rope", "matmul")
INTERP_BF16 = 2e-2
"""Error (relative to the output's largest magnitude) the interpreter's bf16 rounding can add."""


def _check(args: list[str]) -> list[dict]:
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, str(CHECK), *args], capture_output=True, text=True,
                          env=env, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def _templates_for(name: str) -> list[str]:
    task = load_task(REPO / "tasks" / name)
    match = builtin.supports(task, (REPO / "tasks" / name / "reference.py").read_text())
    return [t.name for t in match.templates]


@pytest.mark.parametrize("name", TASKS)
def test_templates_match_reference(name):
    names = _templates_for(name)
    assert names, f"no template for {name}"
    rows = _check([str(REPO / "tasks" / name), *names])
    assert {r["template"] for r in rows} == set(names)
    for r in rows:
        where = f"{r['template']} {r['knobs']} at {r['axes']}"
        assert r["dtype_ok"], where
        assert r["err"] <= max(4 * r["ref_err"], INTERP_BF16), f"{where}: error {r['err']:.3g}"
    want = 2 if name == "cross_entropy" else 1
    assert {r["launches"] for r in rows if r["launches"] is not None} == {want}
    assert {tuple(sorted(r["axes"].items())) for r in rows} >= {
        tuple(sorted(w.axes.items())) for w in load_task(REPO / "tasks" / name).smoke_workloads()}


def test_check_catches_a_wrong_operator():
    """Negative control: log-softmax rendered for the softmax task is far outside tolerance."""
    rows = _check(["--op", "log_softmax", str(REPO / "tasks" / "softmax"), "softmax_row"])
    assert rows and all(r["err"] >= 0.5 for r in rows)


def test_every_template_is_used_by_some_task():
    used = {n for name in TASKS for n in _templates_for(name)}
    assert used == {t.name for t in templates.TEMPLATES if t.language == "triton"}
    # the CUDA C++ and CuTe DSL structures: tests/test_native.py


def test_docs_list_every_template_and_knob():
    doc = (REPO / "docs" / "builtin.md").read_text()
    for tpl in templates.TEMPLATES:
        row = next((line for line in doc.splitlines() if line.startswith(f"| `{tpl.name}` |")), None)
        assert row is not None, f"docs/builtin.md has no row for {tpl.name}"
        for knob in tpl.knobs:
            assert f"`{knob.name}` {knob.default} ({'/'.join(map(str, knob.space))})" in row, (tpl.name, knob.name)
