"""Keep modal submissions (API keys) out of discord.py's debug log of raw gateway events."""

from __future__ import annotations

import logging
from typing import Any

MODAL_SUBMIT = 5
_installed = False


def _is_modal_submit(payload: Any) -> bool:
    if not isinstance(payload, dict):
        return False
    data = payload.get("d") if "op" in payload else payload
    return (
        isinstance(data, dict)
        and data.get("type") == MODAL_SUBMIT
        and (payload.get("t") in (None, "INTERACTION_CREATE"))
    )


class ModalRedactor(logging.Filter):
    """discord.gateway logs every received event at DEBUG; a modal's values are replaced."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and any(_is_modal_submit(a) for a in args):
            record.args = tuple(
                "<modal submission redacted by gigi-discord>" if _is_modal_submit(a) else a
                for a in args
            )
        return True


def install() -> None:
    """Idempotent; attached to the loggers that see raw payloads."""
    global _installed
    if _installed:
        return
    _installed = True
    for name in ("discord.gateway", "discord.state", "discord.client"):
        logging.getLogger(name).addFilter(ModalRedactor())
