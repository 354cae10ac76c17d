"""The `forge` command line: the only place that prints, exits or picks concrete backends.

Commands live in ``cli/cmd_*.py`` modules; each registers its commands on :data:`app`
when imported. Heavy libraries are imported inside command functions so ``forge --help``
stays fast.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pkgutil
import signal
import sys
import tempfile
import threading
import traceback
from pathlib import Path

import typer

from forgekernel import __version__
from forgekernel.errors import ForgeError

app = typer.Typer(
    name="forge",
    help="forgekernel: measure a PyTorch operator, plan, generate and judge faster GPU kernels.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: full option names at any width, and no rich import
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"forgekernel {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """forgekernel: a self-evolving GPU-kernel agent."""


def _load_commands() -> None:
    here = Path(__file__).parent
    for info in sorted(pkgutil.iter_modules([str(here)]), key=lambda i: i.name):
        if info.name.startswith("cmd_"):
            importlib.import_module(f"forgekernel.cli.{info.name}")


INTERRUPTED = 130
"""Exit code after Ctrl-C (128 + SIGINT), as shells report it."""


class Interrupted(Exception):  # noqa: N818 - a signal, not an error
    """Ctrl-C in a resumable command; the message is the command that resumes it."""


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print one error line to stderr and return the Exit to raise."""
    typer.echo(f"forge: error: {message}", err=True)
    return typer.Exit(code)


def main(argv: list[str] | None = None) -> int:
    """Console-script entry: run the app, turning user errors into one line and exit 2."""
    _load_commands()
    try:
        rc = app(args=argv, prog_name="forge", standalone_mode=False)
    except ForgeError as exc:
        typer.echo(f"forge: error: {exc}", err=True)
        return 2
    except Interrupted as exc:
        typer.echo(f"forge: interrupted; `{exc}` resumes it", err=True)
        return INTERRUPTED
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        typer.echo("forge: aborted", err=True)
        return 130
    except KeyboardInterrupt:
        typer.echo("forge: interrupted", err=True)
        return 130
    except Exception as exc:  # click usage errors and bugs alike end in one line
        if callable(getattr(exc, "format_message", None)) and hasattr(exc, "exit_code"):
            typer.echo(f"forge: error: {exc.format_message()}", err=True)
            return 2
        with tempfile.NamedTemporaryFile("w", prefix="forge-crash-", suffix=".txt", delete=False) as fh:
            traceback.print_exc(file=fh)
        typer.echo(f"forge: internal error: {type(exc).__name__}: {exc} (traceback in {fh.name})", err=True)
        return 3
    if rc == INTERRUPTED:  # typer turns Ctrl-C into a quiet Exit(130) and click returns its code
        typer.echo("forge: interrupted", err=True)
    return rc if isinstance(rc, int) else 0


def entry() -> None:
    """The ``forge`` command: :func:`main`, then exit with its code. A Ctrl-C that lands after
    main's own handlers (while an error line is written, or while the interpreter waits for
    threads at exit) ends the process with 130, never with a traceback or a death by SIGINT."""
    try:
        rc = main()
    except KeyboardInterrupt:
        rc = INTERRUPTED
    exit_with(rc)


def exit_with(rc: int) -> None:
    """Exit with ``rc``; a Ctrl-C from now on ends the process with 130.

    CPython remembers a KeyboardInterrupt that left an ``exec``/``eval`` of a *string* (module
    code run from source text, generated methods, ...) and at the very end kills its own
    process with SIGINT, even when that interrupt was caught and the program chose its exit
    code: the run was resumable and said so, yet the shell saw a death by SIGINT. Evaluating
    any string clears that memory, so it is done last."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _exit_interrupted)
    exec("None")  # clears CPython's unhandled-KeyboardInterrupt flag (see above)
    sys.exit(rc)


def _exit_interrupted(signum: int, frame: object) -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(INTERRUPTED)


if __name__ == "__main__":
    entry()
