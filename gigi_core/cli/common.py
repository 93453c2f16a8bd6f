"""Shared CLI plumbing: loaded plugins, opening the kernel, JSON output, error exits."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import click
import click.shell_completion

from gigi_core.errors import GigiError

if TYPE_CHECKING:
    from gigi_core.kernel import Kernel
    from gigi_core.plugins import LoadedPlugins

T = TypeVar("T")


@dataclass
class CliState:
    database_url: str | None = None
    home: str | None = None
    debug: bool = False
    _plugins: LoadedPlugins | None = field(default=None, repr=False)

    def plugins(self) -> LoadedPlugins:
        if self._plugins is None:
            from gigi_core.plugins import LoadOptions, load_plugins
            from gigi_core.settings import Settings

            home = Settings.resolve(self.database_url, self.home).home
            self._plugins = load_plugins(
                LoadOptions.from_env(cache_dir=home / "cache" / "manifests")
            )
        return self._plugins

    async def open_kernel(self) -> Kernel:
        from gigi_core.kernel import Kernel

        return await Kernel.open(self.database_url, self.home, plugins=self.plugins())


#: Allocations (net of frees) between two youngest-generation collections once started;
#: Python's default is 700. Memory's ingest queues thousands of messages in a burst, and at
#: 700 every burst paid ~1,000 passes of 0.7 ms and ~90 of 6 ms per 300,000 messages (10 %
#: of bench P3's PostgreSQL time); at 10,000, a few longer passes (docs/design-notes.md).
GC_FIRST_THRESHOLD = 10_000


def freeze_startup_heap() -> int:
    """Exclude what start-up built (modules, registries, caches) from later full collections,
    and collect the youngest generation less often.

    A long-running process (``gigi run``, ``gigi worker``) otherwise rescans those 100,000+
    objects in every generation-2 collection: a 60-200 ms pause of the event loop, the
    largest single stall of a turn under load (docs/benchmarks.md). Returns the
    number of objects frozen.
    """
    import gc

    gc.collect()
    gc.freeze()
    _, second, third = gc.get_threshold()
    gc.set_threshold(GC_FIRST_THRESHOLD, second, third)
    return gc.get_freeze_count()


pass_state = click.make_pass_decorator(CliState, ensure=True)


def _registry(ctx: click.Context) -> Any:
    """The loaded plugins' registry for shell completion; None when loading fails."""
    state = ctx.find_object(CliState) or CliState()
    try:
        return state.plugins().registry
    except Exception:  # completing must never print a traceback into the shell
        return None


def complete_plugin_names(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[click.shell_completion.CompletionItem]:
    """Tab completion of a plugin NAME: the names `gigi plugins enable` takes."""
    return _manifest_names(ctx, incomplete, per_server=True)


def complete_manifest_names(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[click.shell_completion.CompletionItem]:
    """Tab completion of any loaded plugin's NAME (`gigi manifest show`)."""
    return _manifest_names(ctx, incomplete, per_server=False)


def _manifest_names(
    ctx: click.Context, incomplete: str, *, per_server: bool
) -> list[click.shell_completion.CompletionItem]:
    registry = _registry(ctx)
    manifests = registry.manifests if registry is not None else {}
    return [
        click.shell_completion.CompletionItem(n, help=m.plugin.description)
        for n, m in sorted(manifests.items())
        if n.startswith(incomplete) and (m.plugin.per_server or not per_server)
    ]


def complete_action_names(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[click.shell_completion.CompletionItem]:
    """Tab completion of an ACTION: every loaded plugin's actions."""
    registry = _registry(ctx)
    names = sorted(registry.actions) if registry is not None else []
    return [click.shell_completion.CompletionItem(n) for n in names if n.startswith(incomplete)]


def with_kernel(fn: Callable[..., Awaitable[T]]) -> Callable[..., T]:
    """Run an async command body with an open kernel, closing it whatever happens."""

    @functools.wraps(fn)
    def wrapper(state: CliState, *args: Any, **kwargs: Any) -> T:
        async def body() -> T:
            kernel = await state.open_kernel()
            try:
                return await fn(kernel, *args, **kwargs)
            finally:
                await kernel.close()

        return run(body(), state)

    return pass_state(wrapper)


def run(coro: Coroutine[Any, Any, T], state: CliState | None = None) -> T:
    import asyncio

    return asyncio.run(coro)


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


def parse_json_option(value: str | None, option: str) -> Any:
    if value is None:
        return None
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise UsageFailure(
            f"{option} is not valid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})"
        ) from None


class UsageFailure(GigiError):
    """Bad command-line input; exit code 2 like click's own usage errors."""

    exit_code = 2


def fail(error: GigiError) -> None:
    click.echo(f"Error: {error.text_for('shell')}", err=True)
    sys.exit(error.exit_code)


#: Lines a table's notes wrap at; a long note never pushes the columns off screen.
NOTE_WIDTH = 100


def table(rows: list[dict[str, Any]], columns: list[str], notes: tuple[str, ...] = ()) -> None:
    """A plain aligned table for people; ``--json`` is for programs.

    ``notes`` are fields too long for a column (an error, a list of actions): each prints
    under its row, indented and wrapped, as ``field: text``.
    """
    import textwrap

    if not rows:
        click.echo("(none)")
        return
    cells = [[str(r.get(c, "") if r.get(c) is not None else "") for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    click.echo("  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for row, record in zip(cells, rows, strict=True):
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
        for note in notes:
            text = record.get(note)
            if text:
                wrapped = textwrap.wrap(
                    f"{note}: {text}",
                    NOTE_WIDTH,
                    initial_indent="    ",
                    subsequent_indent="      ",
                    break_on_hyphens=False,
                )
                for line in wrapped:
                    click.echo(line)
