"""The coder's workspace: a git repo whose HEAD is always the best kernel so far.

Tags: ``start`` (the stub), ``best`` (the best correct candidate), ``c<seq>`` (every
accepted candidate). A correct candidate is committed on top of the best and tagged; when
it is not a new best the branch goes back to ``best``, the tag keeps the commit. A wrong
one is never committed: the tree is reset to the best.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from forgekernel.candidate import matches
from forgekernel.config import child_env
from forgekernel.errors import ForgeError
from forgekernel.rundir import IGNORED, copy_files

_IDENT = ["-c", "user.name=forgekernel", "-c", "user.email=forge@localhost",
          "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false", "-c", "core.hooksPath=/dev/null"]


class WorkspaceError(ForgeError, RuntimeError):
    """git failed in the workspace (the message has git's own words)."""


class Workspace:
    """git operations on ``root`` (the run dir's workspace/)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def git(self, *args: str, check: bool = True) -> str:
        try:
            proc = subprocess.run(["git", *_IDENT, *args], cwd=self.root, capture_output=True,
                                  text=True, env=child_env({"GIT_TERMINAL_PROMPT": "0"}))
        except FileNotFoundError:
            raise WorkspaceError("git is not installed; the run workspace needs it") from None
        if check and proc.returncode != 0:
            msg = (proc.stderr or proc.stdout).strip().splitlines()
            raise WorkspaceError(f"git {args[0]} failed in {self.root}: {msg[-1] if msg else proc.returncode}")
        return proc.stdout.strip()

    def init(self, files: dict[str, str]) -> None:
        """Create the repo with ``files`` as its first commit, tagged ``start``."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q")
        exclude = self.root / ".git" / "info" / "exclude"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        exclude.write_text("".join(f"{n}\n" for n in IGNORED))
        for rel, text in files.items():
            (self.root / rel).write_text(text)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "start: the stub kernel")
        self.git("tag", "start")

    def has(self, ref: str) -> bool:
        return self.git("rev-parse", "-q", "--verify", f"refs/tags/{ref}", check=False) != ""

    def base(self) -> str:
        """The tag the next attempt starts from."""
        return "best" if self.has("best") else "start"

    def reset(self) -> None:
        """Drop every change: the tree becomes the best (or the stub)."""
        self.git("reset", "-q", "--hard", self.base())
        self.git("clean", "-q", "-fdx")

    def recover(self) -> None:
        """After a kill: remove a stale index lock, then reset."""
        (self.root / ".git" / "index.lock").unlink(missing_ok=True)
        self.reset()

    def load(self, src: Path) -> None:
        """Make the tree exactly the files in ``src``."""
        for item in self.root.iterdir():
            if item.name != ".git":
                shutil.rmtree(item) if item.is_dir() else item.unlink()
        copy_files(src, self.root)

    def accept(self, seq: int, cid: str, src: Path, summary: str, best: bool) -> None:
        """Commit candidate ``src`` on the best, tag it, and move ``best`` when it is one."""
        self.reset()
        self.load(src)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", f"c{seq} {cid}: {summary[:200]}")
        self.git("tag", "-f", f"c{seq}")
        if best:
            self.git("tag", "-f", "best")
        self.reset()

    def ensure_best(self, seq: int, cid: str, src: Path, hasher: Callable[[Path], str]) -> None:
        """Make ``best`` hold candidate ``cid`` (a kill may have come before the tag moved)."""
        self.recover()
        if self.has("best") and matches(self.root, cid, hasher):
            return
        self.accept(seq, cid, src, "recovered after an interruption", best=True)
        if not matches(self.root, cid, hasher):
            raise WorkspaceError(f"workspace could not be restored to candidate {cid}")

    def log(self) -> list[str]:
        return self.git("log", "--format=%s").splitlines()
