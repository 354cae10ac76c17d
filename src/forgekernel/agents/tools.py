"""The tools an LLM coder may call, confined to its workspace.

``read_file``, ``write_file``, ``edit_file`` (exact-string replace), ``list_files``,
``run_check`` (the engine's quick compile+correctness command on visible smoke workloads,
when the context gives one), ``run_profile`` (time and profile the kernel at the visible
workloads where the run judges, when the context gives a profile command) and ``finish``. Paths are relative to the workspace: absolute
paths, ``..`` components, anything under ``.git`` and symlinks that lead outside are refused.
A refused or failed call is returned to the model as an error result, never raised.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from forgekernel import config

READ_CAP = 100_000
"""Characters of a file returned by read_file (the rest is cut with a note)."""
CHECK_OUTPUT_CAP = 12_000
"""Characters of run_check output returned to the model (its tail)."""


class ToolRefused(ValueError):
    """A tool call the workspace rules refuse; its message goes back to the model."""


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call returns to the model."""

    text: str
    is_error: bool = False
    done: bool = False
    """True for ``finish`` (or any tool that ends the loop)."""


@dataclass(frozen=True)
class Tool:
    """A tool: its name, description and JSON-schema parameters, and the handler."""

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Callable[[dict[str, Any]], ToolOutcome]


def schema(required: Sequence[str], **props: str) -> dict[str, Any]:
    """A JSON schema object with string properties (name -> description)."""
    return {"type": "object",
            "properties": {k: {"type": "string", "description": v} for k, v in props.items()},
            "required": list(required)}


class ToolBox:
    """Named tools; :meth:`call` turns every failure into an error outcome."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools = {t.name: t for t in tools}
        self.calls: list[tuple[str, bool]] = []
        """(tool name, is_error) of every call, in order."""

    def specs(self) -> list[Tool]:
        return list(self.tools.values())

    def call(self, name: str, args: Any) -> ToolOutcome:
        out = self._call(name, args)
        self.calls.append((name, out.is_error))
        return out

    def _call(self, name: str, args: Any) -> ToolOutcome:
        tool = self.tools.get(name)
        if tool is None:
            return ToolOutcome(f"unknown tool '{name}'; tools: {', '.join(self.tools)}", True)
        if not isinstance(args, dict):
            return ToolOutcome(f"{name}: arguments must be a JSON object", True)
        missing = [k for k in tool.parameters.get("required", []) if not isinstance(args.get(k), str)]
        if missing:
            return ToolOutcome(f"{name}: missing string argument(s): {', '.join(missing)}", True)
        try:
            return tool.handler(args)
        except (ToolRefused, OSError, UnicodeDecodeError) as exc:
            return ToolOutcome(f"{name}: {exc}", True)


class Workspace:
    """A directory the agent may read and write, and nothing outside it."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()

    def resolve(self, rel: str) -> Path:
        """The real path of ``rel`` inside the workspace, or :class:`ToolRefused`."""
        if not rel or "\x00" in rel:
            raise ToolRefused("empty or invalid path")
        pure = PurePosixPath(rel.replace("\\", "/"))
        if pure.is_absolute() or rel.startswith("~"):
            raise ToolRefused(f"'{rel}': use a path relative to the workspace, not an absolute one")
        if ".." in pure.parts:
            raise ToolRefused(f"'{rel}': '..' is not allowed; stay inside the workspace")
        if pure.parts and pure.parts[0] == ".git":
            raise ToolRefused(f"'{rel}': the workspace's .git is off limits")
        path = (self.root / pure).resolve()
        if path != self.root and self.root not in path.parents:
            raise ToolRefused(f"'{rel}' leads outside the workspace (symlink?)")
        return path

    def read(self, rel: str) -> str:
        path = self.resolve(rel)
        if not path.is_file():
            raise ToolRefused(f"'{rel}' is not a file")
        text = path.read_text()
        if len(text) > READ_CAP:
            return text[:READ_CAP] + f"\n[... cut: {len(text) - READ_CAP} more characters]"
        return text

    def write(self, rel: str, content: str) -> str:
        path = self.resolve(rel)
        if path.is_dir():
            raise ToolRefused(f"'{rel}' is a directory")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        return f"wrote {rel} ({len(content.splitlines())} lines)"

    def edit(self, rel: str, old: str, new: str) -> str:
        text = self.read_full(rel)
        count = text.count(old) if old else 0
        if count != 1:
            where = "not found" if count == 0 else f"found {count} times; include more context"
            raise ToolRefused(f"old_string {where} in {rel}; nothing changed")
        self.resolve(rel).write_text(text.replace(old, new, 1))
        return f"edited {rel}"

    def read_full(self, rel: str) -> str:
        path = self.resolve(rel)
        if not path.is_file():
            raise ToolRefused(f"'{rel}' is not a file")
        return path.read_text()

    def listing(self) -> str:
        files = sorted(str(p.relative_to(self.root)) for p in self.root.rglob("*")
                       if p.is_file() and ".git" not in p.relative_to(self.root).parts
                       and "__pycache__" not in p.parts)
        return "\n".join(files[:200]) or "(empty)"


