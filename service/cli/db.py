"""``regional-menus db``: the state database's schema (Alembic migrations) and its upkeep."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from service.cli.common import (
    any_schema_database_option,
    database_option,
    environment_settings,
    json_option,
    new_database_option,
    output,
    table,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


@click.group("db", short_help="The state database's schema and its upkeep.")
def db_group() -> None:
    """The state database's schema (Alembic migrations)."""


@db_group.command("upgrade", short_help="Apply the migrations the database lacks.")
@json_option
@new_database_option
def db_upgrade(as_json: bool, engine: Engine) -> None:
    """Apply every migration the database lacks, in one transaction. Stop the service's nodes first."""
    from service.database.schema import upgrade

    before, after = upgrade(engine)
    text = f"already at {after}" if before == after else f"upgraded from {before or 'an empty database'} to {after}"
    output(as_json, {"from": before, "to": after}, text)


@db_group.command("current", short_help="Show the schema revision and the one needed.")
@json_option
@any_schema_database_option
def db_current(as_json: bool, engine: Engine) -> None:
    """Print the database's schema revision and the one this version needs."""
    from service.database.schema import current, head

    at, needed = current(engine), head()
    state = "current" if at == needed else "behind: run `regional-menus db upgrade`"
    text = table(["REVISION", "NEEDED", "STATE"], [[at or "none", needed, state]])
    output(as_json, {"revision": at, "head": needed, "current": at == needed}, text)


@db_group.command("purge", short_help="Delete expired records now.")
@json_option
@database_option
def db_purge(as_json: bool, engine: Engine) -> None:
    """Delete expired records now (a running service does it every MENUS_PURGE_INTERVAL seconds)."""
    from identity.purge import Purger

    settings = environment_settings()
    tuning = settings.tuning()
    deleted = Purger(engine, settings.lifetimes().refresh_token, tuning.purge_grace, tuning.throttle.window).purge()
    output(as_json, deleted, table(["TABLE", "DELETED"], list(deleted.items())))
