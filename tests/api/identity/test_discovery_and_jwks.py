"""Discovery (OpenID Connect Discovery 1.0) and the JWKS, at the issuer's root or under its path."""

from __future__ import annotations

import jwt
import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization
from identity.accounts.users import UserStore
from service.settings import Settings
from tests.support import identity_pages as pages
from tests.support.apps import make_app
from tests.support.identity_fixtures import CALLBACK, EMAIL, PASSWORD, register
from tests.support.passwords import FAST_HASHING

# Discovery.


def test_discovery_lists_the_supported_values_and_endpoints_under_the_issuer(visitor: TestClient) -> None:
    response = visitor.get("/.well-known/openid-configuration")
    assert response.status_code == 200
    document = response.json()
    assert document["issuer"] == pages.ISSUER
    assert document["response_types_supported"] == ["code"]
    assert sorted(document["grant_types_supported"]) == ["authorization_code", "client_credentials", "refresh_token"]
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["id_token_signing_alg_values_supported"] == ["RS256"]
    assert sorted(document["token_endpoint_auth_methods_supported"]) == [
        "client_secret_basic",
        "client_secret_post",
        "private_key_jwt",
    ]
    assert sorted(document["prompt_values_supported"]) == ["consent", "create", "login", "none", "select_account"]
    assert document["response_modes_supported"] == ["query"]
    assert document["subject_types_supported"] == ["public"]
    assert document["authorization_response_iss_parameter_supported"] is True
    assert {"openid", "profile", "email", "offline_access", "members:read"} <= set(document["scopes_supported"])
    assert {"sub", "sid", "auth_time", "nonce", "org_id", "org_name"} <= set(document["claims_supported"])
    assert document["authorization_endpoint"] == f"{pages.ISSUER}/oauth2/authorize"
    assert document["token_endpoint"] == f"{pages.ISSUER}/oauth2/token"
    assert document["userinfo_endpoint"] == f"{pages.ISSUER}/oauth2/userinfo"
    assert document["jwks_uri"] == f"{pages.ISSUER}/jwks"
    assert document["introspection_endpoint"] == f"{pages.ISSUER}/oauth2/introspect"
    assert document["revocation_endpoint"] == f"{pages.ISSUER}/oauth2/revoke"
    assert document["end_session_endpoint"] == f"{pages.ISSUER}/oauth2/end-session"


def test_jwks_serves_public_rsa_keys_only(visitor: TestClient) -> None:
    response = visitor.get("/jwks")
    assert response.status_code == 200
    keys = response.json()["keys"]
    assert keys and all(key["kty"] == "RSA" and key["kid"] for key in keys)
    assert not any(set(key) & {"d", "p", "q", "dp", "dq", "qi"} for key in keys)


def test_issuer_with_a_path_serves_every_endpoint_under_it(
    settings: Settings, engine: Engine, org: Organization
) -> None:
    tenant = f"{pages.ISSUER}/tenant-a"
    web = register(engine, org)
    UserStore(engine, hashing=FAST_HASHING).create(EMAIL, "Ana Lima", PASSWORD, [(org.id, "owner")])
    with TestClient(make_app(settings.with_changes(issuer=tenant)), follow_redirects=False) as browser:
        document = browser.get("/tenant-a/.well-known/openid-configuration").json()
        assert document["issuer"] == tenant
        for name in ("authorization", "token", "userinfo", "introspection", "revocation", "end_session"):
            assert document[f"{name}_endpoint"].startswith(f"{tenant}/oauth2/"), name
        assert document["jwks_uri"] == f"{tenant}/jwks"
        assert browser.get("/.well-known/openid-configuration").status_code == 404
        assert browser.get("/oauth2/authorize", params=pages.authorization(web.id)).status_code == 404
        assert browser.get("/tenant-a/jwks").status_code == 200

        response = browser.get("/tenant-a/oauth2/authorize", params=pages.authorization(web.id))
        assert response.status_code == 302
        location = response.headers["location"]
        assert location.startswith("/tenant-a/sign-in?interaction=")
        assert "Path=/tenant-a" in response.headers["set-cookie"]
        page = browser.get(location)
        assert 'action="/tenant-a/sign-in"' in page.text
        fields = {**pages.hidden_fields(page.text), "email": EMAIL, "password": PASSWORD}
        response = pages.post_form(browser, "/tenant-a/sign-in", list(fields.items()))
        params = pages.to_client(response)
        assert params["iss"] == tenant
        pairs = [("grant_type", "authorization_code"), ("code", params["code"]), ("redirect_uri", CALLBACK)]
        pairs.append(("code_verifier", pages.VERIFIER))
        body = pages.post_form(browser, "/tenant-a/oauth2/token", pairs, pages.basic(web)).json()
        keys = jwt.PyJWKSet.from_dict(browser.get("/tenant-a/jwks").json())
        kid = jwt.get_unverified_header(body["id_token"])["kid"]
        claims = jwt.decode(body["id_token"], key=keys[kid], algorithms=["RS256"], audience=web.id, issuer=tenant)
        assert claims["iss"] == tenant
        assert browser.get("/tenant-a/oauth2/userinfo", headers=pages.bearer(body["access_token"])).status_code == 200


@pytest.mark.parametrize("path", ["/jwks", "/.well-known/openid-configuration"])
def test_head_answers_like_get_without_a_body(visitor: TestClient, path: str) -> None:
    response = visitor.head(path)
    assert response.status_code == 200 and response.content == b""
    assert response.headers["content-type"] == "application/json"
