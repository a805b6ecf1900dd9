"""Storage: the engine, the service secrets and their keys, the schema check and the Alembic migrations."""
