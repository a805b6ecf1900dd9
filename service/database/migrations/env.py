"""Alembic's environment: the service's metadata, on the connection ``service.database.schema`` hands over.

``regional-menus db upgrade`` runs the migrations through ``service.database.schema``. Developers
making a new migration run Alembic itself from the project's root (``alembic.ini``):
``alembic revision --autogenerate -m "…"`` against ``MENUS_DATABASE_URL`` (default: the
SQLite database in ./var/), upgraded to the current head first.
"""

from __future__ import annotations

from alembic import context

from service.database.db import make_engine, metadata
from service.database.schema import load_tables
from service.settings import Settings

load_tables()
connection = context.config.attributes.get("connection")


def run(connection) -> None:  # type: ignore[no-untyped-def]
    # render_as_batch: SQLite alters a table by copying it; Alembic's batch mode does that for us.
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True, compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


if connection is not None:
    run(connection)
else:
    settings = Settings.from_env()
    engine = make_engine(settings.database_url, settings.database_pool())
    with engine.connect() as connection:
        run(connection)
    engine.dispose()
