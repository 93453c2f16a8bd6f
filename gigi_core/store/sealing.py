"""AES-256-GCM sealing of secrets with GIGI_SECRET_KEY; key ids make rotation possible.

On the embedded default (SQLite under GIGI_HOME) no key has to be set: the key lives in a
file beside the database, ``GIGI_HOME/state.key`` (mode 0600), created the first time
something is sealed. The same file has always sealed agent-run state, so one key serves
both. With ``GIGI_SECRET_KEY`` set the file is not used for new secrets (it still opens
what it sealed, so ``gigi secrets rotate`` can re-seal them); on PostgreSQL there is no
file at all: every process must share the key, so the operator sets it.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import secrets
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gigi_core.errors import SecretsError

log = logging.getLogger(__name__)

KEY_FILE = "state.key"  # the name predates secrets: it first sealed agent-run state only
KEY_HELP = (
    "set GIGI_SECRET_KEY to a 32-byte key in urlsafe base64; "
    "`gigi secrets generate-key` prints a new one"
)


@dataclass(frozen=True)
class Sealed:
    """A sealed secret as a row stores it; rebuild one from the row's columns to open it
    (the fingerprint is only for comparing secrets, ``open`` does not read it)."""

    key_id: str
    nonce: bytes
    ciphertext: bytes
    fingerprint: str = ""


class NonceCounter:
    """Unique 96-bit AES-GCM nonces for batches: a random 64-bit prefix, then a counter.

    Within one prefix a nonce can never repeat: the counter only goes up (under a lock),
    and a new prefix is drawn before it would wrap (2**32 nonces) and in a forked child
    (which would otherwise continue its parent's counter). Two prefixes (another process
    or sealer with the same key) collide with probability about P**2 / 2**65 for P
    prefixes ever drawn; ``seal``'s random nonces (n**2 / 2**97 for n messages) are the
    weaker of the two once a prefix covers more than 2**16 messages.
    """

    SPAN = 1 << 32

    def __init__(self) -> None:
        self._reset()
        _counters.add(self)

    def _reset(self) -> None:
        """A fresh lock and no prefix: the next take draws one (also in a forked child,
        whose copied lock may be held by a thread that does not exist there)."""
        self._lock = threading.Lock()
        self._pid = -1
        self._prefix = b""
        self._next = self.SPAN

    def take(self, n: int) -> list[bytes]:
        if n > self.SPAN:
            raise ValueError(f"at most {self.SPAN} nonces at a time, not {n}")
        with self._lock:
            if self._pid != os.getpid() or self._next + n > self.SPAN:
                self._pid, self._prefix, self._next = os.getpid(), os.urandom(8), 0
            start, self._next = self._next, self._next + n
            prefix = self._prefix
        return [prefix + i.to_bytes(4, "big") for i in range(start, start + n)]


_counters: weakref.WeakSet[NonceCounter] = weakref.WeakSet()
os.register_at_fork(after_in_child=lambda: [c._reset() for c in list(_counters)])


def generate_key() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")


def _decode(raw: str, source: str = "GIGI_SECRET_KEY") -> bytes:
    raw = raw.strip()
    try:
        key = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
    except ValueError as exc:
        raise SecretsError(f"{source} is not valid base64", hint=KEY_HELP) from exc
    if len(key) != 32:
        raise SecretsError(f"{source} decodes to {len(key)} bytes; AES-256 needs 32", hint=KEY_HELP)
    return key


def _key_id(key: bytes) -> str:
    return hashlib.sha256(b"gigi-key-id:" + key).hexdigest()[:12]


def key_id_of(raw: str) -> str:
    """The id a key's sealed rows record (what error messages and warnings name)."""
    return _key_id(_decode(raw))


def is_embedded(database_url: str | None) -> bool:
    """The embedded default: no database URL (SQLite under GIGI_HOME), or any SQLite file."""
    return database_url is None or database_url.startswith("sqlite")


