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
from datetime import timedelta
from typing import Any

import click
from sqlalchemy.engine import Engine

from identity.api_keys import ApiKeyStore, UnknownApiKey
from identity.clients import AUTH_METHODS, GRANTS, SCOPES, ClientStore
from identity.clock import now
from identity.errors import InvalidInput, UnknownRecord
from identity.keys import SigningKeys
from identity.organizations import OrganizationStore
from identity.purge import Purger
from identity.users import ROLES, UserStore
from service.db import make_engine
from service.demo import prepare as prepare_demo
from service.logs import configure as configure_logging
from service.logs import configure_command
from service.schema import SchemaOutOfDate, current, head, require_current, upgrade
from service.settings import DEFAULT_HOST, DEFAULT_PORT, Settings


def _database(*, schema_current: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--database-url``: the command gets an engine, on a database at the current schema if ``schema_current``."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
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
                if schema_current:
                    require_current(engine)
                return command(*args, engine=engine, **kwargs)
            except SchemaOutOfDate as error:
                _fail(str(error))
            finally:
                engine.dispose()

        return wrapper

    return decorate


_database_option = _database(schema_current=True)
_any_schema_database_option = _database(schema_current=False)


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
    configure_command()  # audit lines on standard error; `serve` sets up the server's logging instead


@main.command()
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to listen on (0.0.0.0 or :: for all).")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535), help="Port.")
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    help="Run gunicorn with this many uvicorn workers (production); without it, one uvicorn process.",
)
@click.option(
    "--forwarded-allow-ips",
    default=lambda: os.environ.get("FORWARDED_ALLOW_IPS") or "127.0.0.1",
    show_default="FORWARDED_ALLOW_IPS, else 127.0.0.1",
    help="Comma-separated addresses of reverse proxies whose X-Forwarded-For and -Proto are trusted.",
)
@click.option(
    "--demo",
    is_flag=True,
    help="Bring the schema up to date, create demo data (API key, org, user, client), print how to use it.",
)
@_any_schema_database_option
def serve(host: str, port: int, workers: int | None, forwarded_allow_ips: str, demo: bool, engine: Engine) -> None:
    """Run the service (on a database at the current schema: see `db upgrade`)."""
    from service import multiprocess
    from service.server import Listen, run_single, run_workers

    settings = Settings.from_env(port=port).with_changes(database_url=str(engine.url.render_as_string(False)))
    if demo:
        upgrade(engine)
        click.echo(prepare_demo(engine, settings))
    require_current(engine)
    listen = Listen(host, port, forwarded_allow_ips)
    configure_logging()  # JSON lines; gunicorn's master and workers get the same set-up (service.server)
    if workers is None:
        if multiprocess.ENV in os.environ:  # an operator's metrics directory: start it empty
            multiprocess.prepare_directory()
        run_single(_app(settings), listen)
    else:
        engine.dispose()  # the workers open their own connections after the fork
        run_workers(functools.partial(_app, settings), listen, workers)


def _app(settings: Settings) -> Any:
    """The app, imported only here: under --workers, in each worker, after the metrics directory is set."""
    from service.app import create_app

    return create_app(settings)


@main.group("db")
def db_group() -> None:
    """The state database's schema (Alembic migrations)."""


@db_group.command("upgrade")
@_json_option
@_any_schema_database_option
def db_upgrade(as_json: bool, engine: Engine) -> None:
    """Apply every migration the database lacks, in one transaction. Stop the service's nodes first."""
    before, after = upgrade(engine)
    text = f"already at {after}" if before == after else f"upgraded from {before or 'an empty database'} to {after}"
    _print(as_json, {"from": before, "to": after}, text)


@db_group.command("current")
@_json_option
@_any_schema_database_option
def db_current(as_json: bool, engine: Engine) -> None:
    """Print the database's schema revision and the one this version needs."""
    at, needed = current(engine), head()
    state = "current" if at == needed else "behind: run `regional-menus db upgrade`"
    _print(as_json, {"revision": at, "head": needed, "current": at == needed}, f"{at or 'none'}\t{needed}\t{state}")


