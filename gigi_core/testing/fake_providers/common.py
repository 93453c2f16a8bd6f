"""Format-neutral pieces of the fake servers: scripted tool calls and stable fake vectors."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

AUTO = "auto"


@dataclass(frozen=True)
class FakeToolCall:
    """A tool call a fake model makes.

    ``arguments``: a dict (encoded the format's way), a str sent verbatim (for
    malformed JSON) or None to leave the arguments field out altogether.
    ``id``: ``"auto"`` makes one, None omits it, ``""`` sends it empty.
    """

    name: str
    arguments: dict[str, Any] | str | None = field(default_factory=dict)
    id: str | None = AUTO

    def arguments_text(self) -> str | None:
        """The arguments as a JSON string (formats that send strings); None when left out."""
        if self.arguments is None or isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)

    def arguments_object(self) -> Any:
        """The arguments as an object (formats that send objects); raw strings pass through."""
        return self.arguments

    def call_id(self, index: int, prefix: str = "call_fake_") -> str | None:
        """The id to send for the ``index``-th call in a reply."""
        return f"{prefix}{index}" if self.id == AUTO else self.id


def fake_vector(text: str, dimension: int) -> list[float]:
    """A deterministic unit-ish vector for ``text``: equal texts embed equally."""
    values: list[float] = []
    counter = 0
    while len(values) < dimension:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        values.extend((b - 127.5) / 127.5 for b in digest)
        counter += 1
    vector = values[:dimension]
    norm = sum(v * v for v in vector) ** 0.5 or 1.0
    return [round(v / norm, 6) for v in vector]


class RecordingSleep:
    """An async ``sleep`` that records the waits instead of waiting (pass as ``sleep=``)."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
