"""The identity API driven step by step as a browser and a client would, through the ASGI app: the authorization
request, the provider's pages and their forms, the token endpoint, and what each hop must answer. Used by the
identity API's tests and by those of what its requests leave behind (audit, logs, metrics, throttling)."""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx
import jwt
from starlette.testclient import TestClient

from identity.tokens.pkce import challenge_of
from tests.support.identity_fixtures import CALLBACK, EMAIL, PASSWORD, Registered

ISSUER = "http://127.0.0.1:8000"
VERIFIER = "a-verifier-of-forty-three-characters-or-more_0123456789"
CHALLENGE = challenge_of(VERIFIER)
STATE = "state-7f3a"
NONCE = "nonce-91c2"
SCOPE = "openid profile email"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}

Pairs = Sequence[tuple[str, str]]
SIGN_UP = {"name": "Bo Berg", "email": "bo@example.com", "password": PASSWORD, "organization": "Bo's Bakery"}


def authorization(client_id: str, **changes: str | None) -> list[tuple[str, str]]:
    """A valid authorization request; a change of None leaves the parameter out."""
    params: dict[str, str | None] = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": CALLBACK,
        "scope": SCOPE,
        "state": STATE,
        "nonce": NONCE,
        "code_challenge": CHALLENGE,
        "code_challenge_method": "S256",
        **changes,
    }
    return [(name, value) for name, value in params.items() if value is not None]


def post_form(http: TestClient, path: str, pairs: Pairs, headers: dict[str, str] | None = None) -> httpx.Response:
    """A form post that keeps repeated fields (httpx's ``data`` takes a mapping)."""
    return http.post(path, content=urlencode(list(pairs)), headers={**FORM, **(headers or {})})


def authorize(
    browser: TestClient, client_id: str, *extra: tuple[str, str], method: str = "GET", **changes: str | None
) -> httpx.Response:
    pairs = authorization(client_id, **changes) + list(extra)
    if method == "POST":
        return post_form(browser, "/oauth2/authorize", pairs)
    return browser.get("/oauth2/authorize", params=pairs)


def query_of(location: str) -> dict[str, str]:
    pairs = parse_qsl(urlsplit(location).query, keep_blank_values=True)
    assert len({name for name, _ in pairs}) == len(pairs), f"a parameter is repeated in {location}"
    return dict(pairs)


def to_client(response: httpx.Response, redirect_uri: str = CALLBACK) -> dict[str, str]:
    """The parameters of a redirect back to the client's ``redirect_uri``."""
    assert response.status_code == 302, response.text
    location = response.headers["location"]
    assert location.split("?")[0] == redirect_uri.split("?")[0], location
    assert response.headers["cache-control"] == "no-store"
    return query_of(location)


def redirected_error(response: httpx.Response, error: str, state: str | None = STATE) -> dict[str, str]:
    params = to_client(response)
    assert params["error"] == error, params
    assert params["error_description"]
    assert params["iss"] == ISSUER
    assert params.get("state") == state
    assert "code" not in params
    return params


def to_page(response: httpx.Response, page: str) -> str:
    """The location of a redirect to one of the provider's pages."""
    assert response.status_code == 302, response.text
    location = response.headers["location"]
    assert re.fullmatch(rf"/{page}\?interaction=int_[\w-]+", location), location
    assert response.headers["cache-control"] == "no-store"
    return location


def assert_page_headers(response: httpx.Response) -> None:
    assert response.headers["content-type"].startswith("text/html")
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["x-content-type-options"] == "nosniff"


def assert_error_page(response: httpx.Response, status: int = 400) -> None:
    assert response.status_code == status, response.text
    assert "location" not in response.headers
    assert_page_headers(response)
    assert 'role="alert"' in response.text


def hidden_fields(html: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', html))


def show(browser: TestClient, location: str) -> httpx.Response:
    page = browser.get(location)
    assert page.status_code == 200, page.text
    assert_page_headers(page)
    return page


def submit(browser: TestClient, location: str, fields: dict[str, str]) -> httpx.Response:
    """Show the page at ``location`` and post its form with ``fields`` added to the hidden ones."""
    page = show(browser, location)
    action = re.search(r'<form method="post" action="([^"]+)">', page.text)
    assert action is not None
    return post_form(browser, action.group(1), list({**hidden_fields(page.text), **fields}.items()))


def sign_in(browser: TestClient, location: str, email: str = EMAIL, password: str = PASSWORD) -> httpx.Response:
    return submit(browser, location, {"email": email, "password": password})


def code_of(response: httpx.Response, redirect_uri: str = CALLBACK) -> str:
    params = to_client(response, redirect_uri)
    assert params["state"] == STATE and params["iss"] == ISSUER, params
    assert "error" not in params
    return params["code"]


def signed_in_code(browser: TestClient, client_id: str, email: str = EMAIL, **changes: str | None) -> str:
    """Sign in from a signed-out browser and return the code of a first-party client."""
    location = to_page(authorize(browser, client_id, **changes), "sign-in")
    return code_of(sign_in(browser, location, email))


def basic(client: Registered) -> dict[str, str]:
    """RFC 6749 §2.3.1: the id and secret are form-encoded, then Basic-encoded."""
    return basic_raw(client.id, client.secret)


def basic_raw(client_id: str, secret: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()}


def token_request(http: TestClient, pairs: Pairs, headers: dict[str, str] | None = None) -> httpx.Response:
    response = post_form(http, "/oauth2/token", pairs, headers)
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["pragma"] == "no-cache"
    return response


def exchange(
    http: TestClient,
    client: Registered,
    code: str,
    verifier: str | None = VERIFIER,
    redirect_uri: str = CALLBACK,
) -> httpx.Response:
    pairs = [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirect_uri)]
    if verifier is not None:
        pairs.append(("code_verifier", verifier))
    return token_request(http, pairs, basic(client))


def tokens(http: TestClient, client: Registered, code: str, verifier: str | None = VERIFIER) -> dict[str, Any]:
    response = exchange(http, client, code, verifier)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def assert_oauth_error(response: httpx.Response, status: int, error: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == error, body
    assert isinstance(body["error_description"], str) and body["error_description"]


def verified(http: TestClient, token: str, audience: str, *, leeway: float = 0) -> dict[str, Any]:
    """Check a JWT as a relying party would: RS256, a key from /jwks, our issuer, the audience. ``leeway``: how many
    seconds the provider's clock runs ahead of the relying party's (a test that moved the app's clock forward)."""
    keys = jwt.PyJWKSet.from_dict(http.get("/jwks").json())
    header = jwt.get_unverified_header(token)
    assert header["alg"] == "RS256"
    return jwt.decode(
        token, key=keys[header["kid"]], algorithms=["RS256"], audience=audience, issuer=ISSUER, leeway=leeway
    )


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def refresh(http: TestClient, client: Registered, refresh_token: str) -> httpx.Response:
    return token_request(http, [("grant_type", "refresh_token"), ("refresh_token", refresh_token)], basic(client))
