"""Real traffic for the reliability tests (graceful shutdown, durability, soak): one organization with a user
and a first-party client on a live service, and the requests its users and applications make.

Every request opens its own connection (``requests`` without a shared session, or a fresh browser), as
many independent clients would, so that a test can tell a refused connection from a dropped request.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import requests

from tests.support.form_browser import Browser, Callback, Page
from tests.support.identity_fixtures import PASSWORD
from tests.support.live import REDIRECT_URI, LiveService
from tests.support.pkce_pairs import pkce_pair

TIMEOUT = 60  # generous: a loaded 2-core machine hashing Argon2 for several clients at once


@dataclass(frozen=True)
class Tenant:
    """What the traffic needs: a client's credentials, a user who can sign in, an API key."""

    url: str
    client_id: str
    client_secret: str
    email: str
    api_key: str

    @property
    def basic(self) -> tuple[str, str]:
        return (self.client_id, self.client_secret)


def provision(service: LiveService, *, members: int = 1) -> Tenant:
    """One org with ``members`` users (the first signs in), a first-party client with every grant, an API key."""
    org = service.cli_json("orgs", "create", "--name", "Reliability Kitchen")
    email = "cook@example.com"
    service.create_user(email, "Cook", PASSWORD, org["id"])
    for number in range(1, members):
        service.create_user(f"cook-{number}@example.com", f"Cook {number}", PASSWORD, org["id"])
    client = service.cli_json(
        "clients", "create", "--name", "Reliability", "--org", org["id"],
        "--redirect-uri", REDIRECT_URI, "--auth-method", "client_secret_basic", "--first-party",
        "--grant", "authorization_code", "--grant", "refresh_token", "--grant", "client_credentials",
        "--scope", "openid", "--scope", "offline_access", "--scope", "members:read",
    )  # fmt: skip
    return Tenant(service.url, client["client_id"], client["client_secret"], email, service.api_key("reliability"))


def authorize_url(tenant: Tenant, challenge: str) -> str:
    query = urlencode({"response_type": "code", "client_id": tenant.client_id, "redirect_uri": REDIRECT_URI,
                       "scope": "openid offline_access", "state": secrets.token_urlsafe(8),
                       "code_challenge": challenge, "code_challenge_method": "S256"})  # fmt: skip
    return f"{tenant.url}/oauth2/authorize?{query}"


def sign_in_page(tenant: Tenant) -> tuple[Browser, Page, str]:
    """A fresh browser at the sign-in page of a new authorization request, and the request's PKCE verifier."""
    verifier, challenge = pkce_pair()
    browser = Browser(tenant.url)
    page = browser.go(authorize_url(tenant, challenge))
    assert isinstance(page, Page) and page.path == "/sign-in", page
    return browser, page, verifier


def sign_in_for_tokens(tenant: Tenant) -> dict[str, Any]:
    """A whole browser sign-in with the password (Argon2), then the code exchanged: the token response."""
    browser, page, verifier = sign_in_page(tenant)
    try:
        callback = browser.submit(page, email=tenant.email, password=PASSWORD)
    finally:
        browser.http.close()
    assert isinstance(callback, Callback), callback
    return exchange_code(tenant, callback.url, verifier)


def exchange_code(tenant: Tenant, callback_url: str, verifier: str) -> dict[str, Any]:
    code = parse_qs(urlsplit(callback_url).query)["code"][0]
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI, "code_verifier": verifier}
    return token_request(tenant, form)


def token_request(tenant: Tenant, form: dict[str, str]) -> dict[str, Any]:
    response = requests.post(f"{tenant.url}/oauth2/token", data=form, auth=tenant.basic, timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def refresh(tenant: Tenant, refresh_token: str) -> dict[str, Any]:
    return token_request(tenant, {"grant_type": "refresh_token", "refresh_token": refresh_token})


def application_token(tenant: Tenant) -> str:
    return str(token_request(tenant, {"grant_type": "client_credentials", "scope": "members:read"})["access_token"])


def revoke(tenant: Tenant, token: str) -> None:
    response = requests.post(f"{tenant.url}/oauth2/revoke", data={"token": token}, auth=tenant.basic, timeout=TIMEOUT)
    assert response.status_code == 200, response.text


def introspect(tenant: Tenant, token: str) -> dict[str, Any]:
    response = requests.post(
        f"{tenant.url}/oauth2/introspect", data={"token": token}, auth=tenant.basic, timeout=TIMEOUT
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer
