"""API tests of the identity provider, part 2: what happens after the sign-in.

Refresh token rotation, application tokens (client_credentials), private_key_jwt
client authentication, introspection (RFC 7662), revocation (RFC 7009),
RP-initiated sign-out, the member directory and discovery. Every test drives
the ASGI app through Starlette's TestClient (responses are validated against
openapi/identity.yaml); records are created through the identity stores, and
user tokens come from a real sign-in through the pages.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.clients import Client, ClientStore
from identity.clock import SYSTEM_CLOCK
from identity.organizations import Organization, OrganizationStore
from identity.users import User, UserStore
from tests.clocks import FixedClock, MovableClock


@pytest.fixture
def database_url(either_database: str) -> str:
    """Every test here runs on SQLite and on PostgreSQL."""
    return either_database


ISSUER = "http://127.0.0.1:8000"  # the default issuer of Settings
TOKEN_URL = ISSUER + "/oauth2/token"
REDIRECT_URI = "https://planner.example.com/callback"
LOGOUT_URI = "https://planner.example.com/signed-out"
PASSWORD = "correct horse battery staple"
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


def register(engine: Engine, org: Organization, name: str, **options: Any) -> Registered:
    options.setdefault("auth_method", "client_secret_basic")
    options.setdefault("first_party", True)
    client, secret = ClientStore(engine).create(name=name, org_id=org.id, **options)
    return Registered(client, secret)


def sign_in_client(engine: Engine, org: Organization, name: str, **options: Any) -> Registered:
    options.setdefault("redirect_uris", [REDIRECT_URI])
    options.setdefault("post_logout_redirect_uris", [LOGOUT_URI])
    options.setdefault("grants", ["authorization_code", "refresh_token"])
    options.setdefault("scopes", ["openid", "profile", "email", "offline_access"])
    return register(engine, org, name, **options)


@pytest.fixture
def world(engine: Engine) -> World:
    organizations = OrganizationStore(engine)
    acme, beta = organizations.create("Acme Foods"), organizations.create("Beta Bakery")
    ana = UserStore(engine).create("ana@example.com", "Ana Lima", PASSWORD, [(acme.id, "owner")])
    return World(
        acme=acme,
        beta=beta,
        ana=ana,
        planner=sign_in_client(engine, acme, "Menu Planner"),
        companion=sign_in_client(engine, acme, "Shopping List"),
        reporter=register(engine, acme, "Member Report", grants=["client_credentials"], scopes=["members:read"]),
        rival=sign_in_client(
            engine,
            beta,
            "Beta Planner",
            grants=["authorization_code", "refresh_token", "client_credentials"],
            scopes=["openid", "profile", "email", "offline_access", "members:read"],
        ),
    )


@pytest.fixture
def http(app) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    with TestClient(app, follow_redirects=False) as client:
        yield client


# Keys for private_key_jwt, made once: RSA key generation is slow.


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


@pytest.fixture(scope="module")
def rsa_key() -> KeyPair:
    return rsa_pair("rsa-1")


@pytest.fixture(scope="module")
def ec_key() -> KeyPair:
    return ec_pair("ec-1")


@pytest.fixture(scope="module")
def stranger_key() -> KeyPair:
    """An RSA key nobody registered, under the kid of the registered one."""
    return rsa_pair("rsa-1")


@pytest.fixture
def signer(engine: Engine, world: World, rsa_key: KeyPair, ec_key: KeyPair) -> Registered:
    """An Acme client authenticating with private_key_jwt, holding an RSA and an EC key."""
    return register(
        engine,
        world.acme,
        "Key Holder",
        auth_method="private_key_jwt",
        grants=["client_credentials"],
        scopes=["members:read"],
        jwks={"keys": [rsa_key.public_jwk, ec_key.public_jwk]},
    )


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
) -> str:
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
    return jwt.encode(claims, key.private, algorithm=algorithm, headers={"kid": key.public_jwk["kid"]})


def assertion_form(token: str) -> dict[str, str]:
    return {"client_assertion_type": ASSERTION_TYPE, "client_assertion": token}


# The sign-in, driven through the pages


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def hidden_inputs(html: str) -> dict[str, str]:
    return dict(HIDDEN_INPUT.findall(html))


def query_of(location: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}


def authorize(
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


def sign_in(
    http: TestClient, client_id: str, *, email: str = "ana@example.com", **authorize_params: str
) -> tuple[str, str]:
    """Sign in through the pages (or ride the browser's session); the code and the PKCE verifier."""
    location, verifier = authorize(http, client_id, **authorize_params)
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
    code, verifier = sign_in(http, registered.id, **authorize_params)
    response = http.post(
        "/oauth2/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT_URI,
            "code_verifier": verifier,
        },
        headers=registered.basic,
    )
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


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


def verified(http: TestClient, token: str, audience: str) -> dict[str, Any]:
    """A JWT of the provider, checked against its published JWKS."""
    kid = jwt.get_unverified_header(token)["kid"]
    jwks = jwt.PyJWKSet.from_dict(http.get("/jwks").json())
    key = next(k for k in jwks.keys if k.key_id == kid)
    claims: dict[str, Any] = jwt.decode(token, key=key, algorithms=["RS256"], audience=audience, issuer=ISSUER)
    return claims


def assert_oauth_error(response: httpx.Response, error: str, status: int = 400) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"] == error
    assert response.headers["cache-control"] == "no-store"


def then_later(clock: MovableClock, call: Any, later: timedelta = timedelta(hours=2)) -> Any:
    """Run ``call``, then let ``later`` pass on the provider's clock: the tokens it got have expired."""
    result = call()
    clock.advance(later.total_seconds())
    return result


# Refresh tokens (RFC 6749 §6, RFC 9700 §4.14.2)


