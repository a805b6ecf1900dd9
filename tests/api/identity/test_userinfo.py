"""UserInfo (OpenID Connect Core §5.3): the claims by scope, and its Bearer refusals (RFC 6750 §3)."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization
from identity.accounts.users import User
from tests.support import identity_pages as pages
from tests.support.identity_fixtures import EMAIL, Registered, Shared, register

# UserInfo.


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_userinfo_answers_the_users_claims_by_scope(
    browser: TestClient, web: Registered, user: User, org: Organization, method: str
) -> None:
    body = pages.tokens(browser, web, pages.signed_in_code(browser, web.id))
    response = browser.request(method, "/oauth2/userinfo", headers=pages.bearer(body["access_token"]))
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    assert response.json() == {
        "sub": user.id,
        "name": "Ana Lima",
        "email": EMAIL,
        "email_verified": False,
        "org_id": org.id,
        "org_name": "Acme Foods",
    }


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_userinfo_without_a_token_is_invalid_token_with_a_bare_bearer_challenge(
    visitor: TestClient, method: str
) -> None:
    response = visitor.request(method, "/oauth2/userinfo")
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_token"
    assert response.headers["www-authenticate"] == f'Bearer realm="{pages.ISSUER}"'


@pytest.mark.parametrize("token", ["garbage", "eyJhbGciOiJub25lIn0.e30.", "a.b.c"])
def test_userinfo_with_a_token_not_ours_is_invalid_token(visitor: TestClient, token: str) -> None:
    response = visitor.get("/oauth2/userinfo", headers=pages.bearer(token))
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_token"
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith(f'Bearer realm="{pages.ISSUER}"') and 'error="invalid_token"' in challenge


def test_userinfo_refuses_an_id_token_as_an_access_token(browser: TestClient, web: Registered, user: User) -> None:
    body = pages.tokens(browser, web, pages.signed_in_code(browser, web.id))
    response = browser.get("/oauth2/userinfo", headers=pages.bearer(body["id_token"]))
    assert response.status_code == 401 and response.json()["error"] == "invalid_token"


@pytest.mark.parametrize("authorization", ["Bearer a b", "Bearer a,b", "Bearer "], ids=["space", "comma", "empty"])
def test_userinfo_with_a_malformed_authorization_header_is_invalid_request(
    visitor: TestClient, authorization: str
) -> None:
    response = visitor.get("/oauth2/userinfo", headers={"Authorization": authorization})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert response.headers["www-authenticate"].startswith("Bearer ")


def test_userinfo_with_a_user_token_without_openid_is_insufficient_scope(
    browser: TestClient, web: Registered, user: User
) -> None:
    body = pages.tokens(browser, web, pages.signed_in_code(browser, web.id, scope="openid offline_access"))
    narrowed = pages.token_request(
        browser,
        [("grant_type", "refresh_token"), ("refresh_token", body["refresh_token"]), ("scope", "offline_access")],
        pages.basic(web),
    )
    assert narrowed.status_code == 200, narrowed.text
    assert narrowed.json()["scope"] == "offline_access" and "id_token" not in narrowed.json()
    response = browser.get("/oauth2/userinfo", headers=pages.bearer(narrowed.json()["access_token"]))
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"
    challenge = response.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="openid"' in challenge


def test_userinfo_refuses_an_application_token_as_invalid_token(visitor: TestClient, shared: Shared) -> None:
    service = register(
        shared.engine, shared.org, name="Directory sync", grants=["client_credentials"], scopes=["members:read"]
    )
    response = pages.token_request(
        visitor, [("grant_type", "client_credentials"), ("scope", "members:read")], pages.basic(service)
    )
    assert response.status_code == 200, response.text
    app_token = response.json()["access_token"]
    assert pages.verified(visitor, app_token, pages.ISSUER)["sub"] == service.id
    response = visitor.get("/oauth2/userinfo", headers=pages.bearer(app_token))
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_token"
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
