"""Other formats: FlashInfer-Trace Definitions and Workloads in (`forge new definition.json`),
a run's best kernel out (`forge export`: FlashInfer-Trace, SOL-ExecBench, KernelBench), and
the round trip between them on the fixtures in tests/fixtures/interop/."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from forgekernel import instance
from forgekernel.cli import main
from forgekernel.interop import safetensors, schema
from forgekernel.interop.flashinfer_import import InteropError, convert
from forgekernel.task import load_module, load_task

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
FIX = TESTS / "fixtures" / "interop"
FIXTURES = ("rmsnorm", "gqa_paged_decode", "top_k_sampling")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(TESTS)]),
       "TRITON_INTERPRET": "1"}


def forge(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_error(err: str, text: str) -> None:
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("forge: note: ")]
    assert len(lines) == 1 and lines[0].startswith("forge: error: ") and text in lines[0], err


def imported(name: str, tmp: Path):
    return convert(FIX / name / "definition.json", tmp / name, FIX / name / "workloads.jsonl")


def task_fields(task) -> dict:
    return task.model_dump(exclude={"root"})


# ------------------------------------------------------------------ reading Definitions


def test_rmsnorm_definition_maps_axes_tensors_and_tolerance(tmp_path):
    got = imported("rmsnorm", tmp_path)
    task = load_task(got.root)
    assert task.name == "rmsnorm_h4096" and task.family == "rownorm"
    assert (task.axes["hidden_size"].min, task.axes["hidden_size"].max) == (4096, 4096)
    assert task.axes["batch_size"].max is None and task.axes["batch_size"].description == "tokens in the batch"
    assert list(task.inputs) == ["hidden_states", "weight"]
    assert task.inputs["hidden_states"].shape == ("batch_size", "hidden_size")
    assert task.inputs["weight"].dtype == "bfloat16" and task.inputs["weight"].dist.kind == "normal"
    assert task.outputs["output"].shape == ("batch_size", "hidden_size")
    assert task.judge.tolerance == {"bfloat16": 0.01} and task.judge.hidden
    assert [(w.axes["batch_size"], w.smoke) for w in task.workloads] == [
        (16, True), (7, True), (1024, False), (8192, False), (32768, False)]
    assert "tag 'status:verified' is not used by forge" in " | ".join(got.notes)
    assert "make_inputs" not in (got.root / "reference.py").read_text()  # random inputs need none


def test_gqa_definition_keeps_scalars_and_safetensors_inputs(tmp_path):
    got = imported("gqa_paged_decode", tmp_path)
    task = load_task(got.root)
    assert [n for n, a in task.axes.items() if a.min == a.max] == [
        "num_qo_heads", "num_kv_heads", "head_dim", "page_size"]
    assert task.inputs["sm_scale"].shape == () and task.inputs["sm_scale"].dtype == "float32"
    assert task.inputs["kv_indices"].dtype == "int32" and task.inputs["q"].dist.kind == "custom"
    assert list(task.outputs) == ["output", "lse"] and not task.judge.hidden
    assert task.judge.tolerance == {"bfloat16": 0.01, "float32": 0.01}
    notes = " | ".join(got.notes)
    assert "field 'version' is not part of a FlashInfer-Trace Definition" in notes
    assert "constraint 'len_indptr == batch_size + 1' is not checked" in notes
    assert "inputs.kv_indptr.description is kept in definition.json only" in notes
    # the workload's inputs: its stored indices exactly, its scalar, random tensors per seed
    row = json.loads((got.root / "workloads.json").read_text())[0]
    blob = FIX / "gqa_paged_decode" / "blob" / "gqa_indices.safetensors"
    module = load_module(got.root / "reference.py")
    a = module.make_inputs(dict(task.workloads[0].axes), 1)
    b = module.make_inputs(dict(task.workloads[0].axes), 2)
    assert torch.equal(a[3], safetensors.load(blob, "w0_kv_indptr")) and torch.equal(a[3], b[3])
    assert torch.equal(a[4], safetensors.load(blob, "w0_kv_indices"))
    assert a[5] == 0.125 and not torch.equal(a[0], b[0])
    assert row["inputs"]["kv_indptr"]["path"].startswith("data/")


def test_top_k_sampling_is_read_and_its_random_output_is_named(tmp_path):
    got = imported("top_k_sampling", tmp_path)
    task = load_task(got.root)
    assert task.outputs["samples"].dtype == "int64" and task.judge.tolerance == {}
    assert any("op_type 'sampling': the outputs are random draws" in n for n in got.notes)


@pytest.mark.parametrize("name", FIXTURES)
def test_each_reference_runs_at_its_smoke_workloads(tmp_path, name):
    task = load_task(imported(name, tmp_path).root)
    module = load_module(Path(task.root) / "reference.py")
    smoke = task.smoke_workloads()
    assert smoke
    for w in smoke:
        out = module.run(*instance.inputs_at(task, module, w, seed=3))
        out = out if isinstance(out, tuple) else (out,)
        for got, spec in zip(out, task.outputs.values(), strict=True):
            assert got.dtype == getattr(torch, spec.dtype)
            assert tuple(got.shape) == tuple(w.axes[d] for d in spec.shape)
            assert torch.isfinite(got.float()).all()


def test_gqa_reference_matches_dense_attention(tmp_path):
    """The fixture's paged reference against a plain computation over each sequence's pages."""
    task = load_task(imported("gqa_paged_decode", tmp_path).root)
    module = load_module(Path(task.root) / "reference.py")
    q, k, v, indptr, indices, scale = module.make_inputs(dict(task.workloads[1].axes), 0)
    out, lse = module.run(q, k, v, indptr, indices, scale)
    for b in range(q.shape[0]):
        pages = indices[indptr[b]:indptr[b + 1]].long()
        kk = k[pages, 0].double().repeat_interleave(4, dim=1)  # 8 query heads over 2 KV heads
        vv = v[pages, 0].double().repeat_interleave(4, dim=1)
        s = (q[b].double()[None] * kk).sum(-1).T * scale  # [heads, tokens]
        want = (torch.softmax(s, -1)[..., None] * vv.transpose(0, 1)).sum(1)
        assert torch.allclose(out[b].double(), want, atol=2e-2, rtol=2e-2)
        assert torch.allclose(lse[b].double(), torch.logsumexp(s, -1) / torch.log(torch.tensor(2.0)),
                              atol=1e-4)


def test_without_workloads_smoke_workloads_are_made(tmp_path):
    got = convert(FIX / "rmsnorm" / "definition.json", tmp_path / "t")
    task = load_task(got.root)
    assert [(w.axes["batch_size"], w.smoke) for w in task.workloads] == [(16, True), (7, True)]
    assert any("no --workloads" in n for n in got.notes)
    with pytest.raises(InteropError, match="input 'sm_scale' is a scalar; its value comes from workloads"):
        convert(FIX / "gqa_paged_decode" / "definition.json", tmp_path / "g")


@pytest.mark.parametrize(("file", "text"), [
    ("not_json.json", "not valid JSON"),
    ("no_reference.json", "missing required field 'reference'"),
    ("float8_input.json", "dtype 'float8_e4m3fn' has no forge equivalent"),
    ("expr_axis.json", "axes.hidden_size has type 'expr' (SOL-ExecBench)"),
    ("undefined_axis.json", "inputs.weight.shape: axis 'hidden' is not in axes"),
    ("no_run.json", "reference defines no top-level run(...)"),
])
def test_a_malformed_definition_is_one_line_and_exit_2(capsys, file, text):
    code, out, err = forge(capsys, "new", FIX / "malformed" / file, "--dry-run")
    assert code == 2 and out == ""
    one_error(err, text)
    assert "Traceback" not in err


def _workloads(tmp: Path, rows: list) -> Path:
    path = tmp / "w.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(("row", "text"), [
    ({"definition": "other", "workload": {"uuid": "u", "axes": {"batch_size": 4}, "inputs": {}}},
     "is for definition 'other', not 'rmsnorm_h4096'"),
    ({"uuid": "u", "axes": {"batch_size": 4, "hidden_size": 8}, "inputs": {}},
     "axis 'hidden_size' = 8, but the Definition fixes it at 4096"),
    ({"uuid": "u", "axes": {"batch_size": 4}, "inputs": {"hidden_states": {"type": "random"}}},
     "no descriptor for input 'weight'"),
    ({"uuid": "u", "axes": {"batch_size": 4}, "inputs": {
        "hidden_states": {"type": "random"},
        "weight": {"type": "safetensors", "path": "nowhere.safetensors", "tensor_key": "w"}}},
     "safetensors file nowhere.safetensors is not found"),
    ({"uuid": "u", "axes": {"batch_size": 4}, "inputs": {
        "hidden_states": {"type": "random"}, "weight": {"type": "scalar", "value": 1.0}}},
     "input 'weight' is a tensor cannot take type 'scalar'"),
])
def test_a_bad_workload_is_one_line(capsys, tmp_path, row, text):
    code, _, err = forge(capsys, "new", FIX / "rmsnorm" / "definition.json", "--dry-run",
                         "--workloads", _workloads(tmp_path, [row]))
    assert code == 2
    one_error(err, text)


def test_unused_workload_fields_are_one_note_each(tmp_path):
    row = {"uuid": "u", "axes": {"batch_size": 4}, "comment": "x",
           "inputs": {"hidden_states": {"type": "random"}, "weight": {"type": "random"}}}
    trace = {"definition": "rmsnorm_h4096", "workload": row, "solution": "someone",
             "evaluation": {"status": "PASSED"}}
    got = convert(FIX / "rmsnorm" / "definition.json", tmp_path / "t", _workloads(tmp_path, [trace, row]))
    unused = [n for n in got.notes if "not used by forge; ignored" in n]
    assert unused == ["w.jsonl:1: the Trace's 'solution' is not used by forge; ignored",
                      "w.jsonl:1: the Trace's 'evaluation' is not used by forge; ignored",
                      "w.jsonl:1: workload field 'comment' is not used by forge; ignored"]
    assert "comment" not in (tmp_path / "t" / "workloads.json").read_text()


def test_a_failed_import_leaves_no_task_dir(tmp_path):
    rows = [{"uuid": "u", "axes": {"batch_size": 2}, "inputs": {
        "hidden_states": {"type": "random"},
        "weight": {"type": "safetensors", "path": "gone.safetensors", "tensor_key": "w"}}}]
    with pytest.raises(InteropError, match="gone.safetensors is not found"):
        convert(FIX / "rmsnorm" / "definition.json", tmp_path / "t", _workloads(tmp_path, rows))
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("description", ["Two\nlines  of text.", None])
def test_the_definition_written_back_is_the_one_read(tmp_path, description):
    from forgekernel.interop.flashinfer_export import definition_of

    data = json.loads((FIX / "gqa_paged_decode" / "definition.json").read_text())
    data.pop("version")
    data.pop("description")
    if description is not None:
        data["description"] = description
    (tmp_path / "d.json").write_text(json.dumps(data))
    got = convert(tmp_path / "d.json", tmp_path / "t", FIX / "gqa_paged_decode" / "workloads.jsonl")
    task = load_task(got.root)
    assert task.description == ("Two lines of text." if description else "")
    assert definition_of(task, got.root) == data


def test_a_safetensors_tensor_of_the_wrong_shape_is_named(tmp_path):
    safetensors.save(tmp_path / "w.safetensors", {"w": torch.ones(8, dtype=torch.bfloat16)})
    rows = [{"uuid": "u", "axes": {"batch_size": 2}, "inputs": {
        "hidden_states": {"type": "random"},
        "weight": {"type": "safetensors", "path": "w.safetensors", "tensor_key": "w"}}}]
    with pytest.raises(InteropError, match=r"tensor 'w' is bfloat16\[8\]; input 'weight' .* needs bfloat16\[4096\]"):
        convert(FIX / "rmsnorm" / "definition.json", tmp_path / "t", _workloads(tmp_path, rows))


def test_safetensors_round_trip_and_damage(tmp_path):
    tensors = {"a": torch.randn(3, 5).to(torch.bfloat16), "b": torch.arange(7, dtype=torch.int32),
               "c": torch.tensor([True, False])}
    safetensors.save(tmp_path / "x.safetensors", tensors)
    for k, t in tensors.items():
        assert torch.equal(safetensors.load(tmp_path / "x.safetensors", k), t)
    (tmp_path / "bad.safetensors").write_bytes(b"\x05\x00")
    with pytest.raises(safetensors.SafetensorsError, match="shorter than 8 bytes"):
        safetensors.load(tmp_path / "bad.safetensors", "a")
    with pytest.raises(safetensors.SafetensorsError, match=r"no tensor 'z' \(tensors: a, b, c\)"):
        safetensors.load(tmp_path / "x.safetensors", "z")


# ------------------------------------------------------------------ the vendored schema


def _solution() -> dict:
    return {"name": "s", "definition": "d", "author": "me",
            "spec": {"language": "triton", "target_hardware": ["NVIDIA_H200"],
                     "entry_point": "main.py::run", "destination_passing_style": True},
            "sources": [{"path": "main.py", "content": "def run(): pass\n"}]}


@pytest.mark.parametrize(("change", "text"), [
    (lambda s: s["sources"][0].update(path="../main.py"), "must be a relative path without '..'"),
    (lambda s: s["spec"].update(entry_point="kernel.py::run"), "file 'kernel.py' is not among the sources"),
    (lambda s: s["spec"].update(language="rust"), "'rust' is not one of python, triton"),
    (lambda s: s.pop("author"), "missing required field 'author'"),
    (lambda s: s["spec"].update(target_hardware=[]), "needs at least 1 entry"),
    (lambda s: s.update(extra=1), "field 'extra' is not in the schema"),
])
def test_the_solution_validator_finds_each_problem(change, text):
    sol = _solution()
    assert schema.problems("solution", sol) == []
    change(sol)
    found = schema.problems("solution", sol)
    assert found and text in found[0], found


def test_the_trace_validator_checks_status_against_metrics():
    wl = {"uuid": "u", "axes": {}, "inputs": {}}
    ev = {"status": "PASSED", "environment": {"hardware": "h"}, "timestamp": "t",
          "correctness": {"max_absolute_error": 0.0}}
    found = schema.problems("trace", {"definition": "d", "workload": wl, "solution": "s", "evaluation": ev})
    assert found == ["evaluation: performance must be present when status is PASSED"]
    assert schema.problems("trace", {"definition": "d", "workload": wl, "solution": None, "evaluation": None}) == []


# ------------------------------------------------------------------ a real run, exported


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """`forge new` on the RMSNorm Definition, then one built-in-agent iteration on the CPU."""
    tmp = tmp_path_factory.mktemp("interop_run")
    run = tmp / "run"
    fix = FIX / "rmsnorm"
    for argv in (["new", fix / "definition.json", "--workloads", fix / "workloads.jsonl", "--out", run,
                  "--delivery", "cpu", "--agent", "builtin"],
                 ["run", run, "--max-iterations", "1"]):
        proc = subprocess.run([sys.executable, "-m", "forgekernel.cli", *map(str, argv)], capture_output=True,
                              text=True, env=ENV, cwd=tmp, timeout=600)
        assert proc.returncode in (0, 2), proc.stderr[-3000:]
    assert json.loads((run / "best" / "verdict.json").read_text())["status"] == "PASSED"
    return run


def _export(capsys, run: Path, fmt: str, out: Path, *extra) -> list[Path]:
    code, stdout, err = forge(capsys, "export", run, "--format", fmt, "--out", out, *extra)
    assert code == 0, err
    return [Path(line) for line in stdout.splitlines()]


@pytest.mark.slow
def test_flashinfer_export_validates_and_reimports_to_the_same_task(capsys, run_dir, tmp_path):
    files = _export(capsys, run_dir, "flashinfer", tmp_path / "fi")
    names = [p.relative_to(tmp_path / "fi").parts[0] for p in files]
    assert names == ["definitions", "workloads", "solutions", "traces"]
    definition = json.loads(files[0].read_text())
    solution = json.loads(files[2].read_text())
    traces = [json.loads(line) for line in files[3].read_text().splitlines()]
    assert schema.problems("definition", definition) == []
    assert schema.problems("solution", solution) == []
    assert solution["spec"]["destination_passing_style"] is True
    assert solution["spec"]["entry_point"] == "main.py::run"
    assert {s["path"] for s in solution["sources"]} == {"kernel.py", "main.py"}
    assert len(traces) == 2 and all(schema.problems("trace", t) == [] for t in traces)
    assert {t["workload"]["axes"]["batch_size"] for t in traces} == {16, 7}
    assert all(t["evaluation"]["status"] == "PASSED" and t["solution"] == solution["name"] for t in traces)
    # the Definition written back is the one read, and reading it again gives the same task
    assert definition == json.loads((FIX / "rmsnorm" / "definition.json").read_text())
    again = convert(files[0], tmp_path / "again", files[1])
    first = load_task(run_dir / "task")
    assert task_fields(load_task(again.root)) == task_fields(first)
    assert (again.root / "reference.py").read_text() == (run_dir / "task" / "reference.py").read_text()


DPS_CHECK = """
import importlib, json, sys, torch
sol = json.load(open(sys.argv[1])); root = sys.argv[2]
for s in sol["sources"]:
    open(f"{root}/pkg/{s['path']}", "w").write(s["content"])
