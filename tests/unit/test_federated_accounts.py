"""Who a federated sign-in signs in, on the state database without a provider (identity/federation/accounts.py):
the bound account whatever address comes later, a link only where both sides say the address is verified and the
domain is the organization's, a new account otherwise, and the connection's role for a newcomer."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine

from identity.accounts.organizations import OrganizationStore
from identity.accounts.users import UserStore
from identity.common.outbound_uris import OutboundRule
from identity.federation.accounts import BOUND, CREATED, LINKED, NO_PASSWORD, FederatedAccounts, Refused
from identity.federation.connections import ConnectionForm, ConnectionStore
from identity.federation.domains import DomainClaims
from identity.federation.token_exchange import Identity
from identity.keys.sealing import Sealer, new_key
from tests.support.clocks import MovableClock
from tests.support.passwords import FAST_HASHING
from tests.support.upstream_fake import FakeUpstream


class Federation:
    """Corp, which claims corp.example and signs in through its provider (new members: ``admin``), and Rival."""

    def __init__(self, engine: Engine) -> None:
        clock, upstream = MovableClock(), FakeUpstream()
        orgs = OrganizationStore(engine)
        self.corp, self.rival = orgs.create("Corp").id, orgs.create("Rival").id
        DomainClaims(engine, clock).claim(self.corp, "corp.example")
        DomainClaims(engine, clock).claim(self.rival, "rival.example")
        store = ConnectionStore(engine, Sealer([new_key()]), upstream, OutboundRule(), clock)
        self.connection = store.save(
            self.corp, ConnectionForm(upstream.issuer, "menus", "s3cret", default_role="admin")
        )
        self.users = UserStore(engine, clock, hashing=FAST_HASHING)
        self.accounts = FederatedAccounts(engine, self.users, clock)
        self.engine = engine

    def who(self, subject: str = "up-ana", email: str | None = "ana@corp.example", verified: bool = True) -> Identity:
        return Identity(self.connection.issuer, subject, email, verified, "Ana Lima", None, "id.token", {})

    def local(self, email: str, *, verified: bool) -> str:
        user = self.users.create(email, "Local", "a long passphrase", [(self.rival, "member")])
        if verified:
            assert self.users.mark_email_verified(user.id, email)
        return user.id


@pytest.fixture
def fed(engine: Engine) -> Federation:
    return Federation(engine)


def test_a_newcomer_gets_an_account_without_a_password_and_the_connections_role(fed: Federation) -> None:
    made = fed.accounts.sign_in(fed.connection, fed.who())
    assert made.how == CREATED and made.user.email_verified and made.user.name == "Ana Lima"
    assert [(m.org.id, m.role) for m in made.user.memberships] == [(fed.corp, "admin")]
    assert fed.users.get(made.user.id).email == "ana@corp.example"
    assert fed.accounts.bound_user(fed.connection.issuer, "up-ana") == made.user.id
    assert fed.users.authenticate("ana@corp.example", NO_PASSWORD) is None  # no password signs it in


def test_the_bound_account_signs_in_whatever_address_the_provider_gives_later(fed: Federation) -> None:
    first = fed.accounts.sign_in(fed.connection, fed.who())
    again = fed.accounts.sign_in(fed.connection, fed.who(email="someone.else@elsewhere.example", verified=False))
    assert (again.how, again.user.id, again.binding) == (BOUND, first.user.id, first.binding)
    other = fed.accounts.sign_in(fed.connection, fed.who(subject="up-bea", email="bea@corp.example"))
    assert other.user.id != first.user.id


def test_an_account_of_the_address_is_linked_only_when_both_sides_say_it_is_verified(fed: Federation) -> None:
    unverified_here = fed.local("cai@corp.example", verified=False)
    with pytest.raises(Refused) as refused:
        fed.accounts.sign_in(fed.connection, fed.who(subject="up-cai", email="cai@corp.example"))
    assert refused.value.reason == "local_unverified" and refused.value.status == 400
    verified_here = fed.local("dee@corp.example", verified=True)
    with pytest.raises(Refused) as refused:
        fed.accounts.sign_in(fed.connection, fed.who(subject="up-dee", email="DEE@corp.example", verified=False))
    assert refused.value.reason == "upstream_unverified"
    linked = fed.accounts.sign_in(fed.connection, fed.who(subject="up-dee", email="DEE@corp.example"))
    assert (linked.how, linked.user.id) == (LINKED, verified_here)
    assert fed.accounts.bound_user(fed.connection.issuer, "up-cai") is None and unverified_here


@pytest.mark.parametrize(
    ("email", "reason"),
    [
        (None, "no_email"),
        ("not an address", "bad_email"),
        ("ana@rival.example", "domain_not_claimed"),  # another organization's domain
        ("ana@unclaimed.example", "domain_not_claimed"),
        ("ana@eu.corp.example", "domain_not_claimed"),  # a claim covers the domain, not its subdomains
    ],
)
def test_a_provider_vouches_only_for_addresses_of_its_organizations_domains(
    fed: Federation, email: str | None, reason: str
) -> None:
    with pytest.raises(Refused) as refused:
        fed.accounts.sign_in(fed.connection, fed.who(email=email))
    assert refused.value.reason == reason
    assert fed.accounts.bound_user(fed.connection.issuer, "up-ana") is None


def test_a_disabled_account_is_refused_though_bound(fed: Federation) -> None:
    made = fed.accounts.sign_in(fed.connection, fed.who())
    with fed.engine.begin() as connection:
        fed.users.set_disabled(connection, made.user.id, True)
    with pytest.raises(Refused) as refused:
        fed.accounts.sign_in(fed.connection, fed.who())
    assert refused.value.reason == "disabled"
