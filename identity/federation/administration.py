"""An organization's owner runs its connection: shows it, registers or changes it, deletes it, checks it.

Only an owner decides where the organization's members sign in (a connection can make members and, with SSO
required, stop their passwords): a member or an admin is refused (``NotAllowed``). A client of the organization
acts only with ``manage:connection``, which only an owner grants (identity/organizations/applications.py); the
management API checks the scope, this module the person. Every record is the actor's organization's: there is no
way to name another's.

Each change writes its entry in the organization's trail (identity/organizations/trail.py) in the transaction of the
change (``ConnectionStore``'s ``within``), so the trail holds an entry exactly when the change happened. Saving
validates the issuer's discovery now: a provider there that cannot be used refuses the value typed
(``InvalidInput``). A check fetches the saved provider's discovery and key set now (within the per-organization
bound of discovery fetches) and says what it found, or that the provider failed (502); it changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from sqlalchemy.engine import Connection as Transaction

from identity.common.errors import InvalidInput
from identity.federation.connections import Connection, ConnectionChanged, ConnectionForm, ConnectionStore
from identity.federation.domains import DomainClaims, normalize
from identity.federation.errors import FederationError
from identity.federation.key_sets import parse_key_set
from identity.federation.upstream_http import UpstreamHttp, json_object
from identity.organizations import rules, trail
from identity.organizations.actors import CLIENT, Actor
from identity.organizations.trail import Trail, Written

MAX_DOMAINS = 100  # claimed domains one connection names, at most


@dataclass(frozen=True, slots=True)
class Endpoints:
    """Ours, for the organization's provider: where to register us (identity/federation/sign_in.py builds them)."""

    redirect_uri: str
    backchannel_logout_uri: str
    post_logout_redirect_uri: str
    try_it: str  # the "try it" sign-in of the identity API: an owner signed in here opens it in a browser


@dataclass(frozen=True, slots=True)
class ConnectionView:
    connection: Connection | None
    claimed: tuple[str, ...]  # the organization's claimed domains (an operator confirms them)
    endpoints: Endpoints

    @property
    def tag(self) -> str | None:
        return None if self.connection is None else tag(self.connection)


