"""Signing in through an organization's own OpenID provider (identity/federation/), through the ASGI app, with the
provider in process (tests/support/upstream_fake.py): home-realm discovery, the relying party's checks, just-in-time
membership, linking, SSO required, sign-out at the provider and its back-channel logout."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization, OrganizationStore
from identity.accounts.users import User, UserStore
from identity.common.errors import InvalidInput
from identity.common.outbound_uris import OutboundRule
from identity.federation.connections import ConnectionForm, ConnectionStore
from identity.federation.domains import DomainClaims
from identity.federation.upstream_http import Answer
from identity.purge import Purger
from service.database.sealing_keys import load_sealer
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.clocks import MovableClock
from tests.support.identity_fixtures import CALLBACK, PASSWORD, Registered, register
from tests.support.identity_pages import (
    STATE,
    assert_error_page,
    authorize,
    code_of,
    query_of,
    show,
    sign_in,
    submit,
    to_page,
    tokens,
)
from tests.support.passwords import FAST_HASHING
from tests.support.upstream_fake import CLIENT_ID, CLIENT_SECRET, FakeUpstream

ANA = {"sub": "up-ana", "email": "ana@corp.example", "email_verified": True, "name": "Ana Corp", "sid": "up-s1"}
SIGNED_OUT = "https://app.example/signed-out"


@pytest.fixture
def upstream() -> FakeUpstream:
    return FakeUpstream()


@pytest.fixture
def corp(engine: Engine) -> Organization:
    return OrganizationStore(engine).create("Corp")


@pytest.fixture
def connections(engine: Engine, settings: Settings, upstream: FakeUpstream, clock: MovableClock) -> ConnectionStore:
    sealer = load_sealer(settings.secret_keys, settings.database_url)
    return ConnectionStore(engine, sealer, upstream, OutboundRule(loopback=True), clock)


@pytest.fixture
def connected(engine: Engine, corp: Organization, connections: ConnectionStore, upstream: FakeUpstream) -> Organization:
    """Corp claims corp.example (the operator confirmed it) and signs its members in at its provider."""
    DomainClaims(engine).claim(corp.id, "corp.example")
    connections.save(corp.id, ConnectionForm(upstream.issuer, CLIENT_ID, CLIENT_SECRET))
    return corp


@pytest.fixture
def app(settings: Settings, engine: Engine, catalog: Any, clock: MovableClock, upstream: FakeUpstream):  # type: ignore[no-untyped-def]
    return make_app(settings, catalog=catalog, clock=clock, upstream=upstream)


@pytest.fixture
def web(engine: Engine, corp: Organization) -> Registered:
    return register(
        engine, corp, post_logout_redirect_uris=[SIGNED_OUT], grants=["authorization_code", "refresh_token"]
    )


@pytest.fixture
def browser(app: Any, connected: Organization) -> Iterator[TestClient]:
    with TestClient(app, follow_redirects=False) as browser:
        yield browser


def claims_of(jwt: str) -> dict[str, Any]:
    payload = jwt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))  # type: ignore[no-any-return]


def to_provider(response: httpx.Response, upstream: FakeUpstream) -> str:
    assert response.status_code == 302, response.text
    location = response.headers["location"]
    assert location.startswith(f"{upstream.issuer}/auth?"), location
    return location


def at_provider(browser: TestClient, web: Registered, upstream: FakeUpstream, email: str = ANA["email"]) -> str:
    """Start a sign-in and give the email: the provider's authorization URL we are sent to."""
    location = to_page(authorize(browser, web.id), "sign-in")
    page = show(browser, location)
    assert 'name="password"' not in page.text  # the email is asked first
    return to_provider(submit(browser, location, {"email": email}), upstream)


def answer(browser: TestClient, org: Organization, params: dict[str, str]) -> httpx.Response:
    return browser.get(f"/federation/{org.id}/callback", params=params)


def federated(
    browser: TestClient, web: Registered, upstream: FakeUpstream, org: Organization, claims: dict[str, Any] = ANA
) -> httpx.Response:
    url = at_provider(browser, web, upstream, str(claims.get("email", ANA["email"])))
    return answer(browser, org, upstream.authorize(url, claims))


