"""What every command of ``regional-menus`` shares: ``--database-url`` and the engine it opens, ``--json``, the
one-line refusal of bad input (exit status 2), the settings of the environment, the sealer, tables and warnings."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from service.settings import DEFAULT_PORT, ConfigurationError, Settings, default_database_url, secret_keys_from

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from identity.accounts.users import UserStore
    from identity.keys.sealing import Sealer

database_url_option = click.option(
    "--database-url",
    default=lambda: os.environ.get("MENUS_DATABASE_URL") or default_database_url(),
    show_default="MENUS_DATABASE_URL, else SQLite in ./var/regional-menus.sqlite3 of the current folder",
    help="SQLAlchemy URL of the state database.",
)


def database_name(url: str) -> str:
    """How messages name a database: an SQLite file by its absolute path, any other by its URL without password."""
    import sqlalchemy as sa

    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError:
        return repr(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database and parsed.database != ":memory:":
        return str(Path(parsed.database).absolute())
    return parsed.render_as_string(hide_password=True)


@contextmanager
def opened(database_url: str, *, schema_current: bool, create: bool = False) -> Iterator[Engine]:
    """An engine on ``database_url`` (at the current schema if ``schema_current``); any database error becomes
    one line naming the database. An SQLite file that does not exist is made only where ``create`` (``db
    upgrade``, ``serve --demo``): any other command refuses it before touching the disk, so that one run from
    another folder, which fails or only reads, leaves no ``var/regional-menus.sqlite3`` behind."""
    import sqlalchemy as sa

    from service.database.db import MissingDriver, make_engine, sqlite_file
    from service.database.schema import SchemaOutOfDate, require_current

    name = database_name(database_url)
    try:
        missing = sqlite_file(database_url)
        if missing is not None and not missing.exists() and not create:
            fail(f"{name}: there is no database here yet: `regional-menus db upgrade` creates it")
        engine = make_engine(database_url, Settings().database_pool())  # no variable sets the pool: never refused
    except sa.exc.ArgumentError:
        fail(f"{name} is not a database URL (for example sqlite:///var/menus.sqlite3)")
    except (MissingDriver, ImportError) as error:
        fail(f"{name}: {error}")
    try:
        if schema_current:
            require_current(engine)
        yield engine
    except SchemaOutOfDate as error:
        fail(f"{name}: {error}")
    except sa.exc.DBAPIError as error:
        reason = str(error.orig).strip().splitlines()[0] if str(error.orig).strip() else type(error.orig).__name__
        fail(f"{name}: the database cannot be used: {reason}")
    finally:
        engine.dispose()


def _database(*, schema_current: bool, create: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--database-url``: the command gets an engine, on a database at the current schema if ``schema_current``
    (a new SQLite file only if ``create``)."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @database_url_option
        @functools.wraps(command)
        def wrapper(*args: Any, database_url: str, **kwargs: Any) -> Any:
            environment_settings()  # every MENUS_* variable is checked, whichever the command reads
            with opened(database_url, schema_current=schema_current, create=create) as engine:
                return command(*args, engine=engine, **kwargs)

        return wrapper

    return decorate


database_option = _database(schema_current=True)
any_schema_database_option = _database(schema_current=False)
new_database_option = _database(schema_current=False, create=True)  # db upgrade: the one that makes a database


def json_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")(command)


class BadInput(click.ClickException):
    exit_code = 2


def fail(message: str) -> Any:
    raise BadInput(message)


def environment_settings(*, port: int = DEFAULT_PORT) -> Settings:
    """The settings of the environment; a malformed MENUS_* variable is one line naming it, exit status 2."""
    try:
        return Settings.from_env(port=port)
    except ConfigurationError as error:
        raise BadInput(str(error)) from None


def output(as_json: bool, document: Any, text: str) -> None:
    click.echo(json.dumps(document, ensure_ascii=False, indent=2) if as_json else text)


def user_of(engine: Engine, email: str) -> tuple[UserStore, str]:
    """The users and the id of the account with this address; none is a bad input."""
    from identity.accounts.users import UserStore

    users = UserStore(engine)
    user_id = users.account_id(email)
    if user_id is None:
        raise BadInput("no user has this email address")
    return users, user_id


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Aligned columns under a header line (the header alone when there are no rows)."""
    cells = [list(headers), *[["" if value is None else str(value) for value in row] for row in rows]]
    widths = [max(len(row[column]) for row in cells) for column in range(len(headers))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def warn(message: str, *, as_json: bool) -> None:
    """A warning on standard error (``{"warning": …}`` under ``--json``); the command goes on."""
    click.echo(
        json.dumps({"warning": message}, ensure_ascii=False) if as_json else f"regional-menus: warning: {message}",
        err=True,
    )


def sealer(engine: Engine) -> Sealer:
    """The sealer of MENUS_SECRET_KEYS, or of the key file beside the database."""
    from service.database.sealing_keys import load_sealer

    try:
        return load_sealer(secret_keys_from(os.environ), engine.url.render_as_string(hide_password=False))
    except ValueError as error:
        raise BadInput(str(error)) from None
