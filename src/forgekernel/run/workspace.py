"""The coder's workspace: a git work tree whose HEAD is always the best kernel so far.

The repository itself (``workspace.git`` beside the workspace in the run dir) is out of
the agent's reach, and every git call runs with no system or global configuration and with
hooks, fsmonitor, pagers, editors, external diff and ssh commands off: nothing an agent
writes into the workspace makes the engine's git run a command. Run dirs made before this
keep their ``workspace/.git``, used with the same overrides.

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

from forgekernel.candidate import IGNORED, copy_files, matches
from forgekernel.config import child_env
from forgekernel.errors import ForgeError

_IDENT = ["-c", "user.name=forgekernel", "-c", "user.email=forge@localhost",
          "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false", "-c", "core.hooksPath=/dev/null",
          "-c", "core.fsmonitor=false", "-c", "core.pager=cat", "-c", "core.editor=true",
          "-c", "core.sshCommand=false", "-c", "diff.external=", "-c", "core.askPass=",
          "-c", "credential.helper=", "-c", "protocol.allow=never", "-c", "core.untrackedCache=false"]
_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_ATTR_NOSYSTEM": "1"}


class WorkspaceError(ForgeError, RuntimeError):
    """git failed in the workspace (the message has git's own words)."""


class Workspace:
    """git operations on ``root`` (the run dir's workspace/)."""

    def __init__(self, root: Path, git_dir: Path | None = None) -> None:
        self.root = root
        git_dir = git_dir or root.parent / "workspace.git"
        legacy = root / ".git"
        use_legacy = (not git_dir.exists() and legacy.is_dir()
                                          and (legacy / "HEAD").is_file())
        self.git_dir = legacy if use_legacy else git_dir

    def git(self, *args: str, check: bool = True) -> str:
        where = ["--git-dir", str(self.git_dir), "--work-tree", str(self.root)]
        try:
            proc = subprocess.run(["git", *_IDENT, *where, *args], cwd=self.root, capture_output=True,
                                  text=True, env=child_env(_ENV))
        except FileNotFoundError:
            raise WorkspaceError("git is not installed; the run workspace needs it") from None
        if check and proc.returncode != 0:
            msg = (proc.stderr or proc.stdout).strip().splitlines()
            raise WorkspaceError(f"git {args[0]} failed in {self.root}: {msg[-1] if msg else proc.returncode}")
        return proc.stdout.strip()

    def init(self, files: dict[str, str]) -> None:
        """Create the repo with ``files`` as its first commit, tagged ``start``."""
        self.root.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", *_IDENT, "init", "-q", "--bare", str(self.git_dir)], check=True,
                       capture_output=True, env=child_env(_ENV))
        self.git("config", "core.bare", "false")
        exclude = self.git_dir / "info" / "exclude"
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
        """After a kill: remove git's stale lock files, then reset. A git killed mid-commit
        leaves ``index.lock``, ``HEAD.lock`` or a ref's lock (``refs/tags/best.lock``), and
        every later git call in the repository fails on it; the caller holds the run dir's
        lock, so no other git can be using them."""
        for lock in [*self.git_dir.glob("*.lock"), *(self.git_dir / "refs").rglob("*.lock")]:
            lock.unlink(missing_ok=True)
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
