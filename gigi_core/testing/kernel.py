"""A kernel on a throwaway SQLite database, for plugin authors' tests and our own."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

from gigi_core.kernel import Kernel
from gigi_core.plugins import LoadOptions, load_plugins
from gigi_core.store.sealing import Sealer, generate_key


@asynccontextmanager
async def open_test_kernel(
    tmp_path: Path,
    *,
    plugins: Iterable[str] | None = None,
    extra_plugins: Iterable[tuple[str, object]] = (),
    database_url: str | None = None,
    secret_key: str | None = None,
    strict: bool = True,
) -> AsyncIterator[Kernel]:
    """Open a kernel loading only ``plugins`` (entry-point names) plus in-process ``extra_plugins``.

    Strict by default so a broken plugin fails the test instead of being skipped quietly.
    """
    options = LoadOptions(load=frozenset(plugins) if plugins is not None else None, strict=strict)
    loaded = load_plugins(options, extra=list(extra_plugins))
    kernel = await Kernel.open(
        database_url,
        tmp_path,
        plugins=loaded,
        sealer=Sealer(secret_key or generate_key()),
    )
    try:
        yield kernel
    finally:
        await kernel.close()