def test_refresh_token_rotates_on_every_use(http: TestClient, world: World) -> None:
    first = user_tokens(http, world.planner)
    family_expiry = introspect(http, world.planner, first["refresh_token"])["exp"]
    second = refresh(http, world.planner, first["refresh_token"])
    assert second.status_code == 200, second.text
    assert second.headers["cache-control"] == "no-store"
    rotated = second.json()
    assert rotated["refresh_token"] != first["refresh_token"]
    assert rotated["access_token"] != first["access_token"]
    assert rotated["token_type"] == "Bearer"
    assert userinfo_status(http, rotated["access_token"]) == 200
    assert introspect(http, world.planner, rotated["refresh_token"])["exp"] == family_expiry  # same family
    third = refresh(http, world.planner, rotated["refresh_token"])
    assert third.status_code == 200, third.text
    assert third.json()["refresh_token"] not in (first["refresh_token"], rotated["refresh_token"])


def test_presenting_a_rotated_refresh_token_revokes_its_family(http: TestClient, world: World) -> None:
    first = user_tokens(http, world.planner)
    second = refresh(http, world.planner, first["refresh_token"]).json()

    replay = refresh(http, world.planner, first["refresh_token"])

    assert_oauth_error(replay, "invalid_grant")
    assert_oauth_error(refresh(http, world.planner, second["refresh_token"]), "invalid_grant")
    for access_token in (first["access_token"], second["access_token"]):
        assert userinfo_status(http, access_token) == 401
        assert introspect(http, world.planner, access_token) == {"active": False}
    assert introspect(http, world.planner, second["refresh_token"]) == {"active": False}


def test_refresh_may_ask_for_a_narrower_scope(http: TestClient, world: World) -> None:
    first = user_tokens(http, world.planner)

    narrowed = refresh(http, world.planner, first["refresh_token"], scope="openid email")

    assert narrowed.status_code == 200, narrowed.text
    body = narrowed.json()
    assert body["scope"] == "openid email"
    assert verified(http, body["access_token"], ISSUER)["scope"] == "openid email"
    info = http.get("/oauth2/userinfo", headers={"Authorization": f"Bearer {body['access_token']}"}).json()
    assert info["email"] == "ana@example.com" and "name" not in info
    # RFC 6749 §6: the new refresh token keeps the scope of the one it replaces.
    again = refresh(http, world.planner, body["refresh_token"])
    assert again.status_code == 200, again.text
    assert set(again.json()["scope"].split()) == set(USER_SCOPE.split())


def test_refresh_ignores_unknown_scopes(http: TestClient, world: World) -> None:
    first = user_tokens(http, world.planner)

    narrowed = refresh(http, world.planner, first["refresh_token"], scope="openid telepathy")

    assert narrowed.status_code == 200, narrowed.text
    assert narrowed.json()["scope"] == "openid"


def test_refresh_asking_a_wider_scope_is_invalid_scope(http: TestClient, world: World) -> None:
    tokens = user_tokens(http, world.planner, scope="openid email offline_access")

    wider = refresh(http, world.planner, tokens["refresh_token"], scope="openid email profile")

    assert_oauth_error(wider, "invalid_scope")


def test_refresh_token_of_another_client_is_invalid_grant(http: TestClient, world: World) -> None:
    tokens = user_tokens(http, world.planner)

    assert_oauth_error(refresh(http, world.companion, tokens["refresh_token"]), "invalid_grant")
    assert_oauth_error(refresh(http, world.rival, tokens["refresh_token"]), "invalid_grant")


def test_refreshed_id_token_keeps_sub_org_and_auth_time_without_nonce(http: TestClient, world: World) -> None:
    first = user_tokens(http, world.planner, nonce="first-nonce")
    original = verified(http, first["id_token"], world.planner.id)
    assert original["nonce"] == "first-nonce"

    refreshed = refresh(http, world.planner, first["refresh_token"]).json()

    claims = verified(http, refreshed["id_token"], world.planner.id)
    assert claims["sub"] == original["sub"] == world.ana.id
    assert claims["org_id"] == original["org_id"] == world.acme.id
    assert claims["auth_time"] == original["auth_time"]
    assert "nonce" not in claims


def test_client_without_the_refresh_token_grant_is_unauthorized_client(
    http: TestClient, engine: Engine, world: World
) -> None:
    code_only = sign_in_client(engine, world.acme, "Code Only", grants=["authorization_code"])
    tokens = user_tokens(http, code_only)
    assert "refresh_token" not in tokens
    planner_tokens = user_tokens(http, world.planner)

    answer = refresh(http, code_only, planner_tokens["refresh_token"])

    assert_oauth_error(answer, "unauthorized_client")


# Application tokens (RFC 6749 §4.4)


def test_client_credentials_is_unauthorized_for_clients_not_allowed_the_grant(http: TestClient, world: World) -> None:
    assert_oauth_error(application_token(http, world.planner, scope="members:read"), "unauthorized_client")


def test_application_token_has_the_client_as_subject_and_no_refresh_or_id_token(http: TestClient, world: World) -> None:
    response = application_token(http, world.reporter, scope="members:read")

    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert body["token_type"] == "Bearer"
    assert body["scope"] == "members:read"
    assert "refresh_token" not in body and "id_token" not in body
    claims = verified(http, body["access_token"], ISSUER)
    assert claims["sub"] == claims["client_id"] == world.reporter.id
    assert claims["org_id"] == world.acme.id


def test_application_access_token_is_typed_at_jwt(http: TestClient, world: World) -> None:
    body = application_token(http, world.reporter, scope="members:read").json()

    assert jwt.get_unverified_header(body["access_token"])["typ"] == "at+jwt"


@pytest.mark.parametrize("scope", ["openid", "profile", "offline_access", "members:read email"])
def test_client_credentials_asking_a_scope_beyond_the_application_scopes_is_invalid_scope(
    http: TestClient, world: World, scope: str
) -> None:
    assert_oauth_error(application_token(http, world.reporter, scope=scope), "invalid_scope")


def test_client_credentials_asking_members_read_without_it_allowed_is_invalid_scope(
    http: TestClient, engine: Engine, world: World
) -> None:
    no_directory = register(
        engine,
        world.acme,
        "Sign-in With Credentials",
        grants=["authorization_code", "client_credentials"],
        scopes=["openid", "profile"],
        redirect_uris=[REDIRECT_URI],
    )

    assert_oauth_error(application_token(http, no_directory, scope="members:read"), "invalid_scope")