def user_of(engine: Engine, email: str) -> User:
    return next(user for user in UserStore(engine).list() if user.email == email)


# Home-realm discovery


def test_a_new_person_of_a_claimed_domain_signs_in_at_the_provider_and_becomes_a_member(
    browser: TestClient, web: Registered, upstream: FakeUpstream, connected: Organization, engine: Engine
) -> None:
    url = at_provider(browser, web, upstream)
    query = {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}
    assert query["client_id"] == CLIENT_ID and query["login_hint"] == ANA["email"]
    assert query["redirect_uri"] == f"http://127.0.0.1:8000/federation/{connected.id}/callback"
    assert query["code_challenge_method"] == "S256" and query["nonce"] and query["state"]
    code = code_of(answer(browser, connected, upstream.authorize(url, ANA)))
    issued = tokens(browser, web, code)
    claims = claims_of(issued["id_token"])
    assert claims["amr"] == ["fed"] and claims["acr"] == "urn:regional-menus:acr:federated"
    assert claims_of(issued["access_token"])["amr"] == ["fed"]
    assert claims["org_id"] == connected.id and claims["email"] == ANA["email"] and claims["email_verified"] is True
    ana = user_of(engine, ANA["email"])
    assert [(m.org.id, m.role) for m in ana.memberships] == [(connected.id, "member")]
    assert UserStore(engine, hashing=FAST_HASHING).authenticate(ANA["email"], "!federated") is None


def test_an_address_elsewhere_gets_the_password_form(
    browser: TestClient, web: Registered, engine: Engine, connected: Organization
) -> None:
    UserStore(engine, hashing=FAST_HASHING).create("bo@example.com", "Bo", PASSWORD, [(connected.id, "member")])
    location = to_page(authorize(browser, web.id), "sign-in")
    page = submit(browser, location, {"email": "bo@example.com"})
    assert page.status_code == 200 and 'name="password"' in page.text and 'value="bo@example.com"' in page.text
    claims = claims_of(tokens(browser, web, code_of(sign_in(browser, location, "bo@example.com")))["id_token"])
    assert claims["amr"] == ["pwd"] and claims["acr"] == "urn:regional-menus:acr:password"


def test_without_a_claimed_domain_the_page_asks_for_email_and_password_at_once(
    app: Any, web: Registered, corp: Organization
) -> None:
    with TestClient(app, follow_redirects=False) as browser:
        page = show(browser, to_page(authorize(browser, web.id), "sign-in"))
    assert 'name="password"' in page.text


@pytest.mark.parametrize("hint", [{"login_hint": "ana@corp.example"}, {"domain_hint": "Corp.Example"}])
def test_a_hint_in_a_claimed_domain_skips_the_question(
    browser: TestClient, web: Registered, upstream: FakeUpstream, hint: dict[str, str]
) -> None:
    location = to_page(authorize(browser, web.id, **hint), "sign-in")
    to_provider(browser.get(location), upstream)


def test_a_login_hint_elsewhere_gets_the_password_form_filled_in(browser: TestClient, web: Registered) -> None:
    page = show(browser, to_page(authorize(browser, web.id, login_hint="bo@example.com"), "sign-in"))
    assert 'name="password"' in page.text and 'value="bo@example.com"' in page.text


# Linking and binding


def test_an_existing_verified_account_is_linked(
    browser: TestClient, web: Registered, upstream: FakeUpstream, connected: Organization, engine: Engine
) -> None:
    users = UserStore(engine, hashing=FAST_HASHING)
    other = OrganizationStore(engine).create("Elsewhere")
    ana = users.create(ANA["email"], "Ana Lima", PASSWORD, [(other.id, "owner")])
    users.mark_email_verified(ana.id, ana.email)
    code = code_of(federated(browser, web, upstream, connected))
    assert claims_of(tokens(browser, web, code)["id_token"])["sub"] == ana.id
    linked = users.get(ana.id)
    assert {m.org.id: m.role for m in linked.memberships} == {other.id: "owner", connected.id: "member"}
    assert users.authenticate(ANA["email"], PASSWORD) is not None  # the password still works (no SSO required)