def run_command(argv: Sequence[str], cwd: Path, timeout_s: float,
                read: Callable[[str], str] | None = None) -> ToolOutcome:
    """Run a command in its own process group; kill the group on timeout; cap the output
    (``read``: what of the output the model gets)."""
    proc = subprocess.Popen(list(argv), cwd=cwd, env=config.child_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return ToolOutcome(f"check timed out after {timeout_s:.0f} s\n{_tail(out)}", True)
    return ToolOutcome(f"exit code {proc.returncode}\n{read(out) if read else _tail(out)}",
                       proc.returncode != 0)


def _tail(text: str) -> str:
    if len(text) <= CHECK_OUTPUT_CAP:
        return text
    return f"[... {len(text) - CHECK_OUTPUT_CAP} characters cut]\n" + text[-CHECK_OUTPUT_CAP:]


def coder_tools(root: Path, check_command: Sequence[str] = (), check_timeout_s: float = 300.0,
                profile_command: Sequence[str] = ()) -> ToolBox:
    """The coder's tools over ``root``; ``run_check`` and ``run_profile`` only when their
    command is given."""
    ws = Workspace(root)
    tools = [
        Tool("read_file", "Read a text file of the workspace (path relative to it).",
             schema(["path"], path="file path relative to the workspace, e.g. kernel.py"),
             lambda a: ToolOutcome(ws.read(a["path"]))),
        Tool("write_file", "Create or overwrite a workspace file with the full content given.",
             schema(["path", "content"], path="file path relative to the workspace",
                    content="the complete new file content"),
             lambda a: ToolOutcome(ws.write(a["path"], a["content"]))),
        Tool("edit_file", "Replace one exact occurrence of old_string by new_string in a file.",
             schema(["path", "old_string", "new_string"], path="file path relative to the workspace",
                    old_string="exact text to replace (must occur exactly once)",
                    new_string="replacement text"),
             lambda a: ToolOutcome(ws.edit(a["path"], a["old_string"], a["new_string"]))),
        Tool("list_files", "List the workspace's files.", schema([]),
             lambda a: ToolOutcome(ws.listing())),
    ]
    if check_command:
        tools.append(Tool(
            "run_check", "Compile the kernel and check correctness on the small visible "
            "workloads (no timing). Returns the exit code and the output.", schema([]),
            lambda a: run_command(check_command, ws.root.parent, check_timeout_s)))
    if profile_command:
        from forgekernel.agents.profile_digest import digest

        tools.append(Tool(
            "run_profile", "Time and profile kernel.py at the visible workloads where the run "
            "judges: per workload its time, roofline floor, %SOL, launches, registers, shared "
            "memory, spills and its kernels' time shares.", schema([]),
            lambda a: run_command(profile_command, ws.root.parent, check_timeout_s, digest)))
    tools.append(Tool("finish", "Call when the decision row is implemented in kernel.py.",
                      schema(["summary"], summary="one or two sentences: what you changed"),
                      lambda a: ToolOutcome("finished", done=True)))
    return ToolBox(tools)
