"""Discovery (OpenID Connect Discovery 1.0 §3, RFC 8414): the client authentication methods, algorithms,
endpoints, scopes and claims advertised.

How every test here runs (the app in process, both databases): ``tests/support/token_flows.py``.
"""

from __future__ import annotations

from starlette.testclient import TestClient

from tests.support import token_flows as flows

ON_BOTH_ENGINES = True  # every test here that uses the state database runs on SQLite and on PostgreSQL


def test_discovery_advertises_client_authentication_methods_and_algorithms(http: TestClient) -> None:
    metadata = http.get("/.well-known/openid-configuration").json()

    for endpoint in ("token", "introspection", "revocation"):
        methods = metadata[f"{endpoint}_endpoint_auth_methods_supported"]
        assert set(methods) == {"client_secret_basic", "client_secret_post", "private_key_jwt"}
        algorithms = metadata[f"{endpoint}_endpoint_auth_signing_alg_values_supported"]
        assert set(algorithms) == {"RS256", "PS256", "ES256"}


def test_discovery_advertises_endpoints_scopes_and_claims(http: TestClient) -> None:
    metadata = http.get("/.well-known/openid-configuration").json()

    assert metadata["issuer"] == flows.ISSUER
    assert metadata["token_endpoint"] == flows.TOKEN_URL
    assert metadata["introspection_endpoint"] == flows.ISSUER + "/oauth2/introspect"
    assert metadata["revocation_endpoint"] == flows.ISSUER + "/oauth2/revoke"
    assert metadata["end_session_endpoint"] == flows.ISSUER + "/oauth2/end-session"
    assert {"openid", "profile", "email", "offline_access", "members:read"} <= set(metadata["scopes_supported"])
    assert {"sub", "name", "email", "email_verified", "org_id", "org_name", "sid", "auth_time"} <= set(
        metadata["claims_supported"]
    )
    assert {"authorization_code", "refresh_token", "client_credentials"} <= set(metadata["grant_types_supported"])
