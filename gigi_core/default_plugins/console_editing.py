"""Line editing, history and completion for the console surface (prompt_toolkit).

Kept apart from the REPL itself: only a real terminal (or a test's pipe) needs it.
"""

from __future__ import annotations

import os
from typing import Any

from gigi_core.default_plugins.console import PROMPT

HISTORY_FILE = "console_history"


class LineEditor:
    """Line editing, history and completion for the console, on prompt_toolkit.

    ``input``/``output`` default to the terminal; tests pass prompt_toolkit's pipe input and
    ``DummyOutput``. ``home`` holds the history file (None: history for this session only).
    """

    def __init__(self, kernel: Any, *, home: Any, input: Any = None, output: Any = None) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory, InMemoryHistory

        self.completer = _completer(kernel)
        history: Any = InMemoryHistory()
        if home is not None:
            path = _private_file(home, HISTORY_FILE)
            if path is not None:
                history = FileHistory(str(path))
        self.session: Any = PromptSession(
            history=history,
            completer=self.completer,
            complete_while_typing=False,  # Tab asks; typing stays plain
            input=input,
            output=output,
        )

    async def readline(self) -> str | None:
        """One edited line; Ctrl-C gives an empty line (dropped), Ctrl-D or a closed input None."""
        try:
            return await self.session.prompt_async(
                PROMPT, handle_sigint=False, set_exception_handler=False
            )
        except KeyboardInterrupt:
            return ""
        except EOFError:
            return None


def terminal_editor(kernel: Any) -> LineEditor | None:
    """The editor for a real terminal; None (plain reads) when prompt_toolkit cannot run."""
    try:
        settings = getattr(kernel, "settings", None)
        return LineEditor(kernel, home=getattr(settings, "home", None))
    except Exception as exc:  # no usable terminal (e.g. TERM=dumb quirks), or not installed
        import logging

        logging.getLogger(__name__).info("console line editing is off: %s", exc)
        return None


def _private_file(home: Any, name: str) -> Any:
    """``home/name``, created with mode 0600 when missing (history holds what you typed)."""
    from pathlib import Path

    path = Path(home) / name
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    except OSError:
        return None
    return path


def _completer(kernel: Any) -> Any:
    """Tab completion: ``/`` commands, plugin commands word by word, actions, plugin names."""
    from prompt_toolkit.completion import Completer, Completion

    class ConsoleCompleter(Completer):
        def get_completions(self, document: Any, complete_event: Any) -> Any:
            text = document.text_before_cursor
            if not text.startswith("/"):
                return
            words = text[1:].split(" ")
            current, before = words[-1], words[:-1]
            for candidate in sorted(set(_candidates(kernel, before))):
                if candidate.startswith(current):
                    # The space after a completed word: the next word can be typed at once.
                    yield Completion(
                        candidate + " ", start_position=-len(current), display=candidate
                    )

    return ConsoleCompleter()


def _candidates(kernel: Any, before: list[str]) -> list[str]:
    """What may come after the words ``before`` (the command typed so far, without ``/``)."""
    registry = getattr(kernel, "registry", None)
    table = getattr(kernel, "commands", None)
    specs = table.sorted() if table is not None else []
    if not before:
        from gigi_core.default_plugins.console import COMMANDS

        return [*COMMANDS, "quit", "exit", *(spec.words[0] for spec in specs)]
    if len(before) == 1 and before[0] == "call" and registry is not None:
        return list(registry.actions)
    if len(before) == 1 and before[0] in ("enable", "disable") and registry is not None:
        return list(registry.manifests)
    n = len(before)
    return [
        spec.words[n] for spec in specs if len(spec.words) > n and list(spec.words[:n]) == before
    ]
