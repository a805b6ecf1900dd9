"""An organization's own OAuth clients (applications), registered and run by its owners and admins (and by its
clients with ``manage:clients``), within what an organization may have.

- Confidential clients (``client_secret_basic``, ``client_secret_post``, ``private_key_jwt`` with a JWKS), and
  public ones (``none``) only where the node allows public clients (``MENUS_PUBLIC_CLIENTS``).
- Grants among ``authorization_code``, ``refresh_token``, ``client_credentials``; scopes among the user scopes
  and ``members:read``. PKCE S256 always (``--pkce optional`` stays the operator's), never first-party (the
  operator's ``--first-party``), never an internal back-channel logout URI (the operator's ``--allow-internal``):
  the URI is checked by the node's outbound rule, at registration and again at delivery.
- The management scopes (``manage:*``) are granted per client by an owner only (``set_management_scopes``), never
  at registration and never by a token: a client with ``manage:clients`` cannot hand itself more.
- A secret is shown once. Rotating it keeps the previous one working for ``secret_grace``
  (``MENUS_CLIENT_SECRET_GRACE``), so the client's deployments can change over.

A change carries the version its author read (``If-Match``, the console's hidden field): ``Stale`` when the client
changed meanwhile. A client of another organization is ``Unknown``, as one that does not exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import Connection

from cursors import CursorCodec
from identity.clients.registry import Client, ClientStore, StaleClient
from identity.common.clock import SYSTEM_CLOCK, Clock
from identity.common.errors import InvalidInput, UnknownRecord
from identity.common.vocabulary import GRANTS, MANAGEMENT_SCOPES, PUBLIC, REGISTRABLE_AUTH_METHODS
from identity.organizations import rules, trail
from identity.organizations.actors import Actor
from identity.organizations.trail import Trail

CLIENT = "client"  # the kind of record in a version tag
ORGANIZATION_SCOPES = ("openid", "profile", "email", "offline_access", "members:read")


@dataclass(frozen=True, slots=True)
class Registration:
    """What an owner or admin registers (the console's form, the management API's body)."""

    name: str
    auth_method: str
    redirect_uris: Sequence[str] = ()
    post_logout_redirect_uris: Sequence[str] = ()
    web_origins: Sequence[str] = ()
    backchannel_logout_uri: str | None = None
    backchannel_logout_session_required: bool = False
    grants: Sequence[str] = ()
    scopes: Sequence[str] = ()
    jwks: Any = None


@dataclass(frozen=True, slots=True)
class Changes:
    """What a change replaces (None: kept). ``backchannel_logout_uri=""`` removes it."""

    name: str | None = None
    redirect_uris: Sequence[str] | None = None
    post_logout_redirect_uris: Sequence[str] | None = None
    web_origins: Sequence[str] | None = None
    backchannel_logout_uri: str | None = None
    backchannel_logout_session_required: bool | None = None
    changed: tuple[str, ...] = field(default=())  # the names of the fields given, for the trail


def _position(client: Client) -> tuple[str, str]:
    """Where a client stands in the list's order (oldest first), as a cursor names it."""
    return (client.created_at.isoformat() if client.created_at else "", client.id)


def tag(client: Client) -> str:
    return rules.version_tag(CLIENT, client.id, client.version)


def user_scopes(client: Client) -> tuple[str, ...]:
    return tuple(scope for scope in client.scopes if scope not in MANAGEMENT_SCOPES)


def management_scopes(client: Client) -> tuple[str, ...]:
    return tuple(scope for scope in client.scopes if scope in MANAGEMENT_SCOPES)


