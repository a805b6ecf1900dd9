"""``regional-menus clients``: the registered applications (OAuth 2.0 and OpenID Connect clients)."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import click

from identity.common.errors import UnknownRecord
from identity.common.vocabulary import GRANTS, REGISTRABLE_AUTH_METHODS, SCOPES
from service.cli.common import database_option, environment_settings, fail, json_option, output, table, warn
from service.settings import outbound_loopback_from

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


@click.group("clients", short_help="Register, list, update and delete clients.")
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
@json_option
@database_option
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
    from identity.clients.registry import PUBLIC

    jwks = None
    if jwks_file is not None:
        try:
            jwks = json.load(jwks_file)
        except ValueError:
            fail("the JWKS file is not valid JSON")
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
    if auth_method == PUBLIC and not environment_settings().public_clients:
        # Registered all the same (the nodes may turn public clients on later), with a word that this one will not.
        warn(
            "MENUS_PUBLIC_CLIENTS is off here: a node with it off refuses this public client (invalid_client, and an "
            "error page at sign-in) until it is turned on (docs/identity.md, Browser and native apps)",
            as_json=as_json,
        )
    document = {**client.as_dict(), **({"client_secret": secret} if secret else {})}
    text = table(
        ["ID", "NAME", "SECRET (shown once)"], [[client.id, client.name, secret or f"none ({client.auth_method})"]]
    )
    output(as_json, document, text)


@clients_group.command("list", short_help="List clients (never their secrets).")
@json_option
@database_option
def clients_list(as_json: bool, engine: Engine) -> None:
    """List clients (never their secrets)."""
    from identity.clients.registry import ClientStore

    clients = ClientStore(engine).list()
    rows = [[c.id, c.org_id, c.auth_method, " ".join(c.web_origins) or "-", c.name] for c in clients]
    output(as_json, [c.as_dict() for c in clients], table(["ID", "ORG", "AUTH METHOD", "WEB ORIGINS", "NAME"], rows))


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
@json_option
@database_option
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
        fail("give either the values or the --no-… flag of the same list, not both")
    backchannel = "" if no_backchannel_logout_uri else backchannel_logout_uri
    if not (redirect_uris or logout_uris or web_origins or no_logout_uris or no_web_origins or allow_internal) and (
        backchannel is None and session_required is None and require_verified_email is None
    ):
        fail(
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
        fail(f"no client has the id {client_id!r}")
    rows = [[client.id, " ".join(client.redirect_uris) or "-", " ".join(client.web_origins) or "-"]]
    output(as_json, client.as_dict(), table(["ID", "REDIRECT URIS", "WEB ORIGINS"], rows))


def _clients(engine: Engine) -> Any:
    """The client store, with this node's outbound rule (``MENUS_OUTBOUND_LOOPBACK``:
    identity/common/outbound_uris.py)."""
    from identity.clients.registry import ClientStore
    from identity.common.outbound_uris import OutboundRule

    return ClientStore(engine, outbound=OutboundRule(loopback=outbound_loopback_from(os.environ)))


@clients_group.command("delete", short_help="Delete a client.")
@click.argument("client_id")
@json_option
@database_option
def clients_delete(client_id: str, as_json: bool, engine: Engine) -> None:
    """Delete a client."""
    from identity.clients.registry import ClientStore

    try:
        ClientStore(engine).delete(client_id)
    except UnknownRecord:
        fail(f"no client has the id {client_id!r}")
    output(as_json, {"client_id": client_id, "deleted": True}, table(["ID", "STATE"], [[client_id, "deleted"]]))