def test_an_unverified_address_at_the_provider_is_not_linked(
    browser: TestClient, web: Registered, upstream: FakeUpstream, connected: Organization, engine: Engine
) -> None:
    users = UserStore(engine, hashing=FAST_HASHING)
    ana = users.create(ANA["email"], "Ana Lima", PASSWORD, [(connected.id, "member")])
    users.mark_email_verified(ana.id, ana.email)
    refused = federated(browser, web, upstream, connected, {**ANA, "email_verified": False})
    assert_error_page(refused)
    assert "does not say the address is verified" in refused.text
    assert "rm_session" not in refused.headers.get("set-cookie", "")


def test_an_unverified_account_here_is_not_linked(
    browser: TestClient, web: Registered, upstream: FakeUpstream, connected: Organization, engine: Engine
) -> None:
    UserStore(engine, hashing=FAST_HASHING).create(ANA["email"], "Ana Lima", PASSWORD, [(connected.id, "member")])
    refused = federated(browser, web, upstream, connected)
    assert_error_page(refused)
    assert "its address was never verified" in refused.text


def test_an_address_outside_the_organizations_domains_is_refused(
    browser: TestClient, web: Registered, upstream: FakeUpstream, connected: Organization
) -> None:
    url = at_provider(browser, web, upstream)
    refused = answer(browser, connected, upstream.authorize(url, {**ANA, "email": "ceo@victim.example"}))
    assert_error_page(refused)
    assert "not in a domain your organization claims" in refused.text


def test_a_change_of_address_at_the_provider_changes_nothing_here(
    app: Any, web: Registered, upstream: FakeUpstream, connected: Organization, engine: Engine
) -> None:
    with TestClient(app, follow_redirects=False) as first:
        code = code_of(federated(first, web, upstream, connected))
        sub = claims_of(tokens(first, web, code)["id_token"])["sub"]
    with TestClient(app, follow_redirects=False) as second:
        code = code_of(federated(second, web, upstream, connected, {**ANA, "email": "ana.new@corp.example"}))
        assert claims_of(tokens(second, web, code)["id_token"])["sub"] == sub
    assert UserStore(engine).get(sub).email == ANA["email"]


# SSO required


def test_sso_required_stops_the_members_passwords(
    browser: TestClient,
    web: Registered,
    upstream: FakeUpstream,
    connected: Organization,
    connections: ConnectionStore,
    engine: Engine,
) -> None:
    UserStore(engine, hashing=FAST_HASHING).create("bo@example.com", "Bo", PASSWORD, [(connected.id, "member")])
    assert connections.set_sso_required(connected.id, True)
    location = to_page(authorize(browser, web.id), "sign-in")
    sent = sign_in(browser, location, "bo@example.com")
    url = to_provider(sent, upstream)
    assert "rm_session" not in sent.headers.get("set-cookie", "")
    assert parse_qs(urlsplit(url).query)["login_hint"] == ["bo@example.com"]
    wrong = sign_in(browser, location, "bo@example.com", "not the password")
    assert wrong.status_code == 200 and "Invalid email or password" in wrong.text


# The relying party's checks, each a page that says what happened


def test_an_error_from_the_provider_is_a_page_that_says_it(
    browser: TestClient, web: Registered, upstream: FakeUpstream, connected: Organization
) -> None:
    url = at_provider(browser, web, upstream)
    state = parse_qs(urlsplit(url).query)["state"][0]
    params = {"error": "access_denied", "error_description": "The user said no", "state": state, "iss": upstream.issuer}
    refused = answer(browser, connected, params)
    assert_error_page(refused)
    assert "cancelled or refused" in refused.text and "The user said no" in refused.text


def test_an_answer_is_taken_once(
    browser: TestClient, web: Registered, upstream: FakeUpstream, connected: Organization
) -> None:
    url = at_provider(browser, web, upstream)
    params = upstream.authorize(url, ANA)
    code_of(answer(browser, connected, params))
    assert_error_page(answer(browser, connected, params))


def test_an_answer_from_another_issuer_is_refused(
    browser: TestClient, web: Registered, upstream: FakeUpstream, connected: Organization
) -> None:
    params = upstream.authorize(at_provider(browser, web, upstream), ANA)
    refused = answer(browser, connected, {**params, "iss": "https://evil.example"})
    assert_error_page(refused, 502)
    assert "another provider" in refused.text


