"""The ``regional-menus`` command line (docs/cli.md).

Every command takes ``--database-url`` after its name, and every command but ``serve`` takes ``--json``.
Text output is a table with a header line; ``--json`` output is JSON. Bad input is one line on stderr
(``{"error": …}`` under ``--json``) with exit status 2, and nothing half-written. Every database error
names the database: the default is ``./var/regional-menus.sqlite3``, made absolute.

Each command imports what it uses in its body: the command tree and its ``--help`` load click and the settings
only, never SQLAlchemy, Alembic or the app (tests/system/test_cli_imports.py).
"""

from __future__ import annotations

import functools
import json
import os
import re
import socket
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from identity.clock import SYSTEM_CLOCK
from identity.errors import InvalidInput, UnknownRecord
from identity.vocabulary import GRANTS, REGISTRABLE_AUTH_METHODS, ROLES, SCOPES
from service.ops.logs import configure_command
from service.settings import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    ConfigurationError,
    Settings,
    default_database_url,
    max_keys_per_org_from,
    outbound_loopback_from,
    secret_keys_from,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from identity.sealing import Sealer
    from identity.signing_keys import SigningKeys
    from identity.users import UserStore

_database_url_option = click.option(
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
def _opened(database_url: str, *, schema_current: bool, create: bool = False) -> Iterator[Engine]:
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
            _fail(f"{name}: there is no database here yet: `regional-menus db upgrade` creates it")
        engine = make_engine(database_url, Settings().database_pool())  # no variable sets the pool: never refused
    except sa.exc.ArgumentError:
        _fail(f"{name} is not a database URL (for example sqlite:///var/menus.sqlite3)")
    except (MissingDriver, ImportError) as error:
        _fail(f"{name}: {error}")
    try:
        if schema_current:
            require_current(engine)
        yield engine
    except SchemaOutOfDate as error:
        _fail(f"{name}: {error}")
    except sa.exc.DBAPIError as error:
        reason = str(error.orig).strip().splitlines()[0] if str(error.orig).strip() else type(error.orig).__name__
        _fail(f"{name}: the database cannot be used: {reason}")
    finally:
        engine.dispose()


def _database(*, schema_current: bool, create: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--database-url``: the command gets an engine, on a database at the current schema if ``schema_current``
    (a new SQLite file only if ``create``)."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @_database_url_option
        @functools.wraps(command)
        def wrapper(*args: Any, database_url: str, **kwargs: Any) -> Any:
            _settings()  # every MENUS_* variable is checked, whichever the command reads
            with _opened(database_url, schema_current=schema_current, create=create) as engine:
                return command(*args, engine=engine, **kwargs)

        return wrapper

    return decorate


_database_option = _database(schema_current=True)
_any_schema_database_option = _database(schema_current=False)
_new_database_option = _database(schema_current=False, create=True)  # db upgrade: the one that makes a database


def _json_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")(command)


class BadInput(click.ClickException):
    exit_code = 2


def _fail(message: str) -> Any:
    raise BadInput(message)


def _settings(*, port: int = DEFAULT_PORT) -> Settings:
    """The settings of the environment; a malformed MENUS_* variable is one line naming it, exit status 2."""
    try:
        return Settings.from_env(port=port)
    except ConfigurationError as error:
        raise BadInput(str(error)) from None


def _print(as_json: bool, document: Any, text: str) -> None:
    click.echo(json.dumps(document, ensure_ascii=False, indent=2) if as_json else text)


def _user_of(engine: Engine, email: str) -> tuple[UserStore, str]:
    """The users and the id of the account with this address; none is a bad input."""
    from identity.users import UserStore

    users = UserStore(engine)
    user_id = users.account_id(email)
    if user_id is None:
        raise BadInput("no user has this email address")
    return users, user_id


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Aligned columns under a header line (the header alone when there are no rows)."""
    cells = [list(headers), *[["" if value is None else str(value) for value in row] for row in rows]]
    widths = [max(len(row[column]) for row in cells) for column in range(len(headers))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def _check_port_free(host: str, port: int) -> None:
    """Refuse at once, before any data is touched, when another process listens on ``host:port``."""
    if port == 0:
        return  # any free port
    try:
        family, kind, protocol, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as error:
        _fail(f"cannot listen on {host!r}: {error.strerror}")
    with socket.socket(family, kind, protocol) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds: TIME_WAIT is no obstacle
        try:
            probe.bind(address)
        except OSError as error:
            _fail(
                f"cannot listen on {host}:{port}: {error.strerror} (is the service already running there?); "
                "nothing was changed"
            )


@click.group()
@click.version_option(package_name="regional-menus")
def main() -> None:
    """Regional Menus: the menus API and its identity endpoints."""
    configure_command()  # audit lines on standard error; `serve` sets up the server's logging instead


@main.command(short_help="Run the service (--demo: with demo data to try it).")
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to listen on (0.0.0.0 or :: for all).")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535), help="Port.")
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    help="Run gunicorn with this many uvicorn workers (production); without it, one uvicorn process.",
)
@click.option(
    "--demo",
    is_flag=True,
    help="Bring the schema up to date, create demo data (API key, org, user, client), print how to use it.",
)
@_database_url_option
def serve(host: str, port: int, workers: int | None, demo: bool, database_url: str) -> None:
    """Run the service (on a database at the current schema: see `db upgrade`)."""
    from service.server.collection import pause_collection

    pause_collection()  # until the app is built and frozen (service.server.collection)
    from service.database.schema import require_current
    from service.ops import multiprocess
    from service.ops.logs import configure as configure_logging
    from service.server.bounded_http import HeadLimits
    from service.server.runner import Listen, run_single, run_workers

    _check_port_free(host, port)  # before anything is written: a second demo must not replace the first one's key
    with _opened(database_url, schema_current=False, create=demo) as engine:
        settings = _settings(port=port).with_changes(database_url=engine.url.render_as_string(False))
        if demo:  # the demo's modules (mail, passwords, Alembic) are loaded for it alone
            from service.cli.demo import prepare as prepare_demo
            from service.database.schema import upgrade
            from service.mail.transports import outbox_folder

            # development: back-channel logout URIs may reach loopback (identity/outbound_uris.py); mail goes to
            # .eml files beside the database unless a transport is set, each logged with its link
            settings = settings.with_changes(outbound_loopback=True, mail_log_links=True)
            if not settings.smtp_url and not settings.mail_dir:
                settings = settings.with_changes(mail_dir=str(outbox_folder(settings.database_url).absolute()))

            upgrade(engine)
            click.echo(prepare_demo(engine, settings).instructions)
        require_current(engine)
        head = HeadLimits(
            settings.head_line_limit, settings.head_limit, settings.head_fields_limit, settings.head_timeout
        )
        listen = Listen(host, port, settings.keep_alive, settings.graceful_timeout, head)
        configure_logging()  # JSON lines; gunicorn's master and workers get the same set-up (service.server.runner)
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


@main.group("db", short_help="The state database's schema and its upkeep.")
def db_group() -> None:
    """The state database's schema (Alembic migrations)."""


@db_group.command("upgrade", short_help="Apply the migrations the database lacks.")
@_json_option
@_new_database_option
def db_upgrade(as_json: bool, engine: Engine) -> None:
    """Apply every migration the database lacks, in one transaction. Stop the service's nodes first."""
    from service.database.schema import upgrade

    before, after = upgrade(engine)
    text = f"already at {after}" if before == after else f"upgraded from {before or 'an empty database'} to {after}"
    _print(as_json, {"from": before, "to": after}, text)


@db_group.command("current", short_help="Show the schema revision and the one needed.")
@_json_option
@_any_schema_database_option
def db_current(as_json: bool, engine: Engine) -> None:
    """Print the database's schema revision and the one this version needs."""
    from service.database.schema import current, head

    at, needed = current(engine), head()
    state = "current" if at == needed else "behind: run `regional-menus db upgrade`"
    text = _table(["REVISION", "NEEDED", "STATE"], [[at or "none", needed, state]])
    _print(as_json, {"revision": at, "head": needed, "current": at == needed}, text)


@db_group.command("purge", short_help="Delete expired records now.")
@_json_option
@_database_option
def db_purge(as_json: bool, engine: Engine) -> None:
    """Delete expired records now (a running service does it every MENUS_PURGE_INTERVAL seconds)."""
    from identity.purge import Purger

    settings = _settings()
    tuning = settings.tuning()
    deleted = Purger(engine, settings.lifetimes().refresh_token, tuning.purge_grace, tuning.throttle.window).purge()
    _print(as_json, deleted, _table(["TABLE", "DELETED"], list(deleted.items())))


@main.group("api-keys", short_help="Issue, list and revoke API keys of the menus API.")
def api_keys_group() -> None:
    """Issue, list and revoke API keys of the menus API."""


@api_keys_group.command("create", short_help="Create a key and print it once.")
@click.option("--name", required=True, help="Who or what the key is for.")
@click.option("--org", "org_id", default=None, help="The organization that owns the key (its console shows it).")
@_json_option
@_database_option
def api_keys_create(name: str, org_id: str | None, as_json: bool, engine: Engine) -> None:
    """Create a key and print it once; only its hash is kept."""
    from identity.api_keys import ApiKeyStore

    try:
        record, key = ApiKeyStore(engine, max_per_org=max_keys_per_org_from(os.environ)).create(name, org_id=org_id)
    except ValueError as error:  # KeyLimitReached too: the organization's active keys are at the cap
        _fail(str(error))
    text = _table(["ID", "NAME", "KEY (shown once)"], [[record.id, record.name, key]])
    _print(as_json, {"id": record.id, "name": record.name, "key": key}, text)


@api_keys_group.command("list", short_help="List keys (never the keys themselves).")
@_json_option
@_database_option
def api_keys_list(as_json: bool, engine: Engine) -> None:
    """List keys (never the keys themselves)."""
    from identity.api_keys import ApiKeyStore

    records = ApiKeyStore(engine).list()
    rows = [[r.id, r.name, "revoked" if r.revoked_at else "active"] for r in records]
    _print(as_json, [r.as_dict() for r in records], _table(["ID", "NAME", "STATE"], rows))


@api_keys_group.command("revoke", short_help="Revoke a key; it stops working at once.")
@click.argument("key_id")
@_json_option
@_database_option
def api_keys_revoke(key_id: str, as_json: bool, engine: Engine) -> None:
    """Revoke a key; it stops working at once. A key already revoked stays so: exit 0, "already revoked", and no
    second audit line."""
    from identity.api_keys import ApiKeyStore, UnknownApiKey

    keys = ApiKeyStore(engine)
    try:
        already = keys.get(key_id).revoked_at is not None
        record = keys.revoke(key_id)  # writes its audit line only if it revoked the key now
    except UnknownApiKey:
        _fail(f"no API key has the id {key_id!r}")
    state = f"already revoked ({record.revoked_at:%Y-%m-%d %H:%M} UTC)" if already else "revoked"
    document = {**record.as_dict(), "already_revoked": already}
    _print(as_json, document, _table(["ID", "NAME", "STATE"], [[record.id, record.name, state]]))


ORG_HEADERS = ["ID", "SLUG", "NAME"]
USER_HEADERS = ["ID", "EMAIL", "NAME", "ORGS (id:role)"]


@main.group("orgs", short_help="Create and list organizations.")
def orgs_group() -> None:
    """Create and list organizations."""


@orgs_group.command("create", short_help="Create an organization.")
@click.option("--name", required=True, help="The organization's name.")
@_json_option
@_database_option
def orgs_create(name: str, as_json: bool, engine: Engine) -> None:
    """Create an organization."""
    from identity.organizations import OrganizationStore

    org = OrganizationStore(engine).create(name)
    _print(as_json, org.as_dict(), _table(ORG_HEADERS, [[org.id, org.slug, org.name]]))


@orgs_group.command("list", short_help="List organizations.")
@_json_option
@_database_option
def orgs_list(as_json: bool, engine: Engine) -> None:
    """List organizations (not the service's own, which owns the console's client)."""
    from identity.organizations import OrganizationStore
    from service.console_api.relying_party import SERVICE_ORG_ID

    orgs = [org for org in OrganizationStore(engine).list() if org.id != SERVICE_ORG_ID]
    _print(as_json, [o.as_dict() for o in orgs], _table(ORG_HEADERS, [[o.id, o.slug, o.name] for o in orgs]))


@main.group("users", short_help="Create, list, disable and enable users.")
def users_group() -> None:
    """Create and list users; reset a password, mark an address verified, disable and enable a user."""


@users_group.command("create", short_help="Create a user in one or more organizations.")
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
    from identity.users import UserStore

    password = sys.stdin.readline().rstrip("\r\n")
    user = UserStore(engine).create(email, name, password, [(org_id, role) for org_id in org_ids])
    _print(as_json, user.as_dict(), _table(USER_HEADERS, [_user_row(user)]))


@users_group.command("list", short_help="List users and their organizations.")
@_json_option
@_database_option
def users_list(as_json: bool, engine: Engine) -> None:
    """List users and their organizations."""
    from identity.users import UserStore

    users = UserStore(engine).list()
    _print(as_json, [u.as_dict() for u in users], _table(USER_HEADERS, [_user_row(u) for u in users]))


@users_group.command("reset-password", short_help="Replace a password; end every session.")
@click.argument("email")
@click.option("--password-stdin", is_flag=True, required=True, help="Read the new password from standard input.")
@_json_option
@_database_option
def users_reset_password(email: str, password_stdin: bool, as_json: bool, engine: Engine) -> None:
    """Replace a user's password (read from standard input) and end every session and token of the user."""
    from identity.password_reset import replace_password
    from identity.passwords import WeakPassword, check_strength
    from identity.revoked_grants import Revoker

    users, user_id = _user_of(engine, email)
    password = sys.stdin.readline().rstrip("\r\n")
    try:
        check_strength(password)
    except WeakPassword as error:
        _fail(str(error))
    replace_password(users, Revoker(engine), user_id, password)
    document = {"id": user_id, "email": users.get(user_id).email, "sessions_ended": True}
    _print(as_json, document, f"{document['email']}: password replaced; every session and token ended")


@users_group.command("verify-email", short_help="Mark a user's email address verified.")
@click.argument("email")
@_json_option
@_database_option
def users_verify_email(email: str, as_json: bool, engine: Engine) -> None:
    """Mark a user's email address verified (email_verified becomes true), as a followed mailed link would."""
    from identity import audit

    users, user_id = _user_of(engine, email)
    if not users.mark_email_verified(user_id, email):
        _fail("no user has this email address")
    user = users.get(user_id)
    audit.record(audit.EMAIL_VERIFIED, user_id=user.id)
    document = {"id": user.id, "email": user.email, "email_verified": user.email_verified}
    _print(as_json, document, f"{user.email}: email address verified")


@users_group.command("disable", short_help="Stop a user's sign-ins; end every session.")
@click.argument("email")
@_json_option
@_database_option
def users_disable(email: str, as_json: bool, engine: Engine) -> None:
    """Disable a user: no sign-in from now on, and every session and token of the user ends at once."""
    from identity.disabled_users import disable
    from identity.revoked_grants import Revoker

    users, user_id = _user_of(engine, email)
    disable(users, Revoker(engine), user_id)
    user = users.get(user_id)
    document = {"id": user.id, "email": user.email, "disabled": True, "sessions_ended": True}
    _print(as_json, document, f"{user.email}: disabled; every session and token ended")


@users_group.command("enable", short_help="Let a disabled user sign in again.")
@click.argument("email")
@_json_option
@_database_option
def users_enable(email: str, as_json: bool, engine: Engine) -> None:
    """Enable a disabled user: they may sign in again (the tokens revoked when they were disabled stay revoked)."""
    from identity.disabled_users import enable

    users, user_id = _user_of(engine, email)
    enable(users, user_id)
    user = users.get(user_id)
    document = {"id": user.id, "email": user.email, "disabled": False}
    _print(as_json, document, f"{user.email}: enabled; the user may sign in again")


def _user_row(user: Any) -> list[str]:
    return [user.id, user.email, user.name, ",".join(f"{m.org.id}:{m.role}" for m in user.memberships)]


@main.group("clients", short_help="Register, list, update and delete clients.")
def clients_group() -> None:
    """Register, list and delete clients (applications)."""


@clients_group.command("create", short_help="Register a client; print its secret once.")
@click.option("--name", required=True, help="The application's name, shown on the consent page.")
@click.option("--org", "org_id", required=True, help="Id of the organization that owns the client.")
@click.option("--redirect-uri", "redirect_uris", multiple=True, help="Registered redirect URI; repeat for several.")
@click.option("--post-logout-redirect-uri", "logout_uris", multiple=True, help="Registered sign-out redirect URI.")
@click.option(
    "--auth-method",
    type=click.Choice(REGISTRABLE_AUTH_METHODS),
    required=True,
    help="Token endpoint auth method; none: a public client (a browser or native app), accepted where "
    "MENUS_PUBLIC_CLIENTS is on.",
)
@click.option("--jwks-file", type=click.File("r"), help="Public JWKS of the client (private_key_jwt).")
@click.option("--grant", "grants", multiple=True, type=click.Choice(GRANTS), help="Allowed grant; repeat for several.")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    type=click.Choice(SCOPES),
    help="Allowed scope; repeat for several. Without --scope: openid profile email offline_access for a sign-in "
    "client, and no application scope: members:read (reading every member's email) only when given.",
)
@click.option("--first-party", is_flag=True, help="Skip the consent page unless prompt=consent.")
@click.option("--pkce", type=click.Choice(["required", "optional"]), default="required", show_default=True)
@click.option(
    "--require-verified-email",
    is_flag=True,
    help="Issue no code until the user's email address is verified: the sign-in pauses on a check-your-email page.",
)
@click.option(
    "--web-origin",
    "web_origins",
    multiple=True,
    help="Origin (scheme://host[:port]) whose pages may call the token, revocation and userinfo endpoints; "
    "public clients only; repeat for several.",
)
@click.option(
    "--backchannel-logout-uri",
    help="URL where logout tokens are posted when a session the client holds ends (OpenID Connect Back-Channel "
    "Logout 1.0); https, or http on a loopback address; no fragment.",
)
@click.option(
    "--backchannel-logout-session-required",
    "session_required",
    is_flag=True,
    help="The client needs the sid claim in every logout token (one token per session it holds).",
)
@click.option(
    "--allow-internal",
    is_flag=True,
    help="Let the back-channel logout URI reach a loopback, private or unique-local address (a relying party inside "
    "your network); link-local and metadata addresses stay refused.",
)
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
    require_verified_email: bool,
    web_origins: tuple[str, ...],
    backchannel_logout_uri: str | None,
    session_required: bool,
    allow_internal: bool,
    as_json: bool,
    engine: Engine,
) -> None:
    """Register a client; its secret (for the secret methods) is printed once."""
    from identity.clients import PUBLIC

    jwks = None
    if jwks_file is not None:
        try:
            jwks = json.load(jwks_file)
        except ValueError:
            _fail("the JWKS file is not valid JSON")
    client, secret = _clients(engine).create(
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
        web_origins=web_origins,
        backchannel_logout_uri=backchannel_logout_uri,
        backchannel_logout_session_required=session_required,
        require_verified_email=require_verified_email,
        allow_internal=allow_internal,
    )
    if auth_method == PUBLIC and not _settings().public_clients:
        # Registered all the same (the nodes may turn public clients on later), with a word that this one will not.
        _warn(
            "MENUS_PUBLIC_CLIENTS is off here: a node with it off refuses this public client (invalid_client, and an "
            "error page at sign-in) until it is turned on (docs/identity.md, Browser and native apps)",
            as_json=as_json,
        )
    document = {**client.as_dict(), **({"client_secret": secret} if secret else {})}
    text = _table(
        ["ID", "NAME", "SECRET (shown once)"], [[client.id, client.name, secret or f"none ({client.auth_method})"]]
    )
    _print(as_json, document, text)


