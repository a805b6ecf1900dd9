"""An organization's connection to its provider and the domains it claims, on the state database without the web
layer (identity/federation/connections.py, domains.py): the form's checks, the sealed secret, and one holder per
domain."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from identity.accounts.organizations import OrganizationStore
from identity.common.errors import InvalidInput
from identity.common.outbound_uris import OutboundRule
from identity.federation.connections import MAX_CLIENT_ID, MAX_SCOPES, MAX_SECRET, ConnectionForm, ConnectionStore
from identity.federation.domains import CLAIMED_MAX_AGE, DomainClaims
from identity.federation.tables import federation_connections, federation_domains
from identity.keys.sealing import Sealer, new_key
from tests.support.clocks import MovableClock
from tests.support.upstream_fake import FakeUpstream

AT = datetime(2026, 11, 27, tzinfo=UTC)


@pytest.fixture
def upstream() -> FakeUpstream:
    return FakeUpstream()


@pytest.fixture
def store(engine: Engine, upstream: FakeUpstream) -> ConnectionStore:
    return ConnectionStore(engine, Sealer([new_key()]), upstream, OutboundRule(), MovableClock())


@pytest.fixture
def org_id(engine: Engine) -> str:
    return OrganizationStore(engine).create("Corp").id


def form(upstream: FakeUpstream, **changes: object) -> ConnectionForm:
    fields: dict[str, object] = {"issuer": upstream.issuer, "client_id": "menus", "client_secret": "s3cret"}
    return ConnectionForm(**(fields | changes))  # type: ignore[arg-type]


def test_a_saved_connection_keeps_the_discovered_provider_and_its_secret_sealed(
    store: ConnectionStore, upstream: FakeUpstream, org_id: str, engine: Engine
) -> None:
    saved = store.save(org_id, form(upstream, client_id="  menus  ", scopes=["email"], default_role="admin"))
    assert (saved.client_id, saved.client_secret, saved.scopes) == ("menus", "s3cret", ("openid", "email"))
    assert saved.provider.token_endpoint == f"{upstream.issuer}/token" and saved.default_role == "admin"
    assert "client_secret" not in saved.as_dict() and "s3cret" not in repr(saved)
    with engine.connect() as connection:
        stored = connection.scalar(sa.select(federation_connections.c.client_secret))
    assert stored is not None and "s3cret" not in stored


def test_an_edit_without_a_secret_keeps_the_stored_one_but_a_first_save_needs_one(
    store: ConnectionStore, upstream: FakeUpstream, org_id: str
) -> None:
    with pytest.raises(InvalidInput, match="client secret is required"):
        store.save(org_id, form(upstream, client_secret=None))
    store.save(org_id, form(upstream))
    assert store.save(org_id, form(upstream, client_secret=None, client_id="renamed")).client_secret == "s3cret"


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"client_id": ""}, "client id must be 1 to"),
        ({"client_id": "x" * (MAX_CLIENT_ID + 1)}, "client id must be 1 to"),
        ({"client_id": "me\x00nus"}, "client id must be 1 to"),
        ({"client_secret": ""}, "client secret must be 1 to"),
        ({"client_secret": "x" * (MAX_SECRET + 1)}, "client secret must be 1 to"),
        ({"client_secret": "s3\ncret"}, "client secret must be 1 to"),
        ({"default_role": "superuser"}, "default role must be one of"),
        ({"scopes": [f"s{n}" for n in range(MAX_SCOPES)]}, "at most 20 scopes"),
        ({"issuer": "http://idp.corp.example"}, "issuer"),
        ({"issuer": "https://idp.corp.example/?tenant=1"}, "issuer must not have a query"),
    ],
)
def test_the_connection_form_is_checked_before_the_provider_is_asked(
    store: ConnectionStore, upstream: FakeUpstream, org_id: str, changes: dict[str, object], said: str
) -> None:
    with pytest.raises(InvalidInput, match=said):
        store.save(org_id, form(upstream, **changes))
    assert upstream.requests == [] and store.get(org_id) is None


def test_the_longest_credentials_are_taken(store: ConnectionStore, upstream: FakeUpstream, org_id: str) -> None:
    saved = store.save(org_id, form(upstream, client_id="x" * MAX_CLIENT_ID, client_secret="y" * MAX_SECRET))
    assert len(saved.client_id) == MAX_CLIENT_ID and len(saved.client_secret) == MAX_SECRET
    assert len(store.save(org_id, form(upstream, scopes=[f"s{n}" for n in range(MAX_SCOPES - 1)])).scopes) == 20


def test_sso_required_is_told_per_organization_in_the_order_asked(
    store: ConnectionStore, upstream: FakeUpstream, org_id: str, engine: Engine
) -> None:
    other = OrganizationStore(engine).create("Other").id
    store.save(org_id, form(upstream))
    store.save(other, form(upstream))
    assert store.set_sso_required(other, True) and not store.set_sso_required("org_none", True)
    assert store.sso_required_of([org_id, other, "org_none"]) == [other] and store.sso_required_of([]) == []
    assert store.delete(org_id) and not store.delete(org_id) and store.get(org_id) is None


def test_a_domain_has_one_holder_and_a_claim_again_by_it_changes_nothing(engine: Engine) -> None:
    claims, orgs = DomainClaims(engine), OrganizationStore(engine)
    corp, rival = orgs.create("Corp").id, orgs.create("Rival").id
    first = claims.claim(corp, "Corp.Example.")
    assert (first.domain, claims.claim(corp, "corp.example").claimed_at) == ("corp.example", first.claimed_at)
    with pytest.raises(InvalidInput, match="claimed by another organization"):
        claims.claim(rival, "CORP.example")
    with pytest.raises(InvalidInput, match="no organization has the id"):
        claims.claim("org_none", "none.example")
    assert claims.holder("corp.example") == corp and claims.holder("eu.corp.example") is None
    assert not claims.release(rival, "corp.example") and claims.holder("corp.example") == corp
    assert claims.release(corp, "corp.example") and claims.holder("corp.example") is None
    assert claims.claim(rival, "corp.example").org_id == rival
    assert [c.as_dict()["domain"] for c in claims.of(rival)] == [c.domain for c in claims.all()] == ["corp.example"]


def test_whether_any_domain_is_claimed_is_read_again_after_its_age_or_at_once_after_a_claim(engine: Engine) -> None:
    claims, corp = DomainClaims(engine), OrganizationStore(engine).create("Corp").id
    assert not claims.any_claimed(lambda: 100.0)
    with engine.begin() as connection:  # another node's claim
        connection.execute(federation_domains.insert().values(domain="corp.example", org_id=corp, claimed_at=AT))
    assert not claims.any_claimed(lambda: 100.0 + CLAIMED_MAX_AGE - 0.1)
    assert claims.any_claimed(lambda: 100.0 + CLAIMED_MAX_AGE)
    claims.release(corp, "corp.example")  # this node's own change is seen at once
    assert not claims.any_claimed(lambda: 100.0 + CLAIMED_MAX_AGE)