def test_an_answer_at_another_organizations_callback_is_refused(
    browser: TestClient, web: Registered, upstream: FakeUpstream, corp: Organization, engine: Engine
) -> None:
    other = OrganizationStore(engine).create("Other")
    params = upstream.authorize(at_provider(browser, web, upstream), ANA)
    refused = answer(browser, other, params)
    assert_error_page(refused)
    assert "another organization" in refused.text


def test_an_answer_in_another_browser_is_refused(
    app: Any, browser: TestClient, web: Registered, upstream: FakeUpstream, connected: Organization
) -> None:
    params = upstream.authorize(at_provider(browser, web, upstream), ANA)
    with TestClient(app, follow_redirects=False) as other:
        assert_error_page(answer(other, connected, params))


def test_a_provider_that_does_not_answer_is_a_502_page(
    browser: TestClient, web: Registered, upstream: FakeUpstream, connected: Organization
) -> None:
    params = upstream.authorize(at_provider(browser, web, upstream), ANA)
    upstream.overrides[f"{upstream.issuer}/token"] = Answer(500, "text/html", b"<h1>down</h1>")
    refused = answer(browser, connected, params)
    assert_error_page(refused, 502)
    assert "HTTP 500" in refused.text


# Sign-out


def test_signing_out_goes_on_to_the_providers_end_session_and_back_to_the_app(
    browser: TestClient, web: Registered, upstream: FakeUpstream, connected: Organization
) -> None:
    issued = tokens(browser, web, code_of(federated(browser, web, upstream, connected)))
    out = browser.get(
        "/oauth2/end-session",
        params={"id_token_hint": issued["id_token"], "post_logout_redirect_uri": SIGNED_OUT, "state": "s-1"},
    )
    assert out.status_code == 302
    location = out.headers["location"]
    assert location.startswith(f"{upstream.issuer}/session/end?")
    query = query_of(location)
    assert query["post_logout_redirect_uri"] == "http://127.0.0.1:8000/federation/signed-out"
    assert claims_of(query["id_token_hint"])["iss"] == upstream.issuer and query["client_id"] == CLIENT_ID
    back = browser.get("/federation/signed-out", params={"state": query["state"]})
    assert back.status_code == 302 and query_of(back.headers["location"]) == {"state": "s-1"}
    assert back.headers["location"].startswith(SIGNED_OUT)
    again = browser.get("/federation/signed-out", params={"state": query["state"]})
    assert again.status_code == 200 and "signed out" in again.text


def test_the_providers_logout_token_ends_the_session_here(
    browser: TestClient, web: Registered, upstream: FakeUpstream, connected: Organization
) -> None:
    code_of(federated(browser, web, upstream, connected))
    silent = authorize(browser, web.id, prompt="none")
    assert "code" in query_of(silent.headers["location"])  # signed in
    token = upstream.logout_token(sid=ANA["sid"], sub=ANA["sub"])
    ended = browser.post(f"/federation/{connected.id}/backchannel-logout", data={"logout_token": token})
    assert ended.status_code == 200 and ended.headers["cache-control"] == "no-store"
    after = query_of(authorize(browser, web.id, prompt="none").headers["location"])
    assert after["error"] == "login_required" and after["state"] == STATE


@pytest.mark.parametrize(
    "claims",
    [{"iss": "https://evil.example"}, {"aud": "someone-else"}, {"nonce": "x"}, {"events": {}}, {"exp": 1}],
)
def test_a_logout_token_that_does_not_verify_is_400(
    browser: TestClient, upstream: FakeUpstream, connected: Organization, claims: dict[str, Any]
) -> None:
    token = upstream.logout_token(sid="up-s1", **claims)
    refused = browser.post(f"/federation/{connected.id}/backchannel-logout", data={"logout_token": token})
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_request"


