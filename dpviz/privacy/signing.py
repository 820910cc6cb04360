"""Signing the files dpviz writes with a key of this installation (HMAC-SHA256).

What a valid signature proves: the file was written by dpviz with this user's key on this
installation and has not been edited since, so its privacy claim (ε, secret or replayable
noise, a schema marked inferred, the batches it took in) is the one dpviz computed when it
wrote the file. What it does not prove: anything to another installation (its key differs,
so there the file reads as not verified; a shared secret key would be needed to check it);
anything against a person or program that can read the key file (they can sign any
file); that a file without a valid signature is false (only that this installation cannot
vouch for it). The signature is an HMAC of the file's public content under a key drawn
from the operating system's secret source, independent of any data: it releases nothing
about the records.

The key is ``signing.key`` (32 bytes, owner-only, mode 0o600) in ``$DPVIZ_CONFIG_DIR``, else
``$XDG_CONFIG_HOME/dpviz``, else ``~/.config/dpviz`` (created mode 0o700). It is created on
first use, atomically: two processes creating it at once end up with one key.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import tempfile
from pathlib import Path
from typing import Any

KEY_BYTES = 32
KEY_FILE = "signing.key"
ALGORITHM = "HMAC-SHA256"
# The value of a file's "claim" field when its privacy claim is not vouched for; dpviz
# never signs a file that carries a "claim" field, so it can never become verified.
NOT_VERIFIED = "not verified"
NOT_VERIFIED_NOTE = "privacy claim not verified by this installation"


def config_dir() -> Path:
    """dpviz's configuration folder: ``$DPVIZ_CONFIG_DIR``, ``$XDG_CONFIG_HOME/dpviz`` or
    ``~/.config/dpviz``."""
    if os.environ.get("DPVIZ_CONFIG_DIR"):
        return Path(os.environ["DPVIZ_CONFIG_DIR"])
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "dpviz"


def key_path() -> Path:
    return config_dir() / KEY_FILE


def _read_key(path: Path) -> bytes:
    """The key's 32 bytes; ``ValueError`` (one line, with the fix) for a damaged key file."""
    fix = "delete it and dpviz makes a new one (files signed with it then read as not verified)"
    try:
        mode = path.stat().st_mode
        key = path.read_bytes()
    except OSError as exc:
        raise ValueError(
            f"cannot read dpviz's signing key {str(path)!r} ({exc.strerror or exc}); "
            f"make it readable by its owner or {fix}"
        ) from None
    if len(key) != KEY_BYTES:
        raise ValueError(
            f"dpviz's signing key {str(path)!r} is {len(key)} bytes, not {KEY_BYTES}: it is "
            f"damaged; {fix}"
        )
    if os.name == "posix" and mode & 0o077:
        # Anyone who can read the key can sign any file as this installation.
        raise ValueError(
            f"dpviz's signing key {str(path)!r} is open to other users (mode "
            f"{mode & 0o777:o}); run chmod 600 on it, or {fix}"
        )
    return key


def _create_key(path: Path) -> None:
    """Write a fresh key to ``path`` unless one is there (atomic, owner-only)."""
    try:
        path.parent.mkdir(mode=0o700, parents=True)
        os.chmod(path.parent, 0o700)  # mkdir's mode is reduced by the umask
    except FileExistsError:
        pass
    # A private temporary file (mkstemp: mode 0o600), then a hard link: a link never
    # replaces a file, so of two processes creating the key at once one wins, the
    # other reads the winner's key, and no one reads a half-written key.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".signing.key.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(KEY_BYTES))
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)


def signing_key() -> bytes:
    """This installation's key, created on first use (``ValueError`` if it is damaged)."""
    path = key_path()
    if not path.exists():
        try:
            _create_key(path)
        except OSError as exc:
            raise ValueError(
                f"cannot create dpviz's signing key in {str(path.parent)!r} "
                f"({exc.strerror or exc}); set DPVIZ_CONFIG_DIR to a folder you can write"
            ) from None
    return _read_key(path)


def _key_id(key: bytes) -> str:
    """A public name of the key (a hash: reveals nothing of the key), to tell another
    installation's signature from an edit."""
    return hashlib.sha256(b"dpviz signing key id|" + key).hexdigest()[:16]


def canonical(document: dict[str, Any]) -> bytes:
    """What a signature covers: every field but ``signature``, keys sorted, compact ASCII
    JSON (the same bytes for the document as written and as read back; a NaN, which dpviz
    never writes, is kept so that such a file reads as edited rather than failing)."""
    body = {k: v for k, v in document.items() if k != "signature"}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode("ascii")


def signature(document: dict[str, Any]) -> dict[str, str]:
    """The ``signature`` field of ``document`` under this installation's key."""
    key = signing_key()
    mac = hmac.new(key, canonical(document), hashlib.sha256).hexdigest()
    return {"algorithm": ALGORITHM, "key_id": _key_id(key), "value": mac}


def unverified_reason(document: dict[str, Any]) -> str | None:
    """None when this installation's key signed ``document`` as it is and it makes no
    ``claim`` of its own; else why its privacy claim is not verified. Never creates a
    key; ``ValueError`` for a damaged one."""
    if "claim" in document:
        return "the file says so itself: it was saved from a file whose claim was not verified"
    signed = document.get("signature")
    if signed is None:
        return "the file is not signed"
    if (
        not isinstance(signed, dict)
        or signed.get("algorithm") != ALGORITHM
        or not all(isinstance(signed.get(k), str) for k in ("key_id", "value"))
    ):
        return "its signature is malformed"
    path = key_path()
    elsewhere = "it was signed by another installation's key"
    if not path.exists():
        return elsewhere + " (this one has none yet)"
    key = _read_key(path)
    if not hmac.compare_digest(signed["key_id"], _key_id(key)):
        return elsewhere
    mac = hmac.new(key, canonical(document), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(signed["value"], mac):
        return "it was edited after it was signed"
    return None
