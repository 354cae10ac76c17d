"""``python -m forgekernel.fakes anthropic|openai SCRIPT.json``: serve a script on loopback.

Writes ``url: http://127.0.0.1:PORT`` on stdout once listening, serves until interrupted
(SIGINT/SIGTERM), then writes the request log as JSON lines to ``--log`` if given.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from dataclasses import asdict
from pathlib import Path

from forgekernel.fakes import FakeAnthropic, FakeOpenAI, ScriptError, load_script


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m forgekernel.fakes", description=__doc__)
    ap.add_argument("kind", choices=["anthropic", "openai"])
    ap.add_argument("script", type=Path, help="JSON list of steps (see forgekernel.fakes.script)")
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    ap.add_argument("--api-key", default=None, help="answer 401 unless requests carry this key")
    ap.add_argument("--log", type=Path, default=None, help="write the request log here on exit")
    args = ap.parse_args(argv)
    try:
        steps = load_script(args.script)
    except ScriptError as exc:
        sys.stderr.write(f"fake: error: {exc}\n")
        return 2
    cls = FakeAnthropic if args.kind == "anthropic" else FakeOpenAI
    server = cls(steps, api_key=args.api_key, port=args.port).start()
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    sys.stdout.write(f"url: {server.url}\n")
    sys.stdout.flush()
    done.wait()
    server.stop()
    if args.log:
        with args.log.open("w") as fh:
            for r in server.requests:
                fh.write(json.dumps(asdict(r)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
