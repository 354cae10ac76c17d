"""The executor: the only process of a judgement that imports and runs candidate code.

Started by the verifier inside a sandbox (no credentials, no network, read-only but for its
scratch dir, ``python -I``), it holds no key, no oracle, no tolerance and no workload list.
It answers the verifier's requests on a pair of pipes (:mod:`forgekernel.judge.wire`):

* ``load``: import the candidate's kernel.py (its callable: ``run`` or ``ModelNew``);
* ``model``: build ``ModelNew(*init)`` under the given seed (KernelBench tasks);
* ``call``: run the callable on the inputs it is handed (files the verifier wrote), under
  observation (:mod:`forgekernel.judge.observe`), write its outputs back as raw bytes;
* ``repeat``: run the callable ``n`` times on the same inputs (CPU timing, whose clock is
  the verifier's);
* ``batch``: on a GPU, enqueue a gated batch of calls (:mod:`forgekernel.judge.gate`);
* ``exit``.

Anything the candidate raises is sent back as a description; the verifier decides.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any


class Executor:
    """State of one executor process: the candidate's callable and where tensors go."""

    def __init__(self, scratch: Path, device: str, interpret: bool) -> None:
        self.scratch, self.device, self.interpret = scratch, device, interpret
        self.module: Any = None
        self.fn: Any = None
        self.models: dict[str, Any] = {}
        self.candidate_dir = ""
        self.outputs: dict[str, tuple[Any, ...]] = {}

    def load(self, msg: dict[str, Any]) -> dict[str, Any]:
        from forgekernel.task import load_module

        kernel = Path(msg["kernel"])
        self.candidate_dir = str(kernel.parent.resolve())
        if self.candidate_dir not in sys.path:
            sys.path.append(self.candidate_dir)
        self.module = load_module(kernel, name="_forge_candidate")
        entry = msg["entry"]
        target = getattr(self.module, entry, None)
        if not callable(target):
            what = "ModelNew" if entry == "ModelNew" else "run(*inputs)"
            return {"missing": f"{kernel.name} does not define {what}"}
        self.fn = target if entry == "run" else None
        return {"ok": True}

    def model(self, msg: dict[str, Any]) -> dict[str, Any]:
        import torch

        init = [_plain(v) for v in msg["init"]]
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(msg["seed"]))
            model = self.module.ModelNew(*init)
        if isinstance(model, torch.nn.Module):
            model = model.to(self.device)
            model.train(bool(msg.get("train", True)))
        self.models[str(msg.get("key", ""))] = model
        return {"ok": True}

    def callable(self, msg: dict[str, Any]) -> Any:
        """``run``, or the ModelNew built for the request's workload key."""
        if self.fn is not None:
            return self.fn
        return self.models[str(msg.get("key", ""))]

    def call(self, msg: dict[str, Any]) -> dict[str, Any]:
        import torch

        from forgekernel.judge import guards, observe, wire

        args = wire.get_all(msg["inputs"], self.scratch, self.device)
        if msg.get("poison") is not None:
            guards.poison(list(msg.get("poison_sizes", [])), self.device, int(msg["poison"]))
        start = time.perf_counter()
        fn = self.callable(msg)
        with observe.watching(self.interpret) as seen:
            out = fn(*args)
            if self.device == "cuda":
                torch.cuda.synchronize()
        host_ms = (time.perf_counter() - start) * 1e3
        outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        facts = observe.summary(seen, args, outs)
        prefix = str(msg.get("prefix", "out"))
        reply = {"outputs": wire.put_all(list(outs), self.scratch, prefix), "observed": facts,
                 "host_ms": host_ms}
        if msg.get("return_inputs"):
            reply["inputs"] = wire.put_all(args, self.scratch, prefix + "_in")
        return reply

    def repeat(self, msg: dict[str, Any]) -> dict[str, Any]:
        import torch

        from forgekernel.judge import wire

        args = wire.get_all(msg["inputs"], self.scratch, self.device)
        fn = self.callable(msg)
        for _ in range(int(msg["n"])):
            fn(*args)
        if self.device == "cuda":
            torch.cuda.synchronize()
        return {"ok": True}


def _plain(value: Any) -> Any:
    """An init argument as sent (numbers, strings, booleans and lists of them)."""
    if isinstance(value, list):
        return tuple(_plain(v) for v in value)
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    raise TypeError(f"init argument of type {type(value).__name__} cannot be sent")


def serve(ex: Executor, cmd_fd: int, res_fd: int) -> None:
    """Answer requests until ``exit`` (or the verifier goes away)."""
    from forgekernel.judge import failure, wire

    handlers = {"load": ex.load, "model": ex.model, "call": ex.call, "repeat": ex.repeat}
    while True:
        try:
            msg = wire.recv(cmd_fd)
        except wire.WireError:
            return
        op = msg.get("op")
        if op == "exit":
            wire.send(res_fd, {"ok": True})
            return
        handler = handlers.get(str(op))
        try:
            reply = handler(msg) if handler else {"protocol": f"unknown op {op!r}"}
        except BaseException as exc:  # the candidate's exception is data for the verifier
            reply = {"raised": failure.describe(exc, ex.candidate_dir)}
        wire.send(res_fd, reply)


def main(argv: list[str]) -> None:
    """``python -m forgekernel.judge.executor CMD_FD RES_FD SCRATCH DEVICE INTERPRET``."""
    import torch  # noqa: F401  (before any candidate code)

    from forgekernel.judge import observe  # noqa: F401

    cmd_fd, res_fd, scratch, device, interpret = argv
    serve(Executor(Path(scratch), device, interpret == "1"), int(cmd_fd), int(res_fd))


if __name__ == "__main__":
    main(sys.argv[1:])
    sys.exit(0)