@db_group.command("purge")
@_json_option
@_database_option
def db_purge(as_json: bool, engine: Engine) -> None:
    """Delete expired records now (a running service does it every MENUS_PURGE_INTERVAL seconds)."""
    settings = Settings.from_env()
    deleted = Purger(engine, timedelta(seconds=settings.refresh_token_ttl)).purge()
    _print(as_json, deleted, "\n".join(f"{table}\t{count}" for table, count in deleted.items()))


@main.group("api-keys")
def api_keys_group() -> None:
    """Issue, list and revoke API keys of the menus API."""


@api_keys_group.command("create")
@click.option("--name", required=True, help="Who or what the key is for.")
@click.option("--org", "org_id", default=None, help="The organization that owns the key (its console shows it).")
@_json_option
@_database_option
def api_keys_create(name: str, org_id: str | None, as_json: bool, engine: Engine) -> None:
    """Create a key and print it once; only its hash is kept."""
    try:
        record, key = ApiKeyStore(engine).create(name, org_id=org_id)
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


@main.group("orgs")
def orgs_group() -> None:
    """Create and list organizations."""


@orgs_group.command("create")
@click.option("--name", required=True, help="The organization's name.")
@_json_option
@_database_option
def orgs_create(name: str, as_json: bool, engine: Engine) -> None:
    """Create an organization."""
    org = OrganizationStore(engine).create(name)
    _print(as_json, org.as_dict(), f"{org.id}\t{org.slug}\t{org.name}")


@orgs_group.command("list")
@_json_option
@_database_option
def orgs_list(as_json: bool, engine: Engine) -> None:
    """List organizations."""
    orgs = OrganizationStore(engine).list()
    _print(as_json, [o.as_dict() for o in orgs], "\n".join(f"{o.id}\t{o.slug}\t{o.name}" for o in orgs))


@main.group("users")
def users_group() -> None:
    """Create and list users."""


@users_group.command("create")
@click.option("--email", required=True, help="Email address; unique, compared without regard to case.")
@click.option("--name", required=True, help="Full name.")
@click.option("--password-stdin", is_flag=True, required=True, help="Read the password from standard input.")
@click.option("--org", "org_ids", multiple=True, required=True, help="Organization id; repeat for several.")
@click.option("--role", type=click.Choice(ROLES), default="member", show_default=True, help="Role in each --org.")
@_json_option
@_database_option
def users_create(
    email: str, name: str, password_stdin: bool, org_ids: tuple[str, ...], role: str, as_json: bool, engine: Engine
) -> None:
    """Create a user in one or more organizations; the password is read from standard input."""
    password = sys.stdin.readline().rstrip("\r\n")
    user = UserStore(engine).create(email, name, password, [(org_id, role) for org_id in org_ids])
    _print(as_json, user.as_dict(), f"{user.id}\t{user.email}\t{user.name}")


@users_group.command("list")
@_json_option
@_database_option
def users_list(as_json: bool, engine: Engine) -> None:
    """List users and their organizations."""
    users = UserStore(engine).list()
    lines = [f"{u.id}\t{u.email}\t{u.name}\t{','.join(m.org.id for m in u.memberships)}" for u in users]
    _print(as_json, [u.as_dict() for u in users], "\n".join(lines))


@main.group("clients")
def clients_group() -> None:
    """Register, list and delete clients (applications)."""