def read_or_create_key_file(path: Path) -> str:
    """The key in ``path``; a new one (mode 0600, said once in the log) when it is missing."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise SecretsError(f"cannot read the key file {path}: {exc.strerror or exc}") from None
    key = generate_key()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process won the race: use its key
        return path.read_text().strip()
    except OSError as exc:
        raise SecretsError(
            f"cannot create the key file {path}: {exc.strerror or exc}", hint=KEY_HELP
        ) from None
    with os.fdopen(fd, "w") as handle:
        handle.write(key + "\n")
    log.warning(
        "created the key file %s (mode 0600): it seals secrets and agent-run state in this "
        "folder. Anyone who can read it and the database can open the secrets, so back it up "
        "apart from the database, or set GIGI_SECRET_KEY to keep the key elsewhere "
        "(docs/installing.md, 'The secret key')",
        path,
    )
    return key


class Sealer:
    """Seals with the current key; opens with the current or any retired key.

    ``key_file`` (the embedded default) supplies the current key when none is given: it is
    read when it exists and created the first time something is sealed.
    """

    def __init__(
        self,
        current: str | None,
        retired: list[str] | None = None,
        *,
        key_file: Path | None = None,
    ) -> None:
        self._keys: dict[str, bytes] = {}
        self._ciphers: dict[str, Any] = {}  # AESGCM per key id, built once
        self._current: str | None = None
        self._key_file = key_file if current is None else None
        self.source = "GIGI_SECRET_KEY" if current else None
        if current:
            key = _decode(current)
            self._current = _key_id(key)
            self._keys[self._current] = key
        for old in retired or []:
            key = _decode(old, "GIGI_SECRET_KEYS_RETIRED")
            self._keys.setdefault(_key_id(key), key)
        self._load_key_file(create=False)
        self._nonces = NonceCounter()

    @classmethod
    def from_env(cls, *, home: Path | None = None, database_url: str | None = None) -> Sealer:
        """GIGI_SECRET_KEY (and GIGI_SECRET_KEYS_RETIRED); on the embedded default, when the
        key is unset, the key file under ``home``. Without ``home`` there is no key file."""
        retired = [k for k in os.environ.get("GIGI_SECRET_KEYS_RETIRED", "").split(",") if k]
        current = os.environ.get("GIGI_SECRET_KEY") or None
        key_file = Path(home) / KEY_FILE if home is not None and is_embedded(database_url) else None
        if current and key_file is not None and key_file.is_file():
            retired.append(key_file.read_text().strip())  # what it sealed still opens
        return cls(current, retired, key_file=key_file)

    def _load_key_file(self, *, create: bool) -> None:
        if self._key_file is None or self._current is not None:
            return
        if not create and not self._key_file.is_file():
            return
        key = _decode(read_or_create_key_file(self._key_file), str(self._key_file))
        self._current = _key_id(key)
        self._keys[self._current] = key
        self.source = str(self._key_file)

    @property
    def current_key_id(self) -> str | None:
        self._load_key_file(create=False)  # another process (or the state sealer) made it
        return self._current

    @property
    def key_ids(self) -> frozenset[str]:
        """Every key id this sealer can open: the current one and the retired ones."""
        self._load_key_file(create=False)
        return frozenset(self._keys)

    @property
    def key_file(self) -> Path | None:
        return self._key_file

    def require_key(self) -> str:
        self._load_key_file(create=True)
        if self._current is None:
            raise SecretsError("no secret key is set, so secrets cannot be stored", hint=KEY_HELP)
        return self._current

    def keyed_hash(self, data: bytes) -> str:
        """HMAC-SHA256 under a subkey of the current key: comparable, not guessable."""
        import hmac

        key_id = self.require_key()
        subkey = hashlib.sha256(b"gigi-keyed-hash:" + self._keys[key_id]).digest()
        return hmac.new(subkey, data, hashlib.sha256).hexdigest()

    def seal(self, secret: str, associated: str, *, fingerprint: bool = True) -> Sealed:
        """``fingerprint=False`` for data nobody compares (run state): it skips an HMAC."""
        key_id = self.require_key()
        nonce = secrets.token_bytes(12)
        ct = self._aead(key_id).encrypt(nonce, secret.encode(), associated.encode())
        mark = self.keyed_hash(secret.encode())[:16] if fingerprint else ""
        return Sealed(key_id, nonce, ct, mark)

    def seal_many(
        self, items: Sequence[tuple[str, str]], *, fingerprint: bool = False
    ) -> list[Sealed]:
        """``seal`` for a batch of ``(secret, associated)``: one key check, one nonce range.

        The nonces come from ``NonceCounter`` (a random 64-bit prefix and a 32-bit counter),
        not from one ``os.urandom`` call each: the same AES-GCM, at a third of the cost.
        """
        key_id = self.require_key()
        aead = self._aead(key_id)
        nonces = self._nonces.take(len(items))
        out = []
        for (secret, associated), nonce in zip(items, nonces, strict=True):
            data = secret.encode()
            mark = self.keyed_hash(data)[:16] if fingerprint else ""
            out.append(Sealed(key_id, nonce, aead.encrypt(nonce, data, associated.encode()), mark))
        return out

    def _aead(self, key_id: str) -> Any:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        aead = self._ciphers.get(key_id)
        if aead is None:
            aead = self._ciphers[key_id] = AESGCM(self._keys[key_id])
        return aead

    def missing_key(self, key_id: str) -> SecretsError:
        """The error for a row sealed with a key this sealer lacks: which one, and how to add it."""
        if self.current_key_id is None:
            where = f" or restore the key file {self._key_file}" if self._key_file else ""
            return SecretsError(
                f"this secret was sealed with key {key_id}, but no secret key is configured",
                hint=f"set GIGI_SECRET_KEY to the key whose id is {key_id} (the one set when "
                f"the secret was stored){where}",
            )
        return SecretsError(
            f"this secret was sealed with key {key_id}, which is not configured "
            f"(the current key is {self._current}, from {self.source})",
            hint=f"set GIGI_SECRET_KEY to the key whose id is {key_id}; or, if the key was "
            "changed on purpose, add the old one to GIGI_SECRET_KEYS_RETIRED and run "
            "`gigi secrets rotate`",
        )

    def open(self, sealed: Sealed, associated: str) -> str:
        from cryptography.exceptions import InvalidTag

        self._load_key_file(create=False)
        if self._keys.get(sealed.key_id) is None:
            raise self.missing_key(sealed.key_id)
        try:
            plain = self._aead(sealed.key_id).decrypt(
                sealed.nonce, sealed.ciphertext, associated.encode()
            )
        except InvalidTag as exc:
            raise SecretsError(
                "a sealed secret failed its integrity check (tampered or moved row)"
            ) from exc
        return plain.decode()


def state_sealer(home: Path, operator: Sealer) -> Sealer:
    """The sealer for agent-run state: the operator's key, else the key file in GIGI_HOME.

    Run state (conversation, pending arguments) must survive restarts on the embedded default
    without asking the operator for a key; several processes share it by sharing GIGI_HOME or
    by setting GIGI_SECRET_KEY. On the embedded default the operator's sealer reads the same
    file, so secrets and run state share one key.
    """
    if operator.current_key_id is not None:
        return operator
    sealer = Sealer(None, key_file=home / KEY_FILE)
    sealer.require_key()  # run state is sealed at once: create the file now if need be
    return sealer
