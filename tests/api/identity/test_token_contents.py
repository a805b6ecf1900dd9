"""What the tokens carry: the ID token, the access token (RFC 9068) and the refresh token, by scope and grant."""

from __future__ import annotations

import base64
import hashlib

import jwt
import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization
from identity.accounts.users import User
from tests.support import identity_pages as pages
from tests.support.identity_fixtures import EMAIL, Registered, register

# Token contents.


def test_id_token_verifies_with_the_jwks_and_carries_the_sign_in(
    browser: TestClient, web: Registered, user: User, org: Organization
) -> None:
    body = pages.tokens(browser, web, pages.signed_in_code(browser, web.id))
    claims = pages.verified(browser, body["id_token"], web.id)
    digest = hashlib.sha256(body["access_token"].encode()).digest()
    at_hash = base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode()
    assert claims["iss"] == pages.ISSUER and claims["aud"] == web.id and claims["azp"] == web.id
    assert claims["sub"] == user.id and claims["nonce"] == pages.NONCE and claims["at_hash"] == at_hash
    assert (claims["org_id"], claims["org_name"]) == (org.id, "Acme Foods")
    assert claims["sid"].startswith("ses_")
    assert claims["iat"] - 5 <= claims["auth_time"] <= claims["iat"] < claims["exp"]
    assert (claims["name"], claims["email"], claims["email_verified"]) == ("Ana Lima", EMAIL, False)
    assert jwt.get_unverified_header(body["id_token"])["typ"] == "JWT"


@pytest.mark.parametrize(
    ("scope", "present"),
    [
        ("openid", set()),
        ("openid profile", {"name"}),
        ("openid email", {"email", "email_verified"}),
        ("openid profile email", {"name", "email", "email_verified"}),
    ],
)
def test_id_token_and_userinfo_carry_name_and_email_only_with_their_scopes(
    browser: TestClient, web: Registered, user: User, scope: str, present: set[str]
) -> None:
    body = pages.tokens(browser, web, pages.signed_in_code(browser, web.id, scope=scope))
    assert body["scope"] == scope
    claims = pages.verified(browser, body["id_token"], web.id)
    assert {"name", "email", "email_verified"} & set(claims) == present
    info = browser.get("/oauth2/userinfo", headers=pages.bearer(body["access_token"])).json()
    assert set(info) == {"sub", "org_id", "org_name"} | present


def test_id_token_has_no_nonce_when_none_was_sent(browser: TestClient, web: Registered, user: User) -> None:
    body = pages.tokens(browser, web, pages.signed_in_code(browser, web.id, nonce=None))
    assert "nonce" not in pages.verified(browser, body["id_token"], web.id)


def test_unknown_and_unallowed_scopes_are_dropped(
    browser: TestClient, engine: Engine, org: Organization, user: User
) -> None:
    narrow = register(engine, org, name="Narrow", scopes=["openid", "email"])
    body = pages.tokens(
        browser, narrow, pages.signed_in_code(browser, narrow.id, scope="openid profile email members:read foo")
    )
    assert body["scope"] == "openid email"


def test_access_token_is_an_at_jwt_for_the_issuer_with_jti_client_scope_and_organization(
    browser: TestClient, web: Registered, user: User, org: Organization
) -> None:
    body = pages.tokens(browser, web, pages.signed_in_code(browser, web.id))
    assert jwt.get_unverified_header(body["access_token"])["typ"] == "at+jwt"
    claims = pages.verified(browser, body["access_token"], pages.ISSUER)
    assert claims["aud"] == pages.ISSUER and claims["sub"] == user.id and claims["client_id"] == web.id
    assert claims["scope"] == pages.SCOPE and claims["jti"]
    assert (claims["org_id"], claims["org_name"]) == (org.id, "Acme Foods")
    assert claims["exp"] - claims["iat"] == 600
    assert claims["sid"] == pages.verified(browser, body["id_token"], web.id)["sid"]


@pytest.mark.parametrize(("scope", "refreshable"), [("openid", False), ("openid offline_access", True)])
def test_refresh_token_only_when_offline_access_is_asked(
    browser: TestClient, web: Registered, user: User, scope: str, refreshable: bool
) -> None:
    body = pages.tokens(browser, web, pages.signed_in_code(browser, web.id, scope=scope))
    assert ("refresh_token" in body) is refreshable
    if refreshable:
        assert pages.refresh(browser, web, body["refresh_token"]).status_code == 200


def test_refresh_token_only_for_a_client_with_the_refresh_token_grant(
    browser: TestClient, engine: Engine, org: Organization, user: User
) -> None:
    plain = register(engine, org, name="No refresh", grants=["authorization_code"], scopes=["openid", "offline_access"])
    body = pages.tokens(browser, plain, pages.signed_in_code(browser, plain.id, scope="openid offline_access"))
    assert "refresh_token" not in body
