"""The standard-library sandbox launcher: ``python -I -S _boot.py OPTIONS -- ARGV``.

Standard library only (``os``, ``sys``, ``ctypes``, ``_signal``), never forgekernel. This
process, the *supervisor*, is a child subreaper (a ``setsid()`` + double-forked orphan of
the tree is re-parented to it), waits for its child, kills what is left of the tree and
exits as the command did (re-raising a fatal signal on itself).

``--mode sandbox`` (the ``stdlib`` mechanism): the supervisor unshares the user (unless
root), network, IPC, UTS and (``--unshare-pid``) PID namespaces and brings the loopback
up; its child unshares a mount namespace, builds a root on a tmpfs from the bind options
(read-only binds with every submount read-only), pivots into it, drops every capability,
sets no_new_privs and runs ARGV; with a PID namespace it stays as the namespace's init
(ARGV is PID 2), so when the command ends the kernel kills everything inside.
``--mode supervise`` (bubblewrap without a PID namespace): the child executes ARGV.
"""

from __future__ import annotations

import _signal
import ctypes
import os
import sys

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
MS_REC, MS_PRIVATE, MNT_DETACH = 16384, 1 << 18, 2
LOCKED = MS_NOSUID | MS_NODEV | MS_NOEXEC | 1024 | 2048 | (1 << 21)  # + noatime, nodiratime, relatime
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_CHILD_SUBREAPER = 1, 4, 24, 36
PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 47, 4
SIGKILL, SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGXFSZ = 9, 15, 2, 1, 13, 25
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "ppc64le": 203, "s390x": 217}
SETUP_FAILED = 125
"""Exit status when the sandbox could not be built (the reason is one line on stderr)."""
DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
OLD, NEW = "/oldroot", "/newroot"

_libc = ctypes.CDLL(None, use_errno=True)


class SetupError(Exception):
    """The sandbox could not be built (the message names the step)."""


def _call(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(err)} (errno {err})")


def _prctl(option: int, arg: int = 0) -> int:
    return _libc.prctl(option, ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0),
                       ctypes.c_ulong(0))


