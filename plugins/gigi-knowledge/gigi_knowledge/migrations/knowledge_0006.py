"""knowledge: on PostgreSQL, partial HNSW indexes on the knowledge vectors, one per common
embedding size (the local embedder's 256, 768, the default 1024, 1536), so a
question over a large scope does not scan every vector of it.

Revision ID: knowledge_0006

``embedding`` is an untyped ``vector`` (sizes differ by model), so each index is on the
expression ``embedding::vector(N)`` for the rows ``WHERE dims = N``: a row is indexed only
by the index of its own size, and a size with no index is searched exactly (the btree of
knowledge_0004). The retriever writes its query in that form (``pgsearch.pg_nearest_sql``).
SQLite: nothing (NumPy over the blobs).
"""

from alembic import op

revision = "knowledge_0006"
down_revision = "knowledge_0005"
branch_labels = None
depends_on = None

INDEXED_DIMS = (256, 768, 1024, 1536)  # gigi_knowledge.search.retriever.INDEXED_DIMS


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for dims in INDEXED_DIMS:
        op.execute(
            f"CREATE INDEX ix_knowledge_embeddings_hnsw_{dims} ON knowledge_embeddings "
            f"USING hnsw ((embedding::vector({dims})) vector_cosine_ops) "
            f"WITH (m = 16, ef_construction = 64) WHERE dims = {dims}"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for dims in INDEXED_DIMS:
        op.execute(f"DROP INDEX IF EXISTS ix_knowledge_embeddings_hnsw_{dims}")
