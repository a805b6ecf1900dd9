"""The state database's schema: Alembic migrations (``service/database/migrations/``), applied by
``regional-menus db upgrade``; everything else refuses a database that is not at the head.

The same migrations run on SQLite and PostgreSQL. Nothing changes the schema on its
own: several nodes starting at once must not race to migrate a shared database.

Checking the schema (``require_current``, at every start) imports no Alembic: the head revision is read from
the migration files' ``revision``/``down_revision`` assignments and the database's from ``alembic_version``;
Alembic itself is imported by ``upgrade`` and wherever these readings are not plain (several heads or rows).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Engine

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
VERSION_TABLE = "alembic_version"  # where Alembic keeps the database's revision (its default)
UPGRADE_COMMAND = "regional-menus db upgrade"


class SchemaOutOfDate(RuntimeError):
    """The database is not at the schema this version of the service needs."""


def load_tables() -> None:
    """Define every table on the shared metadata (each module defines its own)."""
    import identity.api_keys.keys  # noqa: F401
    import identity.api_keys.usage  # noqa: F401
    import identity.common.tables  # noqa: F401
    import identity.federation.tables  # noqa: F401
    import identity.organizations.tables  # noqa: F401


def alembic_config() -> Config:
    """Alembic's configuration for the service's migrations (no alembic.ini needed)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


@cache
def head() -> str:
    """The revision this version needs: the one no migration names as its ``down_revision``."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (MIGRATIONS / "versions").glob("*.py"):
        assigned = _assignments(path)
        revision, down = assigned.get("revision"), assigned.get("down_revision")
        if isinstance(revision, str):
            revisions.add(revision)
            if isinstance(down, str):
                parents.add(down)
            elif isinstance(down, tuple | list):  # a merge revision names several
                parents.update(str(each) for each in down)
    heads = revisions - parents
    if len(heads) == 1:
        return heads.pop()
    return _alembic_head()  # several heads, or none: Alembic says what is wrong


def _assignments(path: Path) -> dict[str, object]:
    """The module-level ``name = literal`` (or ``name: type = literal``) assignments of a migration file."""
    found: dict[str, object] = {}
    for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:
        target: ast.expr | None = None
        value: ast.expr | None = None
        if isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        if isinstance(target, ast.Name) and value is not None:
            try:
                found[target.id] = ast.literal_eval(value)
            except ValueError:
                continue  # not a literal: nothing a revision is made of
    return found


def _alembic_head() -> str:
    from alembic.script import ScriptDirectory

    revision = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert revision is not None, "no migrations"
    return revision


def current(engine: Engine) -> str | None:
    """The revision the database is at; None when it has none (an empty or unmanaged database)."""
    with engine.connect() as connection:
        if not sa.inspect(connection).has_table(VERSION_TABLE):
            return None
        rows = connection.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all()
        if len(rows) <= 1:
            return rows[0] if rows else None
        from alembic.runtime.migration import MigrationContext

        return MigrationContext.configure(connection).get_current_revision()  # several heads: Alembic refuses


def upgrade(engine: Engine) -> tuple[str | None, str]:
    """Apply every migration the database lacks, in one transaction; (revision before, after)."""
    from alembic import command

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
