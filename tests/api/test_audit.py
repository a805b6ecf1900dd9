"""The audit log (issue 7): every security event is one line, written once by the action that causes it.

The actions run through the ASGI app as in ``tests/api/identity/``, with its helpers
(``tests/support/identity_pages.py``); each test clears the captured records just before the action, so the
events asserted are exactly the ones that action wrote.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.disabled_users import disable, enable
from identity.accounts.organizations import Organization
from identity.accounts.password_reset import replace_password
from identity.accounts.users import User, UserStore
from identity.api_keys.keys import ApiKeyStore
from identity.common import audit
from identity.common.outbound_uris import OutboundRule
from identity.federation.connections import ConnectionForm, ConnectionStore
from identity.federation.domains import DomainClaims
from identity.keys.sealing import Sealer, new_key
from identity.keys.signing_keys import SigningKeys
from identity.mail.email_links import VERIFY_EMAIL, EmailLinks
from identity.tokens.revoked_grants import Revoker
from service.database.sealing_keys import load_sealer
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.defaults import ACCOUNT_LIMIT, SIGNING_KEYS_MAX_AGE
from tests.support.identity_fixtures import CALLBACK, PASSWORD, Registered, register
from tests.support.identity_pages import (
    SIGN_UP,
    authorize,
    basic,
    code_of,
    post_form,
    refresh,
    sign_in,
    signed_in_code,
    submit,
    to_page,
    token_request,
    tokens,
)
from tests.support.passwords import FAST_HASHING
from tests.support.upstream_fake import CLIENT_ID as UPSTREAM_CLIENT_ID
from tests.support.upstream_fake import CLIENT_SECRET as UPSTREAM_CLIENT_SECRET
from tests.support.upstream_fake import FakeUpstream

Events = list[dict[str, Any]]


@pytest.fixture
def audited(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="regional_menus.audit")
    return caplog


def events(caplog: pytest.LogCaptureFixture) -> Events:
    """The audit events captured so far: their fields, as the JSON line carries them."""
    return [dict(r.fields) for r in caplog.records if r.name == "regional_menus.audit"]  # type: ignore[attr-defined]


def only(caplog: pytest.LogCaptureFixture) -> dict[str, Any]:
    """The one event captured; fails if the action wrote none or several."""
    found = events(caplog)
    assert len(found) == 1, found
    return found[0]


def test_sign_in_is_audited_with_the_user_and_client(
    browser: TestClient, web: Registered, user: User, audited: pytest.LogCaptureFixture
) -> None:
    location = to_page(authorize(browser, web.id), "sign-in")
    audited.clear()
    code_of(sign_in(browser, location))
    assert only(audited) == {"event": "sign_in", "outcome": "success", "user_id": user.id, "client_id": web.id}


def test_failed_sign_in_with_a_wrong_password_names_the_account_by_id_only(
    browser: TestClient, web: Registered, user: User, audited: pytest.LogCaptureFixture
) -> None:
    location = to_page(authorize(browser, web.id), "sign-in")
    audited.clear()
    sign_in(browser, location, password="not the password")
    assert only(audited) == {
        "event": "sign_in",
        "outcome": "failure",
        "reason": "wrong_password",
        "user_id": user.id,
        "client_id": web.id,
    }


def test_failed_sign_in_for_an_unknown_address_logs_no_address(
    browser: TestClient, web: Registered, audited: pytest.LogCaptureFixture
) -> None:
    location = to_page(authorize(browser, web.id), "sign-in")
    audited.clear()
    sign_in(browser, location, email="maybe-a-password@example.com", password="whatever it is")
    event = only(audited)
    assert event == {"event": "sign_in", "outcome": "failure", "reason": "unknown_account", "client_id": web.id}
    assert "maybe-a-password" not in audited.text


def test_throttled_sign_in_is_audited_as_throttled(
    browser: TestClient, web: Registered, user: User, audited: pytest.LogCaptureFixture
) -> None:
    location = to_page(authorize(browser, web.id), "sign-in")
    for _ in range(ACCOUNT_LIMIT):
        sign_in(browser, location, password="wrong password")
    audited.clear()
    assert sign_in(browser, location, password="wrong password").status_code == 429
    assert only(audited) == {"event": "sign_in", "outcome": "failure", "reason": "throttled", "client_id": web.id}


def test_sign_up_is_audited_with_the_new_user_and_organization(
    browser: TestClient, web: Registered, audited: pytest.LogCaptureFixture
) -> None:
    location = to_page(authorize(browser, web.id, prompt="create"), "sign-up")
    audited.clear()
    code_of(submit(browser, location, SIGN_UP))
    event = only(audited)
    assert (event["event"], event["outcome"], event["client_id"]) == ("sign_up", "success", web.id)
    assert event["user_id"].startswith("usr_") and event["org_id"].startswith("org_")


@pytest.mark.parametrize(("decision", "outcome"), [("allow", "success"), ("deny", "denied")])
def test_consent_is_audited_granted_or_denied(
    browser: TestClient,
    engine: Engine,
    org: Organization,
    user: User,
    audited: pytest.LogCaptureFixture,
    decision: str,
    outcome: str,
) -> None:
    partner = register(engine, org, name="Partner Planner", first_party=False)
    consent = to_page(sign_in(browser, to_page(authorize(browser, partner.id), "sign-in")), "consent")
    audited.clear()
    submit(browser, consent, {"decision": decision})
    event = only(audited)
    assert (event["event"], event["outcome"]) == ("consent", outcome)
    assert (event["user_id"], event["client_id"]) == (user.id, partner.id)


def test_token_issued_by_the_code_grant_is_audited_with_its_grant_type(
    browser: TestClient, web: Registered, user: User, audited: pytest.LogCaptureFixture
) -> None:
    code = signed_in_code(browser, web.id)
    audited.clear()
    tokens(browser, web, code)
    event = only(audited)
    assert event["event"] == "token_issued" and event["grant_type"] == "authorization_code"
    assert (event["client_id"], event["user_id"]) == (web.id, user.id) and event["grant_id"]


def test_token_issued_by_refresh_is_audited_and_reuse_is_detected_once(
    browser: TestClient, web: Registered, user: User, audited: pytest.LogCaptureFixture
) -> None:
    issued = tokens(browser, web, signed_in_code(browser, web.id, scope="openid offline_access"))
    audited.clear()
    assert refresh(browser, web, issued["refresh_token"]).status_code == 200
    event = only(audited)
    assert (event["event"], event["grant_type"], event["user_id"]) == ("token_issued", "refresh_token", user.id)
    audited.clear()
    assert refresh(browser, web, issued["refresh_token"]).status_code == 400  # the rotated one, again
    reuse = only(audited)
    assert (reuse["event"], reuse["outcome"], reuse["client_id"]) == ("refresh_token_reuse", "failure", web.id)
    assert reuse["grant_id"] == event["grant_id"]


def test_token_issued_to_an_application_is_audited_without_a_user(
    browser: TestClient, engine: Engine, org: Organization, audited: pytest.LogCaptureFixture
) -> None:
    app = register(
        engine, org, name="Reporter", redirect_uris=[], grants=["client_credentials"], scopes=["members:read"]
    )
    audited.clear()
    response = token_request(browser, [("grant_type", "client_credentials")], basic(app))
    assert response.status_code == 200, response.text
    assert only(audited) == {
        "event": "token_issued",
        "outcome": "success",
        "grant_type": "client_credentials",
        "client_id": app.id,
        "org_id": org.id,
    }


def test_code_replay_is_audited(
    browser: TestClient, web: Registered, user: User, audited: pytest.LogCaptureFixture
) -> None:
    code = signed_in_code(browser, web.id)
    tokens(browser, web, code)
    audited.clear()
    tokens_again = post_form(
        browser,
        "/oauth2/token",
        [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", CALLBACK)],
        basic(web),
    )
    assert tokens_again.status_code == 400
    event = only(audited)
    assert (event["event"], event["outcome"], event["client_id"]) == ("code_replay", "failure", web.id)


def test_revocation_is_audited_with_the_token_type_and_a_foreign_token_as_failure(
    browser: TestClient, web: Registered, user: User, audited: pytest.LogCaptureFixture
) -> None:
    issued = tokens(browser, web, signed_in_code(browser, web.id, scope="openid offline_access"))
    audited.clear()
    assert post_form(browser, "/oauth2/revoke", [("token", issued["refresh_token"])], basic(web)).status_code == 200
    event = only(audited)
    assert (event["event"], event["outcome"], event["client_id"]) == ("token_revoked", "success", web.id)
    assert event["token_type"] == "refresh_token" and event["grant_id"]
    audited.clear()
    assert post_form(browser, "/oauth2/revoke", [("token", "not-a-token")], basic(web)).status_code == 200
    assert only(audited) == {
        "event": "token_revoked",
        "outcome": "failure",
        "client_id": web.id,
        "reason": "unknown_token",
    }


def test_revoking_an_access_token_is_audited_with_its_jti(
    browser: TestClient, web: Registered, user: User, audited: pytest.LogCaptureFixture
) -> None:
    issued = tokens(browser, web, signed_in_code(browser, web.id))
    audited.clear()
    assert post_form(browser, "/oauth2/revoke", [("token", issued["access_token"])], basic(web)).status_code == 200
    event = only(audited)
    assert (event["event"], event["token_type"]) == ("token_revoked", "access_token")
    assert event["jti"].startswith("at_")


def test_sign_out_is_audited_with_the_user_and_session(
    browser: TestClient, web: Registered, user: User, audited: pytest.LogCaptureFixture
) -> None:
    issued = tokens(browser, web, signed_in_code(browser, web.id))
    audited.clear()
    response = browser.get("/oauth2/end-session", params={"id_token_hint": issued["id_token"]})
    assert response.status_code == 200, response.text
    event = only(audited)
    assert (event["event"], event["user_id"]) == ("sign_out", user.id) and event["session_id"]


def test_key_rotation_is_audited_with_the_new_kid(engine: Engine, audited: pytest.LogCaptureFixture) -> None:
    info = SigningKeys(
        engine, timedelta(seconds=60), timedelta(seconds=60), sealer=Sealer([new_key()]), max_age=SIGNING_KEYS_MAX_AGE
    ).rotate()
    assert only(audited) == {"event": "key_rotated", "outcome": "success", "kid": info.kid}


def test_api_key_creation_and_revocation_are_audited_with_the_key_id(
    keys: ApiKeyStore, audited: pytest.LogCaptureFixture
) -> None:
    record, key = keys.create("partner")
    assert only(audited) == {"event": "api_key_created", "outcome": "success", "key_id": record.id}
    audited.clear()
    keys.revoke(record.id)
    assert only(audited) == {"event": "api_key_revoked", "outcome": "success", "key_id": record.id}
    assert key not in audited.text


def test_a_change_of_an_organization_is_audited_with_its_kind_and_ids_once_it_commits(
    engine: Engine, org: Organization, user: User, audited: pytest.LogCaptureFixture
) -> None:
    from identity.organizations.actors import Actor
    from identity.organizations.trail import Trail

    Trail(engine, b"k" * 32).write(Actor.member(user.id, org.id, "owner", "192.0.2.7"), "member_invited", "inv_1")
    assert only(audited) == {
        "event": "organization_changed",
        "outcome": "success",
        "org_id": org.id,
        "user_id": user.id,
        "reason": "member_invited",
        "subject_id": "inv_1",
    }
    assert "192.0.2.7" not in audited.text  # the network is the trail's, not the log's


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql"], indirect=True)
def test_revoking_a_revoked_key_writes_no_second_audit_line(
    keys: ApiKeyStore, audited: pytest.LogCaptureFixture
) -> None:
    """The command line and the console alike: one revocation, one audit line, whoever asks again."""
    record, _ = keys.create("partner")
    first = keys.revoke(record.id)
    audited.clear()
    again = keys.revoke(record.id)
    assert events(audited) == [] and again.revoked_at == first.revoked_at


def test_a_followed_verification_link_is_audited_with_the_user(
    engine: Engine, user: User, browser: TestClient, audited: pytest.LogCaptureFixture
) -> None:
    with engine.begin() as connection:
        token = EmailLinks(engine).issue(connection, VERIFY_EMAIL, user.id, user.email, timedelta(hours=1))
    audited.clear()
    assert browser.get(f"/verify-email?token={token}").status_code == 200
    assert only(audited) == {"event": "email_verified", "outcome": "success", "user_id": user.id}


def test_a_password_reset_is_audited_with_the_user(
    engine: Engine, user: User, audited: pytest.LogCaptureFixture
) -> None:
    audited.clear()
    replace_password(UserStore(engine, hashing=FAST_HASHING), Revoker(engine), user.id, "a new and longer password")
    assert only(audited) == {"event": "password_reset", "outcome": "success", "user_id": user.id}


def test_disabling_and_enabling_a_user_is_audited_with_the_user(
    engine: Engine, user: User, audited: pytest.LogCaptureFixture
) -> None:
    users = UserStore(engine, hashing=FAST_HASHING)
    audited.clear()
    disable(users, Revoker(engine), user.id)
    assert only(audited) == {"event": "user_disabled", "outcome": "success", "user_id": user.id}
    audited.clear()
    enable(users, user.id)
    assert only(audited) == {"event": "user_enabled", "outcome": "success", "user_id": user.id}


# Federation (identity/federation/): sign-ins through an organization's provider, links, refusals, logout tokens


@pytest.fixture
def upstream() -> FakeUpstream:
    return FakeUpstream()


@pytest.fixture
def federated_app(settings: Settings, engine: Engine, catalog: Any, clock: Any, upstream: FakeUpstream) -> Any:
    return make_app(settings, catalog=catalog, clock=clock, upstream=upstream)


def _connect(engine: Engine, settings: Settings, org: Organization, upstream: FakeUpstream) -> None:
    DomainClaims(engine).claim(org.id, "corp.example")
    sealer = load_sealer(settings.secret_keys, settings.database_url)
    connections = ConnectionStore(engine, sealer, upstream, OutboundRule(loopback=True))
    connections.save(org.id, ConnectionForm(upstream.issuer, UPSTREAM_CLIENT_ID, UPSTREAM_CLIENT_SECRET))


@pytest.fixture
def federated(
    federated_app: Any, engine: Engine, settings: Settings, org: Organization, upstream: FakeUpstream
) -> Iterator[tuple[TestClient, Registered]]:
    """Olive Grove connected to its provider (the fake upstream) with a domain claimed, a client of it, and a
    browser of the service that federates."""
    _connect(engine, settings, org, upstream)
    web = register(engine, org)
    with TestClient(federated_app, follow_redirects=False) as browser:
        yield browser, web


def _through_provider(browser: TestClient, web: Registered, org: Organization, upstream: FakeUpstream, **claims: Any):  # type: ignore[no-untyped-def]
    location = to_page(authorize(browser, web.id), "sign-in")
    url = submit(browser, location, {"email": "ana@corp.example"}).headers["location"]
    return browser.get(f"/federation/{org.id}/callback", params=upstream.authorize(url, claims))


def test_claiming_a_domain_and_saving_a_connection_are_audited_with_the_organization(
    engine: Engine, settings: Settings, org: Organization, upstream: FakeUpstream, audited: pytest.LogCaptureFixture
) -> None:
    audited.clear()
    _connect(engine, settings, org, upstream)
    assert events(audited) == [
        {"event": "domain_claimed", "outcome": "success", "org_id": org.id},
        {"event": "connection_saved", "outcome": "success", "org_id": org.id},
    ]


def test_a_federated_sign_in_that_makes_an_account_is_audited_as_a_link_and_a_sign_in(
    federated: tuple[TestClient, Registered],
    engine: Engine,
    org: Organization,
    upstream: FakeUpstream,
    audited: pytest.LogCaptureFixture,
) -> None:
    browser, web = federated
    audited.clear()
    claims = {"sub": "up-ana", "email": "ana@corp.example", "email_verified": True}
    code_of(_through_provider(browser, web, org, upstream, **claims))
    ana = next(user for user in UserStore(engine).list() if user.email == "ana@corp.example")
    found = events(audited)
    assert found[0] == {
        "event": "federated_link",
        "outcome": "success",
        "reason": "created",
        "user_id": ana.id,
        "org_id": org.id,
    }
    assert (
        found[1]["event"] == "federated_sign_in" and found[1]["user_id"] == ana.id and found[1]["client_id"] == web.id
    )
    assert len(found) == 2


def test_a_refused_link_is_audited_with_its_reason(
    federated: tuple[TestClient, Registered],
    engine: Engine,
    org: Organization,
    upstream: FakeUpstream,
    audited: pytest.LogCaptureFixture,
) -> None:
    browser, web = federated
    UserStore(engine, hashing=FAST_HASHING).create("ana@corp.example", "Ana", PASSWORD, [(org.id, "member")])
    audited.clear()
    claims = {"sub": "up-ana", "email": "ana@corp.example", "email_verified": False}
    assert _through_provider(browser, web, org, upstream, **claims).status_code == 400
    assert only(audited) == {
        "event": "federated_sign_in",
        "outcome": "denied",
        "reason": "upstream_unverified",
        "org_id": org.id,
        "client_id": web.id,
    }


def test_a_logout_token_that_ends_a_session_is_audited_and_a_bad_one_too(
    federated: tuple[TestClient, Registered],
    org: Organization,
    upstream: FakeUpstream,
    audited: pytest.LogCaptureFixture,
) -> None:
    browser, web = federated
    claims = {"sub": "up-ana", "email": "ana@corp.example", "email_verified": True, "sid": "up-1"}
    code_of(_through_provider(browser, web, org, upstream, **claims))
    audited.clear()
    browser.post(f"/federation/{org.id}/backchannel-logout", data={"logout_token": upstream.logout_token(sid="up-1")})
    event = only(audited)
    assert (event["event"], event["outcome"], event["org_id"]) == ("federated_logout", "success", org.id)
    assert event["session_id"].startswith("ses_")
    audited.clear()
    bad = upstream.logout_token(sid="up-1", aud="another")
    browser.post(f"/federation/{org.id}/backchannel-logout", data={"logout_token": bad})
    assert only(audited) == {
        "event": "federated_logout",
        "outcome": "failure",
        "reason": "invalid_token",
        "org_id": org.id,
    }


def test_every_documented_event_has_a_test_here() -> None:
    """Here, or for the command line's events in the system tests' audit module."""
    tested = Path(__file__).read_text() + (Path(__file__).parents[1] / "system" / "test_audit.py").read_text()
    assert all(f'"{event}"' in tested for event in audit.EVENTS)


def test_audit_events_refuse_anything_but_ids() -> None:
    with pytest.raises(ValueError, match="ids only"):
        audit.record(audit.SIGN_IN, audit.FAILURE, password="hunter2")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown audit event"):
        audit.record("something_else")
