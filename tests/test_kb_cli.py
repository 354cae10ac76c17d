"""`forge kb` commands, run in-process through the CLI entry point."""

from __future__ import annotations

import json

from forgekernel import kb
from forgekernel.cli import main
from forgekernel.kb.probes import copy as copy_probe
from kb_helpers import REPO, copy_sweep, kb_copy, matmul_result, run_dict


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_list_and_show(capsys):
    code, out, _ = _run(capsys, "kb", "list", "--arch", "sm90", "--json")
    assert code == 0
    listed = json.loads(out)
    assert {e["id"] for e in listed} == {e.id for e in kb.load("sm90")}
    for e in listed:
        assert e["state"] in ("CERTIFIED", "FAILED", "UNSUPPORTED", "UNCERTIFIED")
        if e["state"] == "CERTIFIED":
            assert e["certification"]["passed"] is True
    code, out, _ = _run(capsys, "kb", "list")
    assert code == 0 and "sm90.copy_large" in out and "claim" in out.splitlines()[0]
    code, out, _ = _run(capsys, "kb", "show", "sm90.rows_multirow")
    assert code == 0 and "prescription" in out and "rows_multirow" in out


def test_errors_are_one_line_exit_2(capsys, tmp_path):
    for argv in (["kb", "show", "sm90.nope"], ["kb", "list", "--kb-dir", str(tmp_path / "none")],
                 ["kb", "probe", "--delivery", "cpu"], ["kb", "probe", "sm90.nope", "--delivery", "cpu"],
                 ["kb", "prescribe", str(tmp_path)]):
        code, out, err = _run(capsys, *argv)
        assert code == 2, argv
        assert err.startswith("forge: error: ") and err.count("\n") == 1, (argv, err)
    code, _, err = _run(capsys, "kb", "probe", "--delivery", "cpu")
    assert "needs a GPU" in err


def test_probe_from_saved_run_writes_records(capsys, tmp_path):
    kb_dir = kb_copy(tmp_path)
    large, small = copy_probe.results_from_sweep(copy_sweep(4.3, 2.6))
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(run_dict([large, small, matmul_result("matmul_bf16", 2.0)])))
    code, out, _ = _run(capsys, "kb", "probe", "--from-json", str(saved), "--kb-dir", str(kb_dir))
    assert code == 0
    assert "sm90.copy_large" in out and "CERTIFIED" in out and "FAILED" in out  # 550 < 650
    code, out, _ = _run(capsys, "kb", "list", "--json", "--kb-dir", str(kb_dir))
    states = {e["id"]: e["state"] for e in json.loads(out)}
    assert states["sm90.copy_large"] == "CERTIFIED" and states["sm90.matmul_bf16"] == "FAILED"
    assert states["sm90.l2_reuse"] == "UNCERTIFIED"
    wrong_arch = run_dict([large])
    wrong_arch["versions"]["sm"] = "10.0"
    saved.write_text(json.dumps(wrong_arch))
    code, _, err = _run(capsys, "kb", "probe", "--from-json", str(saved), "--kb-dir", str(kb_dir))
    assert code == 2 and "sm100" in err


def test_prescribe_json_and_text(capsys):
    code, out, _ = _run(capsys, "kb", "prescribe", str(REPO / "tasks" / "rmsnorm"), "--json")
    assert code == 0
    data = json.loads(out)
    assert "memory" in data["prescriptions"][0]["bottlenecks"]
    for role in ("coder", "architect"):
        certified = {p["id"] for p in data["prescriptions"]
                     if p["state"] == "CERTIFIED" and p["relevant"] and role in p["roles"]}
        assert len(data[role]) == len(certified)
    assert "sm90.launch_graph" not in {p["id"] for p in data["prescriptions"] if "coder" in p["roles"]}
    code, out, _ = _run(capsys, "kb", "prescribe", str(REPO / "tasks" / "rmsnorm"))
    assert code == 0 and "for the coder" in out and "for the architect" in out
    assert out.splitlines()[1].startswith("rank")
