"""Run one untrusted command (a judge worker) in a sandbox.

Inside, the command sees only allow-listed environment variables, has no network (its own
namespace with loopback only), sees the host's system directories and the paths it is
given read-only and one scratch directory writable, runs ``python -I`` with a fixed
``sys.path``, and its whole process tree is killed at the end. See docs/sandbox.md.

    mech = detect()                       # bubblewrap, else the stdlib launcher, else None
    spec = SandboxSpec(scratch=tmp, readonly=(*python_paths(), task_dir, staged),
                       env=filter_env(os.environ))
    launch = command(mech, spec, python_argv("forgekernel.judge.worker"))
    proc = subprocess.Popen(**launch.popen_kwargs(), pass_fds=(wfd,), stdin=..., ...)
    ...
    kill_tree(proc); proc.wait()
"""

from forgekernel.sandbox.detect import Detection, describe, detect, probe
from forgekernel.sandbox.launch import Launch, Mechanism, command
from forgekernel.sandbox.plan import Mount, mount_plan
from forgekernel.sandbox.spec import (
    ENV_ALLOW,
    SandboxSpec,
    filter_env,
    python_argv,
    python_paths,
    sandbox_env,
)
from forgekernel.sandbox.tree import kill_tree

__all__ = [
    "ENV_ALLOW", "Detection", "Launch", "Mechanism", "Mount", "SandboxSpec", "command",
    "describe", "detect", "filter_env", "kill_tree", "mount_plan", "probe", "python_argv",
    "python_paths", "sandbox_env",
]
