"""An organization's connection to its own OpenID provider: one per organization, registered by an owner.

Saving a connection fetches the issuer's discovery document and validates it (provider_metadata.py); the validated
metadata is kept with it, so a sign-in never waits for discovery. The client secret is sealed at rest with the
operator's keys (identity/keys/sealing.py), as every secret the service must be able to read back; it is never
shown again. Discovery fetches are throttled per organization (``DISCOVERY_PER_MINUTE``): the form that saves and
tests a connection cannot be made to hammer a provider.

A connection covers the organization's claimed domains (``domains`` None: every one, today's and later ones), or the
ones it names. A change is handed a callback run in its own transaction (``Within``), so the organization's trail
(identity/organizations/trail.py) holds an entry exactly when the change happened.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection as Transaction
from sqlalchemy.engine import Engine

from identity.common import audit
from identity.common.clock import SYSTEM_CLOCK, Clock, utc
from identity.common.errors import InvalidInput
from identity.common.outbound_uris import OutboundRule
from identity.common.text import has_control
from identity.common.upsert import dialect_insert
from identity.common.vocabulary import ROLES
from identity.federation.errors import FederationError
from identity.federation.provider_metadata import ProviderMetadata, check_issuer, discover
from identity.federation.tables import federation_connections
from identity.federation.token_exchange import UpstreamClient
from identity.federation.upstream_http import UpstreamHttp
from identity.keys.sealing import Sealer

DEFAULT_SCOPES = ("openid", "email", "profile")
MAX_SCOPES = 20
MAX_SCOPE = 100  # characters of one scope
MAX_CLIENT_ID = 255
MAX_SECRET = 1024
DISCOVERY_PER_MINUTE = 5  # discovery fetches for one organization's connection in any minute, at most

Within = Callable[[Transaction], object]  # run in a change's transaction: its entry in the organization's trail


class ConnectionChanged(Exception):
    """The connection changed since it was read (a conditional save found another ``updated_at``)."""


@dataclass(frozen=True, slots=True)
class Connection:
    org_id: str
    issuer: str
    provider: ProviderMetadata
    client_id: str
    client_secret: str = field(repr=False)
    scopes: tuple[str, ...]
    default_role: str
    sso_required: bool
    created_at: datetime
    updated_at: datetime
    domains: tuple[str, ...] | None = None  # the claimed domains it covers; None: every one

    def covers(self, domain: str) -> bool:
        return self.domains is None or domain in self.domains

    def client(self) -> UpstreamClient:
        return UpstreamClient(
            connection_id=self.org_id,
            issuer=self.issuer,
            token_endpoint=self.provider.token_endpoint,
            jwks_uri=self.provider.jwks_uri,
            userinfo_endpoint=self.provider.userinfo_endpoint,
            client_id=self.client_id,
            client_secret=self.client_secret,
            algorithms=self.provider.algorithms,
            basic_auth=self.provider.auth_method == "client_secret_basic",
        )

    def as_dict(self) -> dict[str, object]:
        """What the console and the management API show: never the secret."""
        return {
            "org_id": self.org_id,
            "issuer": self.issuer,
            "client_id": self.client_id,
            "scopes": list(self.scopes),
            "default_role": self.default_role,
            "sso_required": self.sso_required,
            "domains": None if self.domains is None else list(self.domains),
            "created_at": self.created_at.isoformat().replace("+00:00", "Z"),
            "updated_at": self.updated_at.isoformat().replace("+00:00", "Z"),
            "provider": {
                "authorization_endpoint": self.provider.authorization_endpoint,
                "token_endpoint": self.provider.token_endpoint,
                "jwks_uri": self.provider.jwks_uri,
                "userinfo_endpoint": self.provider.userinfo_endpoint,
                "end_session_endpoint": self.provider.end_session_endpoint,
                "iss_parameter": self.provider.iss_parameter,
                "backchannel_logout": self.provider.backchannel_logout,
            },
        }


@dataclass(frozen=True, slots=True)
class ConnectionForm:
    """What an owner registers; ``client_secret`` None keeps the stored one (an edit that does not change it)."""

    issuer: str
    client_id: str
    client_secret: str | None
    scopes: Sequence[str] = DEFAULT_SCOPES
    default_role: str = "member"
    sso_required: bool = False
    domains: Sequence[str] | None = None  # the claimed domains it covers; None: every one


def check_scopes(scopes: Sequence[str]) -> tuple[str, ...]:
    """The scopes asked of the provider: ``openid`` always (first), each once, RFC 6749 §3.3's characters."""
    chosen = ["openid"]
    for scope in scopes:
        if not scope or len(scope) > MAX_SCOPE or any(ch in scope for ch in ' "\\') or not scope.isprintable():
            raise InvalidInput(f"a scope must be 1 to {MAX_SCOPE} printable characters without spaces or quotes")
        if scope not in chosen:
            chosen.append(scope)
    if len(chosen) > MAX_SCOPES:
        raise InvalidInput(f"at most {MAX_SCOPES} scopes")
    return tuple(chosen)


def _check_credential(value: str, what: str, bound: int) -> str:
    if not value or len(value) > bound or has_control(value):
        raise InvalidInput(f"the {what} must be 1 to {bound} characters")
    return value