@dataclass(frozen=True, slots=True)
class CheckResult:
    """What a check found at the provider: its discovery and key set as fetched now."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    keys: int
    algorithms: tuple[str, ...]
    try_it: str

    def as_dict(self) -> dict[str, object]:
        return {
            "issuer": self.issuer,
            "discovery": "valid",
            "authorization_endpoint": self.authorization_endpoint,
            "token_endpoint": self.token_endpoint,
            "jwks_uri": self.jwks_uri,
            "keys": self.keys,
            "algorithms": list(self.algorithms),
            "try_it_url": self.try_it,
        }


def tag(connection: Connection) -> str:
    """The connection's strong ``ETag`` (and the console's hidden ``version``): it changes with every change."""
    return rules.version_tag("connection", connection.org_id, int(connection.updated_at.timestamp() * 1_000_000))


def require_owner(actor: Actor) -> None:
    if actor.kind != CLIENT and actor.role != "owner":
        raise rules.NotAllowed(f"Only an owner of {actor.whose} may manage its identity provider connection.")


class ConnectionAdministration:
    def __init__(
        self,
        connections: ConnectionStore,
        domains: DomainClaims,
        journal: Trail,
        http: UpstreamHttp,
        endpoints_of: Callable[[str], Endpoints],
    ) -> None:
        self.connections = connections
        self.domains = domains
        self.trail = journal
        self._http = http
        self._endpoints_of = endpoints_of

    def show(self, actor: Actor) -> ConnectionView:
        require_owner(actor)
        claimed = tuple(claim.domain for claim in self.domains.of(actor.org_id))
        return ConnectionView(self.connections.get(actor.org_id), claimed, self._endpoints_of(actor.org_id))

    def current(self, actor: Actor) -> ConnectionView:
        """As ``show``, for an organization that has a connection: ``Unknown`` else."""
        view = self.show(actor)
        if view.connection is None:
            raise rules.Unknown(f"{actor.whose} has no identity provider connection.")
        return view

    def save(self, actor: Actor, form: ConnectionForm, expected: str | None = None) -> Connection:
        """Register or change the connection (its provider discovered and validated now). ``expected``: the tag of
        the connection as read (``Stale`` when it changed meanwhile; on a first registration, when one appeared)."""
        require_owner(actor)
        existing = self.connections.get(actor.org_id)
        if expected is not None and (existing is None or expected != tag(existing)):
            raise rules.Stale("The connection changed since it was read; read it again and retry.")
        if form.domains is not None:
            form = replace(form, domains=self._check_domains(actor.org_id, form.domains))
        written: list[Written] = []
        kind = trail.CONNECTION_CHANGED if existing is not None else trail.CONNECTION_CREATED

        def entry(transaction: Transaction) -> None:
            written.append(
                self.trail.record(
                    transaction,
                    actor,
                    kind,
                    actor.org_id,
                    issuer=form.issuer.strip()[:200],
                    sso_required="yes" if form.sso_required else "no",
                    secret="changed" if form.client_secret is not None and existing is not None else None,
                )
            )

        since = existing.updated_at if expected is not None and existing is not None else None
        try:
            saved = self.connections.save(
                actor.org_id, form, within=entry, unchanged_since=since, first=existing is None
            )
        except ConnectionChanged:
            raise rules.Stale("The connection changed since it was read; read it again and retry.") from None
        except FederationError as error:
            if error.status == 429:  # the bound of discovery fetches: try again shortly
                raise
            # The issuer is what the owner typed: a provider there that cannot be used is a refused value (400),
            # not a failure of this service (the check of a saved connection says 502 instead).
            raise InvalidInput(f"the provider at this issuer cannot be used: {error.description.rstrip('.')}") from None
        trail.logged(*written)
        return saved

    def delete(self, actor: Actor, expected: str | None = None) -> None:
        """``Unknown`` when there is none; ``Stale`` when it changed since it was read."""
        require_owner(actor)
        existing = self.connections.get(actor.org_id)
        if existing is None:
            raise rules.Unknown(f"{actor.whose} has no identity provider connection.")
        if expected is not None and expected != tag(existing):
            raise rules.Stale("The connection changed since it was read; read it again and retry.")
        written: list[Written] = []

        def entry(transaction: Transaction) -> None:
            written.append(self.trail.record(transaction, actor, trail.CONNECTION_DELETED, actor.org_id))

        since = existing.updated_at if expected is not None else None
        if not self.connections.delete(actor.org_id, within=entry, unchanged_since=since):
            if since is not None:
                raise rules.Stale("The connection changed since it was read; read it again and retry.")
            raise rules.Unknown(f"{actor.whose} has no identity provider connection.")
        trail.logged(*written)

    def check(self, actor: Actor) -> CheckResult:
        """Fetch and validate the provider's discovery and key set now; ``FederationError`` says what failed."""
        require_owner(actor)
        connection = self.connections.get(actor.org_id)
        if connection is None:
            raise rules.Unknown(f"{actor.whose} has no identity provider connection.")
        provider = self.connections.discover(actor.org_id, connection.issuer)
        keys = parse_key_set(json_object(self._http.get(provider.jwks_uri), "key set"))
        return CheckResult(
            issuer=provider.issuer,
            authorization_endpoint=provider.authorization_endpoint,
            token_endpoint=provider.token_endpoint,
            jwks_uri=provider.jwks_uri,
            keys=len(keys.keys),
            algorithms=tuple(provider.algorithms),
            try_it=self._endpoints_of(actor.org_id).try_it,
        )

    def _check_domains(self, org_id: str, chosen: Sequence[str]) -> tuple[str, ...]:
        """The chosen domains, normalized; each must be one the organization claims (``InvalidInput`` else)."""
        if len(chosen) > MAX_DOMAINS:
            raise InvalidInput(f"a connection names at most {MAX_DOMAINS} domains")
        claimed = {claim.domain for claim in self.domains.of(org_id)}
        kept = []
        for domain in chosen:
            try:
                name: str | None = normalize(domain)
            except InvalidInput:
                name = None
            if name is None or name not in claimed:
                raise InvalidInput(f"{domain[:100]!r} is not a domain the organization claims")
            kept.append(name)
        return tuple(sorted(set(kept)))
