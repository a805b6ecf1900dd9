"""The organization's identity provider connection in the management API (openapi/management.yaml ``/connection``,
``manage:connection``): the connection as a resource with ETag and If-Match (428, 412), its discovery fetched and
validated on every save, its secret never returned, problem details in the house's words (502 for a provider that
cannot be used, 429 with Retry-After past the discovery bound), the check of the provider's discovery and key set
with its "try it" URL, and every change in the audit trail."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization, OrganizationStore
from identity.common.outbound_uris import OutboundRule
from identity.federation.connections import ConnectionChanged, ConnectionForm, ConnectionStore
from identity.federation.domains import DomainClaims
from identity.federation.upstream_http import Answer
from service.database.sealing_keys import load_sealer
from service.settings import Settings
from tests.support import token_flows as flows
from tests.support.apps import make_app
from tests.support.clocks import MovableClock
from tests.support.upstream_fake import CLIENT_ID, CLIENT_SECRET, FakeUpstream

ON_BOTH_ENGINES = True  # the conditional upsert (If-Match) runs on SQLite and on PostgreSQL
API = "/management/v1"
URL = f"{API}/connection"
PROBLEM = "application/problem+json"


@pytest.fixture
def upstream() -> FakeUpstream:
    return FakeUpstream()


@pytest.fixture
def app(settings: Settings, engine: Engine, catalog: Any, clock: MovableClock, upstream: FakeUpstream) -> Any:
    return make_app(settings, catalog=catalog, clock=clock, upstream=upstream)


@pytest.fixture
def http(app: Any) -> Iterator[TestClient]:
    with TestClient(app, base_url="http://127.0.0.1:8000", follow_redirects=False) as client:
        yield client


@pytest.fixture
def corp(engine: Engine) -> Organization:
    org = OrganizationStore(engine).create("Corp")
    DomainClaims(engine).claim(org.id, "corp.example")
    DomainClaims(engine).claim(org.id, "corp-staff.example")
    return org


def bearer(http: TestClient, engine: Engine, org: Organization, scope: str = "manage:connection") -> dict[str, str]:
    registered = flows.register(
        engine, org, "Ops bot", grants=["client_credentials"], scopes=scope.split(), first_party=False
    )
    answer = flows.application_token(http, registered, scope=scope)
    assert answer.status_code == 200, answer.text
    return {"Authorization": f"Bearer {answer.json()['access_token']}"}


@pytest.fixture
def ops(http: TestClient, engine: Engine, corp: Organization) -> dict[str, str]:
    return bearer(http, engine, corp, "manage:connection manage:audit")


def settings_of(upstream: FakeUpstream, **changes: Any) -> dict[str, Any]:
    return {"issuer": upstream.issuer, "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, **changes}


def problem(answer: Any, status: int, code: str) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == PROBLEM, answer.headers
    body: dict[str, Any] = answer.json()
    assert body["code"] == code and body["status"] == status, body
    return body


def test_a_client_registers_reads_and_changes_the_connection_with_if_match(
    http: TestClient, ops: dict[str, str], upstream: FakeUpstream, corp: Organization
) -> None:
    problem(http.get(URL, headers=ops), 404, "not_found")
    created = http.put(URL, json=settings_of(upstream, domains=["Corp.Example"]), headers=ops)
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["issuer"] == upstream.issuer and body["domains"] == ["corp.example"]
    assert CLIENT_SECRET not in created.text and "client_secret" not in body
    assert body["ours"]["redirect_uri"] == f"http://127.0.0.1:8000/federation/{corp.id}/callback"
    assert body["ours"]["try_it_url"] == f"http://127.0.0.1:8000/federation/{corp.id}/test"
    read = http.get(URL, headers=ops)
    assert read.status_code == 200 and read.headers["etag"] == created.headers["etag"]
    keep_secret = settings_of(upstream, sso_required=True)
    del keep_secret["client_secret"]
    problem(http.put(URL, json=keep_secret, headers=ops), 428, "precondition_required")
    changed = http.put(URL, json=keep_secret, headers={**ops, "If-Match": read.headers["etag"]})
    assert changed.status_code == 200 and changed.json()["sso_required"] is True
    assert changed.json()["domains"] is None  # left out: every claimed domain
    stale = http.put(URL, json=keep_secret, headers={**ops, "If-Match": read.headers["etag"]})
    problem(stale, 412, "precondition_failed")
    kinds = [entry["kind"] for entry in http.get(f"{API}/audit", headers=ops).json()["data"]]
    assert kinds[:2] == ["connection_changed", "connection_created"]


def test_a_first_registration_needs_the_secret_and_only_claimed_domains(
    http: TestClient, ops: dict[str, str], upstream: FakeUpstream
) -> None:
    without = settings_of(upstream)
    del without["client_secret"]
    refused = problem(http.put(URL, json=without, headers=ops), 400, "invalid_parameter")
    assert "client secret is required" in refused["detail"]
    foreign = http.put(URL, json=settings_of(upstream, domains=["elsewhere.example"]), headers=ops)
    problem(foreign, 400, "invalid_parameter")
    problem(http.put(URL, json=settings_of(upstream, extra=1), headers=ops), 400, "invalid_parameter")


def test_an_issuer_whose_provider_cannot_be_used_is_400_and_nothing_is_saved(
    http: TestClient, ops: dict[str, str], upstream: FakeUpstream
) -> None:
    upstream.overrides[f"{upstream.issuer}/.well-known/openid-configuration"] = Answer(500, b"", "text/html")
    refused = problem(http.put(URL, json=settings_of(upstream), headers=ops), 400, "invalid_parameter")
    assert refused["detail"].startswith("The provider at this issuer cannot be used")
    problem(http.get(URL, headers=ops), 404, "not_found")


def test_the_check_fetches_discovery_and_keys_and_gives_the_try_it_url(
    http: TestClient, ops: dict[str, str], upstream: FakeUpstream, corp: Organization
) -> None:
    problem(http.post(f"{URL}/check", headers=ops), 404, "not_found")
    assert http.put(URL, json=settings_of(upstream), headers=ops).status_code == 201
    before = len(upstream.requests)
    checked = http.post(f"{URL}/check", headers=ops)
    assert checked.status_code == 200, checked.text
    assert checked.json()["discovery"] == "valid" and checked.json()["keys"] >= 1
    assert checked.json()["try_it_url"].endswith(f"/federation/{corp.id}/test")
    fetched = [url for _method, url in upstream.requests[before:]]
    assert fetched == [f"{upstream.issuer}/.well-known/openid-configuration", f"{upstream.issuer}/jwks"]
    upstream.overrides[f"{upstream.issuer}/jwks"] = Answer(200, b'{"keys": []}', "application/json")
    problem(http.post(f"{URL}/check", headers=ops), 502, "provider_unavailable")


def test_discovery_fetches_are_bounded_with_retry_after(
    http: TestClient, ops: dict[str, str], upstream: FakeUpstream
) -> None:
    assert http.put(URL, json=settings_of(upstream), headers=ops).status_code == 201
    answers = [http.post(f"{URL}/check", headers=ops) for _ in range(5)]
    assert [answer.status_code for answer in answers] == [200] * 4 + [429]
    problem(answers[-1], 429, "rate_limited")
    assert answers[-1].headers["retry-after"] == "60"


def test_delete_takes_if_match_and_is_404_once_gone(
    http: TestClient, ops: dict[str, str], upstream: FakeUpstream
) -> None:
    etag = http.put(URL, json=settings_of(upstream), headers=ops).headers["etag"]
    problem(http.delete(URL, headers={**ops, "If-Match": '"stale"'}), 412, "precondition_failed")
    assert http.delete(URL, headers={**ops, "If-Match": etag}).status_code == 204
    problem(http.delete(URL, headers=ops), 404, "not_found")
    assert http.get(f"{API}/audit", headers=ops).json()["data"][0]["kind"] == "connection_deleted"


def test_a_token_without_manage_connection_is_403_and_another_organization_is_never_reached(
    http: TestClient, engine: Engine, ops: dict[str, str], upstream: FakeUpstream
) -> None:
    assert http.put(URL, json=settings_of(upstream), headers=ops).status_code == 201
    other_org = OrganizationStore(engine).create("Other")
    narrow = bearer(http, engine, other_org, "manage:audit")
    refused = problem(http.get(URL, headers=narrow), 403, "forbidden")
    assert "manage:connection" in refused["detail"]
    stranger = bearer(http, engine, other_org)
    problem(http.get(URL, headers=stranger), 404, "not_found")  # its own organization's: none
    problem(http.delete(URL, headers=stranger), 404, "not_found")
    assert http.get(URL, headers=ops).status_code == 200  # Corp's is untouched


def test_a_change_is_written_only_while_the_connection_is_as_read(
    engine: Engine, settings: Settings, clock: MovableClock, upstream: FakeUpstream, corp: Organization
) -> None:
    """The If-Match condition is part of the statement that writes (two changes of one version: one wins)."""
    store = ConnectionStore(
        engine, load_sealer(settings.secret_keys, settings.database_url), upstream, OutboundRule(loopback=True), clock
    )
    read = store.save(corp.id, ConnectionForm(upstream.issuer, CLIENT_ID, CLIENT_SECRET))
    clock.advance(1)
    store.save(corp.id, ConnectionForm(upstream.issuer, "first-writer", None), unchanged_since=read.updated_at)
    clock.advance(1)
    with pytest.raises(ConnectionChanged):
        store.save(corp.id, ConnectionForm(upstream.issuer, "second-writer", None), unchanged_since=read.updated_at)
    assert not store.delete(corp.id, unchanged_since=read.updated_at)
    kept = store.get(corp.id)
    assert kept is not None and kept.client_id == "first-writer"
