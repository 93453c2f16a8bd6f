"""Plain-stream input for the console: a line read off the event loop, and Ctrl-C routing.

Kept apart from the REPL: piped input and tests' streams use it, a terminal uses
``console_editing`` instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio


async def read_plain_line(stream: Any) -> str | None:
    """One line from ``stream`` read in a daemon thread, so the loop stays free and exit
    never waits on it; None at end of input."""
    import asyncio
    import threading

    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()

    def settle(line: str | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(line or "")

    def work() -> None:
        try:
            line, error = stream.readline(), None
        except BaseException as exc:
            line, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, line, error)
        except RuntimeError:  # the loop closed while we were waiting for input
            pass

    threading.Thread(target=work, name="gigi-console-stdin", daemon=True).start()
    try:
        line = await future
    except (EOFError, ValueError):  # a closed stream reads as end of input
        return None
    return None if line == "" else line.rstrip("\r\n")


def isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def install_sigint(loop: asyncio.AbstractEventLoop, callback: Any) -> bool:
    """Route Ctrl-C to ``callback`` while the REPL runs; False where that is not possible."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return False
    try:
        loop.add_signal_handler(signal.SIGINT, callback)
    except (NotImplementedError, RuntimeError, ValueError):  # Windows, nested loops
        return False
    return True