@clients_group.command("list", short_help="List clients (never their secrets).")
@_json_option
@_database_option
def clients_list(as_json: bool, engine: Engine) -> None:
    """List clients (never their secrets)."""
    from identity.clients import ClientStore

    clients = ClientStore(engine).list()
    rows = [[c.id, c.org_id, c.auth_method, " ".join(c.web_origins) or "-", c.name] for c in clients]
    _print(as_json, [c.as_dict() for c in clients], _table(["ID", "ORG", "AUTH METHOD", "WEB ORIGINS", "NAME"], rows))


@clients_group.command("update", short_help="Replace a client's URIs, origins or rules.")
@click.argument("client_id")
@click.option(
    "--redirect-uri", "redirect_uris", multiple=True, help="The redirect URIs, replacing the registered ones."
)
@click.option("--post-logout-redirect-uri", "logout_uris", multiple=True, help="The sign-out redirect URIs, replacing.")
@click.option("--web-origin", "web_origins", multiple=True, help="The web origins (public clients), replacing.")
@click.option("--no-post-logout-redirect-uris", "no_logout_uris", is_flag=True, help="Remove every sign-out URI.")
@click.option("--no-web-origins", is_flag=True, help="Remove every web origin.")
@click.option("--backchannel-logout-uri", help="The back-channel logout URI, replacing.")
@click.option(
    "--backchannel-logout-session-required/--no-backchannel-logout-session-required",
    "session_required",
    default=None,
    help="Whether the client needs the sid claim in its logout tokens.",
)
@click.option("--no-backchannel-logout-uri", is_flag=True, help="Remove the back-channel logout URI.")
@click.option(
    "--allow-internal",
    is_flag=True,
    help="Let the back-channel logout URI reach a loopback, private or unique-local address; without it, a new URI "
    "must reach the public internet.",
)
@click.option(
    "--require-verified-email/--no-require-verified-email",
    default=None,
    help="Whether the client gets codes only for users whose email address is verified.",
)
@_json_option
@_database_option
def clients_update(
    client_id: str,
    redirect_uris: tuple[str, ...],
    logout_uris: tuple[str, ...],
    web_origins: tuple[str, ...],
    no_logout_uris: bool,
    no_web_origins: bool,
    backchannel_logout_uri: str | None,
    session_required: bool | None,
    no_backchannel_logout_uri: bool,
    require_verified_email: bool | None,
    allow_internal: bool,
    as_json: bool,
    engine: Engine,
) -> None:
    """Replace a client's redirect URIs, sign-out redirect URIs or web origins, or whether it requires a verified
    email address; the id and secret stay."""

    if (
        (logout_uris and no_logout_uris)
        or (web_origins and no_web_origins)
        or (backchannel_logout_uri and no_backchannel_logout_uri)
    ):
        _fail("give either the values or the --no-… flag of the same list, not both")
    backchannel = "" if no_backchannel_logout_uri else backchannel_logout_uri
    if not (redirect_uris or logout_uris or web_origins or no_logout_uris or no_web_origins or allow_internal) and (
        backchannel is None and session_required is None and require_verified_email is None
    ):
        _fail(
            "nothing to change: give --redirect-uri, --post-logout-redirect-uri, --web-origin, "
            "--backchannel-logout-uri or --require-verified-email (or a --no-… flag), or "
            "--[no-]backchannel-logout-session-required"
        )
    try:
        client = _clients(engine).update(
            client_id,
            redirect_uris=redirect_uris or None,
            post_logout_redirect_uris=() if no_logout_uris else logout_uris or None,
            web_origins=() if no_web_origins else web_origins or None,
            backchannel_logout_uri=backchannel,
            backchannel_logout_session_required=session_required,
            require_verified_email=require_verified_email,
            allow_internal=allow_internal,
        )
    except UnknownRecord:
        _fail(f"no client has the id {client_id!r}")
    rows = [[client.id, " ".join(client.redirect_uris) or "-", " ".join(client.web_origins) or "-"]]
    _print(as_json, client.as_dict(), _table(["ID", "REDIRECT URIS", "WEB ORIGINS"], rows))


