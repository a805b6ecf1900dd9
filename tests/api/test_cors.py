"""CORS: the menus API, discovery, JWKS, userinfo and the documents answer other origins; nothing else does."""

from __future__ import annotations

import logging

import pytest
from starlette.testclient import TestClient

from service.settings import Settings
from tests.support.apps import make_app

log = logging.getLogger(__name__)
ORIGIN = "https://app.example"
EXPOSED = {"etag", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset", "retry-after", "x-request-id"}
PREFLIGHT = {"Origin": ORIGIN, "Access-Control-Request-Method": "GET",
             "Access-Control-Request-Headers": "authorization, if-none-match"}  # fmt: skip


def exchange(method: str, path: str, headers: dict[str, str], response: object) -> str:
    """A request and its answer's headers, as they would be read in a log."""
    lines = [f"{method} {path} HTTP/1.1", *(f"{k}: {v}" for k, v in headers.items()), ""]
    lines += [f"HTTP/1.1 {response.status_code}", *(f"{k}: {v}" for k, v in response.headers.items())]  # type: ignore[attr-defined]
    return "\n".join(lines)


def test_a_preflight_to_the_menus_api_needs_no_key_and_allows_authorization(anonymous: TestClient) -> None:
    response = anonymous.options("/v1/menus/dishes", headers=PREFLIGHT)
    log.info("preflight exchange:\n%s", exchange("OPTIONS", "/v1/menus/dishes", PREFLIGHT, response))
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "*"
    allowed = {h.strip().lower() for h in response.headers["access-control-allow-headers"].split(",")}
    assert {"authorization", "if-none-match"} <= allowed
    assert {"GET", "HEAD"} <= {m.strip() for m in response.headers["access-control-allow-methods"].split(",")}
    assert "access-control-allow-credentials" not in response.headers
    assert "www-authenticate" not in response.headers


def test_a_cross_origin_read_exposes_etag_rate_limit_and_request_id(client: TestClient) -> None:
    response = client.get("/v1/menus/regions", headers={"Origin": ORIGIN})
    assert response.status_code == 200 and response.headers["access-control-allow-origin"] == "*"
    exposed = {h.strip().lower() for h in response.headers["access-control-expose-headers"].split(",")}
    assert EXPOSED <= exposed
    refused = client.get("/v1/menus/regions", headers={"Origin": ORIGIN, "Authorization": "Bearer rmk_nope"})
    assert refused.status_code == 401 and refused.headers["access-control-allow-origin"] == "*"


@pytest.mark.parametrize(
    "path", ["/.well-known/openid-configuration", "/jwks", "/oauth2/userinfo", "/openapi.json", "/v1/openapi.json"]
)
def test_discovery_jwks_userinfo_and_documents_answer_other_origins(anonymous: TestClient, path: str) -> None:
    response = anonymous.options(path, headers=PREFLIGHT)
    assert response.is_success and response.headers["access-control-allow-origin"] == "*"  # Fetch: an ok status
    assert anonymous.get(path, headers={"Origin": ORIGIN}).headers["access-control-allow-origin"] == "*"


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/oauth2/token"), ("POST", "/oauth2/introspect"), ("POST", "/oauth2/revoke"),
     ("GET", "/directory/members"), ("GET", "/oauth2/authorize"), ("GET", "/sign-in"), ("GET", "/healthz")],
)  # fmt: skip
def test_token_introspection_revocation_directory_and_pages_never_answer_cors(
    anonymous: TestClient, method: str, path: str
) -> None:
    preflight = anonymous.options(path, headers={**PREFLIGHT, "Access-Control-Request-Method": method})
    assert not any(name.startswith("access-control-") for name in preflight.headers)
    answer = anonymous.request(method, path, headers={"Origin": ORIGIN})
    assert not any(name.startswith("access-control-") for name in answer.headers)


def test_allowed_origins_are_a_setting(settings: Settings, engine: object) -> None:
    only = settings.with_changes(cors_origins=(ORIGIN,))
    with TestClient(make_app(only)) as web:
        allowed = web.options("/v1/menus/regions", headers=PREFLIGHT)
        assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == ORIGIN
        other = web.get("/jwks", headers={"Origin": "https://evil.example"})
        assert other.status_code == 200 and "access-control-allow-origin" not in other.headers
        assert "origin" in other.headers["vary"].lower()


def test_cors_origins_setting_reads_origins_and_refuses_anything_else() -> None:
    assert Settings.from_env({}).cors_origins == ("*",)
    both = Settings.from_env({"MENUS_CORS_ORIGINS": "https://a.example, http://127.0.0.1:5173/"})
    assert both.cors_origins == ("https://a.example", "http://127.0.0.1:5173")
    assert Settings.from_env({"MENUS_CORS_ORIGINS": ""}).cors_origins == ()
    with pytest.raises(ValueError, match="is not an origin"):
        Settings.from_env({"MENUS_CORS_ORIGINS": "https://a.example/path"})
