"""Files a plugin posts with ``kernel.outbox``: bytes with a name and a type, capped.

Caps hold on every surface (Discord's smallest upload limit is 10 MB a message): a post
over them is refused when it is built, naming the file and the limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gigi_core.errors import GigiError

MAX_FILES = 4
MAX_FILE_BYTES = 8 * 1024 * 1024
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class FileRefused(GigiError):
    """An outbound file breaks a cap or has a name no surface should write."""


@dataclass(frozen=True)
class OutboundFile:
    """One file: ``name`` is a plain file name (``picture.png``), ``data`` its bytes."""

    name: str
    data: bytes = field(repr=False)
    content_type: str = "application/octet-stream"

    def __post_init__(self) -> None:
        if not _NAME.match(self.name) or ".." in self.name:
            raise FileRefused(
                f"file name {self.name!r} is not a plain file name",
                hint="use letters, digits, '.', '-' and '_' only, e.g. picture.png",
            )
        if len(self.data) > MAX_FILE_BYTES:
            raise FileRefused(
                f"{self.name} is {len(self.data):,} bytes; a posted file may have at most "
                f"{MAX_FILE_BYTES:,}",
                hint="post a smaller file (e.g. a JPEG instead of a PNG)",
            )


def check_files(files: tuple[OutboundFile, ...]) -> None:
    """At most ``MAX_FILES`` files a message."""
    if len(files) > MAX_FILES:
        raise FileRefused(
            f"a message may carry at most {MAX_FILES} files, not {len(files)}",
            hint="post the rest in another message",
        )
