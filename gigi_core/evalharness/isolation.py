"""A clean database per case without touching anything else in the database given.

SQLite (the default) gets a fresh file in the case's temporary GIGI_HOME. On PostgreSQL each
case runs in its own schema (first on the search path), dropped afterwards, so the scanner
and the expectations only ever see that case's rows and existing data is never read or wiped.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import quote

from sqlalchemy.engine import make_url


@asynccontextmanager
async def isolated_database(database_url: str | None) -> AsyncIterator[str | None]:
    if database_url is None or make_url(database_url).get_backend_name() != "postgresql":
        yield database_url  # None: a fresh SQLite file; a SQLite URL is used as given
        return
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    schema = f"gigi_eval_{uuid.uuid4().hex[:12]}"
    admin = create_async_engine(database_url)
    try:
        async with admin.begin() as conn:
            await conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        separator = "&" if "?" in database_url else "?"
        options = quote(f"-csearch_path={schema},public")
        yield f"{database_url}{separator}options={options}"
    finally:
        async with admin.begin() as conn:
            await conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        await admin.dispose()
