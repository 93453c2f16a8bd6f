"""The SQL store: async engine, alembic migrations, kernel tables and their repositories."""
