"""private_key_jwt (RFC 7523 §3) against a JWKS of an RSA and an EC key: an assertion without a ``kid`` is
verified with the key of its algorithm's type, and one signed by an unknown key is invalid_client."""

from __future__ import annotations

import time
from typing import Any

import jwt
import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.organizations import Organization
from tests.support import token_flows
from tests.support.token_flows import Registered, assert_invalid_client

# private_key_jwt with a JWKS holding an RSA and an EC key (rsa_key, ec_key: tests/api/conftest.py), assertions
# without kid


@pytest.fixture
def signer(engine: Engine, acme: Organization, rsa_key: token_flows.KeyPair, ec_key: token_flows.KeyPair) -> Registered:
    return token_flows.register(
        engine,
        acme,
        "Key Holder",
        auth_method="private_key_jwt",
        grants=["client_credentials"],
        scopes=["members:read"],
        jwks={"keys": [rsa_key.public_jwk, ec_key.public_jwk]},
    )


def assertion_without_kid(client_id: str, key: Any, algorithm: str) -> str:
    at = int(time.time())
    claims = {"iss": client_id, "sub": client_id, "aud": token_flows.ISSUER, "iat": at, "exp": at + 300, "jti": str(at)}
    claims["jti"] += algorithm + str(id(key))
    return jwt.encode(claims, key, algorithm=algorithm)


@pytest.mark.parametrize("algorithm", ["RS256", "PS256", "ES256"])
def test_assertion_without_kid_is_verified_with_the_key_of_its_algorithms_type(
    http: TestClient, signer: Registered, rsa_key: token_flows.KeyPair, ec_key: token_flows.KeyPair, algorithm: str
) -> None:
    key = ec_key.private if algorithm == "ES256" else rsa_key.private
    response = token_flows.assertion_token_request(http, assertion_without_kid(signer.id, key, algorithm))
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("algorithm", ["RS256", "ES256"])
def test_assertion_without_kid_signed_by_an_unknown_key_is_invalid_client_not_a_500(
    http: TestClient, signer: Registered, algorithm: str
) -> None:
    stranger = token_flows.ec_pair("x") if algorithm == "ES256" else token_flows.rsa_pair("x")
    response = token_flows.assertion_token_request(http, assertion_without_kid(signer.id, stranger.private, algorithm))
    assert_invalid_client(response)
