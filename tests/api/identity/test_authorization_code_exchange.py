"""The authorization code at the token endpoint (RFC 6749 §4.1.3, RFC 7636 §4.6): its redirect URI, PKCE
verifier, client, age and replay."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization
from identity.accounts.users import User
from identity.tokens.pkce import challenge_of
from tests.support import identity_pages as pages
from tests.support.clocks import MovableClock
from tests.support.identity_fixtures import CALLBACK_WITH_QUERY, Registered, Shared, register

# The token endpoint: the authorization code.


def test_code_with_a_different_redirect_uri_is_invalid_grant(browser: TestClient, web: Registered, user: User) -> None:
    code = pages.signed_in_code(browser, web.id)
    pages.assert_oauth_error(pages.exchange(browser, web, code, redirect_uri=CALLBACK_WITH_QUERY), 400, "invalid_grant")


@pytest.mark.parametrize(
    "verifier",
    [None, "w" * 43, pages.VERIFIER + "x", pages.VERIFIER.upper()],
    ids=["missing", "other", "longer", "case"],
)
def test_code_without_its_pkce_verifier_is_invalid_grant(
    browser: TestClient, web: Registered, user: User, verifier: str | None
) -> None:
    code = pages.signed_in_code(browser, web.id)
    pages.assert_oauth_error(pages.exchange(browser, web, code, verifier=verifier), 400, "invalid_grant")


def test_verifier_equal_to_its_challenge_is_invalid_grant(browser: TestClient, web: Registered, user: User) -> None:
    """RFC 7636 §4.6, RFC 9700 §2.1.1: S256 only, so the challenge itself sent back as the verifier (a ``plain``
    downgrade) is refused, though it is 43 characters of the verifier's alphabet."""
    code = pages.signed_in_code(browser, web.id)
    pages.assert_oauth_error(pages.exchange(browser, web, code, verifier=pages.CHALLENGE), 400, "invalid_grant")


@pytest.mark.parametrize(
    "verifier",
    ["v" * 42, "v" * 129, "v" * 42 + "+", "v" * 42 + "!", "v" * 42 + " "],
    ids=["42-characters", "129-characters", "plus", "exclamation", "space"],
)
def test_malformed_verifier_is_invalid_grant_even_when_its_challenge_matches(
    browser: TestClient, web: Registered, user: User, verifier: str
) -> None:
    """RFC 7636 §4.1: a verifier is 43 to 128 characters of [A-Za-z0-9-._~]; one outside that is refused even when
    the authorization request sent its S256 challenge."""
    code = pages.signed_in_code(browser, web.id, code_challenge=challenge_of(verifier))
    pages.assert_oauth_error(pages.exchange(browser, web, code, verifier=verifier), 400, "invalid_grant")


@pytest.mark.parametrize("verifier", ["v" * 43, "~._-" * 32], ids=["43-characters", "128-characters"])
def test_verifiers_at_the_length_bounds_exchange(
    browser: TestClient, web: Registered, user: User, verifier: str
) -> None:
    """The bounds of RFC 7636 §4.1 are inclusive: the refusals above are of the length, not of any verifier."""
    code = pages.signed_in_code(browser, web.id, code_challenge=challenge_of(verifier))
    assert pages.exchange(browser, web, code, verifier=verifier).status_code == 200


def test_verifier_sent_for_a_code_without_challenge_is_invalid_grant(
    browser: TestClient, engine: Engine, org: Organization, user: User
) -> None:
    legacy = register(engine, org, name="Legacy server app", pkce_required=False)
    code = pages.signed_in_code(browser, legacy.id, code_challenge=None, code_challenge_method=None)
    pages.assert_oauth_error(pages.exchange(browser, legacy, code), 400, "invalid_grant")


def test_code_without_challenge_exchanges_without_verifier(
    browser: TestClient, engine: Engine, org: Organization, user: User
) -> None:
    legacy = register(engine, org, name="Legacy server app", pkce_required=False)
    code = pages.signed_in_code(browser, legacy.id, code_challenge=None, code_challenge_method=None)
    assert (
        pages.verified(browser, pages.tokens(browser, legacy, code, verifier=None)["id_token"], legacy.id)["sub"]
        == user.id
    )


def test_code_of_another_client_is_invalid_grant(
    browser: TestClient, web: Registered, engine: Engine, org: Organization, user: User
) -> None:
    other = register(engine, org, name="Other app")
    code = pages.signed_in_code(browser, web.id)
    pages.assert_oauth_error(pages.exchange(browser, other, code), 400, "invalid_grant")
    # Another client's attempt neither uses the code up nor passes for a replay: its own client still redeems it.
    assert pages.exchange(browser, web, code).status_code == 200


def test_unknown_code_is_invalid_grant(visitor: TestClient, shared: Shared) -> None:
    pages.assert_oauth_error(pages.exchange(visitor, shared.web, "not-a-code-we-issued"), 400, "invalid_grant")


def test_code_older_than_sixty_seconds_is_invalid_grant(
    browser: TestClient, web: Registered, user: User, clock: MovableClock
) -> None:
    code = pages.signed_in_code(browser, web.id)
    clock.advance(61)
    pages.assert_oauth_error(pages.exchange(browser, web, code), 400, "invalid_grant")


def test_replayed_code_is_invalid_grant_and_revokes_the_tokens_issued_from_it(
    browser: TestClient, web: Registered, user: User
) -> None:
    code = pages.signed_in_code(browser, web.id, scope="openid offline_access")
    first = pages.tokens(browser, web, code)
    assert browser.get("/oauth2/userinfo", headers=pages.bearer(first["access_token"])).status_code == 200

    pages.assert_oauth_error(pages.exchange(browser, web, code), 400, "invalid_grant")

    response = browser.get("/oauth2/userinfo", headers=pages.bearer(first["access_token"]))
    assert response.status_code == 401 and response.json()["error"] == "invalid_token"
    pages.assert_oauth_error(pages.refresh(browser, web, first["refresh_token"]), 400, "invalid_grant")


def test_replayed_code_also_revokes_the_tokens_refreshed_from_it(
    browser: TestClient, web: Registered, user: User
) -> None:
    code = pages.signed_in_code(browser, web.id, scope="openid offline_access")
    refreshed = pages.refresh(browser, web, pages.tokens(browser, web, code)["refresh_token"])
    assert refreshed.status_code == 200, refreshed.text
    later = refreshed.json()

    pages.assert_oauth_error(pages.exchange(browser, web, code), 400, "invalid_grant")

    assert browser.get("/oauth2/userinfo", headers=pages.bearer(later["access_token"])).status_code == 401
    pages.assert_oauth_error(pages.refresh(browser, web, later["refresh_token"]), 400, "invalid_grant")
