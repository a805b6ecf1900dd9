"""The ``regional-menus`` command line (DESIGN §4).

Every command takes ``--database-url`` and ``--json`` after its name; bad input
is a one-line error on stderr with exit status 2, and nothing half-written.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import click
from sqlalchemy.engine import Engine

from service.api_keys import ApiKeyStore, UnknownApiKey
from service.db import ensure_schema, make_engine
from service.settings import DEFAULT_HOST, DEFAULT_PORT, Settings

DEMO_KEY_NAME = "demo"


def _database_option(command: Callable[..., Any]) -> Callable[..., Any]:
    @click.option(
        "--database-url",
        default=lambda: os.environ.get("MENUS_DATABASE_URL") or Settings().database_url,
        show_default="MENUS_DATABASE_URL, else SQLite in ./var/",
        help="SQLAlchemy URL of the state database.",
    )
    @functools.wraps(command)
    def wrapper(*args: Any, database_url: str, **kwargs: Any) -> Any:
        engine = make_engine(database_url)
        try:
            ensure_schema(engine)
            return command(*args, engine=engine, **kwargs)
        finally:
            engine.dispose()

    return wrapper


def _json_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")(command)


class BadInput(click.ClickException):
    exit_code = 2


def _fail(message: str) -> None:
    raise BadInput(message)


def _print(as_json: bool, document: Any, text: str) -> None:
    click.echo(json.dumps(document, ensure_ascii=False, indent=2) if as_json else text)


@click.group()
@click.version_option(package_name="regional-menus")
def main() -> None:
    """Regional Menus: the menus API and its identity endpoints."""


@main.command()
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to listen on.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535), help="Port.")
@click.option("--demo", is_flag=True, help="Create demo data (an API key) if absent and print how to use it.")
@_database_option
def serve(host: str, port: int, demo: bool, engine: Engine) -> None:
    """Run the service."""
    import uvicorn

    from service.app import create_app

    settings = Settings.from_env(port=port).with_changes(database_url=str(engine.url.render_as_string(False)))
    if demo:
        _print_demo(ApiKeyStore(engine), settings)
    app = create_app(settings)
    uvicorn.run(app, host=host, port=port, log_level="info", lifespan="on")


def _print_demo(keys: ApiKeyStore, settings: Settings) -> None:
    """Create a demo API key. Keys are stored only as hashes, so a fresh one is made on every demo start."""
    for existing in keys.list():
        if existing.name == DEMO_KEY_NAME and existing.revoked_at is None:
            keys.revoke(existing.id)
    _, key = keys.create(DEMO_KEY_NAME)
    click.echo(
        "\nDemo data is ready.\n"
        f"  API key (shown once): {key}\n"
        f"  Try:     curl -H 'Authorization: Bearer {key}' \\\n"
        f"             '{settings.base_url}/v1/menus/dishes?diet=vegetarian&q=paneer'\n"
        f"  Browse:  {settings.base_url}/v1/ui/\n"
    )


@main.group("api-keys")
def api_keys_group() -> None:
    """Issue, list and revoke API keys of the menus API."""


@api_keys_group.command("create")
@click.option("--name", required=True, help="Who or what the key is for.")
@_json_option
@_database_option
def api_keys_create(name: str, as_json: bool, engine: Engine) -> None:
    """Create a key and print it once; only its hash is kept."""
    try:
        record, key = ApiKeyStore(engine).create(name)
    except ValueError as error:
        _fail(str(error))
    _print(as_json, {"id": record.id, "name": record.name, "key": key}, f"{record.id}\t{record.name}\t{key}")


@api_keys_group.command("list")
@_json_option
@_database_option
def api_keys_list(as_json: bool, engine: Engine) -> None:
    """List keys (never the keys themselves)."""
    records = ApiKeyStore(engine).list()
    lines = [f"{r.id}\t{r.name}\t{'revoked' if r.revoked_at else 'active'}" for r in records]
    _print(as_json, [r.as_dict() for r in records], "\n".join(lines))


@api_keys_group.command("revoke")
@click.argument("key_id")
@_json_option
@_database_option
def api_keys_revoke(key_id: str, as_json: bool, engine: Engine) -> None:
    """Revoke a key; it stops working at once."""
    try:
        record = ApiKeyStore(engine).revoke(key_id)
    except UnknownApiKey:
        _fail(f"no API key has the id {key_id!r}")
    _print(as_json, record.as_dict(), f"{record.id}\trevoked")


def run(args: list[str] | None = None) -> None:
    """Entry point: any bad input is one line on stderr and exit status 2."""
    try:
        main.main(args=args, prog_name="regional-menus", standalone_mode=False)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.Abort:
        sys.exit(130)
    except click.ClickException as error:
        click.echo(f"regional-menus: error: {error.format_message()}", err=True)
        sys.exit(2)
