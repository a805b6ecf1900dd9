"""Loopback redirect URIs (RFC 8252 §7.3): any port on a registered loopback IP literal, every other URI
matched exactly."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization
from identity.accounts.users import User
from identity.clients.metadata import redirect_uri_matches
from tests.support import token_flows

# Loopback redirect URIs: RFC 8252 §7.3


@pytest.mark.parametrize(
    ("registered", "presented", "matches"),
    [
        ("http://127.0.0.1/callback", "http://127.0.0.1:51234/callback", True),
        ("http://127.0.0.1:8400/callback", "http://127.0.0.1:51234/callback", True),
        ("http://[::1]/callback", "http://[::1]:51234/callback", True),
        ("http://127.0.0.1/callback", "http://127.0.0.1:51234/callback?x=1", False),
        ("http://127.0.0.1/callback", "http://127.0.0.1:51234/other", False),
        ("http://127.0.0.1/callback", "http://127.0.0.1:99999/callback", False),
        ("http://127.0.0.1/callback", "http://[::1]:51234/callback", False),
        ("http://127.0.0.1/callback", "https://127.0.0.1:51234/callback", False),
        ("http://127.0.0.1/callback", "http://user@127.0.0.1:51234/callback", False),
        ("http://localhost/callback", "http://localhost:51234/callback", False),  # RFC 8252 §8.3: IP literals
        ("https://app.example/callback", "https://app.example:8443/callback", False),
    ],
)
def test_loopback_ip_redirect_uri_matches_any_port_and_every_other_uri_matches_exactly(
    registered: str, presented: str, matches: bool
) -> None:
    assert redirect_uri_matches(registered, presented) is matches


def test_native_app_registered_on_loopback_signs_in_on_an_ephemeral_port(
    http: TestClient, engine: Engine, acme: Organization, ana: User
) -> None:
    native = token_flows.register(engine, acme, "Desktop app", redirect_uris=["http://127.0.0.1/callback"])
    params = {
        "response_type": "code",
        "client_id": native.id,
        "scope": "openid",
        "state": "s",
        "code_challenge": token_flows.pkce_pair()[1],
        "code_challenge_method": "S256",
    }
    on_port = http.get("/oauth2/authorize", params={**params, "redirect_uri": "http://127.0.0.1:51234/callback"})
    assert on_port.status_code == 302 and "/sign-in" in on_port.headers["location"], on_port.text
    other_path = http.get("/oauth2/authorize", params={**params, "redirect_uri": "http://127.0.0.1:51234/elsewhere"})
    assert other_path.status_code == 400 and "location" not in other_path.headers