class ConnectionStore:
    def __init__(
        self, engine: Engine, sealer: Sealer, http: UpstreamHttp, rule: OutboundRule, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self._engine = engine
        self._sealer = sealer
        self._http = http
        self.rule = rule  # the node's outbound rule: where a provider may be
        self._clock = clock
        self._fetches: dict[str, deque[float]] = {}  # org id: the monotonic times of its recent discovery fetches
        self._lock = threading.Lock()

    def discover(self, org_id: str, issuer: str) -> ProviderMetadata:
        """The issuer's validated discovery; ``InvalidInput`` for an issuer that may not be used, ``FederationError``
        for a provider whose answer cannot be, or past the organization's bound of fetches."""
        issuer = check_issuer(issuer, self.rule)
        self._count_fetch(org_id)
        return discover(self._http, issuer, self.rule)

    def _count_fetch(self, org_id: str) -> None:
        now = self._clock.monotonic()
        with self._lock:
            recent = self._fetches.setdefault(org_id, deque())
            while recent and now - recent[0] >= 60:
                recent.popleft()
            if len(recent) >= DISCOVERY_PER_MINUTE:
                raise FederationError(
                    "Too many attempts",
                    "The provider's discovery was fetched too often in the last minute. Try again shortly.",
                    status=429,
                    detail=f"discovery bound: {org_id}",
                )
            recent.append(now)

    def save(
        self,
        org_id: str,
        form: ConnectionForm,
        within: Within | None = None,
        *,
        unchanged_since: datetime | None = None,
        first: bool = False,
    ) -> Connection:
        """Register or change the organization's connection, with its provider discovered now; ``within`` runs in
        the transaction of the change. ``unchanged_since``: the connection's ``updated_at`` as read; the change is
        made only while it still is, in the one statement that makes it (``ConnectionChanged`` else). ``first``:
        only while the organization has none, in that same statement (``ConnectionChanged`` when another
        registration landed after the caller's read)."""
        client_id = _check_credential(form.client_id.strip(), "client id", MAX_CLIENT_ID)
        if form.default_role not in ROLES:
            raise InvalidInput(f"the default role must be one of {', '.join(ROLES)}")
        scopes = check_scopes(form.scopes)
        existing = self.get(org_id)
        if form.client_secret is None and existing is None:
            raise InvalidInput("the client secret is required")
        secret = (
            _check_credential(form.client_secret, "client secret", MAX_SECRET)
            if form.client_secret is not None
            else existing.client_secret  # type: ignore[union-attr]
        )
        provider = self.discover(org_id, form.issuer)
        at = self._clock.now()
        values = {
            "issuer": provider.issuer,
            "provider": provider.as_dict(),
            "client_id": client_id,
            "client_secret": self._sealer.seal(secret.encode()).decode(),
            "scopes": list(scopes),
            "default_role": form.default_role,
            "sso_required": form.sso_required,
            "domains": None if form.domains is None else sorted(set(form.domains)),
            "updated_at": at,
        }
        table = federation_connections
        unchanged = None if unchanged_since is None else table.c.updated_at == unchanged_since
        with self._engine.begin() as connection:
            insert = dialect_insert(connection.dialect.name)(table)
            inserted = insert.values(org_id=org_id, created_at=at, **values)
            written = connection.execute(
                (
                    inserted.on_conflict_do_nothing(index_elements=["org_id"])
                    if first
                    else inserted.on_conflict_do_update(index_elements=["org_id"], set_=values, where=unchanged)
                ).returning(table.c.org_id)
            ).first()
            if written is None:  # no row back: the condition did not hold
                raise ConnectionChanged(org_id)
            if within is not None:
                within(connection)
        audit.record(audit.CONNECTION_SAVED, org_id=org_id)
        saved = self.get(org_id)
        assert saved is not None
        return saved

    def set_sso_required(self, org_id: str, required: bool) -> bool:
        with self._engine.begin() as connection:
            return bool(
                connection.execute(
                    federation_connections.update()
                    .where(federation_connections.c.org_id == org_id)
                    .values(sso_required=required, updated_at=self._clock.now())
                ).rowcount
            )

    def get(self, org_id: str) -> Connection | None:
        with self._engine.connect() as connection:
            row = connection.execute(
                sa.select(federation_connections).where(federation_connections.c.org_id == org_id)
            ).first()
        if row is None:
            return None
        return Connection(
            org_id=row.org_id,
            issuer=row.issuer,
            provider=ProviderMetadata.from_dict(dict(row.provider)),
            client_id=row.client_id,
            client_secret=self._sealer.open(row.client_secret.encode()).decode(),
            scopes=tuple(row.scopes),
            default_role=row.default_role,
            sso_required=bool(row.sso_required),
            created_at=utc(row.created_at),
            updated_at=utc(row.updated_at),
            domains=None if row.domains is None else tuple(row.domains),
        )

    def sso_required_of(self, org_ids: Sequence[str]) -> list[str]:
        """Those of ``org_ids`` whose connection requires sign-in through it, in the order given."""
        if not org_ids:
            return []
        query = sa.select(federation_connections.c.org_id).where(
            federation_connections.c.org_id.in_(list(org_ids)), federation_connections.c.sso_required.is_(True)
        )
        with self._engine.connect() as connection:
            required = set(connection.scalars(query))
        return [org_id for org_id in org_ids if org_id in required]

    def delete(self, org_id: str, within: Within | None = None, *, unchanged_since: datetime | None = None) -> bool:
        """Remove the organization's connection (only while its ``updated_at`` is ``unchanged_since``, when given);
        ``within`` runs in the same transaction when one was removed."""
        table = federation_connections
        statement = table.delete().where(table.c.org_id == org_id)
        if unchanged_since is not None:
            statement = statement.where(table.c.updated_at == unchanged_since)
        with self._engine.begin() as connection:
            deleted = bool(connection.execute(statement).rowcount)
            if deleted and within is not None:
                within(connection)
        return deleted
