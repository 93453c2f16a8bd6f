"""Alembic environment: runs on the connection the kernel hands over (async-safe via run_sync)."""

from alembic import context

from gigi_core.store.tables import Base

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
