"""A node with public clients on, a browser app registered on it, and its token requests (client_id only, no secret):
shared by the API tests of public clients and of their CORS."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization
from identity.clients.registry import Client, ClientStore
from tests.support.identity_fixtures import CALLBACK
from tests.support.identity_pages import VERIFIER, Pairs, token_request

SPA_ORIGIN = "https://planner.example"  # the registered web origin of the browser app
STRANGER_ORIGIN = "https://elsewhere.example"  # a page nobody registered


def register_public(engine: Engine, org: Organization, **options: Any) -> Client:
    """A third-party browser app: auth method none, PKCE, a refresh token, one web origin."""
    client, secret = ClientStore(engine).create(
        **{
            "name": "Menu Planner SPA",
            "org_id": org.id,
            "auth_method": "none",
            "redirect_uris": [CALLBACK],
            "web_origins": [SPA_ORIGIN],
            **options,
        }
    )
    assert secret is None
    return client


def public_token_request(
    http: TestClient, client: Client, pairs: Pairs, origin: str | None = None, headers: dict[str, str] | None = None
) -> httpx.Response:
    """A token request of a public client: its client_id in the body and nothing else (RFC 6749 §3.2.1)."""
    sent = {**({"Origin": origin} if origin else {}), **(headers or {})}
    return token_request(http, [*pairs, ("client_id", client.id)], sent or None)


def public_exchange(http: TestClient, client: Client, code: str, origin: str | None = None) -> httpx.Response:
    pairs = [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", CALLBACK)]
    return public_token_request(http, client, [*pairs, ("code_verifier", VERIFIER)], origin)


def exchange_text(method: str, path: str, headers: dict[str, str], response: httpx.Response) -> str:
    """A request's head and its answer's, as a log shows them (for the preflight exchanges quoted in reports)."""
    lines = [f"{method} {path} HTTP/1.1", *(f"{k}: {v}" for k, v in headers.items()), ""]
    return "\n".join([*lines, f"HTTP/1.1 {response.status_code}", *(f"{k}: {v}" for k, v in response.headers.items())])
