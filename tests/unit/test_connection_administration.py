"""An organization's owner runs its connection (identity/federation/administration.py), on the state database
without the web layer: only an owner, only the organization's claimed domains, a lost update refused, every change
in the organization's trail, and a check that fetches the provider's documents without changing anything."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine

from identity.accounts.organizations import OrganizationStore
from identity.common.errors import InvalidInput
from identity.common.outbound_uris import OutboundRule
from identity.federation.administration import MAX_DOMAINS, ConnectionAdministration, Endpoints, tag
from identity.federation.connections import ConnectionForm, ConnectionStore
from identity.federation.domains import DomainClaims
from identity.federation.provider_metadata import ProviderMetadata
from identity.keys.sealing import Sealer, new_key
from identity.organizations import rules, trail
from identity.organizations.actors import Actor
from identity.organizations.trail import Trail
from tests.support.clocks import MovableClock
from tests.support.upstream_fake import FakeUpstream, _json

ON_BOTH_ENGINES = True  # each engine's INSERT … ON CONFLICT, and a lost update refused on both

CURSOR_KEY = b"k" * 32


@pytest.fixture
def upstream() -> FakeUpstream:
    return FakeUpstream()


@pytest.fixture
def org_id(engine: Engine) -> str:
    org = OrganizationStore(engine).create("Corp").id
    DomainClaims(engine).claim(org, "corp.example")
    DomainClaims(engine).claim(org, "corp.test")
    return org


@pytest.fixture
def journal(engine: Engine) -> Trail:
    return Trail(engine, CURSOR_KEY)


@pytest.fixture
def admin(engine: Engine, upstream: FakeUpstream, journal: Trail) -> ConnectionAdministration:
    store = ConnectionStore(engine, Sealer([new_key()]), upstream, OutboundRule(), MovableClock())
    return ConnectionAdministration(store, DomainClaims(engine), journal, upstream, endpoints)


def endpoints(org: str) -> Endpoints:
    base = f"https://id.menus.example/federation/{org}"
    return Endpoints(f"{base}/callback", f"{base}/backchannel-logout", f"{base}/signed-out", f"{base}/test")


def owner(org_id: str) -> Actor:
    return Actor.member("usr_0000000000000001", org_id, "owner", "192.0.2.1", "Corp")


def form(upstream: FakeUpstream, **changes: object) -> ConnectionForm:
    fields: dict[str, object] = {"issuer": upstream.issuer, "client_id": "menus", "client_secret": "s3cret"}
    return ConnectionForm(**(fields | changes))  # type: ignore[arg-type]


def kinds(journal: Trail, org_id: str) -> list[str]:
    return [entry.kind for entry in journal.page(org_id, limit=50).entries]


@pytest.mark.parametrize("role", ["admin", "member"])
def test_only_an_owner_shows_saves_checks_or_deletes_the_connection(
    admin: ConnectionAdministration, upstream: FakeUpstream, org_id: str, role: str
) -> None:
    someone = Actor.member("usr_0000000000000002", org_id, role, None, "Corp")
    for act in (
        lambda: admin.show(someone),
        lambda: admin.save(someone, form(upstream)),
        lambda: admin.check(someone),
        lambda: admin.delete(someone),
    ):
        with pytest.raises(rules.NotAllowed):
            act()


def test_a_client_with_the_scope_acts_as_the_owner_would(
    admin: ConnectionAdministration, upstream: FakeUpstream, org_id: str
) -> None:
    client = Actor.client("cli_0000000000000001", org_id, None)
    saved = admin.save(client, form(upstream))
    assert admin.show(client).connection == saved


def test_without_a_connection_current_check_and_delete_say_there_is_none(
    admin: ConnectionAdministration, org_id: str
) -> None:
    view = admin.show(owner(org_id))
    assert view.connection is None and view.tag is None
    assert view.claimed == ("corp.example", "corp.test")
    assert view.endpoints.redirect_uri.endswith(f"/federation/{org_id}/callback")
    for act in (lambda: admin.current(owner(org_id)), lambda: admin.check(owner(org_id))):
        with pytest.raises(rules.Unknown):
            act()
    with pytest.raises(rules.Unknown):
        admin.delete(owner(org_id))


def test_each_change_is_one_entry_of_the_trail_created_changed_then_deleted(
    admin: ConnectionAdministration, upstream: FakeUpstream, org_id: str, journal: Trail
) -> None:
    first = admin.save(owner(org_id), form(upstream))
    admin.save(owner(org_id), form(upstream, client_secret=None, sso_required=True), expected=tag(first))
    admin.delete(owner(org_id))
    assert kinds(journal, org_id) == [trail.CONNECTION_DELETED, trail.CONNECTION_CHANGED, trail.CONNECTION_CREATED]
    changed = journal.page(org_id, kind=trail.CONNECTION_CHANGED).entries[0]
    assert changed.details["sso_required"] == "yes" and "secret" not in changed.details  # the secret was kept


def test_a_stale_tag_is_refused_and_writes_nothing(
    admin: ConnectionAdministration, upstream: FakeUpstream, org_id: str, journal: Trail
) -> None:
    with pytest.raises(rules.Stale):  # a tag on a first registration: one appeared meanwhile, or none ever was
        admin.save(owner(org_id), form(upstream), expected='"stale"')
    first = admin.save(owner(org_id), form(upstream))
    with pytest.raises(rules.Stale):
        admin.save(owner(org_id), form(upstream), expected='"stale"')
    with pytest.raises(rules.Stale):
        admin.delete(owner(org_id), expected='"stale"')
    assert admin.current(owner(org_id)).connection == first
    assert kinds(journal, org_id) == [trail.CONNECTION_CREATED]


class RegisteredMeanwhile(ConnectionStore):
    """A connections' store on which another owner's first registration commits after a save read that there was
    none, while the save discovers its provider."""

    racing: ConnectionForm | None = None

    def discover(self, org_id: str, issuer: str) -> ProviderMetadata:
        theirs, self.racing = self.racing, None
        if theirs is not None:
            self.save(org_id, theirs)
        return super().discover(org_id, issuer)


def test_a_first_registration_never_replaces_one_that_landed_after_its_read(
    engine: Engine, upstream: FakeUpstream, org_id: str, journal: Trail
) -> None:
    store = RegisteredMeanwhile(engine, Sealer([new_key()]), upstream, OutboundRule(), MovableClock())
    admin = ConnectionAdministration(store, DomainClaims(engine), journal, upstream, endpoints)
    store.racing = form(upstream, client_id="theirs")
    with pytest.raises(rules.Stale):
        admin.save(owner(org_id), form(upstream, client_id="mine"))
    kept = admin.current(owner(org_id)).connection
    assert kept is not None and kept.client_id == "theirs"
    assert kinds(journal, org_id) == []  # the refused registration wrote nothing


def test_the_domains_it_covers_are_claimed_ones_normalized_and_bounded(
    admin: ConnectionAdministration, upstream: FakeUpstream, org_id: str
) -> None:
    saved = admin.save(owner(org_id), form(upstream, domains=["Corp.Test.", "corp.example", "corp.test"]))
    assert saved.domains == ("corp.example", "corp.test")
    for domains in (["elsewhere.example"], ["not a domain"], ["corp.example"] * (MAX_DOMAINS + 1)):
        with pytest.raises(InvalidInput):
            admin.save(owner(org_id), form(upstream, domains=domains))


def test_an_issuer_whose_provider_cannot_be_used_is_a_refused_value(
    admin: ConnectionAdministration, upstream: FakeUpstream, org_id: str
) -> None:
    upstream.overrides[f"{upstream.issuer}/.well-known/openid-configuration"] = _json({"error": "down"}, 500)
    with pytest.raises(InvalidInput, match="the provider at this issuer cannot be used"):
        admin.save(owner(org_id), form(upstream))
    assert admin.show(owner(org_id)).connection is None


def test_a_check_fetches_the_providers_discovery_and_keys_and_changes_nothing(
    admin: ConnectionAdministration, upstream: FakeUpstream, org_id: str, journal: Trail
) -> None:
    saved = admin.save(owner(org_id), form(upstream))
    upstream.requests.clear()
    found = admin.check(owner(org_id)).as_dict()
    assert found["discovery"] == "valid" and found["keys"] == 1 and found["algorithms"] == ["RS256"]
    assert found["jwks_uri"] == f"{upstream.issuer}/jwks" and str(found["try_it_url"]).endswith(f"/{org_id}/test")
    assert ("GET", f"{upstream.issuer}/jwks") in upstream.requests
    assert admin.current(owner(org_id)).connection == saved and kinds(journal, org_id) == [trail.CONNECTION_CREATED]
