"""End-to-end sign-ins against the live server, driven by a standard OAuth client (Authlib).

The server runs as users run it (``tests/support/live.py``). The relying party is Authlib's
``OAuth2Session`` with PKCE (S256) and ``client_secret_basic``; the "browser" is a
``requests.Session`` that follows redirects itself only while they stay on the
provider, fills in the provider's HTML forms, and stops at the client's callback
URL (never fetched). ID tokens are verified with PyJWT against the published JWKS.
Every endpoint is read from discovery.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session, OAuthError
from authlib.oauth2.rfc7523 import PrivateKeyJWT
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from tests.support.form_browser import Browser, Callback, Page
from tests.support.identity_fixtures import PASSWORD
from tests.support.live import REDIRECT_URI, LiveProvider, live_service

SCOPE = "openid profile email offline_access"
TIMEOUT = 10


# The provider, its organizations, users and client: created once for the module.


@dataclass(frozen=True)
class Provider(LiveProvider):
    metadata: dict[str, Any]
    jwks: jwt.PyJWKClient
    client_id: str
    client_secret: str


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    with live_service(tmp_path_factory.mktemp("identity-e2e")) as service:
        acme, beta, ana, bo = service.two_organizations(PASSWORD)
        client = service.cli_json(
            "clients", "create", "--name", "Menu Planner", "--org", acme["id"],
            "--redirect-uri", REDIRECT_URI, "--auth-method", "client_secret_basic", "--first-party",
            "--grant", "authorization_code", "--grant", "refresh_token",
            "--scope", "openid", "--scope", "profile", "--scope", "email", "--scope", "offline_access",
            "--pkce", "required",
        )  # fmt: skip
        metadata = requests.get(f"{service.url}/.well-known/openid-configuration", timeout=TIMEOUT).json()
        yield Provider(
            service=service,
            metadata=metadata,
            jwks=jwt.PyJWKClient(metadata["jwks_uri"]),
            client_id=client["client_id"],
            client_secret=client["client_secret"],
            acme=acme,
            beta=beta,
            ana=ana,
            bo=bo,
        )


def expect_page(landing: Page | Callback, path: str) -> Page:
    assert isinstance(landing, Page), f"expected the page {path}, got a redirect to {landing}"
    assert landing.path == path, landing.url
    return landing


def expect_callback(landing: Page | Callback) -> Callback:
    assert isinstance(landing, Callback), (
        f"expected a redirect to the client, got {landing.url}:\n{landing.response.text}"
    )
    assert landing.url.startswith(REDIRECT_URI + "?"), landing.url
    return landing


# The relying party: Authlib.


@dataclass
class Authorization:
    """One authorization request of the relying party: what it must remember until the callback."""

    url: str
    state: str
    nonce: str
    code_verifier: str


def relying_party(p: Provider) -> OAuth2Session:
    return OAuth2Session(
        p.client_id,
        p.client_secret,
        scope=SCOPE,
        redirect_uri=REDIRECT_URI,
        code_challenge_method="S256",
        token_endpoint_auth_method="client_secret_basic",
    )


def authorize_with_authlib(p: Provider, rp: OAuth2Session, **extra: str) -> Authorization:
    verifier, nonce = generate_token(48), generate_token(24)
    url, state = rp.create_authorization_url(
        p.metadata["authorization_endpoint"], code_verifier=verifier, nonce=nonce, **extra
    )
    query = parse_qs(urlsplit(url).query)
    assert query["code_challenge_method"] == ["S256"] and query["code_challenge"] != [verifier]
    return Authorization(url, state, nonce, verifier)


def redeem(p: Provider, rp: OAuth2Session, request: Authorization, callback: Callback) -> dict[str, Any]:
    """Check the callback (RFC 9207 ``iss``: Authlib's client does not), then let Authlib redeem the code."""
    params = callback.params
    assert "error" not in params, params
    assert params["iss"] == p.issuer  # RFC 9207 §2.4: the response comes from the expected issuer
    assert params["state"] == request.state
    token = rp.fetch_token(
        p.metadata["token_endpoint"],
        authorization_response=callback.url,
        state=request.state,  # Authlib compares it with the callback's state
        code_verifier=request.code_verifier,
    )
    assert token["token_type"].lower() == "bearer" and token["scope"].split() == SCOPE.split()
    return dict(token)


def sign_in_with_authlib(
    p: Provider, browser: Browser, rp: OAuth2Session, user: dict[str, Any]
) -> tuple[Authorization, Callback]:
    request = authorize_with_authlib(p, rp)
    page = expect_page(browser.go(request.url), "/sign-in")
    return request, expect_callback(browser.submit(page, email=user["email"], password=PASSWORD))


def verified_id_token(p: Provider, id_token: str, nonce: str | None) -> dict[str, Any]:
    """OpenID Connect Core §3.1.3.7: signature (RS256, a published key), iss, aud, exp, nonce."""
    header = jwt.get_unverified_header(id_token)
    assert header["alg"] == "RS256" and header["kid"]
    signing_key = p.jwks.get_signing_key_from_jwt(id_token)
    claims: dict[str, Any] = jwt.decode(
        id_token,
        signing_key,
        algorithms=["RS256"],
        audience=p.client_id,
        issuer=p.issuer,
        options={"require": ["iss", "sub", "aud", "exp", "iat", "auth_time"]},
    )
    assert claims["azp"] == p.client_id
    if nonce is None:
        assert "nonce" not in claims
    else:
        assert claims["nonce"] == nonce
    return claims


def at_hash(access_token: str) -> str:
    digest = hashlib.sha256(access_token.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode("ascii")


def assert_identity(
    p: Provider,
    rp: OAuth2Session,
    token: dict[str, Any],
    request: Authorization | None,
    user: dict[str, Any],
    org: dict[str, Any],
) -> dict[str, Any]:
    """The ID token and UserInfo name the user and the organization chosen at sign-in."""
    claims = verified_id_token(p, token["id_token"], request.nonce if request else None)
    assert claims["at_hash"] == at_hash(token["access_token"])
    assert (claims["sub"], claims["email"], claims["name"]) == (user["id"], user["email"], user["name"])
    assert (claims["org_id"], claims["org_name"]) == (org["id"], org["name"])
    answer = rp.get(p.metadata["userinfo_endpoint"], timeout=TIMEOUT)
    assert answer.status_code == 200, answer.text
    info = answer.json()
    assert info["sub"] == claims["sub"]
    assert (info["email"], info["name"], info["email_verified"]) == (user["email"], user["name"], False)
    assert (info["org_id"], info["org_name"]) == (org["id"], org["name"])
    return claims


# The tests


def test_authlib_client_signs_in_with_pkce_and_reads_userinfo(provider: Provider) -> None:
    p = provider
    assert p.metadata["issuer"] == p.issuer
    assert p.metadata["authorization_response_iss_parameter_supported"] is True
    assert "S256" in p.metadata["code_challenge_methods_supported"]
    assert "client_secret_basic" in p.metadata["token_endpoint_auth_methods_supported"]
    assert p.metadata["id_token_signing_alg_values_supported"] == ["RS256"]
    browser, rp = Browser(p.issuer), relying_party(p)
    request = authorize_with_authlib(p, rp)
    page = expect_page(browser.go(request.url), "/sign-in")
    assert "Menu Planner" in page.response.text
    assert {"email", "password"} <= set(page.form.inputs)
    callback = expect_callback(browser.submit(page, email=p.ana["email"], password=PASSWORD))
    assert set(callback.params) == {"code", "state", "iss"}
    token = redeem(p, rp, request, callback)
    assert token["refresh_token"] and token["expires_in"] > 0
    assert_identity(p, rp, token, request, p.ana, p.acme)


def test_prompt_create_signs_up_a_new_user_and_organization(provider: Provider) -> None:
    p = provider
    browser, rp = Browser(p.issuer), relying_party(p)
    request = authorize_with_authlib(p, rp, prompt="create")
    page = expect_page(browser.go(request.url), "/sign-up")
    assert {"name", "email", "password", "organization"} <= set(page.form.inputs)
    landing = browser.submit(
        page, name="Cleo Cruz", email="cleo@example.com", password=PASSWORD, organization="Cleo's Kitchen"
    )
    token = redeem(p, rp, request, expect_callback(landing))
    claims = verified_id_token(p, token["id_token"], request.nonce)
    users = {u["email"]: u for u in p.service.cli_json("users", "list")}
    cleo = users["cleo@example.com"]
    assert cleo["name"] == "Cleo Cruz" and cleo["id"] == claims["sub"]
    assert [(o["name"], o["role"]) for o in cleo["orgs"]] == [("Cleo's Kitchen", "owner")]
    org = {o["id"]: o for o in p.service.cli_json("orgs", "list")}[cleo["orgs"][0]["id"]]
    assert org["id"] not in (p.acme["id"], p.beta["id"])
    assert_identity(p, rp, token, request, cleo, org)


def test_serve_hashes_passwords_with_argon2id_at_owasp_parameters(provider: Provider) -> None:
    """The tests hash at the lowest cost in their own process (tests/conftest.py); ``serve`` never does."""
    p = provider
    browser, rp = Browser(p.issuer), relying_party(p)
    request = authorize_with_authlib(p, rp, prompt="create")
    page = expect_page(browser.go(request.url), "/sign-up")
    landing = browser.submit(page, name="Dan", email="dan@example.com", password=PASSWORD, organization="Dan's")
    expect_callback(landing)
    database = p.service.workdir / "var" / "regional-menus.sqlite3"
    with sqlite3.connect(database) as connection:
        (stored,) = connection.execute("SELECT password_hash FROM users WHERE email = 'dan@example.com'").fetchone()
    assert stored.startswith("$argon2id$v=19$m=19456,t=2,p=1$")


def test_select_account_lets_a_user_of_two_organizations_choose(provider: Provider) -> None:
    p = provider
    browser, rp = Browser(p.issuer), relying_party(p)
    request = authorize_with_authlib(p, rp)
    page = expect_page(browser.go(request.url), "/sign-in")
    picker = expect_page(browser.submit(page, email=p.bo["email"], password=PASSWORD), "/select-organization")
    assert picker.form.radios["org_id"] == [p.acme["id"], p.beta["id"]]  # by name
    token = redeem(p, rp, request, expect_callback(browser.submit(picker, org_id=p.beta["id"])))
    first = assert_identity(p, rp, token, request, p.bo, p.beta)

    # Signed in: prompt=select_account shows the picker again, the current organization selected.
    rp = relying_party(p)
    request = authorize_with_authlib(p, rp, prompt="select_account")
    picker = expect_page(browser.go(request.url), "/select-organization")
    assert picker.form.radios["org_id"] == [p.acme["id"], p.beta["id"]]
    assert picker.form.checked == {"org_id": p.beta["id"]}
    token = redeem(p, rp, request, expect_callback(browser.submit(picker, org_id=p.acme["id"])))
    second = assert_identity(p, rp, token, request, p.bo, p.acme)
    assert second["sid"] == first["sid"]  # the same browser session, no new sign-in
    assert second["auth_time"] == first["auth_time"]

    # Without the prompt, the session's organization is now the one chosen last.
    rp = relying_party(p)
    request = authorize_with_authlib(p, rp)
    token = redeem(p, rp, request, expect_callback(browser.go(request.url)))
    assert_identity(p, rp, token, request, p.bo, p.acme)


def test_prompt_none_succeeds_silently_when_signed_in(provider: Provider) -> None:
    p = provider
    browser, rp = Browser(p.issuer), relying_party(p)
    request, callback = sign_in_with_authlib(p, browser, rp, p.ana)
    first = assert_identity(p, rp, redeem(p, rp, request, callback), request, p.ana, p.acme)

    rp = relying_party(p)
    request = authorize_with_authlib(p, rp, prompt="none")
    callback = expect_callback(browser.go(request.url))  # no page at all
    token = redeem(p, rp, request, callback)
    second = assert_identity(p, rp, token, request, p.ana, p.acme)
    assert (second["sid"], second["auth_time"]) == (first["sid"], first["auth_time"])


def test_prompt_none_answers_login_required_when_signed_out(provider: Provider) -> None:
    p = provider
    browser, rp = Browser(p.issuer), relying_party(p)
    request = authorize_with_authlib(p, rp, prompt="none")
    callback = expect_callback(browser.go(request.url))
    params = callback.params
    assert params["error"] == "login_required"
    assert params["state"] == request.state
    assert params["iss"] == p.issuer
    assert "code" not in params


def test_refresh_token_rotates(provider: Provider) -> None:
    p = provider
    browser, rp = Browser(p.issuer), relying_party(p)
    request, callback = sign_in_with_authlib(p, browser, rp, p.ana)
    token = redeem(p, rp, request, callback)
    first = assert_identity(p, rp, token, request, p.ana, p.acme)
    old = token["refresh_token"]

    refreshed = dict(rp.refresh_token(p.metadata["token_endpoint"]))
    assert refreshed["refresh_token"] and refreshed["refresh_token"] != old
    assert refreshed["access_token"] != token["access_token"]
    claims = assert_identity(p, rp, refreshed, None, p.ana, p.acme)  # no nonce on refresh
    assert (claims["sub"], claims["sid"], claims["auth_time"]) == (first["sub"], first["sid"], first["auth_time"])

    with pytest.raises(OAuthError) as refused:
        rp.refresh_token(p.metadata["token_endpoint"], refresh_token=old)
    assert refused.value.error == "invalid_grant"
    # RFC 9700 §4.14.2: a replayed refresh token revokes its whole family.
    with pytest.raises(OAuthError) as revoked:
        rp.refresh_token(p.metadata["token_endpoint"], refresh_token=refreshed["refresh_token"])
    assert revoked.value.error == "invalid_grant"


# Application tokens for a resource server: Authlib's client_credentials, two ways of authenticating.


def read_directory(p: Provider, token: dict[str, Any]) -> dict[str, Any]:
    assert "refresh_token" not in token and "id_token" not in token
    assert token["scope"] == "members:read"
    response = requests.get(
        p.issuer + "/directory/members",
        headers={"Authorization": f"Bearer {token['access_token']}"},
        params={"limit": 1},
        timeout=TIMEOUT,
    )
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_authlib_client_credentials_with_client_secret_basic_reads_the_directory(provider: Provider) -> None:
    p = provider
    reporter = p.service.cli_json(
        "clients", "create", "--name", "Reporter", "--org", p.acme["id"],
        "--auth-method", "client_secret_basic", "--grant", "client_credentials", "--scope", "members:read",
    )  # fmt: skip
    client = OAuth2Session(
        reporter["client_id"], reporter["client_secret"], scope="members:read",
        token_endpoint_auth_method="client_secret_basic",
    )  # fmt: skip
    token = client.fetch_token(p.metadata["token_endpoint"], grant_type="client_credentials")

    first = read_directory(p, token)
    assert first["total"] == 2 and len(first["data"]) == 1 and first["next_cursor"]
    assert {m["email"] for m in first["data"]} <= {"ana@example.com", "bo@example.com"}


def test_authlib_private_key_jwt_application_token_reads_the_directory(provider: Provider) -> None:
    p = provider
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = {**RSAAlgorithm.to_jwk(private.public_key(), as_dict=True), "kid": "reporter-1", "use": "sig"}
    jwks_file = p.service.workdir / "reporter.jwks.json"
    jwks_file.write_text(json.dumps({"keys": [public]}))
    reporter = p.service.cli_json(
        "clients", "create", "--name", "Signed reporter", "--org", p.beta["id"],
        "--auth-method", "private_key_jwt", "--jwks-file", str(jwks_file),
        "--grant", "client_credentials", "--scope", "members:read",
    )  # fmt: skip
    assert "client_secret" not in reporter or reporter["client_secret"] is None
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    token_endpoint = p.metadata["token_endpoint"]
    client = OAuth2Session(
        reporter["client_id"], pem, scope="members:read",
        token_endpoint_auth_method=PrivateKeyJWT(token_endpoint, headers={"kid": "reporter-1"}),
    )  # fmt: skip
    token = client.fetch_token(token_endpoint, grant_type="client_credentials")

    members = read_directory(p, token)
    assert members["total"] == 1 and [m["email"] for m in members["data"]] == ["bo@example.com"]
    # The same client authenticates the same way at introspection: its own token is active.
    answer = client.introspect_token(p.metadata["introspection_endpoint"], token=token["access_token"]).json()
    assert answer["active"] is True and answer["sub"] == reporter["client_id"] and answer["org_id"] == p.beta["id"]
