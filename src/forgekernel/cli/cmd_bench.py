"""`forge bench`: `forge run` over many tasks or KernelBench files, with a summary."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import typer

from forgekernel.cli import app, fail


@app.command("bench")
def bench_cmd(
    sources: list[Path] = typer.Argument(..., metavar="SOURCE...",
                                         help="Task dirs, KernelBench .py files, directories of them "
                                              "(a KernelBench level), or one existing bench dir to resume."),
    out: Path = typer.Option(None, "--out", help="Bench dir to create (default .artifacts/bench_<stamp>)."),
    agent: str = typer.Option("builtin", "--agent", help="Coder backend for every problem."),
    delivery: str = typer.Option("auto", "--delivery", help="cpu, local, ssh, ray or auto."),
    max_iterations: int = typer.Option(4, "--max-iterations", min=1, help="Attempts per problem."),
    max_minutes: float = typer.Option(10.0, "--max-minutes", min=0.1, help="Wall minutes per problem."),
    jobs: int = typer.Option(1, "--jobs", min=1, help="Problems run at once."),
    target: float = typer.Option(None, "--target", min=0.001, help="Target speedup of every run."),
    sample: int = typer.Option(None, "--sample", min=1, help="Run a seeded random sample of this many problems."),
    seed: int = typer.Option(0, "--seed", help="Seed of --sample."),
    gpus: int = typer.Option(0, "--gpus", min=0, help="Spread the problems round-robin over GPUs "
                             "0..N-1 of this machine (--delivery local; 0: the delivery's choice)."),
    share_gpu: float = typer.Option(None, "--share-gpu", min=0.01, metavar="GIB",
                                    help="With --jobs above the GPU count: judgements whose estimated "
                                         "device footprint is at most GIB check correctness beside "
                                         "each other; timing always has the GPU alone."),
    peers: bool = typer.Option(True, "--peers/--no-peers", help="After each problem correct on a GPU, "
                               "time torch.compile against its best kernel (`forge compare`)."),
    unsafe_no_sandbox: bool = typer.Option(False, "--unsafe-no-sandbox",
                                           help="Passed to every forge new/run (not kept in bench.toml)."),
) -> None:
    """Run every problem (resumable) and write summary.json, summary.md and summary.png."""
    from forgekernel import bench
    from forgekernel.cli.preflight import sandbox_ready
    from forgekernel.delivery.base import resolve_delivery

    where = resolve_delivery(delivery)[0]
    sandbox_ready(where, unsafe_no_sandbox)  # before any bench dir
    if len(sources) == 1 and (sources[0] / bench.BENCH_TOML).is_file():
        root = sources[0]
        _check_resumed(root)
    else:
        _check_gpus(gpus, where, share_gpu)
        settings = bench.BenchSettings(agent=agent, delivery=delivery, iterations=max_iterations,
                                       minutes=max_minutes, jobs=jobs, target=target, peers=peers,
                                       gpus=gpus, share_gb=share_gpu)
        root = _create(sources, out, sample, seed, settings)
    try:
        summary = bench.run(root, on_result=_show, unsafe_no_sandbox=unsafe_no_sandbox)
    except bench.BenchError as exc:
        raise fail(str(exc)) from None
    m = summary["metrics"]
    typer.echo(f"summary: {root / 'summary.md'}")
    typer.echo(f"{m['correct']} of {m['problems']} correct; timing {m['timing']}")


def _create(sources: list[Path], out: Path | None, sample: int | None, seed: int, settings) -> Path:
    """A new bench dir for the problems in ``sources`` (a seeded sample of them)."""
    import random

    from forgekernel import bench

    problems = bench.problems_from(sources)
    if sample is not None and sample < len(problems):
        problems = sorted(random.Random(seed).sample(problems, sample), key=lambda p: p.slug)
    root = out or Path(".artifacts") / f"bench_{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"
    bench.create(root, problems, settings)
    typer.echo(f"created bench dir {root} ({len(problems)} problems)")
    return root


def _check_gpus(gpus: int, delivery: str, share_gb: float | None = None) -> None:
    """--gpus N needs the local delivery and GPUs 0..N-1 on this machine (NVML's answer);
    --share-gpu the local delivery."""
    if share_gb is not None and delivery != "local":
        raise fail(f"--share-gpu shares this machine's GPU between jobs: use it with --delivery local "
                   f"(the delivery here is {delivery})")
    if gpus == 0:
        return
    if delivery != "local":
        raise fail(f"--gpus {gpus} pins problems to this machine's GPUs: use it with --delivery local "
                   f"(the delivery here is {delivery})")
    from forgekernel.delivery.gpu_probe import nvml_name

    for i in range(gpus):
        if nvml_name(environ={"CUDA_VISIBLE_DEVICES": str(i)}) is None:
            raise fail(f"--gpus {gpus}: this machine has no GPU {i}")


def _show(row: dict) -> None:
    mark = "correct" if row.get("correct") else f"not correct ({row.get('error') or 'no candidate passed'})"
    x = f", {row['speedup']:.3g}x ({row.get('timing')})" if row.get("speedup") else ""
    typer.echo(f"[{row['slug']}] {mark}{x}")


def _check_resumed(root: Path) -> None:
    """A bench dir to resume: readable, and its --gpus still on this machine."""
    from forgekernel import bench
    from forgekernel.delivery.base import resolve_delivery

    try:
        kept = bench.load(root)[1]
    except bench.BenchError as exc:
        raise fail(str(exc)) from None
    _check_gpus(kept.gpus, resolve_delivery(kept.delivery)[0])