sys.path.insert(0, root)
entry = importlib.import_module("pkg.main")
kernel = importlib.import_module("pkg.kernel")
x = torch.randn(7, 4096).to(torch.bfloat16); w = torch.randn(4096).to(torch.bfloat16)
out = torch.full((7, 4096), float("nan"), dtype=torch.bfloat16)
assert entry.run(x, w, out) is None
print(bool(torch.equal(out, kernel.run(x, w))))
"""


@pytest.mark.slow
def test_the_exported_solution_runs_destination_passing(capsys, run_dir, tmp_path):
    """Loaded as FlashInfer-Bench loads a Python Solution (a package of its sources), the
    entry point writes kernel.py's result into the preallocated output."""
    files = _export(capsys, run_dir, "flashinfer", tmp_path / "fi")
    (tmp_path / "pkg").mkdir()
    proc = subprocess.run([sys.executable, "-c", DPS_CHECK, str(files[2]), str(tmp_path)],
                          capture_output=True, text=True, env=ENV, timeout=300)
    assert proc.stdout.split() == ["True"], proc.stderr[-3000:]


@pytest.mark.slow
def test_solexec_solution_has_its_required_fields(capsys, run_dir, tmp_path):
    (path,) = _export(capsys, run_dir, "solexec", tmp_path / "se", "--style", "value")
    data = json.loads(path.read_text())
    assert path.name == "solution.json" and schema.problems("solexec_solution", data) == []
    assert {"name", "definition", "author", "spec", "sources"} <= set(data)
    assert data["spec"]["languages"] == ["triton"] and data["spec"]["target_hardware"] == ["LOCAL"]
    assert data["spec"]["destination_passing_style"] is False
    assert "language" not in data["spec"]


