"""CORS of the token, revocation and userinfo endpoints for the web origins public clients registered.

A registered origin's preflight is answered and its answers carry ``Access-Control-Allow-Origin``;
any other origin gets no CORS header, and its POST is refused before any code is spent. The pages,
the console and introspection never answer CORS.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from data.catalog import Catalog
from identity.accounts.organizations import Organization
from identity.accounts.users import User
from identity.clients.registry import Client, ClientStore
from service.settings import Settings
from tests.support.apps import make_app
from tests.support.clocks import MovableClock
from tests.support.defaults import DEFAULTS
from tests.support.identity_fixtures import CALLBACK
from tests.support.identity_pages import (
    ISSUER,
    SCOPE,
    VERIFIER,
    assert_oauth_error,
    authorize,
    bearer,
    code_of,
    post_form,
    sign_in,
    to_page,
)
from tests.support.public_clients import (
    SPA_ORIGIN,
    STRANGER_ORIGIN,
    exchange_text,
    public_exchange,
    public_token_request,
    register_public,
)

log = logging.getLogger(__name__)
CLIENT_PATHS = ["/oauth2/token", "/oauth2/revoke", "/oauth2/userinfo"]


def preflight_headers(origin: str, method: str = "POST") -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": "content-type",
    }


@pytest.fixture
def spa(engine: Engine, org: Organization) -> Client:
    return register_public(engine, org, first_party=True)  # no consent page: these tests are about CORS


@pytest.fixture
def node(settings: Settings, engine: Engine, catalog: Catalog, clock: MovableClock) -> Iterator[TestClient]:
    """Public clients on; MENUS_CORS_ORIGINS narrowed so that userinfo's answers show which origins it allows."""
    changed = settings.with_changes(public_clients=True, web_origins_max_age=0, cors_origins=("https://docs.example",))
    with TestClient(make_app(changed, catalog=catalog, clock=clock), follow_redirects=False) as http:
        yield http


@pytest.mark.parametrize("path", CLIENT_PATHS)
def test_a_registered_origins_preflight_is_answered_with_that_origin(node: TestClient, spa: Client, path: str) -> None:
    headers = preflight_headers(SPA_ORIGIN)
    answer = node.options(path, headers=headers)
    log.info("preflight exchange:\n%s", exchange_text("OPTIONS", path, headers, answer))
    assert answer.status_code == 204
    assert answer.headers["access-control-allow-origin"] == SPA_ORIGIN
    assert "POST" in answer.headers["access-control-allow-methods"]
    assert answer.headers["access-control-allow-headers"] == "content-type, authorization, dpop"
    assert answer.headers["access-control-max-age"] == str(DEFAULTS.cors_max_age)
    assert answer.headers["vary"] == "Origin"
    assert "access-control-allow-credentials" not in answer.headers


@pytest.mark.parametrize("path", CLIENT_PATHS)
def test_a_preflight_asking_for_the_dpop_header_is_answered(node: TestClient, spa: Client, path: str) -> None:
    """oidc-client-ts with ``dpop`` set sends a DPoP proof: its preflight asks for the header, which the provider
    allows and then ignores (RFC 9449 §5)."""
    headers = {**preflight_headers(SPA_ORIGIN), "Access-Control-Request-Headers": "content-type, dpop"}
    answer = node.options(path, headers=headers)
    assert answer.status_code == 204 and answer.headers["access-control-allow-origin"] == SPA_ORIGIN
    allowed = {name.strip() for name in answer.headers["access-control-allow-headers"].split(",")}
    assert {"content-type", "dpop"} <= allowed


