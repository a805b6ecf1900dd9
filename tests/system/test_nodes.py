"""Several nodes, one PostgreSQL database: whatever one node does, the other sees at once.

Two ``regional-menus serve`` processes on different ports share a throw-away PostgreSQL
database, as two nodes behind a load balancer would: node A runs gunicorn with two
uvicorn workers (``--workers 2``), node B a single uvicorn process. Both have the same
issuer (A's address, standing in for the load balancer's). Run it alone with
``pytest tests/system/test_nodes.py -s``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
import pytest
import requests

from identity.keys.sealing import new_key
from tests.support.defaults import KEY_REVOCATION_BOUND
from tests.support.form_browser import Browser, Callback, Page
from tests.support.identity_fixtures import PASSWORD
from tests.support.live import REDIRECT_URI, LiveService, free_port, live_service
from tests.support.pkce_pairs import pkce_pair
from tests.support.postgres import throwaway_database

PUBLISH_DELAY = 3  # seconds a rotated-in key is published before it signs (MENUS_KEY_PUBLISH_DELAY)
TIMEOUT = 30


@dataclass
class Nodes:
    a: LiveService
    b: LiveService
    client: dict[str, Any]
    email: str

    @property
    def basic(self) -> tuple[str, str]:
        return (self.client["client_id"], self.client["client_secret"])

    def token(self, node: LiveService, **form: str) -> dict[str, Any]:
        response = requests.post(f"{node.url}/oauth2/token", data=form, auth=self.basic, timeout=TIMEOUT)
        assert response.status_code == 200, response.text
        return dict(response.json())

    def introspect(self, node: LiveService, token: str) -> dict[str, Any]:
        response = requests.post(
            f"{node.url}/oauth2/introspect", data={"token": token}, auth=self.basic, timeout=TIMEOUT
        )
        assert response.status_code == 200, response.text
        return dict(response.json())

    def revoke(self, node: LiveService, token: str) -> None:
        response = requests.post(f"{node.url}/oauth2/revoke", data={"token": token}, auth=self.basic, timeout=TIMEOUT)
        assert response.status_code == 200, response.text


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nodes]:
    port_a = free_port()
    issuer = f"http://127.0.0.1:{port_a}"
    with throwaway_database() as url:
        env = {
            "MENUS_DATABASE_URL": url,
            "MENUS_ISSUER": issuer,
            "MENUS_BASE_URL": issuer,
            "MENUS_KEY_PUBLISH_DELAY": str(PUBLISH_DELAY),
            "MENUS_SECRET_KEYS": new_key(),  # nodes sharing a database share the keys of its secrets
        }
        folder_a, folder_b = tmp_path_factory.mktemp("node-a"), tmp_path_factory.mktemp("node-b")
        with live_service(folder_a, env, args=("--workers", "2"), port=port_a) as a, live_service(folder_b, env) as b:
            org = a.cli_json("orgs", "create", "--name", "Two Kitchens")
            email = "nodes@example.com"
            a.create_user(email, "Node Walker", PASSWORD, org["id"])
            client = b.cli_json(
                "clients", "create", "--name", "Nodes", "--org", org["id"], "--redirect-uri", REDIRECT_URI,
                "--auth-method", "client_secret_basic", "--first-party", "--grant", "authorization_code",
                "--grant", "refresh_token", "--grant", "client_credentials", "--scope", "openid",
                "--scope", "offline_access", "--scope", "members:read",
            )  # fmt: skip
            yield Nodes(a, b, client, email)


def sign_in_on_node(nodes: Nodes, node: LiveService) -> tuple[str, str]:
    """A browser signs in on ``node``: the code and its PKCE verifier."""
    verifier, challenge = pkce_pair()
    query = urlencode({"response_type": "code", "client_id": nodes.client["client_id"], "redirect_uri": REDIRECT_URI,
                       "scope": "openid offline_access", "state": "two-nodes", "code_challenge": challenge,
                       "code_challenge_method": "S256"})  # fmt: skip
    browser = Browser(node.url)
    page = browser.go(f"{node.url}/oauth2/authorize?{query}")
    assert isinstance(page, Page) and page.path == "/sign-in", page
    landed = browser.submit(page, email=nodes.email, password=PASSWORD)
    assert isinstance(landed, Callback), landed
    return parse_qs(urlsplit(landed.url).query)["code"][0], verifier


def kids(node: LiveService) -> list[str]:
    return [key["kid"] for key in requests.get(f"{node.url}/jwks", timeout=TIMEOUT).json()["keys"]]


def signed_by(token: str) -> str:
    return str(jwt.get_unverified_header(token)["kid"])


def test_a_sign_in_moves_between_nodes_sign_in_exchange_refresh_revoke_introspect(nodes: Nodes) -> None:
    code, verifier = sign_in_on_node(nodes, nodes.a)
    issued = nodes.token(
        nodes.b, grant_type="authorization_code", code=code, redirect_uri=REDIRECT_URI, code_verifier=verifier
    )
    refreshed = nodes.token(nodes.a, grant_type="refresh_token", refresh_token=issued["refresh_token"])
    assert nodes.introspect(nodes.b, refreshed["access_token"])["active"] is True
    assert nodes.introspect(nodes.a, issued["refresh_token"])["active"] is False  # rotated on A, seen by A and B
    assert nodes.introspect(nodes.b, issued["refresh_token"])["active"] is False

    nodes.revoke(nodes.b, refreshed["refresh_token"])
    assert nodes.introspect(nodes.a, refreshed["refresh_token"])["active"] is False
    assert nodes.introspect(nodes.a, refreshed["access_token"])["active"] is False  # the whole grant
    again = requests.post(
        f"{nodes.a.url}/oauth2/token",
        data={"grant_type": "refresh_token", "refresh_token": refreshed["refresh_token"]},
        auth=nodes.basic,
        timeout=TIMEOUT,
    )
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


def test_a_code_redeemed_on_one_node_is_a_replay_on_the_other(nodes: Nodes) -> None:
    code, verifier = sign_in_on_node(nodes, nodes.b)
    exchange = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT_URI,
        "code_verifier": verifier,
    }
    first = nodes.token(nodes.a, **exchange)
    replay = requests.post(f"{nodes.b.url}/oauth2/token", data=exchange, auth=nodes.basic, timeout=TIMEOUT)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert nodes.introspect(nodes.a, first["access_token"])["active"] is False  # the replay revoked the grant


def test_a_key_rotated_by_the_command_line_is_published_then_used_by_both_nodes(nodes: Nodes) -> None:
    before = nodes.token(nodes.a, grant_type="client_credentials", scope="members:read")["access_token"]
    old = signed_by(before)

    rotated = nodes.a.cli_json("keys", "rotate")
    new = rotated["kid"]
    # Each process reads the JWKS again every quarter publish delay (published_keys_refresh capped by it).
    deadline = time.monotonic() + PUBLISH_DELAY / 4 + 0.5
    while not (new in kids(nodes.a) and new in kids(nodes.a) and new in kids(nodes.b)):  # A's two workers too
        assert time.monotonic() < deadline, "both nodes publish the next key within a quarter publish delay"
        time.sleep(0.05)
    assert old in kids(nodes.a) and old in kids(nodes.b), "and keep the current one"

    deadline = time.monotonic() + PUBLISH_DELAY + TIMEOUT  # the next key signs once published PUBLISH_DELAY s
    while True:
        from_a = nodes.token(nodes.a, grant_type="client_credentials", scope="members:read")["access_token"]
        from_b = nodes.token(nodes.b, grant_type="client_credentials", scope="members:read")["access_token"]
        if signed_by(from_a) == signed_by(from_b) == new:
            break
        assert time.monotonic() < deadline, "both nodes sign with the next key once the publish delay has passed"
        time.sleep(0.1)
    for token in (before, from_a, from_b):  # each node verifies what either signed, with either key
        assert nodes.introspect(nodes.a, token)["active"] is True
        assert nodes.introspect(nodes.b, token)["active"] is True
    assert old in kids(nodes.b), "the retired key stays published while its tokens live"


def test_an_api_key_revoked_on_the_command_line_is_refused_by_both_nodes_within_the_bound(nodes: Nodes) -> None:
    """Each worker answers keys it has seen live from memory and reads the revocation count at most every
    0.25 s: a request that starts ``KEY_REVOCATION_BOUND`` (1 s) after the revocation is refused everywhere."""
    created = nodes.b.cli_json("api-keys", "create", "--name", "two nodes")
    headers = {"Authorization": f"Bearer {created['key']}"}
    for node in (nodes.a, nodes.b, nodes.a, nodes.b):  # A's two workers too
        assert requests.get(f"{node.url}/v1/menus/regions", headers=headers, timeout=TIMEOUT).status_code == 200
    nodes.a.cli("api-keys", "revoke", created["id"])
    revoked_at = time.monotonic()  # the revocation committed before the command returned
    while time.monotonic() - revoked_at < KEY_REVOCATION_BOUND + 0.5:
        for node in (nodes.a, nodes.b):
            started = time.monotonic()
            status = requests.get(f"{node.url}/v1/menus/regions", headers=headers, timeout=TIMEOUT).status_code
            # refused: 401, or 429 once this network's failed keys pass MENUS_KEY_FAILURES_PER_MINUTE
            assert status in (401, 429) or started - revoked_at < KEY_REVOCATION_BOUND, "answered past the bound"
        time.sleep(0.1)


def test_both_nodes_are_ready_and_accept_each_others_cursors(nodes: Nodes, tmp_path: Path) -> None:
    key = nodes.a.api_key("cursors")
    headers = {"Authorization": f"Bearer {key}"}
    for node in (nodes.a, nodes.b):
        assert requests.get(f"{node.url}/readyz", timeout=TIMEOUT).json()["status"] == "ready"
    first = requests.get(f"{nodes.a.url}/v1/menus/dishes", params={"limit": 5}, headers=headers, timeout=TIMEOUT)
    cursor = first.json()["next_cursor"]
    second = requests.get(
        f"{nodes.b.url}/v1/menus/dishes", params={"limit": 5, "cursor": cursor}, headers=headers, timeout=TIMEOUT
    )
    assert second.status_code == 200
    assert {d["slug"] for d in first.json()["data"]}.isdisjoint(d["slug"] for d in second.json()["data"])
