"""What the identity provider's token tests do as a client would: a world of organizations and registered
clients, key pairs for private_key_jwt, a sign-in through the pages in one call, and the calls to the token,
introspection and revocation endpoints. The fixtures that make them are in ``tests/api/conftest.py``.

The token tests that use it drive the ASGI app through Starlette's TestClient (responses are validated against
openapi/identity.yaml), on SQLite and on PostgreSQL; records are created through the identity stores, and user
tokens come from a real sign-in through the pages."""

from __future__ import annotations

import base64
import re
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization
from identity.accounts.users import User
from identity.clients.registry import Client, ClientStore
from identity.common.outbound_uris import OutboundRule
from tests.support.clocks import MovableClock
from tests.support.identity_fixtures import PASSWORD
from tests.support.pkce_pairs import pkce_pair

ISSUER = "http://127.0.0.1:8000"  # the default issuer of Settings
TOKEN_URL = ISSUER + "/oauth2/token"
REDIRECT_URI = "https://planner.example.com/callback"
LOGOUT_URI = "https://planner.example.com/signed-out"
USER_SCOPE = "openid profile email offline_access"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
HIDDEN_INPUT = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')


# Records


@dataclass(frozen=True)
class Registered:
    """A client and its secret (None for private_key_jwt)."""

    client: Client
    secret: str | None

    @property
    def id(self) -> str:
        return self.client.id

    @property
    def basic(self) -> dict[str, str]:
        assert self.secret is not None
        raw = f"{self.client.id}:{self.secret}".encode()
        return {"Authorization": "Basic " + base64.b64encode(raw).decode()}


@dataclass(frozen=True)
class World:
    """Two organizations, a user of the first, and clients of both."""

    acme: Organization
    beta: Organization
    ana: User  # owner of Acme
    planner: Registered  # Acme, first party, authorization_code + refresh_token, client_secret_basic
    companion: Registered  # Acme, another first-party sign-in client
    reporter: Registered  # Acme, client_credentials with members:read
    rival: Registered  # Beta, every grant and scope


LOOPBACK_ALLOWED = OutboundRule(loopback=True)


def register(engine: Engine, org: Organization, name: str, **options: Any) -> Registered:
    options.setdefault("auth_method", "client_secret_basic")
    options.setdefault("first_party", True)
    # loopback outbound URIs allowed, as the tests' app allows them: the tests' relying parties listen on 127.0.0.1
    client, secret = ClientStore(engine, outbound=LOOPBACK_ALLOWED).create(name=name, org_id=org.id, **options)
    return Registered(client, secret)


def sign_in_client(engine: Engine, org: Organization, name: str, **options: Any) -> Registered:
    options.setdefault("redirect_uris", [REDIRECT_URI])
    options.setdefault("post_logout_redirect_uris", [LOGOUT_URI])
    options.setdefault("grants", ["authorization_code", "refresh_token"])
    options.setdefault("scopes", ["openid", "profile", "email", "offline_access"])
    return register(engine, org, name, **options)


@dataclass(frozen=True)
class KeyPair:
    private: Any
    public_jwk: dict[str, Any]


def rsa_pair(kid: str) -> KeyPair:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = RSAAlgorithm.to_jwk(private.public_key(), as_dict=True)
    return KeyPair(private, {**jwk, "kid": kid, "use": "sig"})


def ec_pair(kid: str) -> KeyPair:
    private = ec.generate_private_key(ec.SECP256R1())
    jwk = ECAlgorithm.to_jwk(private.public_key(), as_dict=True)
    return KeyPair(private, {**jwk, "kid": kid, "use": "sig"})


def client_assertion(
    client_id: str,
    key: KeyPair,
    algorithm: str = "RS256",
    *,
    aud: Any = ISSUER,
    iss: str | None = None,
    sub: str | None = None,
    expires_in: int = 300,
    jti: str | None = None,
    omit: tuple[str, ...] = (),
    replace: dict[str, Any] | None = None,
) -> str:
    """A client assertion of ``client_id`` signed with ``key``; ``omit`` drops claims, ``replace`` sets them."""
    at = int(time.time())
    claims = {
        "iss": iss or client_id,
        "sub": sub or client_id,
        "aud": aud,
        "iat": at,
        "exp": at + expires_in,
        "jti": jti or secrets.token_urlsafe(16),
    }
    for name in omit:
        del claims[name]
    claims.update(replace or {})
    return jwt.encode(claims, key.private, algorithm=algorithm, headers={"kid": key.public_jwk["kid"]})


def assertion_form(token: str) -> dict[str, str]:
    return {"client_assertion_type": ASSERTION_TYPE, "client_assertion": token}


# The sign-in, driven through the pages


def hidden_inputs(html: str) -> dict[str, str]:
    return dict(HIDDEN_INPUT.findall(html))


def query_of(location: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}


def start_authorization(
    http: TestClient, client_id: str, *, scope: str = USER_SCOPE, nonce: str = "n-0S6_WzA2Mj", **extra: str
) -> tuple[str, str]:
    """GET /oauth2/authorize; the Location it redirects to and the PKCE verifier."""
    verifier, challenge = pkce_pair()
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "scope": scope,
        "state": "af0ifjsldkj",
        "nonce": nonce,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        **extra,
    }
    response = http.get("/oauth2/authorize", params=params)
    assert response.status_code == 302, response.text
    return response.headers["location"], verifier