def _clients(engine: Engine) -> Any:
    """The client store, with this node's outbound rule (``MENUS_OUTBOUND_LOOPBACK``: identity/outbound_uris.py)."""
    from identity.clients import ClientStore
    from identity.outbound_uris import OutboundRule

    return ClientStore(engine, outbound=OutboundRule(loopback=outbound_loopback_from(os.environ)))


@clients_group.command("delete", short_help="Delete a client.")
@click.argument("client_id")
@_json_option
@_database_option
def clients_delete(client_id: str, as_json: bool, engine: Engine) -> None:
    """Delete a client."""
    from identity.clients import ClientStore

    try:
        ClientStore(engine).delete(client_id)
    except UnknownRecord:
        _fail(f"no client has the id {client_id!r}")
    _print(as_json, {"client_id": client_id, "deleted": True}, _table(["ID", "STATE"], [[client_id, "deleted"]]))


KEY_HEADERS = ["KID", "STATE", "SIGNS FROM"]


@main.group("keys", short_help="Rotate and list the token signing keys.")
def keys_group() -> None:
    """Rotate and list the ID token and access token signing keys."""


def _signing_keys(engine: Engine) -> SigningKeys:
    from identity.provider import signing_keys_of

    settings = _settings()
    return signing_keys_of(engine, settings.lifetimes(), settings.tuning(), _sealer(engine))


