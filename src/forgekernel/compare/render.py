"""A comparison as a table (rich, rendered to text for the CLI to print) and a PNG plot."""

from __future__ import annotations

import io
from pathlib import Path

from forgekernel.compare.record import CompareRecord, Row

COLUMNS = ("workload", "peer", "device ms", "per-call ms", "host us", "vs kernel",
           "of ceiling", "note")


def _num(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def _note(row: Row) -> str:
    if row.status == "ok":
        return row.detail if row.kind in ("copy", "read") else ""
    return f"{row.status}: {row.detail}" if row.detail else row.status


def cells(record: CompareRecord) -> list[list[str]]:
    """The table's rows as text cells, in :data:`COLUMNS` order."""
    out = []
    for wl in record.workloads:
        if wl.note:
            out.append([wl.label(), "-", "-", "-", "-", "-", "-", wl.note])
        for i, row in enumerate(wl.rows):
            ratio = f"{row.vs_kernel:.3g}x" if row.vs_kernel is not None else "-"
            ceiling = f"{100 * row.of_ceiling:.2g}%" if row.of_ceiling is not None else "-"
            out.append([wl.label() if i == 0 else "", row.name, _num(row.device_ms),
                        _num(row.per_call_ms), _num(row.host_us, 3), ratio, ceiling, _note(row)])
    return out


def caption(record: CompareRecord) -> list[str]:
    """Lines under the table: where it ran, the method, what the ratios mean."""
    figure = "device time" if record.basis == "device_ms" else "per-call wall time (cpu-interpret)"
    lines = [f"{record.task} on {record.device} [{record.label}], {record.date}, commit "
             f"{record.commit[:12]}; " + ", ".join(f"{k} {v}" for k, v in record.versions.items()),
             f"method: {record.method}",
             f"vs kernel = the peer's {figure} / the kernel's (above 1: the kernel is faster); "
             "of ceiling = the size-matched copy's time (a reduction: the read-only pass's) / "
             "the row's; ratios only between rows that matched the reference"]
    if record.skipped:
        lines.append(f"skipped: {', '.join(record.skipped)}")
    if record.label == "cpu-interpret":
        lines.append("cpu-interpret: the Triton CPU interpreter at smoke shapes; these times "
                     "exercise the code and rank nothing")
    return lines


def text(record: CompareRecord, width: int = 160) -> str:
    """The rich table and its caption as plain text."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"forge compare: {record.task}", title_justify="left")
    for col in COLUMNS:
        numeric = col not in ("workload", "peer", "note")
        table.add_column(col, justify="right" if numeric else "left", overflow="fold",
                         max_width=60 if col == "note" else None)
    for row in cells(record):
        table.add_row(*row)
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False)
    console.print(table)
    for line in caption(record):
        console.print(line, highlight=False, markup=False)
    return buf.getvalue()


def plot(record: CompareRecord, path: Path) -> bool:
    """Grouped bars: each timed peer's figure per workload (log scale). False: nothing timed."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    names = list(dict.fromkeys(r.name for w in record.workloads for r in w.rows
                               if getattr(r, record.basis) is not None and r.status == "ok"))
    if not names:
        return False
    fig = Figure(figsize=(max(7.0, 1.4 * len(record.workloads)), 4.5), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        xs, ys = [], []
        for i, wl in enumerate(record.workloads):
            row = next((r for r in wl.rows if r.name == name and r.status == "ok"), None)
            if row is not None and getattr(row, record.basis) is not None:
                xs.append(i + k * width)
                ys.append(getattr(row, record.basis))
        ax.bar(xs, ys, width=width, label=name)
    ax.set_yscale("log")
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(record.workloads))])
    ax.set_xticklabels([w.label().replace(" x ", "\n") for w in record.workloads], fontsize=7)
    unit = "device ms" if record.basis == "device_ms" else "per-call ms"
    ax.set_ylabel(f"{unit} [{record.label}]")
    ax.set_title(f"forge compare: {record.task} on {record.device}")
    ax.legend(fontsize=7, ncols=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return True
