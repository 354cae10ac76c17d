"""Static checks of a candidate's sources, before anything runs (docs/judge.md threat model A2, A3, C16-C18).

Reads every ``.py`` file of the staged candidate with :mod:`ast`. It resolves import
aliases (``import torch.nn.functional as F`` makes ``F.rms_norm`` read as
``torch.nn.functional.rms_norm``) and flags:

* calls the task's ``[policy] forbid`` names (and their ``torch.ops.aten`` twins); an entry
  ``torch.Tensor.X`` also forbids the method form ``x.X(...)``;
* what is always forbidden: compilers standing in for a kernel (``torch.compile``,
  ``torch._dynamo``, ``torch._inductor``), importing the judge or the reference, and the
  escape hatches a cheat needs: introspection (``gc``, ``inspect``, frames, dunder
  attributes), raw memory (``ctypes``), threads and processes, dynamic code (``eval``,
  ``exec``, ``__import__``, ``importlib``, non-literal ``getattr``), writing module
  attributes (monkeypatching timers or the harness), tensor subclasses with
  ``__torch_function__`` (lazy outputs), file descriptors and the environment.

It also lists the candidate's own kernels: ``@triton.jit`` (or ``@jit``) functions and
CUDA ``__global__`` functions in any source file; the runtime launch audit needs them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

FORBIDDEN_MODULES = {
    "gc": "introspects the judge's objects", "inspect": "introspects the judge's frames",
    "ctypes": "gives raw memory access", "threading": "runs work outside the timed call",
    "_thread": "runs work outside the timed call", "multiprocessing": "starts processes",
    "concurrent": "runs work outside the timed call", "subprocess": "starts processes",
    "signal": "tampers with signals", "socket": "opens network connections",
    "importlib": "imports code dynamically", "builtins": "patches builtins",
    "forgekernel": "imports the judge", "reference": "imports the reference implementation",
    "runpy": "runs code dynamically", "code": "runs code dynamically",
    "codeop": "compiles code dynamically", "marshal": "loads code objects",
    "pty": "starts processes", "pkgutil": "resolves names dynamically",
}
"""Modules a candidate may not import at all, with why."""

FORBIDDEN_NAMES = {
    "torch.compile": "hands the operator to a compiler", "torch._dynamo": "uses the compiler",
    "torch._inductor": "uses the compiler", "torch._C": "reaches into torch internals",
    "torch._VF": "reaches into torch internals",
    "torch.set_float32_matmul_precision": "changes global precision (tf32 downgrade)",
    "sys._getframe": "reads the judge's frames", "sys._current_frames": "reads the judge's frames",
    "sys.modules": "reaches the judge's modules", "sys.settrace": "traces the judge",
    "sys.setprofile": "traces the judge", "sys.meta_path": "hooks imports",
    "sys.path_hooks": "hooks imports", "sys.stdin": "reads the judge's input",
    "os.system": "starts processes", "os.popen": "starts processes", "os.fork": "forks",
    "os.forkpty": "forks", "os.kill": "signals processes", "os.killpg": "signals processes",
    "os.environ": "reads or changes the environment", "os.putenv": "changes the environment",
    "os.unsetenv": "changes the environment", "os.write": "writes file descriptors",
    "os.close": "closes file descriptors", "os.closerange": "closes file descriptors",
    "os.dup": "duplicates file descriptors", "os.dup2": "duplicates file descriptors",
    "os.open": "opens file descriptors", "os.fdopen": "opens file descriptors",
    "os.pipe": "opens pipes", "os.execv": "replaces the process",
    "operator.attrgetter": "reaches attributes by computed names",
    "operator.methodcaller": "calls methods by computed names",
}
FORBIDDEN_PREFIXES = ("os.exec", "os.spawn", "os.posix_spawn")
ALLOWED_NAMES = ("torch._inductor.runtime.triton_helpers",)
"""Inside a forbidden namespace but allowed: Inductor's device-side Triton helper functions
(maximum, welford, ...), which generated kernels call; they compile nothing."""
FORBIDDEN_BUILTINS = {"eval", "exec", "compile", "__import__", "globals", "locals", "vars",
                      "breakpoint", "setattr", "delattr"}
ALLOWED_DUNDERS = {"__init__", "__name__", "__file__", "__doc__", "__len__", "__getitem__",
                   "__setitem__", "__version__", "__enter__", "__exit__", "__repr__", "__str__",
                   "__eq__", "__hash__", "__iter__", "__next__", "__call__", "__qualname__",
                   "__module__", "__post_init__", "__contains__", "__bool__"}
FRAME_ATTRS = {"f_back", "f_globals", "f_locals", "f_code", "f_builtins", "gi_frame", "tb_frame",
               "cr_frame", "ag_frame", "tb_next"}
TENSOR_CLASSES = {"torch.Tensor", "torch._C.TensorBase", "torch._C._TensorBase", "torch.nn.Parameter"}
FORBIDDEN_STRINGS = ("reference.py", "/proc/", "forgekernel")
CUDA_KERNEL = re.compile(r"__global__\s+[\w:<>\s*]*?\b(\w+)\s*\(")
LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\([^)]*\)")


@dataclass
class PolicyResult:
    """What the static check found: a syntax error, policy violations, own kernel names."""

    syntax_error: str | None = None
    violations: list[str] = field(default_factory=list)
    own_kernels: list[str] = field(default_factory=list)


def check_sources(root: Path, forbid: tuple[str, ...] | list[str]) -> PolicyResult:
    """Check every source file under ``root`` (a staged candidate dir)."""
    result = PolicyResult()
    own: set[str] = set()
    for path in sorted(root.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(root).as_posix()
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        own.update(CUDA_KERNEL.findall(LAUNCH_BOUNDS.sub(" ", text)))
        if path.suffix != ".py":
            continue
        try:
            tree = ast.parse(text, filename=rel)
        except SyntaxError as exc:
            result.syntax_error = f"{rel}:{exc.lineno}: {exc.msg}"
            return result
        visitor = _Visitor(rel, tuple(forbid))
        visitor.visit(tree)
        result.violations.extend(visitor.violations)
        own.update(visitor.kernels)
    result.own_kernels = sorted(own)
    return result


def _method_forbids(forbid: tuple[str, ...]) -> dict[str, str]:
    return {f.rsplit(".", 1)[1]: f for f in forbid if f.startswith("torch.Tensor.")}


class _Visitor(ast.NodeVisitor):
    """Walks one module, resolving import aliases, collecting violations and kernels."""

    def __init__(self, rel: str, forbid: tuple[str, ...]) -> None:
        self.rel, self.violations, self.kernels = rel, [], set()
        self.aliases: dict[str, str] = {}
        aten = tuple(f"torch.ops.aten.{f.rsplit('.', 1)[1]}" for f in forbid if "." in f)
        self.forbid = {**{f: "the task forbids it" for f in (*forbid, *aten)}, **FORBIDDEN_NAMES}
        self.methods = _method_forbids(forbid)

    def flag(self, node: ast.AST, what: str) -> None:
        line = f"{self.rel}:{getattr(node, 'lineno', 0)}: {what}"
        if line not in self.violations:
            self.violations.append(line)

    # -- names
    def resolve(self, node: ast.AST) -> str | None:
        """Dotted name of a Name/Attribute chain with the import alias expanded."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        root = self.aliases.get(node.id)
        if root is None:
            return None
        return ".".join([root, *reversed(parts)])

    def check_name(self, node: ast.AST, name: str) -> None:
        if any(name == ok or name.startswith(ok + ".") for ok in ALLOWED_NAMES):
            return
        for bad, why in self.forbid.items():
            if name == bad or name.startswith(bad + "."):
                self.flag(node, f"uses {bad} ({why})")
                return
        if name.startswith(FORBIDDEN_PREFIXES):
            self.flag(node, f"uses {name} (starts processes)")
        top = name.split(".")[0]
        if top in FORBIDDEN_MODULES:
            self.flag(node, f"uses {top} ({FORBIDDEN_MODULES[top]})")

    # -- imports
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.check_name(node, alias.name)
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                top = alias.name.split(".")[0]
                self.aliases[top] = top

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            mod = node.module or ""
            if mod.split(".")[0] in FORBIDDEN_MODULES:
                self.check_name(node, mod)
            for alias in node.names:
                if alias.name == "reference":
                    self.check_name(node, "reference")
            return
        base = node.module or ""
        if not all(f"{base}.{a.name}" in ALLOWED_NAMES for a in node.names):
            self.check_name(node, base)
        for alias in node.names:
            full = f"{base}.{alias.name}"
            self.check_name(node, full)
            self.aliases[alias.asname or alias.name] = full

    # -- uses
    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = self.resolve(node)
        if name is not None:
            self.check_name(node, name)
        elif node.attr in self.methods:
            self.flag(node, f"calls the method .{node.attr}() ({self.methods[node.attr]} is forbidden)")
        attr = node.attr
        if attr.startswith("__") and attr.endswith("__") and attr not in ALLOWED_DUNDERS:
            self.flag(node, f"accesses {attr} (introspection is not allowed in a kernel)")
        if attr in FRAME_ATTRS:
            self.flag(node, f"accesses frame attribute {attr}")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in FORBIDDEN_BUILTINS and node.id not in self.aliases:
            self.flag(node, f"uses {node.id}() (dynamic code or attribute tampering)")
        elif node.id == "__builtins__":
            self.flag(node, "uses __builtins__")
        elif node.id in self.aliases:
            self.check_name(node, self.aliases[node.id])

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id == "getattr" and "getattr" not in self.aliases:
            if len(node.args) < 2 or not isinstance(node.args[1], ast.Constant):
                self.flag(node, "uses getattr() with a computed name")
            else:
                base = self.resolve(node.args[0])
                if base is not None:
                    self.check_name(node, f"{base}.{node.args[1].value}")
                elif str(node.args[1].value) in self.methods:
                    self.flag(node, f"calls the method {node.args[1].value} through getattr")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            for bad in FORBIDDEN_STRINGS:
                if bad in node.value:
                    self.flag(node, f"mentions {bad!r} (the judge, the reference or /proc)")

    # -- writes
    def _check_target(self, target: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._check_target(elt)
            return
        if isinstance(target, (ast.Attribute, ast.Subscript)):
            root = target
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name) and root.id in self.aliases:
                self.flag(target, f"assigns into module {self.aliases[root.id]} (monkeypatching "
                                  "libraries, timers or the harness is not allowed)")

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._check_target(t)
        self.generic_visit(node)
        target = self.resolve(node.value)
        if target is not None and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.aliases[node.targets[0].id] = target  # F = torch.nn.functional

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_target(node.target)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_target(node.target)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for t in node.targets:
            self._check_target(t)
        self.generic_visit(node)

    # -- definitions
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            name = self.resolve(base)
            if name in TENSOR_CLASSES:
                self.flag(node, f"subclasses {name} (tensor subclasses and proxies are not "
                                "accepted as outputs)")
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name in ("__torch_function__", "__torch_dispatch__", "__getattr__", "__getattribute__"):
            self.flag(node, f"defines {node.name} (lazy or proxy objects)")
        for deco in node.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            name = self.resolve(target) or (target.id if isinstance(target, ast.Name) else "")
            last = name.rsplit(".", 1)[-1]
            if last == "jit" or (last == "kernel" and name.startswith("cutlass")):
                self.kernels.add(node.name)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef
