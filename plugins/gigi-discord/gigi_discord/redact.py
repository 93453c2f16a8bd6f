"""Keep secrets out of discord.py's debug log of raw gateway events: modal submissions (API
keys) and the admin commands whose options can carry plugin config secrets."""

from __future__ import annotations

import logging
from typing import Any

APPLICATION_COMMAND = 2
MODAL_SUBMIT = 5
ADMIN_ROOTS = frozenset({"gigi", "llm"})
_installed = False


def _is_modal_submit(payload: Any) -> bool:
    if not isinstance(payload, dict):
        return False
    data = payload.get("d") if "op" in payload else payload
    if not isinstance(data, dict) or payload.get("t") not in (None, "INTERACTION_CREATE"):
        return False
    if data.get("type") == MODAL_SUBMIT:
        return True
    command = data.get("data")
    return (
        data.get("type") == APPLICATION_COMMAND
        and isinstance(command, dict)
        and command.get("name") in ADMIN_ROOTS
    )


class ModalRedactor(logging.Filter):
    """discord.gateway logs every received event at DEBUG; a modal's values are replaced."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and any(_is_modal_submit(a) for a in args):
            record.args = tuple(
                "<interaction redacted by gigi-discord>" if _is_modal_submit(a) else a for a in args
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