def as_dict(client: Client) -> dict[str, Any]:
    """The management API's ``Client``."""

    def iso(moment: datetime | None) -> str | None:
        return moment.isoformat().replace("+00:00", "Z") if moment else None

    return {
        "client_id": client.id,
        "name": client.name,
        "token_endpoint_auth_method": client.auth_method,
        "redirect_uris": list(client.redirect_uris),
        "post_logout_redirect_uris": list(client.post_logout_redirect_uris),
        "web_origins": list(client.web_origins),
        "backchannel_logout_uri": client.backchannel_logout_uri,
        "backchannel_logout_session_required": client.backchannel_logout_session_required,
        "grant_types": list(client.grants),
        "scopes": list(user_scopes(client)),
        "management_scopes": list(management_scopes(client)),
        "created_at": iso(client.created_at),
        "previous_secret_expires_at": iso(client.previous_secret_expires_at),
    }


@dataclass(frozen=True, slots=True)
class ClientPage:
    clients: list[Client]
    total: int
    next_cursor: str | None


class Applications:
    def __init__(
        self,
        clients: ClientStore,
        journal: Trail,
        cursor_key: bytes,
        *,
        public_clients: bool,
        secret_grace: timedelta,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._clients = clients
        self._trail = journal
        self._cursors = CursorCodec(cursor_key)
        self.public_clients = public_clients
        self.secret_grace = secret_grace
        self._clock = clock

    @property
    def auth_methods(self) -> tuple[str, ...]:
        return tuple(m for m in REGISTRABLE_AUTH_METHODS if m != PUBLIC or self.public_clients)

    def list(self, org_id: str) -> list[Client]:
        return self._clients.of_organization(org_id)

    def page(self, org_id: str, *, limit: int = 20, cursor: str | None = None) -> ClientPage:
        """Oldest first; a cursor names the last client of the page by its position in that order."""
        every = self.list(org_id)
        filters = f"clients|{org_id}"
        start = 0
        if cursor is not None:
            created, client_id = self._cursors.decode(cursor, filters)
            later = [i for i, c in enumerate(every) if _position(c) > (created, client_id)]
            start = later[0] if later else len(every)
        chosen = every[start : start + limit]
        next_cursor = None
        if start + limit < len(every) and chosen:
            next_cursor = self._cursors.encode(_position(chosen[-1]), filters)
        return ClientPage(chosen, len(every), next_cursor)

    def get(self, org_id: str, client_id: str) -> Client:
        client = self._clients.get(client_id)
        if client is None or client.org_id != org_id:
            raise rules.Unknown("The organization has no application with this client id.")
        return client

    def register(self, actor: Actor, registration: Registration) -> tuple[Client, str | None]:
        """A new client of the actor's organization; its secret (None without one), shown this once."""
        with self._clients.transaction() as connection:
            client, secret, written = self.register_in(connection, actor, registration)
        trail.logged(written)
        return client, secret

    def register_in(
        self, connection: Connection, actor: Actor, registration: Registration
    ) -> tuple[Client, str | None, trail.Written]:
        """``register`` in the caller's transaction (begun as a writer); the trail entry to log once it commits."""
        rules.require_manager(actor, "register applications")
        if registration.auth_method not in self.auth_methods:
            raise InvalidInput(f"the client authentication must be one of {', '.join(self.auth_methods)}")
        unknown = [grant for grant in registration.grants if grant not in GRANTS]
        if unknown:
            raise InvalidInput(f"unknown grant {unknown[0]!r}; grants are {', '.join(GRANTS)}")
        refused = [scope for scope in registration.scopes if scope not in ORGANIZATION_SCOPES]
        if refused:
            raise InvalidInput(
                f"an application may have the scopes {', '.join(ORGANIZATION_SCOPES)}; "
                "management scopes are granted by an owner once it is registered"
            )
        client, secret = self._clients.create(
            name=registration.name,
            org_id=actor.org_id,
            auth_method=registration.auth_method,
            redirect_uris=registration.redirect_uris,
            post_logout_redirect_uris=registration.post_logout_redirect_uris,
            grants=registration.grants,
            scopes=registration.scopes,
            first_party=False,
            pkce_required=True,
            jwks=registration.jwks,
            web_origins=registration.web_origins,
            backchannel_logout_uri=registration.backchannel_logout_uri,
            backchannel_logout_session_required=registration.backchannel_logout_session_required,
            connection=connection,
        )
        written = self._trail.record(connection, actor, trail.CLIENT_CREATED, client.id, name=client.name)
        return client, secret, written

    def change(self, actor: Actor, client_id: str, changes: Changes, expected: str | None = None) -> Client:
        rules.require_manager(actor, "change applications")
        try:
            with self._clients.transaction() as connection:
                client = self._clients.update(
                    client_id,
                    org_id=actor.org_id,
                    expected=expected,
                    tag_of=tag,
                    name=changes.name,
                    redirect_uris=changes.redirect_uris,
                    post_logout_redirect_uris=changes.post_logout_redirect_uris,
                    web_origins=changes.web_origins,
                    backchannel_logout_uri=changes.backchannel_logout_uri,
                    backchannel_logout_session_required=changes.backchannel_logout_session_required,
                    connection=connection,
                )
                fields = " ".join(changes.changed) or None
                written = self._trail.record(connection, actor, trail.CLIENT_UPDATED, client.id, fields=fields)
        except StaleClient:
            raise rules.Stale("The application changed since it was read; read it again and retry.") from None
        except UnknownRecord:
            raise rules.Unknown("The organization has no application with this client id.") from None
        self._clients.changed(client_id)
        trail.logged(written)
        return client

    def rotate_secret(self, actor: Actor, client_id: str) -> tuple[Client, str]:
        """A new secret, shown this once; the previous one works ``secret_grace`` longer."""
        rules.require_manager(actor, "rotate secrets")
        client = self.get(actor.org_id, client_id)
        if client.auth_method not in ("client_secret_basic", "client_secret_post"):
            raise rules.Conflict("This application has no secret: it signs with its own key, or is public.")
        with self._clients.transaction() as connection:
            secret = self._clients.new_secret(client_id, grace=self.secret_grace, connection=connection)
            written = self._trail.record(connection, actor, trail.CLIENT_SECRET_ROTATED, client_id)
        self._clients.changed(client_id)
        trail.logged(written)
        return self.get(actor.org_id, client_id), secret

    def set_management_scopes(self, actor: Actor, client_id: str, scopes: Sequence[str]) -> Client:
        """Owners only: the management scopes a confidential client may ask for with client_credentials."""
        if actor.role != "owner":
            raise rules.NotAllowed(f"Only an owner of {actor.whose} may grant management scopes.")
        client = self.get(actor.org_id, client_id)
        if client.public:
            raise rules.Conflict("A public application cannot use the management API.")
        wanted = tuple(scope for scope in MANAGEMENT_SCOPES if scope in scopes)
        grants = (
            client.grants
            if not wanted or "client_credentials" in client.grants
            else (*client.grants, "client_credentials")
        )
        with self._clients.transaction() as connection:
            changed = self._clients.set_scopes(
                client_id, (*user_scopes(client), *wanted), grants, connection=connection
            )
            written = self._trail.record(
                connection, actor, trail.CLIENT_MANAGEMENT_SCOPES_CHANGED, client_id, scopes=" ".join(wanted) or "none"
            )
        self._clients.changed(client_id)
        trail.logged(written)
        return changed

    def delete(self, actor: Actor, client_id: str, expected: str | None = None) -> None:
        """The client and every token issued to it, at once."""
        rules.require_manager(actor, "delete applications")
        client = self.get(actor.org_id, client_id)
        if client_id == actor.client_id:
            raise rules.Conflict(
                "A client cannot delete itself with its own token: an owner deletes it in the console."
            )
        try:
            with self._clients.transaction() as connection:
                self._clients.delete(client_id, expected=expected, tag_of=tag, connection=connection)
                written = self._trail.record(connection, actor, trail.CLIENT_DELETED, client_id, name=client.name)
        except StaleClient:
            raise rules.Stale("The application changed since it was read; read it again and retry.") from None
        except UnknownRecord:
            raise rules.Unknown("The organization has no application with this client id.") from None
        self._clients.changed(client_id)
        trail.logged(written)