KB_CHECK = """
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("model_new", sys.argv[1])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
ref = importlib.util.spec_from_file_location("ref", sys.argv[2])
r = importlib.util.module_from_spec(ref); ref.loader.exec_module(r)
x = torch.randn(5, 4096).to(torch.bfloat16); w = (1 + 0.1 * torch.randn(4096)).to(torch.bfloat16)
got, want = mod.ModelNew()(x, w), r.run(x, w)
print(got.dtype == want.dtype, bool(torch.allclose(got.float(), want.float(), atol=3e-2, rtol=3e-2)))
"""


@pytest.mark.slow
def test_kernelbench_model_new_matches_the_reference(capsys, run_dir, tmp_path):
    (path,) = _export(capsys, run_dir, "kernelbench", tmp_path / "kb")
    proc = subprocess.run([sys.executable, "-c", KB_CHECK, str(path), str(run_dir / "task" / "reference.py")],
                          capture_output=True, text=True, env=ENV, timeout=300)
    assert proc.stdout.split() == ["True", "True"], proc.stderr[-3000:]


@pytest.mark.slow
def test_export_errors_are_one_line(capsys, run_dir, tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    code, _, err = forge(capsys, "export", run_dir, "--format", "flashinfer", "--out", tmp_path / "full")
    assert code == 2
    one_error(err, "exists and is not an empty directory")
    code, _, err = forge(capsys, "export", run_dir, "--format", "onnx", "--out", tmp_path / "o")
    assert code == 2
    one_error(err, "--format 'onnx': use flashinfer, solexec, kernelbench")
    fresh = tmp_path / "fresh"
    code, _, err = forge(capsys, "new", FIX / "rmsnorm" / "definition.json", "--out", fresh,
                         "--delivery", "cpu", "--agent", "builtin")
    assert code == 0, err
    code, _, err = forge(capsys, "export", fresh, "--format", "kernelbench", "--out", tmp_path / "k")
    assert code == 2
    one_error(err, "no best kernel yet")


BLOCKED = """
import runpy, sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pydantic", "tomli_w"):
            raise ImportError(f"{name} is blocked: the script must need torch and triton only")
sys.meta_path.insert(0, Block())
sys.argv = ["flashinfer_solution_gpu.py", *sys.argv[1:]]
runpy.run_path(%r, run_name="__main__")
"""


def test_the_gpu_script_runs_on_the_cpu_with_torch_and_triton_only(tmp_path):
    script = REPO / "benchmarks" / "flashinfer_solution_gpu.py"
    proc = subprocess.run([sys.executable, "-c", BLOCKED % str(script), "--out", str(tmp_path), "--cpu",
                           "--commit", "test"], capture_output=True, text=True, env=ENV, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    record = json.loads((tmp_path / "flashinfer_solution.json").read_text())
    assert record["all_passed"] and record["style"] == "destination-passing"
    assert [w["axes"]["batch_size"] for w in record["workloads"]] == [16, 7]
    assert all(w["max_abs_error"] < 0.1 and w["latency_ms"] > 0 for w in record["workloads"])
    solution = json.loads((tmp_path / "solution.json").read_text())
    assert schema.problems("solution", solution) == []


def test_gqa_trace_set_carries_its_safetensors_and_reimports(tmp_path):
    """Export without a run (a Best made from the imported task and a verdict naming its
    workloads): the blobs travel, the paths resolve from the trace set, the task comes back."""
    from forgekernel.interop import flashinfer_export
    from forgekernel.interop.best_kernel import Best

    root = imported("gqa_paged_decode", tmp_path).root
    task = load_task(root)
    workloads = [{"axes": dict(w.axes), "hidden": False, "passed": True, "max_abs_err": 0.001,
                  "max_rel_err": 0.002, "median_ms": 1.5, "reference_ms": 3.0, "speedup": 2.0,
                  "timing_label": "device"} for w in task.workloads]
    (tmp_path / "best").mkdir()
    (tmp_path / "best" / "verdict.json").write_text("{}")
    best = Best(task=task, task_dir=root.rename(tmp_path / "task"), files={"kernel.py": "def run(*a):\n    pass\n"},
                verdict={"status": "PASSED", "candidate": "abc123", "device": "NVIDIA H200",
                         "versions": {"torch": "x"}, "workloads": workloads}, agent="test")
    files, notes = flashinfer_export.export(best, tmp_path / "out")
    assert notes == []
    rows = [json.loads(line)["workload"] for line in files[1].read_text().splitlines()]
    assert rows[0]["inputs"]["kv_indices"]["path"].startswith("blob/workloads/gqa_paged/")
    assert (tmp_path / "out" / rows[0]["inputs"]["kv_indices"]["path"]).is_file()
    traces = [json.loads(line) for line in files[3].read_text().splitlines()]
    assert [t["evaluation"]["performance"]["speedup_factor"] for t in traces] == [2.0, 2.0]
    assert all(schema.problems("trace", t) == [] for t in traces)
    solution = json.loads(files[2].read_text())
    assert "def run(q, k_cache, v_cache, kv_indptr, kv_indices, sm_scale, output, lse):" in \
        solution["sources"][-1]["content"]
    again = load_task(convert(files[0], tmp_path / "again", files[1]).root)
    assert task_fields(again) == task_fields(task)


def test_a_native_task_exports_with_a_note_per_input_drawn_differently(tmp_path):
    """tasks/rmsnorm with its outputs declared: its weight is normal(1, 0.1), which a
    FlashInfer-Trace 'random' input cannot say."""
    import shutil

    from forgekernel.interop import flashinfer_export
    from forgekernel.interop.best_kernel import Best

    shutil.copytree(REPO / "tasks" / "rmsnorm", tmp_path / "task")
    toml = tmp_path / "task" / "task.toml"
    toml.write_text(toml.read_text().replace("[[workload]]", '[outputs.out]\ndtype = "bfloat16"\n'
                                             'shape = ["M", "N"]\n\n[[workload]]', 1))
    (tmp_path / "best").mkdir()
    (tmp_path / "best" / "verdict.json").write_text("{}")
    best = Best(task=load_task(tmp_path / "task"), task_dir=tmp_path / "task",
                files={"kernel.py": "def run(x, weight):\n    return x\n"},
                verdict={"status": "PASSED", "workloads": []}, agent="test")
    files, notes = flashinfer_export.export(best, tmp_path / "out")
    assert notes == ["input 'weight': written as type 'random', which FlashInfer-Bench draws "
                     "differently from the task's dist (normal)"]
    definition = json.loads(files[0].read_text())
    assert definition["op_type"] == "rownorm" and definition["axes"] == {"M": {"type": "var", "description": "rows (tokens)"},
                                                                          "N": {"type": "var", "description": "hidden size"}}
    assert "def run(x: torch.Tensor, weight: torch.Tensor)" in definition["reference"]
    assert len(files[1].read_text().splitlines()) == len(best.task.workloads)