def test_a_token_request_with_a_dpop_proof_gets_bearer_tokens(node: TestClient, spa: Client, user: User) -> None:
    """RFC 9449 §5: a server that does not do DPoP ignores the header and issues Bearer tokens, which userinfo
    takes as such."""
    code = code_of(sign_in(node, to_page(authorize(node, spa.id, scope=SCOPE + " offline_access"), "sign-in")))
    proof = "eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2In0.eyJodG0iOiJQT1NUIn0.c2ln"  # never looked at
    pairs = [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", CALLBACK)]
    pairs.append(("code_verifier", VERIFIER))
    answer = public_token_request(node, spa, pairs, SPA_ORIGIN, headers={"DPoP": proof})
    assert answer.status_code == 200, answer.text
    tokens = answer.json()
    assert tokens["token_type"] == "Bearer" and answer.headers["access-control-allow-origin"] == SPA_ORIGIN
    assert node.get("/oauth2/userinfo", headers=bearer(tokens["access_token"])).status_code == 200
    refreshed = public_token_request(
        node, spa, [("grant_type", "refresh_token"), ("refresh_token", tokens["refresh_token"])], SPA_ORIGIN,
        headers={"DPoP": proof},
    )  # fmt: skip
    assert refreshed.status_code == 200 and refreshed.json()["token_type"] == "Bearer"


@pytest.mark.parametrize("path", ["/oauth2/token", "/oauth2/revoke"])
def test_an_unregistered_origins_preflight_is_refused_without_cors_headers(
    node: TestClient, spa: Client, path: str
) -> None:
    answer = node.options(path, headers=preflight_headers(STRANGER_ORIGIN))
    assert_oauth_error(answer, 403, "access_denied")
    assert not any(name.startswith("access-control-") for name in answer.headers)
    assert answer.headers["vary"] == "Origin"


def test_an_options_that_is_no_preflight_lists_the_allowed_methods(node: TestClient) -> None:
    answer = node.options("/oauth2/token")
    assert answer.status_code == 204 and answer.headers["allow"] == "OPTIONS, POST"


def test_a_cross_origin_post_from_an_unregistered_origin_is_refused_before_the_code_is_spent(
    node: TestClient, spa: Client, user: User
) -> None:
    code = code_of(sign_in(node, to_page(authorize(node, spa.id), "sign-in")))
    refused = public_exchange(node, spa, code, origin=STRANGER_ORIGIN)
    log.info("refusal from an unregistered origin:\n%s\n\n%s", exchange_text(
        "POST", "/oauth2/token", {"Origin": STRANGER_ORIGIN}, refused), refused.text)  # fmt: skip
    assert_oauth_error(refused, 403, "access_denied")
    assert "access-control-allow-origin" not in refused.headers
    answer = public_exchange(node, spa, code, origin=SPA_ORIGIN)  # the code was not spent
    assert answer.status_code == 200, answer.text
    assert answer.headers["access-control-allow-origin"] == SPA_ORIGIN
    assert "Origin" in answer.headers["vary"]


def test_a_registered_origin_reads_token_errors_and_revokes(node: TestClient, spa: Client, user: User) -> None:
    wrong = public_token_request(node, spa, [("grant_type", "authorization_code"), ("code", "x")], SPA_ORIGIN)
    assert_oauth_error(wrong, 400, "invalid_request")
    assert wrong.headers["access-control-allow-origin"] == SPA_ORIGIN  # the page can read why
    code = code_of(sign_in(node, to_page(authorize(node, spa.id, scope=SCOPE + " offline_access"), "sign-in")))
    refresh_token = public_exchange(node, spa, code, origin=SPA_ORIGIN).json()["refresh_token"]
    headers = {"Origin": SPA_ORIGIN}
    revoked = post_form(node, "/oauth2/revoke", [("token", refresh_token), ("client_id", spa.id)], headers)
    assert revoked.status_code == 200 and revoked.headers["access-control-allow-origin"] == SPA_ORIGIN
    stranger = post_form(node, "/oauth2/revoke", [("token", refresh_token), ("client_id", spa.id)],
                         {"Origin": STRANGER_ORIGIN})  # fmt: skip
    assert_oauth_error(stranger, 403, "access_denied")


def test_the_issuers_own_pages_need_no_cors_and_are_not_refused(node: TestClient, spa: Client, user: User) -> None:
    code = code_of(sign_in(node, to_page(authorize(node, spa.id), "sign-in")))
    answer = public_exchange(node, spa, code, origin=ISSUER)
    assert answer.status_code == 200 and "access-control-allow-origin" not in answer.headers


def test_userinfo_answers_registered_origins_and_the_cors_setting_and_no_other(
    node: TestClient, spa: Client, user: User
) -> None:
    code = code_of(sign_in(node, to_page(authorize(node, spa.id), "sign-in")))
    token = public_exchange(node, spa, code).json()["access_token"]
    for origin in (SPA_ORIGIN, "https://docs.example"):
        answer = node.get("/oauth2/userinfo", headers={**bearer(token), "Origin": origin})
        assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == origin
    other = node.get("/oauth2/userinfo", headers={**bearer(token), "Origin": STRANGER_ORIGIN})
    assert other.status_code == 200 and "access-control-allow-origin" not in other.headers
    assert other.headers["vary"] == "Origin"


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/oauth2/introspect"), ("GET", "/oauth2/authorize"), ("GET", "/sign-in"), ("GET", "/console/")],
)
def test_introspection_pages_and_console_never_answer_cors_even_to_a_registered_origin(
    node: TestClient, spa: Client, method: str, path: str
) -> None:
    preflight = node.options(path, headers=preflight_headers(SPA_ORIGIN, method))
    assert not any(name.startswith("access-control-") for name in preflight.headers)
    answer = node.request(method, path, headers={"Origin": SPA_ORIGIN})
    assert not any(name.startswith("access-control-") for name in answer.headers)


