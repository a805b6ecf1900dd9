"""Public clients (auth method ``none``: browser and native apps), on a node with ``MENUS_PUBLIC_CLIENTS`` and without.

RFC 9700 §2.1.1 (PKCE always), §4.14.2 (rotating refresh tokens, their own lifetime), RFC 6749 §4.4
(no client_credentials), RFC 7662 (no introspection), RFC 8252 §8.6 (consent every time for a third party).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from data.catalog import Catalog
from identity.accounts.organizations import Organization
from identity.accounts.users import User
from identity.clients.registry import Client
from identity.common.tables import refresh_tokens
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.clocks import MovableClock
from tests.support.defaults import PUBLIC_REFRESH_TTL, REFRESH_TOKEN_TTL
from tests.support.identity_pages import (
    SCOPE,
    VERIFIER,
    assert_error_page,
    assert_oauth_error,
    authorize,
    bearer,
    code_of,
    post_form,
    redirected_error,
    sign_in,
    submit,
    to_page,
)
from tests.support.public_clients import public_exchange, public_token_request, register_public
from tests.support.token_flows import assert_invalid_client

AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt"]


@pytest.fixture
def spa(engine: Engine, org: Organization) -> Client:
    return register_public(engine, org)


@pytest.fixture
def public_node(settings: Settings, engine: Engine, catalog: Catalog, clock: MovableClock) -> Iterator[TestClient]:
    app = make_app(settings.with_changes(public_clients=True), catalog=catalog, clock=clock)
    with TestClient(app, follow_redirects=False) as http:
        yield http


def consented_code(http: TestClient, client: Client, **changes: str | None) -> str:
    """Sign in from a signed-out browser, allow on the consent page, and return the code."""
    consent = to_page(sign_in(http, to_page(authorize(http, client.id, **changes), "sign-in")), "consent")
    return code_of(submit(http, consent, {"decision": "allow"}))


def test_discovery_lists_none_only_where_public_clients_are_on(browser: TestClient, public_node: TestClient) -> None:
    default = browser.get("/.well-known/openid-configuration").json()
    assert default["token_endpoint_auth_methods_supported"] == AUTH_METHODS
    assert default["revocation_endpoint_auth_methods_supported"] == AUTH_METHODS
    opted_in = public_node.get("/.well-known/openid-configuration").json()
    assert opted_in["token_endpoint_auth_methods_supported"] == [*AUTH_METHODS, "none"]
    assert opted_in["revocation_endpoint_auth_methods_supported"] == [*AUTH_METHODS, "none"]
    assert opted_in["introspection_endpoint_auth_methods_supported"] == AUTH_METHODS  # never for a public client


def test_a_public_client_signs_in_with_pkce_and_its_client_id_alone(
    public_node: TestClient, spa: Client, user: User
) -> None:
    code = consented_code(public_node, spa, scope=SCOPE + " offline_access")
    answer = public_exchange(public_node, spa, code)
    assert answer.status_code == 200, answer.text
    tokens = answer.json()
    assert {"access_token", "id_token", "refresh_token"} <= set(tokens)
    assert public_node.get("/oauth2/userinfo", headers=bearer(tokens["access_token"])).json()["sub"] == user.id
    rotated = public_token_request(
        public_node, spa, [("grant_type", "refresh_token"), ("refresh_token", tokens["refresh_token"])]
    )
    assert rotated.status_code == 200 and rotated.json()["refresh_token"] != tokens["refresh_token"]
    reused = public_token_request(
        public_node, spa, [("grant_type", "refresh_token"), ("refresh_token", tokens["refresh_token"])]
    )
    assert_oauth_error(reused, 400, "invalid_grant")  # RFC 9700 §4.14.2: reuse revokes the family
    family = public_token_request(
        public_node, spa, [("grant_type", "refresh_token"), ("refresh_token", rotated.json()["refresh_token"])]
    )
    assert_oauth_error(family, 400, "invalid_grant")


def test_a_public_clients_refresh_tokens_live_the_public_lifetime(
    public_node: TestClient, spa: Client, user: User, engine: Engine, clock: MovableClock
) -> None:
    assert PUBLIC_REFRESH_TTL < REFRESH_TOKEN_TTL
    code = consented_code(public_node, spa, scope=SCOPE + " offline_access")
    refresh_token = public_exchange(public_node, spa, code).json()["refresh_token"]
    with engine.connect() as connection:
        row = connection.execute(sa.select(refresh_tokens.c.issued_at, refresh_tokens.c.expires_at)).one()
    assert (row.expires_at - row.issued_at).total_seconds() == PUBLIC_REFRESH_TTL
    clock.advance(PUBLIC_REFRESH_TTL + 1)
    late = public_token_request(public_node, spa, [("grant_type", "refresh_token"), ("refresh_token", refresh_token)])
    assert_oauth_error(late, 400, "invalid_grant")


def test_a_public_clients_request_without_pkce_is_refused_with_no_code(
    engine: Engine, org: Organization, public_node: TestClient
) -> None:
    # Even a row that says "optional" (written by hand: registration refuses it) does not exempt a public client.
    client = register_public(engine, org, name="Old SPA")
    with engine.begin() as connection:
        connection.execute(sa.text("UPDATE clients SET pkce_required = false WHERE id = :id"), {"id": client.id})
    refused = authorize(public_node, client.id, code_challenge=None, code_challenge_method=None)
    assert "PKCE" in redirected_error(refused, "invalid_request")["error_description"]


def test_a_node_without_public_clients_refuses_a_public_client_everywhere(
    browser: TestClient, spa: Client, user: User
) -> None:
    assert_error_page(authorize(browser, spa.id))
    token = public_token_request(browser, spa, [("grant_type", "authorization_code"), ("code", "c")])
    assert_invalid_client(token)
    revoked = post_form(browser, "/oauth2/revoke", [("token", "t"), ("client_id", spa.id)])
    assert_invalid_client(revoked)


def test_a_node_without_public_clients_serves_no_public_clients_token_or_sign_out(
    browser: TestClient, public_node: TestClient, spa: Client, user: User
) -> None:
    # The token was issued by a node with the setting; a node over the same database without it treats the
    # client as unknown: its token gets no claims and its client_id no sign-out.
    access_token = public_exchange(public_node, spa, consented_code(public_node, spa)).json()["access_token"]
    assert public_node.get("/oauth2/userinfo", headers=bearer(access_token)).status_code == 200
    refused = browser.get("/oauth2/userinfo", headers=bearer(access_token))
    assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["WWW-Authenticate"]
    assert_error_page(browser.get("/oauth2/end-session", params={"client_id": spa.id}))


def test_a_public_client_may_not_introspect_or_use_client_credentials(public_node: TestClient, spa: Client) -> None:
    introspected = post_form(public_node, "/oauth2/introspect", [("token", "t"), ("client_id", spa.id)])
    assert_invalid_client(introspected)
    credentials = public_token_request(public_node, spa, [("grant_type", "client_credentials")])
    assert_oauth_error(credentials, 400, "unauthorized_client")


def test_a_public_client_revokes_its_own_tokens_only(
    public_node: TestClient, spa: Client, engine: Engine, org: Organization, user: User
) -> None:
    sibling = register_public(engine, org, name="Sibling SPA")
    code = consented_code(public_node, sibling)
    sibling_token = public_exchange(public_node, sibling, code).json()["access_token"]
    answer = post_form(public_node, "/oauth2/revoke", [("token", sibling_token), ("client_id", spa.id)])
    assert answer.status_code == 200  # RFC 7009 §2.2: the same answer, and nothing revoked
    assert public_node.get("/oauth2/userinfo", headers=bearer(sibling_token)).status_code == 200
    own = post_form(public_node, "/oauth2/revoke", [("token", sibling_token), ("client_id", sibling.id)])
    assert own.status_code == 200
    assert public_node.get("/oauth2/userinfo", headers=bearer(sibling_token)).status_code == 401


def test_a_third_party_public_client_is_asked_for_consent_every_time(
    public_node: TestClient, spa: Client, user: User
) -> None:
    consented_code(public_node, spa)
    to_page(authorize(public_node, spa.id), "consent")  # a consent given before covers nothing
    redirected_error(authorize(public_node, spa.id, prompt="none"), "consent_required")


def test_a_first_party_public_client_skips_consent(
    public_node: TestClient, engine: Engine, org: Organization, user: User
) -> None:
    own = register_public(engine, org, name="Menus SPA", first_party=True)
    code = code_of(sign_in(public_node, to_page(authorize(public_node, own.id), "sign-in")))
    assert public_exchange(public_node, own, code).status_code == 200


def test_a_public_client_presenting_a_secret_is_invalid_client(public_node: TestClient, spa: Client) -> None:
    pairs = [("grant_type", "authorization_code"), ("code", "c"), ("code_verifier", VERIFIER)]
    answer = public_token_request(public_node, spa, [*pairs, ("client_secret", "cs_guess")])
    assert_invalid_client(answer)


def test_public_clients_setting_reads_on_off_true_false() -> None:
    assert Settings.from_env({}).public_clients is False
    assert Settings.from_env({"MENUS_PUBLIC_CLIENTS": "true"}).public_clients is True
    assert Settings.from_env({"MENUS_PUBLIC_CLIENTS": "on"}).public_clients is True
    assert Settings.from_env({"MENUS_PUBLIC_REFRESH_TTL": "3600"}).public_refresh_ttl == 3600
    with pytest.raises(ValueError, match="MENUS_PUBLIC_CLIENTS must be on or off"):
        Settings.from_env({"MENUS_PUBLIC_CLIENTS": "yes please"})
