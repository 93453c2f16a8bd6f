"""AES-256-GCM sealing of secrets with GIGI_SECRET_KEY; key ids make rotation possible."""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gigi_core.errors import SecretsError

KEY_HELP = (
    "set GIGI_SECRET_KEY to a 32-byte key in urlsafe base64; "
    "`gigi secrets generate-key` prints a new one"
)


@dataclass(frozen=True)
class Sealed:
    key_id: str
    nonce: bytes
    ciphertext: bytes
    fingerprint: str


def generate_key() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")


def _decode(raw: str) -> bytes:
    raw = raw.strip()
    try:
        key = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
    except ValueError as exc:
        raise SecretsError("GIGI_SECRET_KEY is not valid base64", hint=KEY_HELP) from exc
    if len(key) != 32:
        raise SecretsError(
            f"GIGI_SECRET_KEY decodes to {len(key)} bytes; AES-256 needs 32", hint=KEY_HELP
        )
    return key


def _key_id(key: bytes) -> str:
    return hashlib.sha256(b"gigi-key-id:" + key).hexdigest()[:12]


class Sealer:
    """Seals with the current key; opens with the current or any retired key."""

    def __init__(self, current: str | None, retired: list[str] | None = None) -> None:
        self._keys: dict[str, bytes] = {}
        self._ciphers: dict[str, Any] = {}  # AESGCM per key id, built once
        self._current: str | None = None
        if current:
            key = _decode(current)
            self._current = _key_id(key)
            self._keys[self._current] = key
        for old in retired or []:
            key = _decode(old)
            self._keys.setdefault(_key_id(key), key)

    @classmethod
    def from_env(cls) -> Sealer:
        retired = [k for k in os.environ.get("GIGI_SECRET_KEYS_RETIRED", "").split(",") if k]
        return cls(os.environ.get("GIGI_SECRET_KEY"), retired)

    @property
    def current_key_id(self) -> str | None:
        return self._current

    def require_key(self) -> str:
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

    def _aead(self, key_id: str) -> Any:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        aead = self._ciphers.get(key_id)
        if aead is None:
            aead = self._ciphers[key_id] = AESGCM(self._keys[key_id])
        return aead

    def open(self, sealed: Sealed, associated: str) -> str:
        from cryptography.exceptions import InvalidTag

        key = self._keys.get(sealed.key_id)
        if key is None:
            raise SecretsError(
                f"secret was sealed with key {sealed.key_id}, which is not configured",
                hint="add the old key to GIGI_SECRET_KEYS_RETIRED and run `gigi secrets rotate`",
            )
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
    """The sealer for agent-run state: the operator's key, else a local key file in GIGI_HOME.

    Run state (conversation, pending arguments) must survive restarts on the embedded default
    without asking the operator for a key; several processes share it by sharing GIGI_HOME or
    by setting GIGI_SECRET_KEY.
    """
    if operator.current_key_id is not None:
        return operator
    path = home / "state.key"
    try:
        return Sealer(path.read_text().strip())
    except FileNotFoundError:
        home.mkdir(parents=True, exist_ok=True)
        key = generate_key()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(key + "\n")
        return Sealer(key)
    except FileExistsError:  # pragma: no cover - another process won the race
        return Sealer(path.read_text().strip())
