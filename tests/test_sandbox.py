"""The sandbox for untrusted workers, tested with real processes on every mechanism present.

Each test runs ``python -I -c CODE`` inside a sandbox; CODE prints one JSON line with what it
saw. Mechanisms missing here are skipped with the reason probe() gives. Process-tree and
exit-status tests are in test_sandbox_processes.py.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from forgekernel import sandbox as sb
from forgekernel.sandbox.launch import Launch
from sandbox_support import MECHS, make_spec, run


@pytest.fixture(params=MECHS)
def mech(request) -> sb.Mechanism:
    return request.param


SECRETS = {"ANTHROPIC_API_KEY": "sk-ant-fake", "OPENAI_API_KEY": "sk-fake",
           "AWS_SECRET_ACCESS_KEY": "fake", "GITHUB_TOKEN": "ghp_fake",
           "SSH_AUTH_SOCK": "/tmp/ssh-agent.sock"}


def test_environment_holds_no_secret_and_points_into_scratch(mech, tmp_path, monkeypatch):
    for k, v in SECRETS.items():
        monkeypatch.setenv(k, v)
    home = tmp_path / "home"  # a home with a key, not given to the sandbox
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE")
    monkeypatch.setenv("HOME", str(home))
    spec = make_spec(tmp_path)
    seen = run(mech, spec, "import json, os; print(json.dumps({'env': dict(os.environ), "
               f"'key': os.path.exists({str(home / '.ssh/id_ed25519')!r})}}))")
    env = seen["env"]
    assert not set(SECRETS) & set(env)
    assert not any(v in env.values() for v in SECRETS.values())
    assert [k for k in env if not (sb.spec.env_allowed(k) or k in (*sb.spec.SCRATCH_DIRS, "PWD"))] == []
    scratch = os.path.realpath(spec.scratch)
    for name in ("HOME", "TMPDIR", "TRITON_CACHE_DIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
        assert env[name].startswith(scratch + "/"), name
    assert seen["key"] is False


def test_names_off_the_allow_list_are_refused(tmp_path):
    spec = sb.SandboxSpec(scratch=tmp_path, env={"PATH": "/usr/bin", "ANTHROPIC_API_KEY": "x"})
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        sb.sandbox_env(spec)
    assert sb.filter_env({"LC_ALL": "C", "AWS_ACCESS_KEY_ID": "x", "PATH": "/bin"}) == {
        "LC_ALL": "C", "PATH": "/bin"}


NET_CODE = """
import json, socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3).close()
    result = "connected"
except OSError as exc:
    result = type(exc).__name__
print(json.dumps({"connect": result, "ifaces": [n for _, n in socket.if_nameindex()]}))
"""


def test_no_network_even_to_the_host_loopback(mech, tmp_path):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        port = server.getsockname()[1]
        socket.create_connection(("127.0.0.1", port), timeout=3).close()  # reachable outside
        seen = run(mech, make_spec(tmp_path), NET_CODE, str(port))
    assert seen["connect"] == "ConnectionRefusedError"  # its own loopback: nobody listens
    assert seen["ifaces"] == ["lo"]


WRITE_CODE = """
import errno, json, os, sys
out = {}
for target in sys.argv[1:]:
    try:
        with open(target, "a") as fh:
            fh.write("x")
        out[target] = "written"
    except OSError as exc:
        out[target] = errno.errorcode[exc.errno]