def test_client_credentials_ignores_unknown_scopes(http: TestClient, world: World) -> None:
    response = application_token(http, world.reporter, scope="members:read recipes:write")

    assert response.status_code == 200, response.text
    assert response.json()["scope"] == "members:read"


def test_client_credentials_without_scope_gets_the_allowed_application_scopes(http: TestClient, world: World) -> None:
    response = application_token(http, world.reporter)

    assert response.status_code == 200, response.text
    assert response.json()["scope"] == "members:read"


# private_key_jwt (RFC 7523 §3, OpenID Connect Core §9)


def assertion_token_request(http: TestClient, token: str, **extra: str) -> httpx.Response:
    return http.post(
        "/oauth2/token",
        data={"grant_type": "client_credentials", "scope": "members:read", **assertion_form(token), **extra},
    )


@pytest.mark.parametrize("algorithm", ["RS256", "PS256", "ES256"])
def test_private_key_jwt_accepts_rs256_ps256_and_es256(
    http: TestClient, signer: Registered, rsa_key: KeyPair, ec_key: KeyPair, algorithm: str
) -> None:
    key = ec_key if algorithm == "ES256" else rsa_key

    response = assertion_token_request(http, client_assertion(signer.id, key, algorithm))

    assert response.status_code == 200, response.text
    assert verified(http, response.json()["access_token"], ISSUER)["client_id"] == signer.id


def test_private_key_jwt_accepts_the_token_endpoint_as_audience(
    http: TestClient, signer: Registered, rsa_key: KeyPair
) -> None:
    response = assertion_token_request(http, client_assertion(signer.id, rsa_key, aud=TOKEN_URL))

    assert response.status_code == 200, response.text


def test_private_key_jwt_accepts_client_id_alongside_the_assertion(
    http: TestClient, signer: Registered, rsa_key: KeyPair
) -> None:
    response = assertion_token_request(http, client_assertion(signer.id, rsa_key), client_id=signer.id)

    assert response.status_code == 200, response.text


def test_replayed_client_assertion_is_invalid_client(http: TestClient, signer: Registered, rsa_key: KeyPair) -> None:
    token = client_assertion(signer.id, rsa_key)
    assert assertion_token_request(http, token).status_code == 200

    assert_oauth_error(assertion_token_request(http, token), "invalid_client", 401)


def test_client_assertion_jti_is_single_use_even_in_a_new_assertion(
    http: TestClient, signer: Registered, rsa_key: KeyPair
) -> None:
    assert assertion_token_request(http, client_assertion(signer.id, rsa_key, jti="once")).status_code == 200

    again = assertion_token_request(http, client_assertion(signer.id, rsa_key, "PS256", jti="once"))

    assert_oauth_error(again, "invalid_client", 401)


def bad_assertions(client_id: str, rsa_key: KeyPair, stranger_key: KeyPair) -> dict[str, str]:
    """One assertion per rule of RFC 7523 §3 it breaks."""
    hmac_key = KeyPair(b"a shared secret of at least 32 bytes!!", {"kid": "rsa-1"})
    return {
        "expired": client_assertion(client_id, rsa_key, expires_in=-60),
        "expiring_in_two_hours": client_assertion(client_id, rsa_key, expires_in=7200),
        "wrong_audience": client_assertion(client_id, rsa_key, aud="https://elsewhere.example.com"),
        "iss_not_sub": client_assertion(client_id, rsa_key, sub="cli_someoneelse0000"),
        "unregistered_key": client_assertion(client_id, stranger_key),
        "hs256": client_assertion(client_id, hmac_key, "HS256"),
        "two_audiences": client_assertion(client_id, rsa_key, aud=[ISSUER, TOKEN_URL]),
        "audience_list": client_assertion(client_id, rsa_key, aud=[ISSUER]),
        "without_jti": client_assertion(client_id, rsa_key, omit=("jti",)),
        "without_exp": client_assertion(client_id, rsa_key, omit=("exp",)),
        "unknown_client": client_assertion("cli_0000000000000000", rsa_key),
    }


BAD_ASSERTIONS = [
    "expired",
    "expiring_in_two_hours",
    "wrong_audience",
    "iss_not_sub",
    "unregistered_key",
    "hs256",
    "two_audiences",
    "audience_list",
    "without_jti",
    "without_exp",
    "unknown_client",
]


@pytest.mark.parametrize("case", BAD_ASSERTIONS)
def test_client_assertion_breaking_a_rule_is_invalid_client(
    http: TestClient, signer: Registered, rsa_key: KeyPair, stranger_key: KeyPair, case: str
) -> None:
    token = bad_assertions(signer.id, rsa_key, stranger_key)[case]

    response = assertion_token_request(http, token)

    assert_oauth_error(response, "invalid_client", 401)
    assert "access_token" not in response.json()


def test_client_assertion_failures_all_say_the_same_thing(
    http: TestClient, signer: Registered, rsa_key: KeyPair, stranger_key: KeyPair
) -> None:
    replayed = client_assertion(signer.id, rsa_key)
    assert assertion_token_request(http, replayed).status_code == 200
    tokens = [*bad_assertions(signer.id, rsa_key, stranger_key).values(), replayed]

    answers = [assertion_token_request(http, token) for token in tokens]

    assert {response.status_code for response in answers} == {401}
    assert len({response.content for response in answers}) == 1


def test_client_assertion_from_a_client_secret_client_is_invalid_client(
    http: TestClient, world: World, rsa_key: KeyPair
) -> None:
    response = assertion_token_request(http, client_assertion(world.reporter.id, rsa_key))

    assert_oauth_error(response, "invalid_client", 401)


def test_private_key_jwt_client_sending_a_secret_is_invalid_client(http: TestClient, signer: Registered) -> None:
    guessed = Registered(signer.client, "cs_guessed")

    response = application_token(http, guessed, scope="members:read")

    assert_oauth_error(response, "invalid_client", 401)


def test_client_assertion_with_another_client_id_parameter_is_invalid_client(
    http: TestClient, world: World, signer: Registered, rsa_key: KeyPair
) -> None:
    response = assertion_token_request(http, client_assertion(signer.id, rsa_key), client_id=world.reporter.id)

    assert_oauth_error(response, "invalid_client", 401)


