"""A private OpenSSH server on 127.0.0.1 for the ssh delivery tests (real sshd, real keys).

Keys, configs and logs live in a temp dir: a host key, a user key authorised for the
current user, an sshd_config listening on a free loopback port, and an ssh_config whose
alias ``fk-loop`` reaches it with the host key pinned in its own known_hosts file.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SSHD = "/usr/sbin/sshd"
ALIAS = "fk-loop"


@dataclass
class LoopSshd:
    """A running private sshd and the client files that reach it."""

    root: Path
    port: int
    proc: subprocess.Popen
    ssh_config: Path
    log: Path

    def write_client_config(self, name: str, known_hosts: Path) -> Path:
        """An ssh_config for alias ``fk-loop`` trusting the host keys in ``known_hosts``."""
        cfg = self.root / name
        cfg.write_text(
            f"Host {ALIAS}\n  HostName 127.0.0.1\n  Port {self.port}\n  User {getpass.getuser()}\n"
            f"  IdentityFile {self.root / 'id_user'}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {known_hosts}\n  GlobalKnownHostsFile /dev/null\n"
            "  StrictHostKeyChecking yes\n  UpdateHostKeys no\n")
        return cfg

    def descendants(self) -> list[tuple[int, str]]:
        """(pid, cmdline) of every live process under the listening sshd."""
        children: dict[int, list[int]] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = (entry / "stat").read_text()
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry.name))
        out, todo = [], list(children.get(self.proc.pid, []))
        while todo:
            pid = todo.pop()
            with contextlib.suppress(OSError):
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                out.append((pid, cmd))
            todo.extend(children.get(pid, []))
        return out

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


def ensure_sshd() -> str:
    """'' when sshd and ssh are usable; else why not (after trying scripts/install_sshd.sh)."""
    if not (os.path.exists(SSHD) and shutil.which("ssh") and shutil.which("ssh-keygen")):
        subprocess.run(["bash", str(REPO / "scripts" / "install_sshd.sh")], timeout=600, check=False)
    if not os.path.exists(SSHD):
        return "OpenSSH server not installed (scripts/install_sshd.sh needs root and apt-get)"
    if not (shutil.which("ssh") and shutil.which("ssh-keygen")):
        return "OpenSSH client not installed"
    return ""


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fk-test", "-f", str(path)],
                   check=True, timeout=30, capture_output=True)
    return path.with_suffix(".pub").read_text().strip()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port: int, proc: subprocess.Popen, timeout_s: float = 15) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
        time.sleep(0.1)
    return False


def start_sshd(root: Path) -> LoopSshd:
    """Generate keys and configs in ``root`` and start ``sshd -D -e`` on a free port."""
    root.mkdir(parents=True, exist_ok=True)
    host_pub = _keygen(root / "host_ed25519")
    (root / "authorized_keys").write_text(_keygen(root / "id_user") + "\n")
    port = _free_port()
    cfg = root / "sshd_config"
    cfg.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {root / 'host_ed25519'}\n"
        f"AuthorizedKeysFile {root / 'authorized_keys'}\nPubkeyAuthentication yes\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
        "StrictModes no\nPidFile none\nPermitRootLogin prohibit-password\nMaxStartups 20\n")
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
    log = root / "sshd.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(cfg)], stdout=fh, stderr=fh,
                                stdin=subprocess.DEVNULL)
    server = LoopSshd(root, port, proc, cfg, log)
    if not _wait_listening(port, proc):
        server.stop()
        raise RuntimeError(f"sshd did not start: {log.read_text()[-2000:]}")
    known = root / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {host_pub}\n")
    server.ssh_config = server.write_client_config("ssh_config", known)
    return server


def serve_sshd(tmp_path_factory):
    """Fixture body: a private sshd for a module's tests (skipped, with why, when impossible).

    Use as ``_sshd = pytest.fixture(scope="module", name="sshd")(serve_sshd)``.
    """
    why = ensure_sshd()
    if why:
        pytest.skip(why)
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()
