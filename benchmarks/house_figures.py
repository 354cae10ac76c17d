"""Figures for issue 16 ("The house"), read from a source tree with ast: how many modules are
over 400 lines, the function sizes (median, p90, max), and two walks through the code of
`forge run` whose call chains are listed by hand below (each function is looked up in the
tree, so a chain that no longer matches the code fails instead of counting).

    python benchmarks/house_figures.py [REPO_ROOT] [--layout before|after] [--out FILE.json]
    python benchmarks/house_figures.py --before /tmp/house_before --out FILE.json

(the second: ``git worktree add /tmp/house_before 4519699`` first; both layouts in one file)

``before``: the layout at 4519699 (top-level engine.py, steps.py, ledger.py, ...);
``after``: the run/, evolve/, report/ packages and RunRecord.commit.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import statistics
import subprocess
from pathlib import Path

MODULE_LINES, FUNCTION_LINES = 400, 50

# The stack when the Attempt line of a judged attempt is appended (outermost first).
STACK = {
    "before": ["cli/cmd_run.py:run_cmd", "engine.py:run", "steps.py:Steps.attempt",
               "steps.py:Steps.judge_waiting", "steps.py:Steps.judge_and_record",
               "steps.py:Steps._record", "steps.py:Steps.record", "ledger.py:Ledger.append"],
    "after": ["cli/cmd_run.py:run_cmd", "run/engine.py:run", "run/session.py:RunSession.attempt",
              "run/session.py:RunSession.judge_waiting", "run/session.py:RunSession.judge_and_record",
              "run/session.py:RunSession._record", "run/session.py:RunSession.record",
              "run/record.py:RunRecord.commit", "run/ledger.py:Ledger.append"],
}

# From `forge run TASK_DIR` to the first ledger line, in call order: (depth, function).
# A frame at a depth no deeper than the one before it means the frames between returned.
TASK_DIR_TO_LEDGER = {
    "before": [(0, "cli/cmd_run.py:run_cmd"), (1, "cli/cmd_run.py:_existing"),
               (1, "cli/cmd_run.py:_prepare"), (2, "preflight.py:prepare"),
               (1, "cli/cmd_run.py:_create"), (2, "rundir.py:create"), (3, "workspace.py:Workspace.init"),
               (1, "rundir.py:open"), (1, "cli/cmd_run.py:_seams"), (1, "engine.py:run"),
               (2, "rundir.py:open"), (2, "engine.py:_locked"), (2, "steps.py:Steps.__init__"),
               (2, "steps.py:Steps.resume"), (3, "ledger.py:Ledger.repair"), (3, "runstate.py:replay"),
               (3, "rundir.py:clean_partial"), (3, "workspace.py:Workspace.recover"),
               (3, "steps.py:Steps.record"), (4, "ledger.py:Ledger.append")],
    "after": [(0, "cli/cmd_run.py:run_cmd"), (1, "cli/cmd_run.py:_existing"),
              (1, "cli/cmd_run.py:_prepare"), (2, "cli/preflight.py:prepare"),
              (1, "cli/cmd_run.py:_create"), (2, "run/rundir.py:create"),
              (3, "run/workspace.py:Workspace.init"), (1, "run/rundir.py:open"),
              (1, "cli/cmd_run.py:_seams"), (1, "run/engine.py:run"), (2, "run/rundir.py:open"),
              (2, "run/engine.py:_locked"), (2, "run/session.py:RunSession.__init__"),
              (2, "run/session.py:RunSession.resume"), (3, "run/record.py:RunRecord.reopen"),
              (4, "run/ledger.py:Ledger.repair"), (4, "run/state.py:replay"),
              (4, "run/rundir.py:clean_partial"), (3, "run/workspace.py:Workspace.recover"),
              (3, "run/record.py:RunRecord.refresh"), (3, "run/session.py:RunSession.record"),
              (4, "run/record.py:RunRecord.commit"), (5, "run/ledger.py:Ledger.append")],
}

# Every function one attempt runs (decide, propose, store, start, judge, record, gate).
ONE_ATTEMPT = {
    "before": ["engine.py:run", "decisions.py:decide", "steps.py:Steps.attempt", "steps.py:Steps._propose",
               "runstate.py:RunState.last_feedback", "views.py:coder_sources", "views.py:history",
               "agents/base.py:CoderContext", "rundir.py:store_candidate", "steps.py:Steps.record",
               "ledger.py:Ledger.append", "seal.py:sign", "runstate.py:RunState.apply",
               "steps.py:Steps.judge_waiting", "steps.py:Steps.judge_and_record", "steps.py:Steps._verified",
               "candidate.py:matches", "steps.py:Steps._judge", "judge/api.py:judge", "steps.py:Steps._record",
               "explain.py:threshold", "explain.py:beats", "workspace.py:Workspace.accept",
               "rundir.py:install_best", "explain.py:judged_note", "steps.py:Steps.check_gate",
               "curriculum.py:evaluate_gate", "rundir.py:atomic_write"],
    "after": ["run/engine.py:run", "run/decisions.py:decide", "run/session.py:RunSession.attempt",
              "run/session.py:RunSession._propose", "run/state.py:RunState.last_feedback",
              "run/agent_views.py:coder_sources", "run/agent_views.py:history", "agents/base.py:CoderContext",
              "run/rundir.py:store_candidate", "run/session.py:RunSession.record",
              "run/record.py:RunRecord.commit", "run/ledger.py:Ledger.append", "run/seal.py:sign",
              "run/state.py:RunState.apply", "run/record.py:RunRecord.refresh",
              "run/session.py:RunSession.judge_waiting", "run/session.py:RunSession.judge_and_record",
              "run/session.py:RunSession._verified", "candidate.py:matches", "run/session.py:RunSession._judge",
              "judge/api.py:judge", "run/session.py:RunSession._record", "run/explain.py:threshold",
              "run/explain.py:beats", "run/workspace.py:Workspace.accept", "run/rundir.py:install_best",
              "run/explain.py:judged_note", "run/session.py:RunSession.check_gate",
              "curriculum.py:evaluate_gate", "run/rundir.py:atomic_write"],
}


def _defs(path: Path) -> set[str]:
    """Qualified names (``Class.method``) of the functions and classes a module defines."""
    out: set[str] = set()

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                out.add(prefix + child.name)
                walk(child, f"{prefix}{child.name}.")

    walk(ast.parse(path.read_text()), "")
    return out


def _check(src: Path, refs: list[str]) -> None:
    for ref in refs:
        rel, name = ref.split(":")
        if name not in _defs(src / rel):
            raise SystemExit(f"{ref}: not defined in {src / rel}")


def sizes(src: Path) -> dict:
    functions: dict[str, int] = {}
    modules: dict[str, int] = {}
    for path in sorted(src.rglob("*.py")):
        rel, text = str(path.relative_to(src)), path.read_text()
        modules[rel] = len(text.splitlines())
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                key = f"{rel}:{node.name}"
                functions[key] = max(functions.get(key, 0), node.end_lineno - node.lineno + 1)
    lengths = sorted(functions.values())
    over = {k: n for k, n in sorted(modules.items()) if n > MODULE_LINES}
    return {"modules": len(modules), "modules_over_400": len(over), "modules_over_400_list": over,
            "top_level_modules": sum(1 for k in modules if "/" not in k),
            "functions": len(lengths), "function_lines_median": statistics.median(lengths),
            "function_lines_p90": lengths[math.ceil(0.9 * len(lengths)) - 1],
            "function_lines_max": lengths[-1],
            "functions_over_50": sum(1 for n in lengths if n > FUNCTION_LINES)}


def _files(refs: list[str]) -> list[str]:
    return sorted({r.split(":")[0] for r in refs})


def walks(src: Path, layout: str) -> dict:
    walk = TASK_DIR_TO_LEDGER[layout]
    _check(src, STACK[layout] + [f for _, f in walk] + ONE_ATTEMPT[layout])
    returns = sum(max(0, prev - depth + 1) for (prev, _), (depth, _) in zip(walk, walk[1:], strict=False))
    return {
        "attempt_line_stack_frames": len(STACK[layout]), "attempt_line_stack_files": len(_files(STACK[layout])),
        "task_dir_to_ledger_calls": len(walk), "task_dir_to_ledger_files": len(_files([f for _, f in walk])),
        "task_dir_to_ledger_returns_before_the_append": returns,
        "one_attempt_functions": len(ONE_ATTEMPT[layout]),
        "one_attempt_files": len(_files(ONE_ATTEMPT[layout])),
        "one_attempt_file_list": _files(ONE_ATTEMPT[layout]),
    }


def figures(root: Path, layout: str) -> dict:
    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    src = root / "src" / "forgekernel"
    return {"layout": layout, "commit": commit, **sizes(src), **walks(src, layout)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parents[1]))
    ap.add_argument("--layout", choices=sorted(STACK), default="after")
    ap.add_argument("--before", help="a checkout of the before layout: both in one file")
    ap.add_argument("--out")
    args = ap.parse_args()
    out = figures(Path(args.root), args.layout)
    if args.before:
        out = {"before": figures(Path(args.before), "before"), "after": out}
    text = json.dumps(out, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