def test_client_assertion_with_an_absurd_expiry_is_invalid_client(
    http: TestClient, signer: Registered, rsa_key: KeyPair
) -> None:
    response = assertion_token_request(http, client_assertion(signer.id, rsa_key, expires_in=10**20))

    assert_oauth_error(response, "invalid_client", 401)


def test_client_assertion_may_live_up_to_an_hour(http: TestClient, signer: Registered, rsa_key: KeyPair) -> None:
    response = assertion_token_request(http, client_assertion(signer.id, rsa_key, expires_in=3600))

    assert response.status_code == 200, response.text


def test_private_key_jwt_authenticates_at_introspection_and_revocation(
    http: TestClient, signer: Registered, rsa_key: KeyPair, ec_key: KeyPair
) -> None:
    access_token = assertion_token_request(http, client_assertion(signer.id, rsa_key)).json()["access_token"]

    def form(**fields: str) -> dict[str, str]:
        return {"token": access_token, **assertion_form(client_assertion(signer.id, ec_key, "ES256")), **fields}

    active = http.post("/oauth2/introspect", data=form())
    assert active.status_code == 200, active.text
    assert active.json()["active"] is True
    assert active.json()["client_id"] == signer.id

    revoked = http.post("/oauth2/revoke", data=form())
    assert revoked.status_code == 200, revoked.text

    after = http.post("/oauth2/introspect", data=form())
    assert after.json() == {"active": False}


def test_private_key_jwt_failures_at_introspection_and_revocation_are_invalid_client(
    http: TestClient, signer: Registered, rsa_key: KeyPair, stranger_key: KeyPair
) -> None:
    access_token = assertion_token_request(http, client_assertion(signer.id, rsa_key)).json()["access_token"]
    for path in ("/oauth2/introspect", "/oauth2/revoke"):
        forged = assertion_form(client_assertion(signer.id, stranger_key))
        assert_oauth_error(http.post(path, data={"token": access_token, **forged}), "invalid_client", 401)
    check = assertion_form(client_assertion(signer.id, rsa_key))
    assert http.post("/oauth2/introspect", data={"token": access_token, **check}).json()["active"] is True


# Introspection (RFC 7662)

ACCESS_TOKEN_FIELDS = {
    "active", "scope", "client_id", "sub", "exp", "iat", "iss", "aud", "token_type", "jti", "org_id", "username", "sid",
}  # fmt: skip


def test_introspection_requires_client_authentication(http: TestClient, world: World) -> None:
    token = application_token(http, world.reporter).json()["access_token"]

    assert_oauth_error(http.post("/oauth2/introspect", data={"token": token}), "invalid_client", 401)
    wrong = Registered(world.planner.client, "cs_not-the-secret")
    response = http.post("/oauth2/introspect", data={"token": token}, headers=wrong.basic)
    assert_oauth_error(response, "invalid_client", 401)
    assert response.headers["www-authenticate"].startswith("Basic ")


def test_introspection_without_a_token_is_invalid_request(http: TestClient, world: World) -> None:
    response = http.post("/oauth2/introspect", data={"token_type_hint": "access_token"}, headers=world.planner.basic)

    assert_oauth_error(response, "invalid_request")


def test_introspection_of_an_active_user_access_token_returns_its_metadata(http: TestClient, world: World) -> None:
    tokens = user_tokens(http, world.planner)
    claims = verified(http, tokens["access_token"], ISSUER)
    sid = verified(http, tokens["id_token"], world.planner.id)["sid"]

    answer = introspect(http, world.planner, tokens["access_token"])

    assert ACCESS_TOKEN_FIELDS <= set(answer)
    assert answer["active"] is True
    assert set(answer["scope"].split()) == set(USER_SCOPE.split())
    assert answer["client_id"] == world.planner.id
    assert answer["sub"] == world.ana.id
    assert (answer["exp"], answer["iat"], answer["jti"]) == (claims["exp"], claims["iat"], claims["jti"])
    assert answer["iss"] == ISSUER and answer["aud"] == ISSUER
    assert answer["token_type"] == "Bearer"
    assert answer["org_id"] == world.acme.id
    assert answer["username"] == "ana@example.com"
    assert answer["sid"] == sid


def test_introspection_of_an_application_token_names_the_client_and_no_user(http: TestClient, world: World) -> None:
    token = application_token(http, world.reporter).json()["access_token"]

    answer = introspect(http, world.planner, token)

    assert answer["active"] is True and answer["token_type"] == "Bearer"
    assert answer["sub"] == answer["client_id"] == world.reporter.id
    assert answer["scope"] == "members:read" and answer["org_id"] == world.acme.id
    assert "username" not in answer and "sid" not in answer


def test_introspection_of_a_refresh_token_says_token_type_refresh_token(http: TestClient, world: World) -> None:
    tokens = user_tokens(http, world.planner)

    answer = introspect(http, world.planner, tokens["refresh_token"])

    assert answer["active"] is True
    assert answer["token_type"] == "refresh_token"
    assert answer["client_id"] == world.planner.id
    assert answer["sub"] == world.ana.id
    assert answer["org_id"] == world.acme.id
    assert answer["username"] == "ana@example.com"


def test_introspection_honours_but_does_not_trust_token_type_hint(http: TestClient, world: World) -> None:
    tokens = user_tokens(http, world.planner)

    refresh_as_access = introspect(http, world.planner, tokens["refresh_token"], token_type_hint="access_token")
    access_as_refresh = introspect(http, world.planner, tokens["access_token"], token_type_hint="refresh_token")
    unknown_hint = introspect(http, world.planner, tokens["access_token"], token_type_hint="id_token")

    assert refresh_as_access["active"] is True and refresh_as_access["token_type"] == "refresh_token"
    assert access_as_refresh["active"] is True and access_as_refresh["token_type"] == "Bearer"
    assert unknown_hint["active"] is True and unknown_hint["token_type"] == "Bearer"


