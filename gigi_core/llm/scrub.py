"""Removing keys from text: the whole key and every fragment of it of 8 characters or more.

An endpoint that echoes the ``Authorization`` header (in an error, a response header or
even a 200 completion) must not show anyone the key, nor most of it after a trim cut it:
any run of ``MIN_FRAGMENT`` or more characters that also occurs in a key is replaced.
Errors are scrubbed before they are trimmed.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterable, Mapping
from typing import Any

MIN_FRAGMENT = 8
REDACTED = "[redacted]"
#: Header names whose values are credentials (any name containing one of these words).
SECRET_HEADER_WORDS = ("authorization", "api-key", "apikey", "token", "secret", "cookie")
#: Fields of opaque provider blocks that are signed: changing them breaks the continuation.
SIGNED_FIELDS = frozenset(
    {"signature", "thoughtSignature", "thought_signature", "encrypted_content", "data"}
)
_MAX_REMEMBERED = 256
_MAX_DEPTH = 64


def secret_values(headers: Mapping[str, str]) -> tuple[str, ...]:
    """The credentials among request headers (``Bearer`` stripped), long enough to scrub."""
    found: list[str] = []
    for name, value in headers.items():
        lowered = name.lower()
        if not isinstance(value, str) or not any(w in lowered for w in SECRET_HEADER_WORDS):
            continue
        scheme, _, token = value.partition(" ")
        if token and scheme.lower() in ("bearer", "basic", "token"):
            value = token
        value = value.strip()
        if len(value) >= MIN_FRAGMENT and value not in found:
            found.append(value)
    return tuple(found)


class _Remembered:
    """The keys sent recently in this process, for the log filter (bounded, newest kept)."""

    def __init__(self) -> None:
        self._keys: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._grams: frozenset[str] = frozenset()
        self._lock = threading.Lock()

    def add(self, secrets: Iterable[str]) -> None:
        with self._lock:
            before = tuple(self._keys)
            for secret in secrets:
                if len(secret) < MIN_FRAGMENT:
                    continue
                self._keys[secret] = None
                self._keys.move_to_end(secret)
                while len(self._keys) > _MAX_REMEMBERED:
                    self._keys.popitem(last=False)
            if tuple(self._keys) != before:
                self._grams = _grams(self._keys)

    def grams(self) -> frozenset[str]:
        return self._grams


_remembered = _Remembered()


def remember_secrets(secrets: Iterable[str]) -> None:
    """Let the log filter know these values are keys (the owned client calls this per call)."""
    _remembered.add(secrets)


def scrub_remembered(text: str) -> str:
    """``scrub`` with every key the owned client sent recently (for log lines)."""
    return _scrub_grams(text, _remembered.grams())


def _grams(secrets: Iterable[str]) -> frozenset[str]:
    """Every ``MIN_FRAGMENT``-character piece of every key long enough to scrub."""
    return frozenset(
        secret[i : i + MIN_FRAGMENT]
        for secret in secrets
        if isinstance(secret, str) and len(secret) >= MIN_FRAGMENT
        for i in range(len(secret) - MIN_FRAGMENT + 1)
    )


def _spans(text: str, grams: frozenset[str]) -> list[tuple[int, int]]:
    """Where pieces of a key occur; any longer shared run is covered by its pieces."""
    spans: list[tuple[int, int]] = []
    if len(text) < 4 * len(grams):  # short text, many pieces: look at each window
        for start in range(len(text) - MIN_FRAGMENT + 1):
            if text[start : start + MIN_FRAGMENT] in grams:
                spans.append((start, start + MIN_FRAGMENT))
        return spans
    for gram in grams:  # long text: str.find per piece runs at C speed
        start = text.find(gram)
        while start != -1:
            spans.append((start, start + MIN_FRAGMENT))
            start = text.find(gram, start + 1)
    return spans


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every key and every ≥ 8-character fragment of one replaced."""
    if not text:
        return text
    return _scrub_grams(text, _grams(secrets))


def _scrub_grams(text: str, grams: frozenset[str]) -> str:
    if not grams or not text:
        return text
    spans = _spans(text, grams)
    if not spans:
        return text
    spans.sort()
    pieces: list[str] = []
    position = 0
    start, end = spans[0]
    for s, e in spans[1:]:
        if s <= end:  # overlapping or touching fragments are one redaction
            end = max(end, e)
            continue
        pieces.extend((text[position:start], REDACTED))
        position, start, end = end, s, e
    pieces.extend((text[position:start], REDACTED, text[end:]))
    return "".join(pieces)


def scrub_value(value: Any, secrets: Iterable[str]) -> Any:
    """Strings inside dicts and lists scrubbed; signed fields are left as they came."""
    return _scrub_value(value, _grams(secrets), 0)


def _scrub_value(value: Any, grams: frozenset[str], depth: int) -> Any:
    if isinstance(value, str):
        return _scrub_grams(value, grams)
    if depth >= _MAX_DEPTH or not grams:
        return value
    if isinstance(value, dict):
        return {
            k: v if k in SIGNED_FIELDS else _scrub_value(v, grams, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_scrub_value(v, grams, depth + 1) for v in value]
    return value


def holds_secret(text: str, secrets: Iterable[str]) -> bool:
    """True when ``text`` contains a key or a fragment of one."""
    return bool(text) and bool(_spans(text, _grams(secrets)))
