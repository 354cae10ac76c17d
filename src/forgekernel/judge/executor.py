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
* ``own_pool``, ``pools``, ``batch``: on a GPU, a pool of its own memory the verifier writes
  timed inputs into, and gated batches of calls on it (:mod:`forgekernel.judge.gated`);
* ``exit``.

Anything the candidate raises is sent back as a description; the verifier decides.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from forgekernel.judge import accounting


class Executor:
    """State of one executor process: the candidate's callable and where tensors go."""

    def __init__(self, scratch: Path, device: str, interpret: bool, words_fd: int = -1) -> None:
        from forgekernel.judge import guards

        self.scratch, self.device, self.interpret = scratch, device, interpret
        self.words_fd = words_fd
        self.gate: Any = None
        self.warmed: set[str] = set()
        self.pool_sets: dict[str, list[list[Any]]] = {}
        self.imported: dict[str, Any] = {}
        self.buffers: dict[str, list[Any]] = {}
        self.pending: list[Any] = []
        from forgekernel.judge import watch

        self.harness = guards.Harness(guards.harness_targets())  # before any candidate code
        self.attempts = watch.install(str(scratch))
        self.module: Any = None
        self.fn: Any = None
        self.models: dict[str, Any] = {}
        self.lent: set[str] = set()  # module constants lent to the candidate module (it lacked them)
        self.own: tuple[str, ...] | None = ()  # its kernel names (None: any Triton kernel counts)
        self.library: frozenset[str] = frozenset()  # ATen ops the task leaves to the library
        self.candidate_dir = ""
        self.outputs: dict[str, tuple[Any, ...]] = {}
        self.boot: dict[str, float] = {}
        self.l2_set_aside: int | None = None
        """The context's persisting-L2 limit before any candidate code (the driver's default
        is not 0: 11796480 bytes on the H200); a change is reported."""
        if device == "cuda":
            from forgekernel.judge import ipc

            self.l2_set_aside = ipc.persisting_l2_bytes()

    def integrity(self, threads_before: set[int], stream: Any) -> dict[str, Any]:
        """What the candidate left changed: library functions, live threads, the stream."""
        import torch

        from forgekernel.judge import guards

        facts: dict[str, Any] = {}
        if self.attempts.seen:
            facts["attempts"] = list(self.attempts.seen)
        if guards.timers():
            facts["timers"] = guards.timers()
        changed = self.harness.changes()
        if changed:
            facts["tampered"] = changed[:10]
        threads = guards.candidate_threads(threads_before, self.candidate_dir)
        if threads:
            facts["threads"] = threads[:3]
        if stream is not None and torch.cuda.current_stream() != stream:
            facts["stream"] = True
        if self.l2_set_aside is not None:
            from forgekernel.judge import ipc

            if ipc.persisting_l2_bytes() != self.l2_set_aside:
                facts["l2_persisting"] = f"{self.l2_set_aside} -> {ipc.persisting_l2_bytes()}"
        return facts

    def load(self, msg: dict[str, Any]) -> dict[str, Any]:
        from forgekernel.judge import guards

        before = guards.thread_ids()
        reply = self._load(msg)
        return {**reply, "boot": self.boot, **self.integrity(before, None)}

    def _load(self, msg: dict[str, Any]) -> dict[str, Any]:
        from forgekernel.task import load_module

        kernel = Path(msg["kernel"])
        self.own = None if msg.get("any_kernel") else tuple(str(n) for n in msg.get("own", ()))
        self.library = frozenset(str(n) for n in msg.get("library_ops", ()))
        self.native = bool(msg.get("native")) and self.device == "cuda"
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

        from forgekernel.judge import guards, wire

        before = guards.thread_ids()
        init = [wire.plain(v) for v in msg["init"]]
        for name, value in dict(msg.get("constants") or {}).items():  # only names it lacks or was lent
            if str(name).isidentifier() and isinstance(value, int) and (name in self.lent or not hasattr(self.module, name)):
                setattr(self.module, name, value)
                self.lent.add(name)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(msg["seed"]))
            model = self.module.ModelNew(*init)
        if isinstance(model, torch.nn.Module):
            model = model.to(self.device)
            model.train(bool(msg.get("train", True)))
        self.models[str(msg.get("key", ""))] = model
        return {"ok": True, **self.integrity(before, None)}

    def callable(self, msg: dict[str, Any]) -> Any:
        """``run``, or the ModelNew built for the request's workload key."""
        if self.fn is not None:
            return self.fn
        return self.models[str(msg.get("key", ""))]

    def call(self, msg: dict[str, Any]) -> dict[str, Any]:
        import torch

        from forgekernel.judge import guards, observe, wire

        took: dict[str, float] = {}
        step = accounting.Phases(took)
        with step("args"):
            pool = self._pool(msg["pool"]) if "pool" in msg else None
            args = self._args(msg["inputs"], pool)
            if msg.get("reuse"):
                args = self._reused(str(msg.get("key", "")), args)
        with step("poison"):
            if msg.get("poison") is not None:
                guards.poison(list(msg.get("poison_sizes", [])), self.device, int(msg["poison"]))
        fn = self.callable(msg)
        before = guards.thread_ids()
        stream = torch.cuda.current_stream() if self.device == "cuda" else None
        start = time.perf_counter()
        watching = (observe.watching(self.interpret, self.native, self.library) if msg.get("observe", True)
                    else _unwatched())
        filled = guards.filled_empties(self.device == "cpu" and msg.get("poison") is not None)
        with watching as seen, filled:
            out = fn(*args)
            if self.device == "cuda":
                torch.cuda.synchronize()
        host_ms = (time.perf_counter() - start) * 1e3
        took["run"] = round(host_ms / 1e3, 3)
        with step("integrity"):
            facts = self.integrity(before, stream)
        outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        prefix = str(msg.get("prefix", "out"))
        with step("observed"):
            observed = observe.summary(seen, args, outs, self.own) if msg.get("observe", True) else {}
        with step("outputs"):
            if pool is not None:
                reply = {"outputs": self._place(outs, pool, msg.get("outputs_to") or [])}
            else:
                reply = {"outputs": wire.put_all(list(outs), self.scratch, prefix)}
                if msg.get("return_inputs"):
                    reply["inputs"] = wire.put_all(args, self.scratch, prefix + "_in")
        return {**reply, "observed": observed, "host_ms": host_ms, "took": took, **facts}

    def _pool(self, desc: dict[str, Any]) -> Any:
        """The verifier's pool, opened once per handle."""
        from forgekernel.judge import ipc

        handle = str(desc["handle"])
        if handle not in self.imported:
            self.imported[handle] = ipc.ImportedPool(desc)
        return self.imported[handle]

    def _args(self, descs: list[dict[str, Any]], pool: Any) -> list[Any]:
        """The call's inputs: the verifier's pool in place (GPU), or files it wrote."""
        from forgekernel.judge import ipc, wire

        if pool is None:
            return wire.get_all(descs, self.scratch, self.device)
        return [pool.tensor(ipc.slice_of(d["slice"])) if "slice" in d else wire.get(d, self.scratch)
                for d in descs]

    def _place(self, outs: tuple[Any, ...], pool: Any, slices: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each output described, and copied into the slice the verifier set aside for it
        when it is a tensor of that slice's shape and dtype (the verifier checks the rest)."""
        import torch

        from forgekernel.judge import ipc, wire

        descs = []
        for i, out in enumerate(outs):
            desc = wire.describe(out)
            if i < len(slices) and "tensor" in desc:
                s = ipc.slice_of(slices[i])
                if tuple(out.shape) == s.shape and desc["dtype"] == s.dtype and out.device.type == "cuda":
                    pool.tensor(s).copy_(out)
                    desc["pooled"] = True
            descs.append(desc)
        torch.cuda.synchronize()
        return descs

    def _reused(self, key: str, args: list[Any]) -> list[Any]:
        """The same buffers as the last reused call on this workload, refilled in place (timed
        calls see one address with new values, as a caller's buffers would)."""
        import torch

        old = self.buffers.get(key)
        if old is None or len(old) != len(args) or any(
                isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor)
                or (isinstance(a, torch.Tensor) and (a.shape != b.shape or a.dtype != b.dtype))
                for a, b in zip(old, args, strict=True)):
            self.buffers[key] = args
            return args
        for dst, src in zip(old, args, strict=True):
            if isinstance(dst, torch.Tensor):
                dst.copy_(src)
        return [o if isinstance(o, torch.Tensor) else a for o, a in zip(old, args, strict=True)]

    def repeat(self, msg: dict[str, Any]) -> dict[str, Any]:
        import torch

        from forgekernel.judge import guards, wire

        args = wire.get_all(msg["inputs"], self.scratch, self.device)
        fn = self.callable(msg)
        before = guards.thread_ids()
        for _ in range(int(msg["n"])):
            fn(*args)
        if self.device == "cuda":
            torch.cuda.synchronize()
        return {"ok": True, **self.integrity(before, None)}

    # -- GPU timing: a pool of this process's own memory, gated batches (forgekernel.judge.gated)
    def own_pool(self, msg: dict[str, Any]) -> dict[str, Any]:
        from forgekernel.judge import ipc

        pool = ipc.ExportedPool(int(msg["nbytes"]))
        self.imported[pool.handle] = pool
        return {"pool": pool.describe()}

    def pools(self, msg: dict[str, Any]) -> dict[str, Any]:
        from forgekernel.judge import ipc

        pool = self._pool(msg["pool"])
        sets = []
        for row in msg["sets"]:
            sets.append([pool.tensor(ipc.slice_of(d["slice"])) if "slice" in d else d.get("value")
                         for d in row])
        self.pool_sets[str(msg["key"])] = sets
        return {"ok": True}

    def batch(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Enqueue gate, the calls on every pool set, signal; answer before any of it runs."""
        import torch

        from forgekernel.judge import gate, guards

        if self.gate is None:
            self.gate = gate.DeviceGate(gate.HostWords(self.words_fd))
        fn = self.callable(msg)
        sets = self.pool_sets[str(msg["key"])]
        self.pending = []  # the last batch's outputs go back to the allocator before the gate closes
        if str(msg["key"]) not in self.warmed:  # load what the calls launch, cache their memory
            self.warmed.add(str(msg["key"]))
            outs = [fn(*args) for args in sets]
            torch.cuda.synchronize()
            del outs
        before = guards.thread_ids()
        n = int(msg["batch"])
        start = time.perf_counter()
        self.gate.wait(n)
        self.pending = [fn(*args) for args in sets]
        self.gate.signal(n)
        return {"enqueued": True, "host_ms": (time.perf_counter() - start) * 1e3,
                **self.integrity(before, None)}

    def collect(self, msg: dict[str, Any]) -> dict[str, Any]:
        import torch

        from forgekernel.judge import wire

        torch.cuda.synchronize()
        prefix = str(msg.get("prefix", "b"))
        pool = self._pool(msg["pool"]) if "pool" in msg else None
        outs = []
        for n, j in enumerate(msg["picks"]):
            out = self.pending[int(j)]
            values = tuple(out) if isinstance(out, (tuple, list)) else (out,)
            if pool is not None:  # into the slices the verifier set aside, on the device
                outs.append(self._place(values, pool, msg["outputs_to"][n]))
            else:
                outs.append(wire.put_all(list(values), self.scratch, f"{prefix}{int(j)}_"))
        self.pending = []
        if pool is not None:  # the batch's outputs: the verifier checks two of them next
            torch.cuda.empty_cache()
        return {"outputs": outs}

    def ping(self, msg: dict[str, Any]) -> dict[str, Any]:
        import torch

        if msg.get("sync") and self.device == "cuda":
            torch.cuda.synchronize()
        if msg.get("trim") and self.device == "cuda":  # before the verifier waits for the GPU
            torch.cuda.empty_cache()
        return {"ok": True}


@contextlib.contextmanager
def _unwatched() -> Iterator[Any]:
    """A timed call: nothing observed, so it cannot tell itself apart from a caller's."""
    from forgekernel.judge.observe import Seen

    yield Seen()


def interpret_flag(argv: list[str]) -> bool:
    return len(argv) > 4 and argv[4] == "1"


def serve(ex: Executor, cmd_fd: int, res_fd: int) -> None:
    """Answer requests until ``exit`` (or the verifier goes away)."""
    from forgekernel.judge import failure, wire

    handlers = {"load": ex.load, "model": ex.model, "call": ex.call, "repeat": ex.repeat,
                "own_pool": ex.own_pool, "pools": ex.pools, "batch": ex.batch, "collect": ex.collect,
                "ping": ex.ping}
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
    """``python -m forgekernel.judge.executor CMD_FD RES_FD SCRATCH DEVICE INTERPRET WORDS_FD
    [STABLE]``: STABLE, a path of the sandbox's private /tmp that names the cache directory
    the same way at every verdict (:func:`forgekernel.judge.kernel_cache.stable_cache`)."""
    sys.dont_write_bytecode = True  # python -I ignores PYTHONDONTWRITEBYTECODE; nothing is written
    from forgekernel.judge import kernel_cache
    from forgekernel.judge.boot import Boot, warm_cuda

    mark = Boot()
    import torch  # noqa: F401  (before any candidate code)

    mark("torch_s")
    from forgekernel import task  # noqa: F401  (its import writes nothing later)
    from forgekernel.judge import failure, guards, observe, wire  # noqa: F401

    mark("imports_s")
    with observe.watching(interpret_flag(argv)):  # the modes' own first use, before the snapshot
        torch.zeros(1) + 1
    mark("watching_s")
    cmd_fd, res_fd, scratch, device, interpret, words_fd = argv[:6]
    if len(argv) > 6 and argv[6]:
        kernel_cache.stable_cache(Path(scratch) / "cache", Path(argv[6]))
    if device == "cuda":
        warm_cuda()
        mark("cuda_s")
    ex = Executor(Path(scratch), device, interpret == "1", int(words_fd))
    mark("harness_s")
    ex.boot = mark.seconds
    serve(ex, int(cmd_fd), int(res_fd))


if __name__ == "__main__":
    main(sys.argv[1:])
    sys.exit(0)