print(json.dumps(out))
"""


def _fake_project(tmp_path: Path) -> dict[str, Path]:
    run_dir, ws = tmp_path / "runs" / "r1", tmp_path / "ws"
    (run_dir / "attempts").mkdir(parents=True)
    (run_dir / "ledger.jsonl").write_text("{}\n")
    (ws / ".git").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "local.env").write_text("ANTHROPIC_API_KEY=x\n")
    return {"run": run_dir, "ws": ws, "hidden": hidden}


def test_writes_outside_scratch_fail(mech, tmp_path):
    import forgekernel

    paths = _fake_project(tmp_path)
    site = next(p for p in sys.path if p.endswith("site-packages"))
    pkg = Path(forgekernel.__file__).parent
    spec = make_spec(tmp_path, readonly=(paths["run"], paths["ws"]))
    marker = f"forge-sandbox-{uuid.uuid4().hex}"
    targets = {
        "ledger": paths["run"] / "ledger.jsonl", "run dir": paths["run"] / "attempts" / "new.json",
        "git config": paths["ws"] / ".git" / "config", "site-packages": Path(site) / "evil.pth",
        "forgekernel": pkg / "judge" / "__init__.py", "usr": Path("/usr/evil"),
        "etc": Path("/etc/passwd"), "root": Path("/evil"),
    }
    seen = run(mech, spec, WRITE_CODE, *map(str, targets.values()),
               str(paths["hidden"] / "local.env"), str(spec.scratch / "ok.txt"), f"/tmp/{marker}")
    for what, target in targets.items():
        assert seen[str(target)] == "EROFS", what
    assert seen[str(paths["hidden"] / "local.env")] == "ENOENT"  # not given: not there at all
    assert seen[str(spec.scratch / "ok.txt")] == "written"
    assert (spec.scratch / "ok.txt").read_text() == "x"
    assert seen[f"/tmp/{marker}"] == "written"  # a private /tmp ...
    assert not Path(tempfile.gettempdir(), marker).exists()  # ... not the host's
    assert (paths["run"] / "ledger.jsonl").read_text() == "{}\n"


REMOUNT_CODE = """
import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
MS_REMOUNT, MS_BIND = 32, 4096
point = sys.argv[1]
while not os.path.ismount(point):
    point = os.path.dirname(point)
def remount():
    ok = libc.mount(None, point.encode(), None, MS_REMOUNT | MS_BIND, None) == 0
    return "remounted" if ok else errno.errorcode[ctypes.get_errno()]
out = {"direct": remount()}
if libc.unshare(0x10000000 | 0x00020000) == 0:  # a new user + mount namespace of its own
    out["nested"] = remount()
    try:
        open(os.path.join(sys.argv[1], "evil.pth"), "w").close()
        out["write"] = "written"
    except OSError as exc:
        out["write"] = errno.errorcode[exc.errno]
else:
    out["nested"] = "no userns: " + errno.errorcode[ctypes.get_errno()]
print(json.dumps(out))
"""


def test_no_way_back_to_a_writable_mount(mech, tmp_path):
    """No capability inside, and a nested user namespace inherits the mounts locked."""
    site = next(p for p in sys.path if p.endswith("site-packages"))
    seen = run(mech, make_spec(tmp_path), REMOUNT_CODE, site)
    assert seen["direct"] == "EPERM"
    assert seen["nested"] in ("EPERM", "no userns: EPERM", "no userns: ENOSPC"), seen
    assert seen.get("write", "EROFS") == "EROFS"


SYSCTL_CODE = """
import errno, json, os
out = {}
for path in ("/proc/sys/kernel/core_pattern", "/proc/sys/vm/drop_caches", "/proc/sysrq-trigger"):
    try:
        os.close(os.open(path, os.O_WRONLY))  # opened only, never written
        out[path] = "opened for writing"
    except OSError as exc:
        out[path] = errno.errorcode[exc.errno]