def _sealer(engine: Engine) -> Sealer:
    """The sealer of MENUS_SECRET_KEYS, or of the key file beside the database."""
    from service.database.sealing_keys import load_sealer

    try:
        return load_sealer(secret_keys_from(os.environ), engine.url.render_as_string(hide_password=False))
    except ValueError as error:
        raise BadInput(str(error)) from None


@keys_group.command("rotate", short_help="Publish a new signing key now.")
@_json_option
@_database_option
def keys_rotate(as_json: bool, engine: Engine) -> None:
    """Publish a new key now; it signs after MENUS_KEY_PUBLISH_DELAY seconds, when the current key retires."""
    info = _signing_keys(engine).rotate()
    at = SYSTEM_CLOCK.now()
    _print(as_json, info.as_dict(at), _table(KEY_HEADERS, [[info.kid, info.state(at), info.signs_from.isoformat()]]))


@keys_group.command("list", short_help="List signing keys and their states.")
@_json_option
@_database_option
def keys_list(as_json: bool, engine: Engine) -> None:
    """List signing keys and their states (published, signing, retired, expired)."""
    at = SYSTEM_CLOCK.now()
    infos = _signing_keys(engine).list()
    rows = [[i.kid, i.state(at), i.signs_from.isoformat()] for i in infos]
    _print(as_json, [i.as_dict(at) for i in infos], _table(KEY_HEADERS, rows))


