"""Clients (applications): each belongs to one organization.

A client has redirect URIs, sign-out redirect URIs, one token endpoint auth
method, its public JWKS for ``private_key_jwt``, allowed grants and scopes, a
first-party flag (first-party clients skip consent unless ``prompt=consent``)
and a PKCE policy (S256 required unless registered optional). Client secrets
are 256-bit random values stored only as SHA-256 hashes.

A public client (auth method ``none``: a browser or native app, which has nowhere to keep a
secret, RFC 8252 §8.5) has no secret, always uses PKCE S256 (RFC 9700 §2.1.1), never the
``client_credentials`` grant, and may register web origins: the origins (scheme, host, port)
whose pages may call the token, revocation and userinfo endpoints. Only nodes with
``MENUS_PUBLIC_CLIENTS`` on accept one (``identity/clients/client_auth.py``,
``identity/interaction/authorization_request.py``).

A client may register a back-channel logout URI (OpenID Connect Back-Channel Logout 1.0 §2.2), where logout
tokens are posted when a session it holds ends (``identity/sessions/backchannel_logout.py``), and whether it requires
the ``sid`` claim in them (``backchannel_logout_session_required``; false when omitted).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from time import monotonic
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from identity.clients.client_rules import APPLICATION_SCOPES as APPLICATION_SCOPES
from identity.clients.client_rules import changes_of, checked_scopes, new_client, new_secret
from identity.clients.metadata import check_redirect_uri
from identity.clients.records import Client as Client
from identity.clients.records import StaleClient as StaleClient
from identity.clients.records import client_of, row_of, stored
from identity.clients.records import hash_secret as hash_secret
from identity.common import token_tables
from identity.common.clock import SYSTEM_CLOCK, Clock
from identity.common.database import writing
from identity.common.errors import InvalidInput, UnknownRecord
from identity.common.outbound_uris import NO_INTERNAL, OutboundRule
from identity.common.tables import clients, organizations
from identity.common.text import has_control
from identity.common.vocabulary import AUTH_METHODS as AUTH_METHODS
from identity.common.vocabulary import GRANTS as GRANTS
from identity.common.vocabulary import PUBLIC as PUBLIC
from identity.common.vocabulary import REGISTRABLE_AUTH_METHODS as REGISTRABLE_AUTH_METHODS
from identity.common.vocabulary import SCOPES as SCOPES


class ClientStore:
    def __init__(
        self,
        engine: Engine,
        clock: Clock = SYSTEM_CLOCK,
        *,
        recent_max_age: float = 0.0,
        recent_size: int = 1024,
        outbound: OutboundRule = NO_INTERNAL,
    ) -> None:
        """``recent_max_age``: seconds ``recent`` answers a client from memory (0: never), for at most
        ``recent_size`` clients. ``outbound``: what a back-channel logout URI may reach on this node
        (identity/common/outbound_uris.py; whether loopback is allowed)."""
        self._engine = engine
        self._clock = clock
        self._outbound = outbound
        self._recent_max_age = recent_max_age
        self._recent_size = recent_size
        self._recent: dict[str, tuple[float, Client]] = {}  # client id: (monotonic time read, client)
        self._recent_lock = threading.Lock()

    def recent(self, client_id: str) -> Client | None:
        """The client as read at most ``recent_max_age`` seconds ago (client authentication: a client presents
        its credentials again and again). A change made through this store is seen at once; one made elsewhere
        (another node, the command line) within that age; a token is only ever recorded while its client is
        registered with the secret it used (``AccessTokenStore.record``). Unknown ids are never kept."""
        now = monotonic()
        hit = self._recent.get(client_id)
        if hit is not None and now - hit[0] < self._recent_max_age:
            return hit[1]
        client = self.get(client_id)
        with self._recent_lock:
            if client is None or self._recent_max_age <= 0:
                self._recent.pop(client_id, None)
                return client
            if client_id not in self._recent and len(self._recent) >= self._recent_size:
                del self._recent[next(iter(self._recent))]  # the oldest kept
            self._recent[client_id] = (now, client)
        return client

    def _forget(self, client_id: str) -> None:
        with self._recent_lock:
            self._recent.pop(client_id, None)

    def create(
        self,
        *,
        name: str,
        org_id: str,
        auth_method: str,
        redirect_uris: Sequence[str] = (),
        post_logout_redirect_uris: Sequence[str] = (),
        grants: Sequence[str] = (),
        scopes: Sequence[str] = (),
        first_party: bool = False,
        pkce_required: bool = True,
        jwks: Any = None,
        web_origins: Sequence[str] = (),
        backchannel_logout_uri: str | None = None,
        backchannel_logout_session_required: bool = False,
        require_verified_email: bool = False,
        allow_internal: bool = False,
        connection: Connection | None = None,
    ) -> tuple[Client, str | None]:
        """Register a client; return it and its secret (None for private_key_jwt and public clients), shown once.
        ``allow_internal``: the back-channel logout URI may reach internal addresses (an operator's decision, the
        command line's ``--allow-internal``; never a client owner's). ``connection``: write in the caller's
        transaction (a create of the management API and its idempotency key), else in one of its own."""
        client, secret = new_client(
            name=name,
            org_id=org_id,
            auth_method=auth_method,
            redirect_uris=redirect_uris,
            post_logout_redirect_uris=post_logout_redirect_uris,
            grants=grants,
            scopes=scopes,
            first_party=first_party,
            pkce_required=pkce_required,
            jwks=jwks,
            web_origins=web_origins,
            backchannel_logout_uri=backchannel_logout_uri,
            backchannel_logout_session_required=backchannel_logout_session_required,
            require_verified_email=require_verified_email,
            outbound=replace(self._outbound, internal=allow_internal),
            created_at=self._clock.now(),
        )
        with self._within(connection) as writer:
            self._insert(writer, client)
        return client, secret

    @staticmethod
    def _insert(connection: Connection, client: Client) -> None:
        if connection.scalar(sa.select(organizations.c.id).where(organizations.c.id == client.org_id)) is None:
            raise InvalidInput(f"no organization has the id {client.org_id!r}")
        connection.execute(clients.insert().values(**row_of(client), created_at=client.created_at))

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A transaction of the clients' database, begun as a writer (``writing``: the row a change reads stays as
        read until it commits): a change and its organization's trail entry commit together or not at all. Pass
        it as ``connection`` to the changes below, then ``changed`` once it has committed."""
        with self._engine.connect() as connection, connection.begin():
            writing(connection)
            yield connection

    @contextmanager
    def _within(self, connection: Connection | None) -> Iterator[Connection]:
        """The caller's transaction (begun by ``transaction``), or one of this change's own."""
        if connection is not None:
            yield connection
        else:
            with self.transaction() as own:
                yield own

    def changed(self, client_id: str) -> None:
        """After the commit of a change made in the caller's transaction: this process sees it at once."""
        self._forget(client_id)

    def of_organization(self, org_id: str) -> list[Client]:
        """The organization's clients, oldest first."""
        with self._engine.connect() as connection:
            rows = connection.execute(
                sa.select(clients).where(clients.c.org_id == org_id).order_by(clients.c.created_at, clients.c.id)
            ).all()
        return [client_of(row) for row in rows]

    def ensure_first_party(
        self,
        *,
        client_id: str,
        name: str,
        org_id: str,
        secret: str,
        redirect_uris: Sequence[str],
        post_logout_redirect_uris: Sequence[str],
    ) -> Client:
        """Register (or bring up to date) a first-party confidential client with a fixed id and a secret every
        node derives alike, so that one registration serves every node: the service's own developer console.

        Authorization code with PKCE S256 only, ``client_secret_basic``, scopes ``openid profile email``."""
        client = Client(
            id=client_id,
            org_id=org_id,
            name=name,
            auth_method="client_secret_basic",
            redirect_uris=tuple(check_redirect_uri(uri) for uri in dict.fromkeys(redirect_uris)),
            post_logout_redirect_uris=tuple(
                check_redirect_uri(uri) for uri in dict.fromkeys(post_logout_redirect_uris)
            ),
            grants=("authorization_code",),
            scopes=("openid", "profile", "email"),
            first_party=True,
            pkce_required=True,
            jwks=None,
            secret_hash=hash_secret(secret),
        )
        values = row_of(client)
        try:
            with self._engine.begin() as connection:
                if connection.execute(_BY_ID, {"client_id": client_id}).first() is None:
                    connection.execute(clients.insert().values(**values, created_at=self._clock.now()))
                    return client
        except IntegrityError:
            pass  # another node registered it at the same moment: bring it up to date below
        with self._engine.begin() as connection:
            connection.execute(clients.update().where(clients.c.id == client_id).values(**values))
        return client

    def get(self, client_id: str) -> Client | None:
        if has_control(client_id):  # names no client (and PostgreSQL refuses a NUL byte in a query)
            return None
        with self._engine.connect() as connection:
            row = connection.execute(_BY_ID, {"client_id": client_id}).first()
        return client_of(row) if row else None

    def same_organization(self, client_id: str, caller: Client) -> bool:
        """Whether ``caller`` may introspect or revoke a token of ``client_id`` (RFC 7662 §2.1, RFC 7009 §2.1):
        the token's client is the caller, or (for a confidential caller) a client of the same organization."""
        if client_id == caller.id:
            return True
        if caller.public:
            return False  # anyone may send a public client's id: it reaches no other client's tokens
        owner = self.get(client_id)
        return owner is not None and owner.org_id == caller.org_id

    def update(
        self,
        client_id: str,
        *,
        redirect_uris: Sequence[str] | None = None,
        post_logout_redirect_uris: Sequence[str] | None = None,
        web_origins: Sequence[str] | None = None,
        backchannel_logout_uri: str | None = None,
        backchannel_logout_session_required: bool | None = None,
        require_verified_email: bool | None = None,
        allow_internal: bool = False,
        name: str | None = None,
        org_id: str | None = None,
        expected: str | None = None,
        tag_of: Callable[[Client], str] | None = None,
        connection: Connection | None = None,
    ) -> Client:
        """Replace the name, lists and flags given (None: keep), under the same id and secret; checked as at
        registration. A back-channel logout URI ``""`` removes it (and, unless told otherwise, the requirement of
        ``sid``). ``allow_internal``: as at registration; a new URI without it must reach the public internet,
        the URI kept keeps what was allowed for it. ``org_id``: only a client of that organization (any other is
        ``UnknownRecord``); ``expected``: only while ``tag_of`` the client read is that (``StaleClient`` else).
        ``connection``: in the caller's ``transaction``, else in one of its own."""
        with self._within(connection) as writer:
            client = _locked(writer, client_id, org_id=org_id, expected=expected, tag_of=tag_of)
            changes = changes_of(
                client,
                self._outbound,
                name=name,
                redirect_uris=redirect_uris,
                post_logout_redirect_uris=post_logout_redirect_uris,
                web_origins=web_origins,
                backchannel_logout_uri=backchannel_logout_uri,
                backchannel_logout_session_required=backchannel_logout_session_required,
                require_verified_email=require_verified_email,
                allow_internal=allow_internal,
            )
            if changes:
                changes["version"] = client.version + 1
                writer.execute(
                    clients.update()
                    .where(clients.c.id == client_id)
                    .values({column: stored(value) for column, value in changes.items()})
                )
        self._forget(client_id)
        return replace(client, **changes)

    def set_scopes(
        self, client_id: str, scopes: Sequence[str], grants: Sequence[str], *, connection: Connection | None = None
    ) -> Client:
        """Replace the client's scopes and grants (an owner granting management scopes); checked as at
        registration. ``connection``: in the caller's ``transaction``, else in one of its own."""
        scopes, grants = checked_scopes(scopes, grants)
        with self._within(connection) as writer:
            changed = writer.execute(
                clients.update()
                .where(clients.c.id == client_id)
                .values(scopes=list(scopes), grants=list(grants), version=clients.c.version + 1)
            ).rowcount
            if changed == 0:
                raise UnknownRecord(client_id)
            row = writer.execute(_BY_ID, {"client_id": client_id}).one()
        self._forget(client_id)
        return client_of(row)

    def web_origins(self) -> frozenset[str]:
        """Every origin some public client registered."""
        with self._engine.connect() as connection:
            rows = connection.execute(_WEB_ORIGINS).all()
        return frozenset(origin for row in rows for origin in row.web_origins or ())

    def list(self) -> list[Client]:
        with self._engine.connect() as connection:
            rows = connection.execute(sa.select(clients).order_by(clients.c.created_at, clients.c.id)).all()
        return [client_of(row) for row in rows]

    def new_secret(
        self, client_id: str, grace: timedelta | None = None, *, connection: Connection | None = None
    ) -> str:
        """Replace the secret of a client_secret_* client. Shown this once. Without ``grace`` the old one stops
        working at once; with it, it keeps working that long (and any secret before it stops at once).
        ``connection``: in the caller's ``transaction``, else in one of its own."""
        secret = new_secret()
        if grace:
            previous: dict[str, Any] = {
                "previous_secret_hash": clients.c.secret_hash,
                "previous_secret_expires_at": self._clock.now() + grace,
            }
        else:
            previous = {"previous_secret_hash": None, "previous_secret_expires_at": None}
        with self._within(connection) as writer:
            changed = writer.execute(
                clients.update()
                .where(clients.c.id == client_id, clients.c.auth_method.not_in(("private_key_jwt", PUBLIC)))
                .values(secret_hash=hash_secret(secret), version=clients.c.version + 1, **previous)
            )
            if changed.rowcount == 0:
                raise UnknownRecord(client_id)
        self._forget(client_id)  # the old secret stops working at once here (elsewhere: AccessTokenStore.record)
        return secret

    def delete(
        self,
        client_id: str,
        *,
        expected: str | None = None,
        tag_of: Callable[[Client], str] | None = None,
        connection: Connection | None = None,
    ) -> None:
        """Delete the client and, in the same transaction, revoke every token issued to it. ``expected``: only while
        ``tag_of`` the client, read under the delete's lock, is that (``StaleClient`` else: a change that landed
        after the caller's read is never deleted unseen). ``connection``: in the caller's ``transaction``, else in
        one of its own."""
        at = self._clock.now()
        with self._within(connection) as writer:
            if expected is not None:
                _locked(writer, client_id, expected=expected, tag_of=tag_of)
            if writer.execute(clients.delete().where(clients.c.id == client_id)).rowcount == 0:
                raise UnknownRecord(client_id)
            token_tables.revoke_client(writer, client_id, at)
        self._forget(client_id)


# Built once: every token request looks its client up, and building a statement costs more than running it.
_BY_ID = sa.select(clients).where(clients.c.id == sa.bindparam("client_id"))
_WEB_ORIGINS = sa.select(clients.c.web_origins).where(clients.c.auth_method == PUBLIC)


def _locked(
    writer: Connection,
    client_id: str,
    *,
    org_id: str | None = None,
    expected: str | None = None,
    tag_of: Callable[[Client], str] | None = None,
) -> Client:
    """The client, read under the change's lock (``FOR UPDATE``; SQLite's writer): ``UnknownRecord`` when there is
    none (or it is not ``org_id``'s), ``StaleClient`` when ``tag_of`` it is not ``expected`` (the version its
    change was read at)."""
    row = writer.execute(_BY_ID.with_for_update(), {"client_id": client_id}).first()
    if row is None:
        raise UnknownRecord(client_id)
    client = client_of(row)
    if org_id is not None and client.org_id != org_id:
        raise UnknownRecord(client_id)
    if expected is not None and tag_of is not None and tag_of(client) != expected:
        raise StaleClient(client_id)
    return client
