"""Email domains as organizations claim them, and the bound of discovery fetches per organization
(identity/federation/domains.py, connections.py)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from identity.common.errors import InvalidInput
from identity.common.outbound_uris import OutboundRule
from identity.federation.connections import DISCOVERY_PER_MINUTE, ConnectionStore, check_scopes
from identity.federation.domains import domain_of, normalize
from identity.federation.errors import FederationError
from identity.keys.sealing import Sealer, new_key
from tests.support.clocks import MovableClock
from tests.support.upstream_fake import FakeUpstream


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("Corp.Example", "corp.example"),
        ("corp.example.", "corp.example"),
        (" bücher.example ", "xn--bcher-kva.example"),
    ],
)
def test_a_domain_is_kept_lower_case_in_ascii_without_a_trailing_dot(given: str, kept: str) -> None:
    assert normalize(given) == kept


@pytest.mark.parametrize(
    "bad", ["localhost", "corp..example", "-corp.example", "a" * 64 + ".example", "c d.example", ""]
)
def test_what_is_not_a_domain_of_two_labels_is_refused(bad: str) -> None:
    with pytest.raises(InvalidInput):
        normalize(bad)


def test_the_domain_of_an_address_is_after_its_last_at() -> None:
    assert domain_of("Ana@Corp.Example") == "corp.example"
    assert domain_of('"a@b"@corp.example') == "corp.example"
    assert domain_of("no-domain") is None and domain_of("ana@localhost") is None


def test_the_scopes_asked_always_start_with_openid_once_each() -> None:
    assert check_scopes(["email", "openid", "email", "profile"]) == ("openid", "email", "profile")
    for bad in (["has space"], ['quo"te'], [""], ["x" * 101]):
        with pytest.raises(InvalidInput):
            check_scopes(bad)


def test_discovery_is_fetched_at_most_five_times_a_minute_per_organization() -> None:
    clock, upstream = MovableClock(), FakeUpstream()
    store = ConnectionStore(sa.create_engine("sqlite://"), Sealer([new_key()]), upstream, OutboundRule(), clock)
    for _ in range(DISCOVERY_PER_MINUTE):
        store.discover("org_a", upstream.issuer)
    with pytest.raises(FederationError) as refused:
        store.discover("org_a", upstream.issuer)
    assert refused.value.status == 429
    store.discover("org_b", upstream.issuer)  # another organization has its own bound
    clock.advance(60)
    store.discover("org_a", upstream.issuer)
    assert upstream.requests.count(("GET", f"{upstream.issuer}/.well-known/openid-configuration")) == 7