print(json.dumps(out))
"""


@pytest.mark.parametrize("pid_namespace", [True, False], ids=["pidns", "no-pidns"])
def test_host_kernel_settings_stay_read_only(mech, tmp_path, pid_namespace):
    """uid 0 needs no capability to write /proc/sys (core_pattern runs a program as the
    host's root): every /proc the sandbox gets has it read-only."""
    seen = run(mech, make_spec(tmp_path, pid_namespace=pid_namespace), SYSCTL_CODE)
    for path, result in seen.items():
        assert result in ("EROFS", "EACCES", "ENOENT"), (path, result)
    assert seen["/proc/sys/kernel/core_pattern"] != "ENOENT"


PROBE_MODULE = """
import json, sys
print(json.dumps({"path": sys.path, "flags_isolated": sys.flags.isolated}))
"""


def test_python_isolated_ignores_planted_code(mech, tmp_path):
    prog = tmp_path / "prog"
    prog.mkdir()
    (prog / "fk_probe_mod.py").write_text(PROBE_MODULE)
    spec = make_spec(tmp_path, readonly=(prog,))
    scratch = Path(os.path.realpath(spec.scratch))
    env = {**sb.sandbox_env(spec), "PYTHONPATH": str(scratch), "PYTHONSTARTUP": str(scratch / "s.py")}
    hit = scratch / "pwned"
    payload = f"open({str(hit)!r}, 'a').write('x')\n"
    user_site = Path(env["HOME"]) / ".local/lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    user_site.mkdir(parents=True)
    (user_site / "evil.pth").write_text("import os; " + payload)
    (scratch / "evil.pth").write_text("import os; " + payload)
    for name in ("sitecustomize.py", "usercustomize.py", "runpy.py", "json.py", "s.py"):
        (scratch / name).write_text(payload)
    allow = (*sb.ENV_ALLOW, "PYTHONPATH", "PYTHONSTARTUP")
    spec = make_spec(tmp_path, readonly=(prog,), env=env, env_allow=allow)
    argv = sb.python_argv("fk_probe_mod", python_path=[str(prog), *sys.path])
    out = subprocess.run(**sb.command(mech, spec, argv).popen_kwargs(), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert not hit.exists()
    assert seen["flags_isolated"] == 1
    assert str(prog) == seen["path"][0] and str(scratch) not in seen["path"]
    # control: the same plant runs in a Python that is not isolated
    plain = [sys.executable, "-c", "import sys"]
    subprocess.run(**sb.command(mech, spec, plain).popen_kwargs(), capture_output=True, timeout=60)
    assert hit.exists()


def test_inherited_fds_and_the_signed_channel_work(mech, tmp_path):
    from forgekernel.delivery.channel import verify_frames

    rfd, wfd = os.pipe()
    try:
        run(mech, make_spec(tmp_path), "import os, sys; os.write(int(sys.argv[1]), b'hello'); print('{}')",
            str(wfd), pass_fds=(wfd,))
        os.close(wfd)
        assert os.read(rfd, 100) == b"hello"
    finally:
        os.close(rfd)
    # the echo worker, as the local runner drives it: envelope on stdin, answer on an fd
    rfd, wfd = os.pipe()
    envelope = {"key": "k" * 64, "fd": wfd, "delivery": "cpu", "timing_label": "cpu-interpret",
                "payload": {"act": "echo", "ping": 1}}
    launch = sb.command(mech, make_spec(tmp_path), sb.python_argv("forgekernel.delivery.echo_worker"))
    with tempfile.TemporaryFile() as stdin:
        stdin.write(json.dumps(envelope).encode())
        stdin.seek(0)
        proc = subprocess.run(**launch.popen_kwargs(), stdin=stdin, capture_output=True,
                              pass_fds=(wfd,), timeout=60)
    os.close(wfd)
    with os.fdopen(rfd, "rb") as fh:
        data = fh.read()
    assert proc.returncode == 0, proc.stderr
    result, error = verify_frames(data, "k" * 64)
    assert error == "" and result["echo"]["ping"] == 1


def test_gpu_devices_are_bound(mech, tmp_path):
    """No GPU here: fake device files stand in for /dev/nvidia*; the plan binds them with
    device access, and the sandbox shows them at /dev."""
    dev, lib = tmp_path / "dev", tmp_path / "driver-lib"
    dev.mkdir()
    lib.mkdir()
    nodes = tuple(dev / n for n in ("nvidia0", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"))
    for n in nodes:
        n.write_text("")
    env = {**sb.filter_env(os.environ), "LD_LIBRARY_PATH": str(lib)}
    spec = make_spec(tmp_path, gpu=True, gpu_devices=nodes, env=env)
    plan = sb.mount_plan(spec)
    for n in nodes:
        assert sb.Mount("dev-bind", f"/dev/{n.name}", str(n)) in plan
    assert sb.Mount("ro-bind", "/sys", "/sys") in plan
    assert sb.Mount("ro-bind", str(lib), str(lib)) in plan
    argv = " ".join(sb.command(mech, spec, ["true"]).argv)
    assert f"--dev-bind {nodes[0]} /dev/nvidia0" in argv
    seen = run(mech, spec, "import json, os; print(json.dumps(sorted(os.listdir('/dev'))))")
    assert {"nvidia0", "nvidiactl", "nvidia-uvm", "null", "shm"} <= set(seen)
    cpu = sb.mount_plan(make_spec(tmp_path, gpu_devices=nodes))
    assert not [m for m in cpu if m.op == "dev-bind"]


def test_dev_shm_is_private_unless_shared(mech, tmp_path):
    name = f"fk-shm-{uuid.uuid4().hex}"
    host = Path("/dev/shm") / name
    host.write_text("outside")
    code = ("import json, os, sys; p = '/dev/shm/' + sys.argv[1]; "
            "print(json.dumps(open(p).read() if os.path.exists(p) else None))")
    try:
        assert run(mech, make_spec(tmp_path), code, name) is None
        assert run(mech, make_spec(tmp_path, share_shm=True), code, name) == "outside"
    finally:
        host.unlink()


def test_the_plan_hides_homes_and_refuses_bad_paths(tmp_path):
    plan = sb.mount_plan(make_spec(tmp_path))
    dsts = [m.dst for m in plan]
    assert "/home" not in dsts and "/run" not in dsts and "/var" not in dsts
    assert sb.Mount("tmpfs", "/tmp") in plan and sb.Mount("proc", "/proc") in plan
    host_proc = sb.mount_plan(make_spec(tmp_path, pid_namespace=False))
    assert sb.Mount("bind", "/proc", "/proc") in host_proc
    assert sb.Mount("ro-bind", "/proc/sys", "/proc/sys") in host_proc
    with pytest.raises(ValueError, match="do not exist"):
        sb.mount_plan(make_spec(tmp_path, readonly=(tmp_path / "nope",)))
    with pytest.raises(ValueError, match="cannot expose"):
        sb.mount_plan(make_spec(tmp_path, readonly=(Path("/proc/1"),)))
    with pytest.raises(ValueError, match="not visible"):
        sb.mount_plan(make_spec(tmp_path, cwd=tmp_path))


def test_a_missing_mechanism_says_why_in_one_line():
    det = sb.probe(bwrap="/nonexistent/bwrap", mechanisms=("bwrap",), refresh=True)
    assert det.mechanism is None
    assert det.reason == "no sandbox: bwrap not found at /nonexistent/bwrap"
    broken = sb.probe(bwrap="/bin/false", mechanisms=("bwrap",), refresh=True)
    assert broken.mechanism is None and "bwrap cannot build a sandbox here" in broken.reason
    assert "\n" not in broken.reason
    fallback = sb.probe(bwrap="/nonexistent/bwrap", refresh=True)
    if fallback.mechanism is not None:
        assert fallback.mechanism.name == "stdlib"
        assert fallback.passed_over == ("bwrap not found at /nonexistent/bwrap",)


def test_status_decoding():
    assert Launch((), mechanism="bwrap").status(139) == (None, 11)
    assert Launch((), mechanism="stdlib").status(-9) == (None, 9)
    assert Launch((), mechanism="stdlib").status(139) == (139, None)
