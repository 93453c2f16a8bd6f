"""The console log of every ``gigi`` command: one line per record, no secrets, and with
``--debug`` no library's DEBUG records.

Libraries log data at DEBUG: aiosqlite each statement with its values (message text, sealed
blobs), discord.py each gateway event and each request body, the MCP client each protocol
message, psycopg its connection attempts. Those records would put message text, prompts
and tool arguments on stderr, so ``--debug`` shows DEBUG records of Gigi and its plugins
(loggers named ``gigi…``) and of the HTTP transport (``httpx``, ``httpcore``: request lines
and headers, keys redacted by ``SecretFilter``); every other logger from INFO up.
"""

from __future__ import annotations

import logging

from gigi_core.llm.logfilter import SecretFilter

#: Loggers whose DEBUG records ``--debug`` shows (with their children).
DEBUG_LOGGERS = ("httpx", "httpcore")


class LibraryDebugCap(logging.Filter):
    """Drops DEBUG records of loggers outside Gigi and the transport: they carry data."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.INFO:
            return True
        name = record.name
        if name.startswith("gigi"):
            return True
        return any(name == n or name.startswith(f"{n}.") for n in DEBUG_LOGGERS)


class ConsoleFormatter(logging.Formatter):
    """One line per record; tracebacks only with --debug (the exception's message stays)."""

    def __init__(self, debug: bool) -> None:
        super().__init__("%(levelname)s %(name)s: %(message)s")
        self.debug = debug

    def format(self, record: logging.LogRecord) -> str:
        if self.debug or not record.exc_info:
            return super().format(record)
        exc = record.exc_info[1]
        line = super().format(
            logging.makeLogRecord({**record.__dict__, "exc_info": None, "exc_text": None})
        )
        return f"{line}: {type(exc).__name__}: {exc}"


def console_handler(debug: bool) -> logging.Handler:
    """The stderr handler ``gigi`` installs on the root logger."""
    handler = logging.StreamHandler()
    handler.setFormatter(ConsoleFormatter(debug))
    handler.addFilter(SecretFilter())  # every logger Gigi enables, httpx's transport too
    handler.addFilter(LibraryDebugCap())
    return handler


def configure(debug: bool) -> None:
    """WARNING and up on stderr; with ``debug``, DEBUG (capped for libraries, above)."""
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING, handlers=[console_handler(debug)]
    )
