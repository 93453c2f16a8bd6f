"""Things every case in one run can share: a migrated SQLite template and the manifest cache.

Migrating a fresh SQLite file costs a few hundred milliseconds (one fsync per DDL statement)
and so does validating manifests; copying a migrated file and reusing validated manifests
keeps a case at tens of milliseconds while each still gets its own database.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

from gigi_core.kernel import Kernel
from gigi_core.plugins import LoadedPlugins, LoadOptions, load_plugins
from gigi_core.store.sealing import Sealer, generate_key


class Warm:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.template: Path | None = None

    @property
    def cache_dir(self) -> Path:
        return self.root / "manifests"

    async def sqlite_url(self, home: Path) -> str:
        """A fresh SQLite database in ``home``, copied from the migrated template."""
        if self.template is None:
            template = self.root / "template.db"
            kernel = await Kernel.open(
                _sqlite(template), self.root, plugins=self.plugins([]), sealer=Sealer(None)
            )
            await kernel.close()
            self.template = template
        target = home / "eval.db"
        shutil.copyfile(self.template, target)
        return _sqlite(target)

    def plugins(
        self, names: Iterable[str], extra: Iterable[tuple[str, object]] = ()
    ) -> LoadedPlugins:
        """Strict: a plugin that fails to load fails the case instead of vanishing quietly."""
        options = LoadOptions(load=frozenset(names), strict=True, cache_dir=self.cache_dir)
        return load_plugins(options, extra=list(extra))


def _sqlite(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


@asynccontextmanager
async def warm() -> AsyncIterator[Warm]:
    root = Path(tempfile.mkdtemp(prefix="gigi-eval-warm-"))
    try:
        yield Warm(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@asynccontextmanager
async def open_case_kernel(
    warm: Warm,
    home: Path,
    plugins: Iterable[str],
    extra: Iterable[tuple[str, object]],
    database_url: str | None,
) -> AsyncIterator[Kernel]:
    loaded = warm.plugins(plugins, extra)
    # The template is at the kernel's head already; only plugin migrations need alembic.
    migrate = database_url is not None or bool(loaded.registry.migrations)
    url = database_url or await warm.sqlite_url(home)
    kernel = await Kernel.open(
        url, home, plugins=loaded, sealer=Sealer(generate_key()), migrate=migrate
    )
    try:
        yield kernel
    finally:
        await kernel.close()