def sign_in_for_code(
    http: TestClient, client_id: str, *, email: str = "ana@example.com", **authorize_params: str
) -> tuple[str, str]:
    """Sign in through the pages (or ride the browser's session); the code and the PKCE verifier."""
    location, verifier = start_authorization(http, client_id, **authorize_params)
    if urlsplit(location).path == "/sign-in":
        form = hidden_inputs(http.get(location).text)
        response = http.post(
            "/sign-in",
            data={
                "interaction": form["interaction"],
                "csrf_token": form["csrf_token"],
                "email": email,
                "password": PASSWORD,
            },
        )
        assert response.status_code == 302, response.text
        location = response.headers["location"]
    assert location.startswith(REDIRECT_URI + "?"), location
    return query_of(location)["code"], verifier


def user_tokens(http: TestClient, registered: Registered, **authorize_params: str) -> dict[str, Any]:
    """Sign in and exchange the code: the token response."""
    code, verifier = sign_in_for_code(http, registered.id, **authorize_params)
    response = exchange_code(http, registered, code, verifier)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def exchange_code(http: TestClient, registered: Registered, code: str, verifier: str) -> httpx.Response:
    """The token request of the authorization code grant (RFC 6749 §4.1.3, with the PKCE verifier)."""
    return http.post(
        "/oauth2/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT_URI,
            "code_verifier": verifier,
        },
        headers=registered.basic,
    )


def refresh(http: TestClient, registered: Registered, refresh_token: str, **extra: str) -> httpx.Response:
    return http.post(
        "/oauth2/token",
        data={"grant_type": "refresh_token", "refresh_token": refresh_token, **extra},
        headers=registered.basic,
    )


def application_token(http: TestClient, registered: Registered, **extra: str) -> httpx.Response:
    return http.post("/oauth2/token", data={"grant_type": "client_credentials", **extra}, headers=registered.basic)


def introspect(http: TestClient, registered: Registered, token: str, **extra: str) -> dict[str, Any]:
    response = http.post("/oauth2/introspect", data={"token": token, **extra}, headers=registered.basic)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def revoke(http: TestClient, registered: Registered, token: str, **extra: str) -> httpx.Response:
    return http.post("/oauth2/revoke", data={"token": token, **extra}, headers=registered.basic)


def userinfo_status(http: TestClient, access_token: str) -> int:
    return http.get("/oauth2/userinfo", headers={"Authorization": f"Bearer {access_token}"}).status_code


def verified(http: TestClient, token: str, audience: str, *, leeway: float = 0) -> dict[str, Any]:
    """A JWT of the provider, checked against its published JWKS. ``leeway``: how many seconds the provider's clock
    runs ahead of the relying party's (a test that moved the app's clock forward)."""
    kid = jwt.get_unverified_header(token)["kid"]
    jwks = jwt.PyJWKSet.from_dict(http.get("/jwks").json())
    key = next(k for k in jwks.keys if k.key_id == kid)
    claims: dict[str, Any] = jwt.decode(
        token, key=key, algorithms=["RS256"], audience=audience, issuer=ISSUER, leeway=leeway
    )
    return claims


def assert_oauth_error(response: httpx.Response, error: str, status: int = 400) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"] == error
    assert response.headers["cache-control"] == "no-store"


def assert_invalid_client(response: httpx.Response) -> None:
    """RFC 6749 §5.2 as this provider answers ``invalid_client``: 401 with a ``Basic`` challenge when the request
    carried an ``Authorization`` header, else 400 without a challenge (docs/identity.md)."""
    over_header = "authorization" in response.request.headers
    assert response.status_code == (401 if over_header else 400), response.text
    assert response.json()["error"] == "invalid_client", response.text
    if over_header:
        assert response.headers["www-authenticate"] == f'Basic realm="{ISSUER}", charset="UTF-8"'
    else:
        assert "www-authenticate" not in response.headers
    assert response.headers["cache-control"] == "no-store" and response.headers["pragma"] == "no-cache"


def look_alike(id_token: str, key: KeyPair) -> str:
    """The same header and claims as ``id_token``, signed with a key that is not the provider's."""
    header = jwt.get_unverified_header(id_token)
    claims = jwt.decode(id_token, options={"verify_signature": False})
    return jwt.encode(claims, key.private, algorithm="RS256", headers={"kid": header["kid"], "typ": header["typ"]})


def assertion_token_request(http: TestClient, token: str, **extra: str) -> httpx.Response:
    return http.post(
        "/oauth2/token",
        data={"grant_type": "client_credentials", "scope": "members:read", **assertion_form(token), **extra},
    )


def end_session(http: TestClient, method: str, **params: str) -> httpx.Response:
    if method == "GET":
        return http.get("/oauth2/end-session", params=params)
    return http.post("/oauth2/end-session", data=params)


def then_later(clock: MovableClock, call: Any, later: timedelta = timedelta(hours=2)) -> Any:
    """Run ``call``, then let ``later`` pass on the provider's clock: the tokens it got have expired."""
    result = call()
    clock.advance(later.total_seconds())
    return result