def test_a_replayed_logout_token_is_refused_and_audited(
    browser: TestClient,
    upstream: FakeUpstream,
    connected: Organization,
    engine: Engine,
    clock: MovableClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Back-Channel Logout 1.0 §2.6: the ``jti`` is remembered until the token's expiry, on every node (a table);
    the purge job forgets it only once the token's own expiry refuses it."""
    caplog.set_level(logging.INFO, logger="regional_menus.audit")
    token = upstream.logout_token(sid="up-s1", jti="once-only")
    url = f"/federation/{connected.id}/backchannel-logout"
    assert browser.post(url, data={"logout_token": token}).status_code == 200
    replayed = browser.post(url, data={"logout_token": token})
    assert replayed.status_code == 400 and replayed.json()["error"] == "invalid_request"
    assert "already received" in replayed.json()["error_description"]
    refusals = [r.fields for r in caplog.records if r.name == "regional_menus.audit"]  # type: ignore[attr-defined]
    assert {"event": "federated_logout", "outcome": "failure", "reason": "replayed"}.items() <= refusals[-1].items()
    another = upstream.logout_token(sid="up-s1", jti="another")  # a new jti of the same provider is taken
    assert browser.post(url, data={"logout_token": another}).status_code == 200
    purger = Purger(engine, timedelta(days=1), timedelta(days=1), timedelta(minutes=15), clock)
    assert purger.purge()["federation_logout_tokens"] == 0  # not yet expired: a replay is still refused
    clock.advance(120 + 60 + 1)  # the tokens' lifetime, and the leeway their expiry is checked with
    assert purger.purge()["federation_logout_tokens"] == 2


def test_the_email_step_is_throttled_per_network_and_never_locks_the_person_out(
    browser: TestClient, web: Registered, upstream: FakeUpstream, engine: Engine, connected: Organization
) -> None:
    """Home-realm discovery's email step counts against its network (``sign_in_address_limit``, 20 in the tests'
    settings), on its own counter: past it, 429 with Retry-After; the password step still signs in."""
    dee = UserStore(engine, hashing=FAST_HASHING).create("dee@example.com", "Dee", PASSWORD, [(connected.id, "member")])
    location = to_page(authorize(browser, web.id), "sign-in")
    for n in range(20):
        assert submit(browser, location, {"email": f"someone{n}@corp.example"}).status_code == 302
    refused = submit(browser, location, {"email": "ana@corp.example"})
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
    assert "Too many" in refused.text
    code_of(sign_in(browser, location, dee.email))  # the password form is not refused: no one is locked out


def test_a_hint_still_routes_to_the_provider_after_the_network_spent_the_email_steps_bound(
    browser: TestClient, web: Registered, upstream: FakeUpstream
) -> None:
    """Someone on the same network spending the email step's bound (20 in the tests' settings) does not keep the
    organization's members, whose applications send a hint, from their provider."""
    location = to_page(authorize(browser, web.id), "sign-in")
    for n in range(21):
        submit(browser, location, {"email": f"someone{n}@corp.example"})
    assert submit(browser, location, {"email": "ana@corp.example"}).status_code == 429
    for hint in ({"login_hint": "ana@corp.example"}, {"domain_hint": "corp.example"}):
        to_provider(browser.get(to_page(authorize(browser, web.id, **hint), "sign-in")), upstream)


def test_a_password_sign_up_in_a_claimed_domain_makes_no_account_and_goes_to_the_provider(
    browser: TestClient, web: Registered, upstream: FakeUpstream, engine: Engine, connected: Organization
) -> None:
    """The organization vouches for its addresses: the provider's first sign-in makes the account, not a password."""
    location = to_page(authorize(browser, web.id, prompt="create"), "sign-up")
    fields = {"name": "Ana", "email": "Ana@Corp.Example", "password": PASSWORD, "organization": "Ana's"}
    sent = to_provider(submit(browser, location, fields), upstream)
    assert query_of(sent)["client_id"] == CLIENT_ID
    assert not [user for user in UserStore(engine).list() if user.email.lower() == "ana@corp.example"]
    elsewhere = submit(browser, location, {**fields, "email": "ana@elsewhere.example"})
    assert elsewhere.status_code == 302 and not elsewhere.headers["location"].startswith(upstream.issuer)
    assert [user.email for user in UserStore(engine).list() if user.email == "ana@elsewhere.example"]


# Domains


def test_no_two_organizations_hold_one_domain(engine: Engine, corp: Organization) -> None:
    other = OrganizationStore(engine).create("Other")
    domains = DomainClaims(engine)
    assert domains.claim(corp.id, "Corp.Example.").domain == "corp.example"
    assert domains.claim(corp.id, "corp.example").org_id == corp.id  # once: claiming again changes nothing
    with pytest.raises(InvalidInput, match="claimed by another organization"):
        domains.claim(other.id, "CORP.example")
    for bad in ("localhost", "corp..example", "-corp.example", "a" * 64 + ".example", "corp example"):
        with pytest.raises(InvalidInput):
            domains.claim(corp.id, bad)


def test_callback_redirects_to_the_client_with_state(
    browser: TestClient, web: Registered, upstream: FakeUpstream, connected: Organization
) -> None:
    response = federated(browser, web, upstream, connected)
    assert response.headers["location"].startswith(CALLBACK)


# The connection test (the console's "try it")


def signed_in_as(browser: TestClient, web: Registered, engine: Engine, org: Organization, role: str) -> User:
    user = UserStore(engine, hashing=FAST_HASHING).create(f"{role}@example.com", role, PASSWORD, [(org.id, role)])
    location = to_page(authorize(browser, web.id), "sign-in")
    code_of(sign_in(browser, location, user.email))
    return user


def test_an_owner_tries_the_connection_and_sees_the_claims_without_signing_anyone_in(
    browser: TestClient, web: Registered, upstream: FakeUpstream, connected: Organization, engine: Engine
) -> None:
    signed_in_as(browser, web, engine, connected, "owner")
    session = browser.cookies.get("rm_session")
    url = to_provider(browser.get(f"/federation/{connected.id}/test"), upstream)
    shown = answer(browser, connected, upstream.authorize(url, ANA))
    assert shown.status_code == 200 and "Claims received" in shown.text
    assert "<td>email</td><td>ana@corp.example</td>" in shown.text and "<td>sub</td><td>up-ana</td>" in shown.text
    assert browser.cookies.get("rm_session") == session  # nobody signed in
    assert not [user for user in UserStore(engine).list() if user.email == ANA["email"]]


@pytest.mark.parametrize("role", ["admin", "member"])
def test_only_an_owner_of_the_organization_may_try_its_connection(
    app: Any, web: Registered, connected: Organization, engine: Engine, role: str
) -> None:
    with TestClient(app, follow_redirects=False) as anonymous:
        asked = anonymous.get(f"/federation/{connected.id}/test")
        assert asked.status_code == 200 and "Sign in to the console" in asked.text
    with TestClient(app, follow_redirects=False) as below:
        signed_in_as(below, web, engine, connected, role)
        assert_error_page(below.get(f"/federation/{connected.id}/test"), 403)
    other = OrganizationStore(engine).create("Other")
    with TestClient(app, follow_redirects=False) as owner:
        signed_in_as(owner, web, engine, connected, "owner")
        assert_error_page(owner.get(f"/federation/{other.id}/test"), 404)


def test_a_session_renewed_by_a_password_is_no_longer_the_providers(
    browser: TestClient, web: Registered, upstream: FakeUpstream, connected: Organization, engine: Engine
) -> None:
    users = UserStore(engine, hashing=FAST_HASHING)
    ana = users.create(ANA["email"], "Ana Lima", PASSWORD, [(connected.id, "member")])
    users.mark_email_verified(ana.id, ana.email)
    code_of(federated(browser, web, upstream, connected))
    location = to_page(authorize(browser, web.id, prompt="login"), "sign-in")
    claims = claims_of(tokens(browser, web, code_of(sign_in(browser, location, ANA["email"])))["id_token"])
    assert claims["amr"] == ["pwd"]
    token = upstream.logout_token(sid=ANA["sid"], sub=ANA["sub"])
    assert (
        browser.post(f"/federation/{connected.id}/backchannel-logout", data={"logout_token": token}).status_code == 200
    )
    assert "code" in query_of(authorize(browser, web.id, prompt="none").headers["location"])  # still signed in
    out = browser.get("/oauth2/end-session", params={"id_token_hint": tokens_of_session(browser, web)})
    assert out.status_code == 200 and "signed out" in out.text  # no visit to the provider's end-session


def tokens_of_session(browser: TestClient, web: Registered) -> str:
    return str(tokens(browser, web, code_of(authorize(browser, web.id, prompt="none")))["id_token"])
