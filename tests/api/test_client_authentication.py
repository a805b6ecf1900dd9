"""Client authentication with HTTP Basic at the token, introspection and revocation endpoints (RFC 6749 §2.3.1).

RFC 6749 §5.2: credentials that cannot be read are ``invalid_client``, 401, and since the client used the
``Authorization`` header, the answer carries a ``WWW-Authenticate: Basic`` challenge. A header that is not
base64, or whose base64 is not UTF-8, is such a failure, never a 500.
"""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from tests.support.token_flows import assert_invalid_client

ENDPOINTS = {
    "/oauth2/token": {"grant_type": "client_credentials"},
    "/oauth2/introspect": {"token": "at_unknown"},
    "/oauth2/revoke": {"token": "at_unknown"},
}


ON_BOTH_ENGINES = True  # every test here that uses the state database runs on SQLite and on PostgreSQL


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize(
    "credentials",
    [b"Basic \xc3\xa9", b"Basic \xe9", b"Basic \xff\xfe", b"Basic //79", b"Basic bm90IGJhc2U2NA", b"Basic YQ==="],
    ids=["utf8-e-acute", "latin1-e-acute", "raw-bytes", "base64-of-non-utf8", "unpadded", "overpadded"],
)
def test_basic_credentials_that_cannot_be_read_are_invalid_client_with_a_basic_challenge(
    http: TestClient, path: str, credentials: bytes
) -> None:
    response = http.post(path, data=ENDPOINTS[path], headers={"Authorization": credentials})  # type: ignore[dict-item]
    assert_invalid_client(response)
    assert response.headers["www-authenticate"].startswith("Basic realm=")