def test_introspection_from_a_page_of_another_origin_is_refused(
    node: TestClient, engine: Engine, org: Organization
) -> None:
    client, secret = ClientStore(engine).create(
        name="Backend", org_id=org.id, auth_method="client_secret_post", grants=["client_credentials"],
        scopes=["members:read"],
    )  # fmt: skip
    assert secret is not None
    pairs = [("token", "t"), ("client_id", client.id), ("client_secret", secret)]
    assert post_form(node, "/oauth2/introspect", pairs).status_code == 200
    assert_oauth_error(post_form(node, "/oauth2/introspect", pairs, {"Origin": SPA_ORIGIN}), 403, "access_denied")


def test_an_origin_added_with_update_answers_cors_and_a_removed_one_stops(
    node: TestClient, spa: Client, engine: Engine
) -> None:
    added = "http://127.0.0.1:5173"
    assert node.options("/oauth2/token", headers=preflight_headers(added)).status_code == 403
    ClientStore(engine).update(spa.id, web_origins=[SPA_ORIGIN, added])
    assert (
        node.options("/oauth2/token", headers=preflight_headers(added)).headers["access-control-allow-origin"] == added
    )
    ClientStore(engine).update(spa.id, web_origins=[])
    assert node.options("/oauth2/token", headers=preflight_headers(SPA_ORIGIN)).status_code == 403


def test_a_node_without_public_clients_answers_no_registered_origin(
    settings: Settings, engine: Engine, catalog: Catalog, spa: Client
) -> None:
    with TestClient(make_app(settings, catalog=catalog)) as http:
        answer = http.options("/oauth2/token", headers=preflight_headers(SPA_ORIGIN))
    assert_oauth_error(answer, 403, "access_denied")


def test_a_preflight_header_past_the_contracts_bound_is_invalid_request(node: TestClient, spa: Client) -> None:
    too_long = node.options(
        "/oauth2/userinfo", headers={"Origin": SPA_ORIGIN, "Access-Control-Request-Method": "P" * 65}
    )
    assert_oauth_error(too_long, 400, "invalid_request")  # the contract's answer, not a preflight's
    assert "access-control-allow-methods" not in too_long.headers


MARKED_ORIGIN = "https://zq9marked.example/<img src=x onerror=zq9()>"


@pytest.mark.parametrize(
    ("method", "path"), [("OPTIONS", p) for p in CLIENT_PATHS[:2]] + [("POST", p) for p in CLIENT_PATHS[:2]]
)
def test_a_refused_origin_is_never_repeated_in_the_answer(
    node: TestClient, spa: Client, method: str, path: str
) -> None:
    """docs/security.md: no error repeats what the client sent, the Origin of a refused page included (its preflight's
    answer, and the token and revocation endpoints' 403)."""
    if method == "OPTIONS":
        answer = node.options(path, headers=preflight_headers(MARKED_ORIGIN))
    else:
        form = [("grant_type", "refresh_token"), ("refresh_token", "rt_x"), ("token", "t"), ("client_id", spa.id)]
        answer = post_form(node, path, form, {"Origin": MARKED_ORIGIN})
    assert_oauth_error(answer, 403, "access_denied")
    assert "zq9" not in answer.text and "onerror" not in answer.text, answer.text
    assert answer.json()["error_description"].startswith("Pages of this request's origin may not call this endpoint")