@main.group("secrets", short_help="Keys and secrets at rest: seal them again.")
def secrets_group() -> None:
    """Signing keys and service secrets at rest: sealed with MENUS_SECRET_KEYS (else the key file)."""


@secrets_group.command("rotate", short_help="Seal every key and secret with the first key.")
@_json_option
@_database_option
def secrets_rotate(as_json: bool, engine: Engine) -> None:
    """Seal every signing key and service secret again with the first key of MENUS_SECRET_KEYS.

    Rows still in clear (a database from before sealing) are sealed too. Afterwards, the other keys can be
    removed from MENUS_SECRET_KEYS. Safe to run while the service runs, and to run again.
    """
    from identity.sealing import SealingError
    from service.database.sealing_keys import reseal

    try:
        done = reseal(engine, _sealer(engine), rotate=True)
    except SealingError as error:
        raise BadInput(str(error)) from None
    text = f"sealed with the first key: {done.signing_keys} signing keys, {done.service_secrets} service secrets"
    _print(as_json, done.as_dict(), text)


@secrets_group.command("new-key", short_help="Print a new key for MENUS_SECRET_KEYS.")
@_json_option
def secrets_new_key(as_json: bool) -> None:
    """Print a new key for MENUS_SECRET_KEYS (put it first to seal with it; keep the old ones after it)."""
    from identity.sealing import new_key

    key = new_key()
    _print(as_json, {"key": key}, key)


