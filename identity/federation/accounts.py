"""Who a federated sign-in signs in: the account bound to the provider's (``iss``, ``sub``), or one it links or makes.

**Bound.** An account bound to the provider's ``iss`` and ``sub`` is that person, whatever address the provider
gives later: a change of email at the provider changes nothing here (OpenID Connect Core §5.7: ``sub`` and ``iss``
are the only claims a relying party may rely on as a stable identifier).

**Linked.** Otherwise, the address the provider gives must be in a domain the organization claims (an operator
confirmed it: a provider cannot vouch for addresses of others' domains). An account of that address is linked, and
bound from then on, only where both sides say the address is verified: the provider's ``email_verified`` is true,
and the account's owner followed a verification link here. Anything else is refused, and audited: whoever controls
an organization's provider must not take over an account by asserting its address.

**Made.** No account has the address: a new one is made, with no password (it signs in only through the provider,
or after a password reset), its address verified as far as the provider says it is.

Each sign-in makes the account a member of the connection's organization, with the connection's default role, if
it is not one already (just-in-time membership: the organization's own provider says the person belongs to it).
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection as SqlConnection
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from identity.accounts.users import User, UserStore, check_email, email_key
from identity.common.clock import SYSTEM_CLOCK, Clock, new_id
from identity.common.digests import sha256_hex
from identity.common.errors import InvalidInput
from identity.common.tables import memberships, users
from identity.common.text import display_name
from identity.federation.connections import Connection
from identity.federation.domains import domain_of
from identity.federation.errors import UpstreamRefused
from identity.federation.tables import federated_identities, federation_domains
from identity.federation.token_exchange import Identity

NO_PASSWORD = "!federated"  # no password hash verifies against it: the account signs in through its provider
BOUND, LINKED, CREATED = "bound", "linked", "created"


@dataclass(frozen=True, slots=True)
class Federated:
    user: User
    how: str  # BOUND, LINKED or CREATED
    binding: str


class Refused(UpstreamRefused):
    """A federated sign-in that finds no account it may sign in; ``reason`` is the audit's."""

    def __init__(self, description: str, reason: str) -> None:
        super().__init__(description, detail=reason)
        self.reason = reason


def binding_of(issuer: str, subject: str) -> str:
    return sha256_hex(f"{issuer}\x00{subject}")


class FederatedAccounts:
    def __init__(self, engine: Engine, users: UserStore, clock: Clock = SYSTEM_CLOCK) -> None:
        self._engine = engine
        self._users = users
        self._clock = clock

    def bound_user(self, issuer: str, subject: str) -> str | None:
        with self._engine.connect() as connection:
            found = connection.scalar(
                sa.select(federated_identities.c.user_id).where(
                    federated_identities.c.binding == binding_of(issuer, subject)
                )
            )
        return str(found) if found is not None else None

    def sign_in(self, connection: Connection, who: Identity) -> Federated:
        """The account ``who`` signs in as (see above); ``Refused`` when there is none it may."""
        try:
            return self._sign_in(connection, who)
        except IntegrityError:  # a concurrent first sign-in of the same person bound or made it: find it again
            return self._sign_in(connection, who)

    def _sign_in(self, connection: Connection, who: Identity) -> Federated:
        binding = binding_of(who.issuer, who.subject)
        at = self._clock.now()
        with self._engine.begin() as sql:
            user_id = sql.scalar(
                sa.select(federated_identities.c.user_id).where(federated_identities.c.binding == binding)
            )
            how = BOUND
            if user_id is None:
                user_id, how = self._link_or_make(sql, connection, who)
                sql.execute(
                    federated_identities.insert().values(
                        binding=binding,
                        issuer=who.issuer,
                        subject=who.subject,
                        user_id=user_id,
                        org_id=connection.org_id,
                        linked_at=at,
                    )
                )
            self._join(sql, user_id, connection)
        user = self._users.get(user_id)
        if user.disabled:
            raise Refused("This account is disabled. Contact your organization's administrator.", "disabled")
        return Federated(user, how, binding)

    def _link_or_make(self, sql: SqlConnection, connection: Connection, who: Identity) -> tuple[str, str]:
        if who.email is None:
            raise Refused("Your organization's provider did not give an email address.", "no_email")
        try:
            email = check_email(who.email)
        except InvalidInput:
            raise Refused("Your organization's provider gave an address that is not valid.", "bad_email") from None
        domain = domain_of(email)
        holder = sql.scalar(sa.select(federation_domains.c.org_id).where(federation_domains.c.domain == domain))
        if holder != connection.org_id:
            raise Refused(
                "The address your organization's provider gave is not in a domain your organization claims.",
                "domain_not_claimed",
            )
        account = sql.execute(
            sa.select(users.c.id, users.c.email_verified).where(users.c.email_key == email_key(email))
        ).first()
        if account is not None:
            if not who.email_verified:
                raise Refused(
                    "An account with this address exists here, and your organization's provider does not say the "
                    "address is verified, so the two cannot be linked. Ask your administrator to verify it there.",
                    "upstream_unverified",
                )
            if not account.email_verified:
                raise Refused(
                    "An account with this address exists here, but its address was never verified, so it cannot be "
                    "linked to your organization's sign-in. Sign in with your password and verify the address first.",
                    "local_unverified",
                )
            return str(account.id), LINKED
        user_id = new_id("usr")
        name = who.name or email.split("@", 1)[0]
        try:
            name = display_name(name, "the name")
        except InvalidInput:
            name = email.split("@", 1)[0][:200]
        sql.execute(
            users.insert().values(
                id=user_id,
                email=email,
                email_key=email_key(email),
                name=name,
                password_hash=NO_PASSWORD,
                created_at=self._clock.now(),
                email_verified=who.email_verified,
            )
        )
        return user_id, CREATED

    def _join(self, sql: SqlConnection, user_id: str, connection: Connection) -> None:
        member = sql.scalar(
            sa.select(memberships.c.role).where(
                memberships.c.user_id == user_id, memberships.c.org_id == connection.org_id
            )
        )
        if member is None:
            sql.execute(
                memberships.insert().values(
                    user_id=user_id, org_id=connection.org_id, role=connection.default_role, joined_at=self._clock.now()
                )
            )