@clients_group.command("create")
@click.option("--name", required=True, help="The application's name, shown on the consent page.")
@click.option("--org", "org_id", required=True, help="Id of the organization that owns the client.")
@click.option("--redirect-uri", "redirect_uris", multiple=True, help="Registered redirect URI; repeat for several.")
@click.option("--post-logout-redirect-uri", "logout_uris", multiple=True, help="Registered sign-out redirect URI.")
@click.option("--auth-method", type=click.Choice(AUTH_METHODS), required=True, help="Token endpoint auth method.")
@click.option("--jwks-file", type=click.File("r"), help="Public JWKS of the client (private_key_jwt).")
@click.option("--grant", "grants", multiple=True, type=click.Choice(GRANTS), help="Allowed grant; repeat for several.")
@click.option("--scope", "scopes", multiple=True, type=click.Choice(SCOPES), help="Allowed scope; repeat for several.")
@click.option("--first-party", is_flag=True, help="Skip the consent page unless prompt=consent.")
@click.option("--pkce", type=click.Choice(["required", "optional"]), default="required", show_default=True)
@_json_option
@_database_option
def clients_create(
    name: str,
    org_id: str,
    redirect_uris: tuple[str, ...],
    logout_uris: tuple[str, ...],
    auth_method: str,
    jwks_file: Any,
    grants: tuple[str, ...],
    scopes: tuple[str, ...],
    first_party: bool,
    pkce: str,
    as_json: bool,
    engine: Engine,
) -> None:
    """Register a client; its secret (for the secret methods) is printed once."""
    jwks = None
    if jwks_file is not None:
        try:
            jwks = json.load(jwks_file)
        except ValueError:
            _fail("the JWKS file is not valid JSON")
    client, secret = ClientStore(engine).create(
        name=name,
        org_id=org_id,
        auth_method=auth_method,
        redirect_uris=redirect_uris,
        post_logout_redirect_uris=logout_uris,
        grants=grants,
        scopes=scopes,
        first_party=first_party,
        pkce_required=pkce == "required",
        jwks=jwks,
    )
    document = {**client.as_dict(), **({"client_secret": secret} if secret else {})}
    _print(as_json, document, f"{client.id}\t{client.name}" + (f"\t{secret}" if secret else ""))


@clients_group.command("list")
@_json_option
@_database_option
def clients_list(as_json: bool, engine: Engine) -> None:
    """List clients (never their secrets)."""
    clients = ClientStore(engine).list()
    lines = [f"{c.id}\t{c.org_id}\t{c.auth_method}\t{c.name}" for c in clients]
    _print(as_json, [c.as_dict() for c in clients], "\n".join(lines))


@clients_group.command("delete")
@click.argument("client_id")
@_json_option
@_database_option
def clients_delete(client_id: str, as_json: bool, engine: Engine) -> None:
    """Delete a client."""
    try:
        ClientStore(engine).delete(client_id)
    except UnknownRecord:
        _fail(f"no client has the id {client_id!r}")
    _print(as_json, {"client_id": client_id, "deleted": True}, f"{client_id}\tdeleted")


@main.group("keys")
def keys_group() -> None:
    """Rotate and list the ID token and access token signing keys."""


def _signing_keys(engine: Engine) -> SigningKeys:
    settings = Settings.from_env()
    return SigningKeys(
        engine,
        publish_delay=timedelta(seconds=settings.key_publish_delay),
        verify_window=timedelta(seconds=settings.access_token_ttl),
    )


@keys_group.command("rotate")
@_json_option
@_database_option
def keys_rotate(as_json: bool, engine: Engine) -> None:
    """Publish a new key now; it signs after MENUS_KEY_PUBLISH_DELAY seconds, when the current key retires."""
    info = _signing_keys(engine).rotate()
    _print(as_json, info.as_dict(now()), f"{info.kid}\tsigns from {info.signs_from.isoformat()}")


@keys_group.command("list")
@_json_option
@_database_option
def keys_list(as_json: bool, engine: Engine) -> None:
    """List signing keys and their states (published, signing, retired, expired)."""
    at = now()
    infos = _signing_keys(engine).list()
    _print(as_json, [i.as_dict(at) for i in infos], "\n".join(f"{i.kid}\t{i.state(at)}" for i in infos))


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
    except InvalidInput as error:  # the identity domain's refusal of bad input
        click.echo(f"regional-menus: error: {error}", err=True)
        sys.exit(2)
