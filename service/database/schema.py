"""The state database's schema: Alembic migrations (``service/database/migrations/``), applied by
``regional-menus db upgrade``; everything else refuses a database that is not at the head.

The same migrations run on SQLite and PostgreSQL. Nothing changes the schema on its
own: several nodes starting at once must not race to migrate a shared database.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
UPGRADE_COMMAND = "regional-menus db upgrade"


class SchemaOutOfDate(RuntimeError):
    """The database is not at the schema this version of the service needs."""


def load_tables() -> None:
    """Define every table on the shared metadata (each module defines its own)."""
    import identity.api_keys  # noqa: F401
    import identity.tables  # noqa: F401
    import identity.usage  # noqa: F401


def alembic_config() -> Config:
    """Alembic's configuration for the service's migrations (no alembic.ini needed)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def head() -> str:
    revision = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert revision is not None, "no migrations"
    return revision


def current(engine: Engine) -> str | None:
    """The revision the database is at; None when it has none (an empty or unmanaged database)."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def upgrade(engine: Engine) -> tuple[str | None, str]:
    """Apply every migration the database lacks, in one transaction; (revision before, after)."""
    before = current(engine)
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
    return before, head()


def require_current(engine: Engine) -> None:
    """Raise ``SchemaOutOfDate``, naming the command to run, unless the database is at the head."""
    at, needed = current(engine), head()
    if at == needed:
        return
    if at is None:
        raise SchemaOutOfDate(f"the database has no schema yet: run `{UPGRADE_COMMAND}`")
    raise SchemaOutOfDate(
        f"the database schema is at revision {at}, this version needs {needed}: run `{UPGRADE_COMMAND}`"
    )
