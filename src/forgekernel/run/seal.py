"""The ledger's seal: every line signed with a key that lives outside the run dir.

A run dir made by this version carries an ``id`` in run.toml; its key (32 random bytes) is
kept in forge's state directory (``FK_STATE_DIR``, else ``$XDG_STATE_HOME/forgekernel``,
else ``~/.local/state/forgekernel``), never in the run dir, and never visible to candidate
code (the sandbox shows no home directory). Each ledger line carries ``sig``: an HMAC of
the previous line's signature and the line itself, so a line written by anything but the
engine, a changed line, or lines put in another order fail the check on resume. Run dirs
made before sealing (no ``id``) stay unsealed and resume as before.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from forgekernel.errors import ForgeError


class SealError(ForgeError, ValueError):
    """The run's ledger key is missing or unusable; one line for the user."""


def state_dir() -> Path:
    from forgekernel.config import state_home

    return state_home()


def _key_path(run_id: str) -> Path:
    if not run_id or not all(c.isalnum() or c in "-_" for c in run_id):
        raise SealError(f"run id {run_id!r} in run.toml is not a valid id")
    return state_dir() / "ledger-keys" / f"{run_id}.key"


def new_run_id() -> str:
    """A fresh run id, with its key created (0600) in the state directory."""
    run_id = secrets.token_hex(12)
    path = _key_path(run_id)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, secrets.token_bytes(32))
        os.fsync(fd)
    finally:
        os.close(fd)
    return run_id


def key_for(run_id: str | None, where: Path) -> bytes | None:
    """The run's key (None for a run dir made before sealing)."""
    if not run_id:
        return None
    path = _key_path(run_id)
    try:
        key = path.read_bytes()
    except FileNotFoundError:
        raise SealError(f"{where}: the key that signs this run's ledger is not on this machine "
                        f"({path}); a run dir is resumed where it was made") from None
    except OSError as exc:
        raise SealError(f"{where}: cannot read the ledger key {path} ({exc.strerror or exc})") from None
    if len(key) != 32:
        raise SealError(f"{path}: not a ledger key (32 bytes expected)")
    return key


def sign(key: bytes, previous: str, body: str) -> str:
    """The signature of a line ``body`` that follows the line signed ``previous``."""
    return hmac.new(key, (previous + "\n" + body).encode(), hashlib.sha256).hexdigest()


def check(key: bytes, previous: str, body: str, sig: str) -> bool:
    return hmac.compare_digest(sign(key, previous, body), sig)