@pytest.mark.parametrize("token", ["rt_" + "x" * 43, "not-a-token", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."])
def test_introspection_of_an_unknown_token_is_only_inactive(http: TestClient, world: World, token: str) -> None:
    assert introspect(http, world.planner, token) == {"active": False}


def test_introspection_of_an_expired_access_token_is_only_inactive(
    http: TestClient, world: World, clock: MovableClock
) -> None:
    expired = then_later(clock, lambda: application_token(http, world.reporter).json()["access_token"])

    assert introspect(http, world.reporter, expired) == {"active": False}


def test_introspection_of_an_expired_refresh_token_is_only_inactive(
    http: TestClient, world: World, clock: MovableClock
) -> None:
    tokens = then_later(clock, lambda: user_tokens(http, world.planner), later=timedelta(days=31))

    assert introspect(http, world.planner, tokens["refresh_token"]) == {"active": False}
    assert_oauth_error(refresh(http, world.planner, tokens["refresh_token"]), "invalid_grant")


def test_introspection_of_revoked_tokens_is_only_inactive(http: TestClient, world: World) -> None:
    tokens = user_tokens(http, world.planner)
    assert revoke(http, world.planner, tokens["refresh_token"]).status_code == 200

    assert introspect(http, world.planner, tokens["refresh_token"]) == {"active": False}
    assert introspect(http, world.planner, tokens["access_token"]) == {"active": False}


def test_introspection_of_another_organizations_tokens_is_only_inactive(http: TestClient, world: World) -> None:
    tokens = user_tokens(http, world.planner)
    application = application_token(http, world.reporter).json()["access_token"]

    for token in (tokens["access_token"], tokens["refresh_token"], application):
        assert introspect(http, world.rival, token) == {"active": False}
        assert introspect(http, world.rival, token, token_type_hint="refresh_token") == {"active": False}


def test_introspection_of_an_id_token_is_only_inactive(http: TestClient, world: World) -> None:
    tokens = user_tokens(http, world.planner)

    assert introspect(http, world.planner, tokens["id_token"]) == {"active": False}


def test_introspection_and_revocation_go_by_the_clients_organization_not_the_users(
    http: TestClient, world: World
) -> None:
    tokens = user_tokens(http, world.rival)  # Ana of Acme signs in to Beta's client
    assert verified(http, tokens["access_token"], ISSUER)["org_id"] == world.acme.id

    assert introspect(http, world.planner, tokens["access_token"]) == {"active": False}
    assert introspect(http, world.planner, tokens["refresh_token"]) == {"active": False}
    assert revoke(http, world.planner, tokens["refresh_token"]).status_code == 200
    assert introspect(http, world.rival, tokens["refresh_token"])["active"] is True
    assert introspect(http, world.rival, tokens["access_token"])["org_id"] == world.acme.id


def test_introspection_sees_tokens_of_other_clients_of_the_same_organization(http: TestClient, world: World) -> None:
    tokens = user_tokens(http, world.planner)

    answer = introspect(http, world.companion, tokens["access_token"])

    assert answer["active"] is True and answer["client_id"] == world.planner.id


# Revocation (RFC 7009)


def test_revocation_requires_client_authentication(http: TestClient, world: World) -> None:
    tokens = user_tokens(http, world.planner)

    response = http.post("/oauth2/revoke", data={"token": tokens["access_token"]})

    assert_oauth_error(response, "invalid_client", 401)
    assert introspect(http, world.planner, tokens["access_token"])["active"] is True


def test_revoking_an_unknown_token_answers_200_with_an_empty_body(http: TestClient, world: World) -> None:
    for token in ("rt_" + "y" * 43, "whatever"):
        response = revoke(http, world.planner, token, token_type_hint="refresh_token")
        assert response.status_code == 200
        assert response.content == b""
        assert response.headers["cache-control"] == "no-store"


def test_revoking_a_refresh_token_revokes_its_family_and_their_access_tokens(http: TestClient, world: World) -> None:
    first = user_tokens(http, world.planner)
    second = refresh(http, world.planner, first["refresh_token"]).json()

    response = revoke(http, world.planner, second["refresh_token"], token_type_hint="refresh_token")

    assert response.status_code == 200 and response.content == b""
    assert_oauth_error(refresh(http, world.planner, second["refresh_token"]), "invalid_grant")
    for access_token in (first["access_token"], second["access_token"]):
        assert userinfo_status(http, access_token) == 401
        assert introspect(http, world.planner, access_token) == {"active": False}


def test_revoking_an_access_token_takes_effect_at_once(http: TestClient, world: World) -> None:
    tokens = user_tokens(http, world.planner)
    assert userinfo_status(http, tokens["access_token"]) == 200

    response = revoke(http, world.planner, tokens["access_token"], token_type_hint="access_token")

    assert response.status_code == 200 and response.content == b""
    assert introspect(http, world.planner, tokens["access_token"]) == {"active": False}
    assert userinfo_status(http, tokens["access_token"]) == 401


def test_a_client_of_another_organization_cannot_revoke(http: TestClient, world: World) -> None:
    tokens = user_tokens(http, world.planner)

    for token in (tokens["access_token"], tokens["refresh_token"]):
        response = revoke(http, world.rival, token)
        assert response.status_code == 200 and response.content == b""

    assert introspect(http, world.planner, tokens["access_token"])["active"] is True
    assert introspect(http, world.planner, tokens["refresh_token"])["active"] is True
    assert userinfo_status(http, tokens["access_token"]) == 200


# RP-initiated sign-out (OpenID Connect RP-Initiated Logout 1.0)

SESSION_COOKIE = "rm_session"


def end_session(http: TestClient, method: str, **params: str) -> httpx.Response:
    if method == "GET":
        return http.get("/oauth2/end-session", params=params)
    return http.post("/oauth2/end-session", data=params)


def silent_authorize(http: TestClient, client_id: str) -> dict[str, str]:
    """``prompt=none``: the parameters of the redirect back to the client."""
    location, _ = authorize(http, client_id, prompt="none")
    assert location.startswith(REDIRECT_URI + "?"), location
    return query_of(location)


def assert_error_page(response: httpx.Response) -> None:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("text/html")
    assert "location" not in response.headers


def assert_page_headers(response: httpx.Response) -> None:
    assert response.headers["content-security-policy"].startswith("default-src 'none'")
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["cache-control"] == "no-store"


def look_alike(id_token: str, key: KeyPair) -> str:
    """The same header and claims as ``id_token``, signed with a key that is not the provider's."""
    header = jwt.get_unverified_header(id_token)
    claims = jwt.decode(id_token, options={"verify_signature": False})
    return jwt.encode(claims, key.private, algorithm="RS256", headers={"kid": header["kid"], "typ": header["typ"]})


def cleared(response: httpx.Response, cookie: str) -> bool:
    """Whether the response tells the browser to drop ``cookie``."""
    for header in response.headers.get_list("set-cookie"):
        attributes = header.lower()
        if header.startswith(f"{cookie}=") and ("expires=thu, 01 jan 1970" in attributes or "max-age=0" in attributes):
            return True
    return False


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_end_session_refuses_an_unregistered_post_logout_redirect_uri(
    http: TestClient, world: World, method: str
) -> None:
    tokens = user_tokens(http, world.planner)

    for params in (
        {"client_id": world.planner.id, "post_logout_redirect_uri": "https://evil.example.com/"},
        {"id_token_hint": tokens["id_token"], "post_logout_redirect_uri": REDIRECT_URI},
        {"post_logout_redirect_uri": LOGOUT_URI},  # no client named: nothing to check it against
    ):
        response = end_session(http, method, state="s1", **params)
        assert_error_page(response)
        assert_page_headers(response)

    assert "code" in silent_authorize(http, world.planner.id)  # still signed in


def test_end_session_refuses_an_id_token_hint_signed_by_a_foreign_key(
    http: TestClient, world: World, stranger_key: KeyPair
) -> None:
    tokens = user_tokens(http, world.planner)
    forged = look_alike(tokens["id_token"], stranger_key)

    response = end_session(http, "GET", id_token_hint=forged, post_logout_redirect_uri=LOGOUT_URI, state="s1")

    assert_error_page(response)
    assert "code" in silent_authorize(http, world.planner.id)


def test_end_session_refuses_an_access_token_as_id_token_hint(http: TestClient, world: World) -> None:
    tokens = user_tokens(http, world.planner)

    response = end_session(
        http, "GET", id_token_hint=tokens["access_token"], post_logout_redirect_uri=LOGOUT_URI, state="s1"
    )

    assert_error_page(response)
    assert "code" in silent_authorize(http, world.planner.id)


def test_end_session_accepts_an_expired_id_token_hint_of_ours(
    http: TestClient, world: World, clock: MovableClock
) -> None:
    tokens = then_later(clock, lambda: user_tokens(http, world.planner))
    assert verified(http, tokens["id_token"], world.planner.id)["exp"] <= clock.now().timestamp()  # expired

    response = end_session(
        http, "GET", id_token_hint=tokens["id_token"], post_logout_redirect_uri=LOGOUT_URI, state="s1"
    )

    assert response.status_code == 302, response.text
    assert response.headers["location"] == f"{LOGOUT_URI}?state=s1"


def test_end_session_refuses_an_id_token_hint_issued_to_another_client_id(http: TestClient, world: World) -> None:
    tokens = user_tokens(http, world.planner)

    response = end_session(
        http,
        "GET",
        id_token_hint=tokens["id_token"],
        client_id=world.companion.id,
        post_logout_redirect_uri=LOGOUT_URI,
    )

    assert_error_page(response)
    assert "code" in silent_authorize(http, world.planner.id)


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_end_session_with_a_hint_for_the_current_session_redirects_with_state(
    http: TestClient, world: World, method: str
) -> None:
    tokens = user_tokens(http, world.planner)
    assert SESSION_COOKIE in http.cookies

    response = end_session(
        http, method, id_token_hint=tokens["id_token"], post_logout_redirect_uri=LOGOUT_URI, state="s-42"
    )

    assert response.status_code == 302, response.text
    assert response.headers["location"] == f"{LOGOUT_URI}?state=s-42"
    assert cleared(response, SESSION_COOKIE)
    assert SESSION_COOKIE not in http.cookies


def test_end_session_with_a_hint_of_an_earlier_session_asks_for_confirmation(http: TestClient, world: World) -> None:
    earlier = user_tokens(http, world.planner)
    signed_out = end_session(http, "GET", id_token_hint=earlier["id_token"], post_logout_redirect_uri=LOGOUT_URI)
    assert signed_out.status_code == 302, signed_out.text
    user_tokens(http, world.planner)  # a new session

    response = end_session(http, "GET", id_token_hint=earlier["id_token"], post_logout_redirect_uri=LOGOUT_URI)

    assert response.status_code == 200, response.text
    assert "csrf_token" in hidden_inputs(response.text)
    assert "code" in silent_authorize(http, world.planner.id)


def test_signing_out_ends_the_session_everywhere_and_revokes_its_tokens(http: TestClient, world: World) -> None:
    planner = user_tokens(http, world.planner)
    companion = user_tokens(http, world.companion)  # the same browser session, no second sign-in

    response = end_session(http, "GET", id_token_hint=planner["id_token"], post_logout_redirect_uri=LOGOUT_URI)
    assert response.status_code == 302, response.text

    assert silent_authorize(http, world.planner.id)["error"] == "login_required"
    assert silent_authorize(http, world.companion.id)["error"] == "login_required"
    for registered, tokens in ((world.planner, planner), (world.companion, companion)):
        assert_oauth_error(refresh(http, registered, tokens["refresh_token"]), "invalid_grant")
        assert introspect(http, registered, tokens["access_token"]) == {"active": False}
        assert userinfo_status(http, tokens["access_token"]) == 401


def test_signing_out_revokes_access_tokens_refreshed_in_the_session(http: TestClient, world: World) -> None:
    tokens = user_tokens(http, world.planner)
    refreshed = refresh(http, world.planner, tokens["refresh_token"]).json()

    response = end_session(http, "GET", id_token_hint=tokens["id_token"], post_logout_redirect_uri=LOGOUT_URI)
    assert response.status_code == 302, response.text

    assert introspect(http, world.planner, refreshed["access_token"]) == {"active": False}
    assert_oauth_error(refresh(http, world.planner, refreshed["refresh_token"]), "invalid_grant")


def test_end_session_without_a_hint_asks_for_confirmation(http: TestClient, world: World) -> None:
    user_tokens(http, world.planner)

    response = end_session(http, "GET", client_id=world.planner.id, post_logout_redirect_uri=LOGOUT_URI, state="s1")

    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/html")
    assert_page_headers(response)
    html = response.text
    assert '<form method="post" action="/oauth2/end-session">' in html
    assert hidden_inputs(html)["csrf_token"]
    assert '<button type="submit" name="confirm" value="yes">' in html
    assert "<script" not in html.lower()
    assert "code" in silent_authorize(http, world.planner.id)  # asking signs nobody out


def confirmation_form(http: TestClient, world: World) -> dict[str, str]:
    """Sign in, open the confirmation page, and return its hidden fields."""
    user_tokens(http, world.planner)
    page = end_session(http, "GET", client_id=world.planner.id, post_logout_redirect_uri=LOGOUT_URI, state="s1")
    assert page.status_code == 200, page.text
    return hidden_inputs(page.text)


def test_confirming_sign_out_with_a_wrong_csrf_token_is_refused(http: TestClient, world: World) -> None:
    form = confirmation_form(http, world)

    response = http.post("/oauth2/end-session", data={**form, "csrf_token": "forged", "confirm": "yes"})

    assert_error_page(response)
    assert_page_headers(response)
    assert "code" in silent_authorize(http, world.planner.id)


def test_confirming_sign_out_signs_out_and_redirects(http: TestClient, world: World) -> None:
    form = confirmation_form(http, world)
    assert form["client_id"] == world.planner.id and form["post_logout_redirect_uri"] == LOGOUT_URI

    response = http.post("/oauth2/end-session", data={**form, "confirm": "yes"})

    assert response.status_code == 302, response.text
    assert response.headers["location"] == f"{LOGOUT_URI}?state=s1"
    assert cleared(response, SESSION_COOKIE)
    assert silent_authorize(http, world.planner.id)["error"] == "login_required"


def test_confirming_sign_out_without_a_redirect_uri_shows_the_signed_out_page(http: TestClient, world: World) -> None:
    tokens = user_tokens(http, world.planner)
    page = end_session(http, "GET")
    assert page.status_code == 200, page.text

    response = http.post("/oauth2/end-session", data={**hidden_inputs(page.text), "confirm": "yes"})

    assert response.status_code == 200, response.text
    assert_page_headers(response)
    assert "signed out" in response.text.lower()
    assert cleared(response, SESSION_COOKIE)
    assert silent_authorize(http, world.planner.id)["error"] == "login_required"
    assert_oauth_error(refresh(http, world.planner, tokens["refresh_token"]), "invalid_grant")


def test_declining_sign_out_keeps_the_session(http: TestClient, world: World) -> None:
    form = confirmation_form(http, world)

    response = http.post("/oauth2/end-session", data={**form, "confirm": "no"})

    assert response.status_code == 200, response.text
    assert_page_headers(response)
    assert not cleared(response, SESSION_COOKIE)
    assert "code" in silent_authorize(http, world.planner.id)


# The member directory


@pytest.fixture
def crew(engine: Engine, world: World) -> list[User]:
    """Four more members of Acme, five in all with Ana."""
    users = UserStore(engine)
    return [world.ana] + [
        users.create(f"member{n}@example.com", f"Member {n}", PASSWORD, [(world.acme.id, role)])
        for n, role in enumerate(("admin", "member", "member", "owner"), start=1)
    ]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def members_token(http: TestClient, registered: Registered) -> str:
    response = application_token(http, registered, scope="members:read")
    assert response.status_code == 200, response.text
    return response.json()["access_token"]  # type: ignore[no-any-return]


def test_directory_lists_the_members_of_the_clients_organization(
    http: TestClient, world: World, crew: list[User]
) -> None:
    response = http.get("/directory/members", headers=bearer(members_token(http, world.reporter)))

    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    page = response.json()
    assert page["total"] == 5 and page["next_cursor"] is None
    assert {m["id"] for m in page["data"]} == {user.id for user in crew}
    for member in page["data"]:
        assert set(member) == {"id", "email", "name", "role", "joined_at"}
    ana = next(m for m in page["data"] if m["id"] == world.ana.id)
    assert (ana["email"], ana["name"], ana["role"]) == ("ana@example.com", "Ana Lima", "owner")
    order = [(datetime.fromisoformat(m["joined_at"]), m["id"]) for m in page["data"]]
    assert order == sorted(order)


def test_directory_pagination_visits_every_member_once(http: TestClient, world: World, crew: list[User]) -> None:
    headers = bearer(members_token(http, world.reporter))
    seen: list[str] = []
    sizes: list[int] = []
    params: dict[str, Any] = {"limit": 2}
    while True:
        response = http.get("/directory/members", params=params, headers=headers)
        assert response.status_code == 200, response.text
        page = response.json()
        assert page["total"] == 5
        seen += [m["id"] for m in page["data"]]
        sizes.append(len(page["data"]))
        if page["next_cursor"] is None:
            break
        params = {"limit": 2, "cursor": page["next_cursor"]}

    assert sizes == [2, 2, 1]
    assert sorted(seen) == sorted(user.id for user in crew)
    full = http.get("/directory/members", headers=headers).json()
    assert seen == [m["id"] for m in full["data"]]


def test_directory_pagination_breaks_joined_at_ties_by_id(http: TestClient, engine: Engine, world: World) -> None:
    moment = SYSTEM_CLOCK.now().replace(microsecond=0) + timedelta(seconds=1)  # after Ana joined
    users = UserStore(engine, FixedClock(moment))  # four members join at the same instant
    twins = [users.create(f"twin{n}@example.com", f"Twin {n}", PASSWORD, [(world.acme.id, "member")]) for n in range(4)]
    headers = bearer(members_token(http, world.reporter))
    seen: list[str] = []
    params: dict[str, Any] = {"limit": 2}
    for _ in range(5):
        page = http.get("/directory/members", params=params, headers=headers).json()
        seen += [m["id"] for m in page["data"]]
        if page["next_cursor"] is None:
            break
        params = {"limit": 2, "cursor": page["next_cursor"]}

    assert seen == [world.ana.id, *sorted(user.id for user in twins)]


def tampered(cursor: str) -> str:
    middle = len(cursor) // 2
    return cursor[:middle] + ("A" if cursor[middle] != "A" else "B") + cursor[middle + 1 :]


def test_directory_refuses_an_altered_cursor(http: TestClient, world: World, crew: list[User]) -> None:
    headers = bearer(members_token(http, world.reporter))
    cursor = http.get("/directory/members", params={"limit": 2}, headers=headers).json()["next_cursor"]

    for bad in (tampered(cursor), cursor + "x", "not-a-cursor"):
        response = http.get("/directory/members", params={"limit": 2, "cursor": bad}, headers=headers)
        assert response.status_code == 400, (bad, response.text)
        assert response.json()["error"] == "invalid_request"


def test_directory_refuses_a_cursor_of_another_organization(http: TestClient, world: World, crew: list[User]) -> None:
    acme = bearer(members_token(http, world.reporter))
    cursor = http.get("/directory/members", params={"limit": 2}, headers=acme).json()["next_cursor"]

    response = http.get(
        "/directory/members", params={"limit": 2, "cursor": cursor}, headers=bearer(members_token(http, world.rival))
    )

    assert response.status_code == 400, response.text
    assert response.json()["error"] == "invalid_request"


@pytest.mark.parametrize("limit", [0, 101, -1])
def test_directory_refuses_a_limit_out_of_range(http: TestClient, world: World, limit: int) -> None:
    response = http.get(
        "/directory/members", params={"limit": limit}, headers=bearer(members_token(http, world.reporter))
    )

    assert response.status_code == 400, response.text
    assert response.json()["error"] == "invalid_request"


def test_directory_without_a_token_is_invalid_token_without_error_attribute(http: TestClient) -> None:
    response = http.get("/directory/members")

    assert response.status_code == 401, response.text
    assert response.json()["error"] == "invalid_token"
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert "error=" not in challenge


def test_directory_with_a_bad_token_is_invalid_token(http: TestClient, world: World, stranger_key: KeyPair) -> None:
    genuine = members_token(http, world.reporter)
    forged = look_alike(genuine, stranger_key)

    for token in ("not.a.jwt", forged):
        response = http.get("/directory/members", headers=bearer(token))
        assert response.status_code == 401, response.text
        assert response.json()["error"] == "invalid_token"
        assert 'error="invalid_token"' in response.headers["www-authenticate"]


def test_directory_refuses_a_revoked_application_token(http: TestClient, world: World) -> None:
    token = members_token(http, world.reporter)
    assert revoke(http, world.reporter, token).status_code == 200

    response = http.get("/directory/members", headers=bearer(token))

    assert response.status_code == 401, response.text
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


def test_directory_refuses_a_user_access_token_with_insufficient_scope(http: TestClient, world: World) -> None:
    tokens = user_tokens(http, world.planner)

    response = http.get("/directory/members", headers=bearer(tokens["access_token"]))

    assert response.status_code == 403, response.text
    assert response.json()["error"] == "insufficient_scope"
    challenge = response.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="members:read"' in challenge


def test_a_sign_in_cannot_obtain_members_read(http: TestClient, world: World) -> None:
    tokens = user_tokens(http, world.rival, scope="openid members:read")  # rival may use members:read, but not here

    assert "members:read" not in tokens["scope"].split()
    response = http.get("/directory/members", headers=bearer(tokens["access_token"]))
    assert response.status_code == 403, response.text
    assert response.json()["error"] == "insufficient_scope"


def test_directory_of_another_organization_lists_only_its_own_members(
    http: TestClient, engine: Engine, world: World
) -> None:
    users = UserStore(engine)
    bo = users.create("bo@example.com", "Bo Berg", PASSWORD, [(world.beta.id, "owner")])
    cara = users.create(
        "cara@example.com", "Cara Diaz", PASSWORD, [(world.acme.id, "member"), (world.beta.id, "admin")]
    )

    beta = http.get("/directory/members", headers=bearer(members_token(http, world.rival))).json()
    acme = http.get("/directory/members", headers=bearer(members_token(http, world.reporter))).json()

    assert [m["id"] for m in beta["data"]] == [bo.id, cara.id] and beta["total"] == 2
    assert {m["id"]: m["role"] for m in beta["data"]} == {bo.id: "owner", cara.id: "admin"}
    assert {m["id"] for m in acme["data"]} == {world.ana.id, cara.id} and acme["total"] == 2


# Discovery (OpenID Connect Discovery 1.0 §3, RFC 8414)


def test_discovery_advertises_client_authentication_methods_and_algorithms(http: TestClient) -> None:
    metadata = http.get("/.well-known/openid-configuration").json()

    for endpoint in ("token", "introspection", "revocation"):
        methods = metadata[f"{endpoint}_endpoint_auth_methods_supported"]
        assert set(methods) == {"client_secret_basic", "client_secret_post", "private_key_jwt"}
        algorithms = metadata[f"{endpoint}_endpoint_auth_signing_alg_values_supported"]
        assert set(algorithms) == {"RS256", "PS256", "ES256"}


def test_discovery_advertises_endpoints_scopes_and_claims(http: TestClient) -> None:
    metadata = http.get("/.well-known/openid-configuration").json()

    assert metadata["issuer"] == ISSUER
    assert metadata["token_endpoint"] == TOKEN_URL
    assert metadata["introspection_endpoint"] == ISSUER + "/oauth2/introspect"
    assert metadata["revocation_endpoint"] == ISSUER + "/oauth2/revoke"
    assert metadata["end_session_endpoint"] == ISSUER + "/oauth2/end-session"
    assert {"openid", "profile", "email", "offline_access", "members:read"} <= set(metadata["scopes_supported"])
    assert {"sub", "name", "email", "email_verified", "org_id", "org_name", "sid", "auth_time"} <= set(
        metadata["claims_supported"]
    )
    assert {"authorization_code", "refresh_token", "client_credentials"} <= set(metadata["grant_types_supported"])