def run(args: list[str] | None = None) -> None:
    """Entry point: any bad input is one line on stderr (``{"error": …}`` under ``--json``) and exit status 2."""
    arguments = sys.argv[1:] if args is None else args
    try:
        main.main(args=arguments, prog_name="regional-menus", standalone_mode=False)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.Abort:
        sys.exit(130)
    except click.ClickException as error:
        _error(error.format_message(), as_json="--json" in arguments)
    except (InvalidInput, _sealing_error()) as error:  # the identity domain's refusal of bad input or of the keys
        _error(str(error), as_json="--json" in arguments)
    except ConfigurationError as error:  # a MENUS_* variable that cannot be used: one line naming it
        _error(str(error), as_json="--json" in arguments)


def _one_line(message: str) -> str:
    """``message`` on one line: each line break, with the tabs and spaces around it (click lists a missing
    option's choices one a line, each after a tab), becomes one space."""
    return re.sub(r"[ \t]*\n\s*", " ", message).strip()


def _warn(message: str, *, as_json: bool) -> None:
    """A warning on standard error (``{"warning": …}`` under ``--json``); the command goes on."""
    click.echo(
        json.dumps({"warning": message}, ensure_ascii=False) if as_json else f"regional-menus: warning: {message}",
        err=True,
    )


def _sealing_error() -> type[Exception]:
    """identity.sealing's refusal, imported only when an exception reaches ``run`` (it loads cryptography)."""
    from identity.sealing import SealingError

    return SealingError


def _error(message: str, *, as_json: bool) -> None:
    line = _one_line(message)
    click.echo(
        json.dumps({"error": line}, ensure_ascii=False) if as_json else f"regional-menus: error: {line}", err=True
    )
    sys.exit(2)