def _mount(src: str | None, dst: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    src_b, dst_b, type_b, data_b = (t.encode() if t is not None else None for t in (src, dst, fstype, data))
    ret = _libc.mount(src_b, dst_b, type_b, ctypes.c_ulong(flags), data_b)
    _call(ret, f"mount {src or fstype or ''} on {dst.removeprefix(NEW) or '/'}")


# -- the process tree ---------------------------------------------------------------

def children_map() -> dict[int, list[int]]:
    """Parent pid -> live child pids, from /proc (zombies left out)."""
    tree: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1 and fields[0] != b"Z":
            tree.setdefault(int(fields[1]), []).append(int(name))
    return tree


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (parents before children)."""
    tree, out, todo = children_map(), [], [root]
    while todo:
        kids = tree.get(todo.pop(), [])
        out.extend(kids)
        todo.extend(kids)
    return out


def kill_descendants(root: int, rounds: int = 100) -> None:
    """SIGKILL everything below ``root`` until nothing is left (new forks are caught by the
    next round: their parent died, so they are re-parented to the subreaper ``root``)."""
    for _ in range(rounds):
        pids = descendants(root)
        if not pids:
            return
        for pid in pids:
            _kill(pid, SIGKILL)
        _reap(block=False)


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def _reap(block: bool) -> None:
    try:
        while os.waitpid(-1, 0 if block else os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        return


# -- namespaces ---------------------------------------------------------------------

def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:  # one write(2), as /proc/self/uid_map wants
        fh.write(text)


def enter_namespaces(opts: dict) -> None:
    """Unshare everything but the mount namespace (the child makes that one)."""
    flags = CLONE_NEWNET * opts["net"] | CLONE_NEWIPC * opts["ipc"] | CLONE_NEWPID * opts["pid"]
    flags |= CLONE_NEWUTS
    uid, gid = os.geteuid(), os.getegid()
    if uid == 0 and _libc.unshare(flags) == 0:
        return  # root: no user namespace needed (works where user namespaces are disabled)
    _call(_libc.unshare(flags | CLONE_NEWUSER), "unshare (user, network, pid namespaces)")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
    _write("/proc/self/gid_map", f"{gid} {gid} 1\n")


def loopback_up() -> None:
    """Bring ``lo`` up in the new network namespace (SIOCGIFFLAGS / SIOCSIFFLAGS)."""
    fd = _libc.socket(2, 2, 0)  # AF_INET, SOCK_DGRAM
    if fd < 0:
        raise SetupError("socket for the loopback: " + os.strerror(ctypes.get_errno()))
    try:
        ifr = ctypes.create_string_buffer(b"lo", 40)
        _call(_libc.ioctl(fd, ctypes.c_ulong(0x8913), ifr), "get loopback flags")
        ifr[16] = ifr[16][0] | 1  # IFF_UP, low byte of ifr_flags
        _call(_libc.ioctl(fd, ctypes.c_ulong(0x8914), ifr), "bring the loopback up")
    finally:
        os.close(fd)


def drop_privileges(last_cap: int) -> None:
    """No capability left in any set, and none to be gained by exec."""
    for cap in range(last_cap + 1):
        _call(_prctl(PR_CAPBSET_DROP, cap), f"drop capability {cap} from the bounding set")
    _call(_prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL), "clear ambient capabilities")
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = (ctypes.c_uint32 * 6)()
    _call(_libc.capset(header, data), "drop capabilities")
    _call(_prctl(PR_SET_NO_NEW_PRIVS, 1), "set no_new_privs")


# -- the new root -------------------------------------------------------------------

def _pivot_root(new: str, old: str) -> None:
    nr = SYS_PIVOT_ROOT.get(os.uname().machine, -1)
    _call(_libc.syscall(ctypes.c_long(nr), new.encode(), old.encode()), f"pivot_root {new}")


def _mount_points_under(path: str) -> list[str]:
    with open(OLD + "/proc/self/mountinfo") as fh:
        points = [line.split(" ")[4].replace("\\040", " ").replace("\\011", "\t")
                  .replace("\\012", "\n").replace("\\134", "\\") for line in fh]
    return [p for p in points if p == path or p.startswith(path.rstrip("/") + "/")]


def _seal(path: str) -> None:
    """Make the mount at ``path`` and every mount below it read-only (keeping the flags the
    kernel locks in a user namespace: nosuid, nodev, noexec, atime)."""
    for point in _mount_points_under(path):
        try:
            flags = os.statvfs(point).f_flag & LOCKED
        except OSError as exc:
            raise SetupError(f"statvfs {point.removeprefix(NEW)}: {exc.strerror}") from None
        _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)


def _make_point(src: str, dst: str) -> None:
    os.makedirs(dst if os.path.isdir(src) else os.path.dirname(dst), exist_ok=True)
    if not os.path.isdir(src) and not os.path.lexists(dst):
        os.close(os.open(dst, os.O_CREAT | os.O_WRONLY, 0o644))


def _bind(src: str, dst: str, readonly: bool) -> None:
    host = OLD + src
    if not os.path.lexists(host):
        raise SetupError(f"cannot bind {src}: it does not exist")
    _make_point(host, NEW + dst)
    _mount(host, NEW + dst, None, MS_BIND | MS_REC)
    if readonly:
        _seal(NEW + dst)


def _tmpfs(dst: str, mode: str, extra: int = 0) -> None:
    os.makedirs(NEW + dst, exist_ok=True)
    _mount("tmpfs", NEW + dst, "tmpfs", MS_NOSUID | MS_NODEV | extra, f"mode={mode}")


def _devfs(dst: str) -> None:
    """A minimal /dev: the harmless character devices, the fd links and a private shm."""
    _tmpfs(dst, "0755")
    for node in DEV_NODES:
        if os.path.exists(f"{OLD}/dev/{node}"):
            _bind(f"/dev/{node}", f"{dst}/{node}", readonly=False)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{NEW}{dst}/{name}")
    _tmpfs(dst + "/shm", "1777")


def _apply(op: str, args: list[str], sealed: list[str]) -> None:
    if op in ("--ro-bind", "--bind", "--dev-bind"):
        _bind(args[0], args[1], readonly=op == "--ro-bind")
    elif op == "--tmpfs":
        _tmpfs(args[0], "1777")
    elif op == "--empty":
        _tmpfs(args[0], "0755", MS_RDONLY | MS_NOEXEC)
    elif op == "--proc":
        os.makedirs(NEW + args[0], exist_ok=True)
        _mount("proc", NEW + args[0], "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    elif op == "--dev":
        _devfs(args[0])
        sealed.append(args[0])
    elif op == "--symlink":
        os.makedirs(os.path.dirname(NEW + args[1]), exist_ok=True)
        os.symlink(args[0], NEW + args[1])
    else:
        raise SetupError(f"unknown sandbox operation {op}")


def build_root(ops: list[tuple[str, list[str]]], cwd: str) -> None:
    """In a new mount namespace: a tmpfs root holding only ``ops``, read-only, entered."""
    _call(_libc.unshare(CLONE_NEWNS), "unshare (mount namespace)")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    os.chdir("/tmp")
    os.mkdir("newroot")
    os.mkdir("oldroot")
    _pivot_root(".", "oldroot")  # the host's / is now /oldroot; its /tmp shows again
    os.chdir("/")
    _mount("tmpfs", NEW, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    sealed = ["/"]
    for op, args in ops:
        _apply(op, args, sealed)
    for path in sealed:  # the root tmpfs and /dev: no new files there
        point = NEW + path.rstrip("/")
        _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chdir(NEW)
    _pivot_root(".", ".")
    _call(_libc.umount2(b".", MNT_DETACH), "detach the host's root")
    os.chdir(cwd)


# -- the supervisor -----------------------------------------------------------------

_TAKES = {"--ro-bind": 2, "--bind": 2, "--dev-bind": 2, "--symlink": 2, "--tmpfs": 1,
          "--empty": 1, "--proc": 1, "--dev": 1}


def parse(argv: list[str]) -> dict:
    """OPTIONS -- ARGV into a dict (mode, pid, ipc, chdir, ops, argv)."""
    opts: dict = {"mode": "sandbox", "pid": False, "ipc": False, "net": True, "chdir": "/",
                  "ops": []}
    i = 0
    while i < len(argv) and argv[i] != "--":
        arg = argv[i]
        if arg in _TAKES:
            opts["ops"].append((arg, argv[i + 1:i + 1 + _TAKES[arg]]))
            i += 1 + _TAKES[arg]
        elif arg in ("--mode", "--chdir"):
            opts[arg[2:]] = argv[i + 1]
            i += 2
        elif arg in ("--unshare-pid", "--unshare-ipc", "--share-net"):
            opts[arg[-3:]] = arg != "--share-net"
            i += 1
        else:
            raise SetupError(f"unknown option {arg}")
    opts["argv"] = argv[i + 1:]
    if not opts["argv"]:
        raise SetupError("no command to run")
    return opts


def _exec(argv: list[str]) -> None:
    for sig in (SIGPIPE, SIGXFSZ):  # Python ignores these; the command gets the defaults
        _signal.signal(sig, _signal.SIG_DFL)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        sys.stderr.write(f"forge sandbox: cannot execute {argv[0]}: {exc.strerror}\n")
    os._exit(127)


def _wait_for(child: int) -> int:
    """Reap every child (orphans included) until ``child`` ends; its wait status."""
    for sig in (SIGTERM, SIGINT, SIGHUP):
        _signal.signal(sig, lambda signum, _frame: _kill(child, signum))  # pass it on
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            return status


def _close_fds(keep: int) -> None:
    """Close every fd from 3 up but ``keep``: inherited fds belong to the command alone."""
    os.closerange(3, keep)
    os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))


def _init(argv: list[str], status_w: int) -> None:
    """PID 1 of the namespace: run the command as PID 2, reap orphans, hand the command's
    wait status to the supervisor, exit (the kernel then kills whatever is left)."""
    _call(_prctl(PR_SET_DUMPABLE, 0), "make the init undumpable")
    worker = os.fork()
    if worker == 0:
        _exec(argv)
    _close_fds(status_w)
    status = _wait_for(worker)
    os.write(status_w, str(status).encode())
    os._exit(0)


def _child(opts: dict, last_cap: int, status_w: int) -> None:
    """The forked child: build the sandbox (mode sandbox) and run the command."""
    _prctl(PR_SET_PDEATHSIG, SIGKILL)
    if opts["mode"] == "sandbox":
        build_root(opts["ops"], opts["chdir"])
        drop_privileges(last_cap)
        if opts["pid"]:
            _init(opts["argv"], status_w)
    _exec(opts["argv"])


def _exit_like(status: int) -> None:
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        os._exit(code)
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _signal.signal(-code, _signal.SIG_DFL)
    _signal.pthread_sigmask(_signal.SIG_UNBLOCK, [-code])
    os.kill(os.getpid(), -code)
    os._exit(128 - code)


def supervise(child: int, status_r: int, pid_namespace: bool) -> None:
    """Wait for ``child`` (reaping orphans meanwhile), kill the rest of the tree, exit as
    the command did (its status comes from the namespace's init when there is one)."""
    _close_fds(status_r)
    status = _wait_for(child)
    if not pid_namespace:
        kill_descendants(os.getpid())
    _reap(block=True)
    reported = os.read(status_r, 32)
    _exit_like(int(reported) if reported else status)


def main(argv: list[str]) -> None:
    try:
        opts = parse(argv)
        _prctl(PR_SET_PDEATHSIG, SIGKILL)
        _call(_prctl(PR_SET_CHILD_SUBREAPER, 1), "become a child subreaper")
        with open("/proc/sys/kernel/cap_last_cap") as fh:
            last_cap = int(fh.read())
        if opts["mode"] == "sandbox":
            enter_namespaces(opts)
            if opts["net"]:
                loopback_up()
    except (SetupError, OSError) as exc:
        sys.stderr.write(f"forge sandbox: {exc}\n")
        os._exit(SETUP_FAILED)
    status_r, status_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(status_r)
        try:
            _child(opts, last_cap, status_w)
        except (SetupError, OSError) as exc:
            sys.stderr.write(f"forge sandbox: {exc}\n")
        os._exit(SETUP_FAILED)
    os.close(status_w)
    supervise(child, status_r, opts["pid"] and opts["mode"] == "sandbox")


if __name__ == "__main__":
    main(sys.argv[1:])
