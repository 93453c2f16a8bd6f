"""What ``gigi memory sync --wait`` shows while the job runs.

A channel's size is unknown until the sync reaches its start, so on a terminal the bar pulses
beside the counts; anywhere else (a pipe, a log file, CI) a line is printed per change.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

import click


def _line(progress: Any) -> str:
    return f"read {progress.done:,} messages, {progress.note or ''}"


def _is_terminal(file: TextIO) -> bool:
    try:
        return bool(file.isatty())
    except (AttributeError, ValueError):  # closed or not a real stream
        return False


class SyncProgress:
    """Shows a job's ``JobProgress`` each time it changes; ``close`` ends the bar's line."""

    def __init__(self, label: str, file: TextIO | None = None) -> None:
        self.file = file or sys.stderr
        self.shown: Any = None
        self.bar: Any = None
        if _is_terminal(self.file):
            self.bar = click.progressbar(
                (x for x in ()),  # no length: click draws a pulsing bar
                label=label,
                file=self.file,
                item_show_func=lambda p: _line(p) if p is not None else None,
            )
            self.bar.__enter__()

    def show(self, progress: Any) -> None:
        if progress is None or progress == self.shown:
            return
        self.shown = progress
        if self.bar is None:
            click.echo(_line(progress), file=self.file)
            return
        self.bar.current_item = progress
        self.bar.update(max(1, progress.done - self.bar.pos))

    def close(self, finished: bool) -> None:
        if self.bar is not None:
            self.bar.finished = finished
            self.bar.render_progress()
            self.bar.__exit__(None, None, None)
