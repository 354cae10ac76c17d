"""A short `forge run` on the GPU whose coder is a scripted model behind the loopback OpenAI
fake: it writes a draft RMSNorm, calls the `run_profile` tool, reads what came back, writes
the kernel and finishes. Shows the real (device) timings the profile tool returns into the
conversation.

    source scripts/gpu_env.sh && python3 benchmarks/gpu_llm_profile.py --out $OUT --commit SHA

Needs the `openai` SDK (carried as wheels in .whl/ on the lent machine). Writes
OUT/llm_profile_gpu.json: device, date, versions, commit, the run's exit code and the text of
the tool result the model received, and prints that text.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))


def steps() -> list[dict]:
    from llm_agent_support import PLAN
    from llm_agent_support import RMSNORM_KERNEL as KERNEL

    plan = {"tool_calls": [{"name": "submit_curriculum", "input": {"toml": PLAN, "summary": "fuse"}}]}
    return [plan,
            {"text": "A first draft.", "tool_calls": [
                {"name": "write_file", "input": {"path": "kernel.py", "content": KERNEL + "# draft\n"}}]},
            {"text": "Measuring it on the device.", "tool_calls": [{"name": "run_profile", "input": {}}]},
            {"text": "One launch per call: keep the structure.", "tool_calls": [
                {"name": "write_file", "input": {"path": "kernel.py", "content": KERNEL}}]},
            {"tool_calls": [{"name": "run_check", "input": {}}]},
            {"tool_calls": [{"name": "finish", "input": {"summary": "one program per row"}}]}]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--commit", default="")
    args = parser.parse_args()
    import torch
    import triton

    from forgekernel.fakes import FakeOpenAI

    tmp = Path(tempfile.mkdtemp(prefix="forge-llm-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FK_", "OPENAI_", "ANTHROPIC_"))}
    start = time.monotonic()
    with FakeOpenAI(steps()) as srv:
        env["OPENAI_BASE_URL"] = srv.url + "/v1"
        proc = subprocess.run([sys.executable, "-m", "forgekernel.cli", "run", str(REPO / "tasks" / "rmsnorm"),
                               "--out", str(tmp / "run"), "--delivery", "local", "--max-iterations", "1",
                               "--agent", "openai", "--price", "0.5,2"],
                              cwd=tmp, env=env, capture_output=True, text=True, timeout=500)
        scripted = srv.scripted()
    profiled = scripted[3].body["messages"][-1] if len(scripted) > 3 else {}
    result = {"device": torch.cuda.get_device_name(0), "date": datetime.date.today().isoformat(),
              "versions": {"torch": torch.__version__, "triton": triton.__version__,
                           "python": sys.version.split()[0]},
              "commit": args.commit, "exit": proc.returncode, "wall_s": round(time.monotonic() - start, 1),
              "requests": len(scripted), "profile_tool_result": profiled.get("content"),
              "forge_output_tail": (proc.stdout + proc.stderr)[-3000:]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "llm_profile_gpu.json").write_text(json.dumps(result, indent=1))
    print(f"forge run exit {proc.returncode}, {len(scripted)} model requests, {result['wall_s']} s")
    print("--- what run_profile returned to the model ---")
    print(profiled.get("content", "(no profile request reached the model)"))
    return 0 if proc.returncode in (0, 2) and profiled else 1


if __name__ == "__main__":
    sys.exit(main())
