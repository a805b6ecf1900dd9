"""private_key_jwt client authentication (RFC 7523 §3, OpenID Connect Core §9): the algorithms and audiences
accepted, single-use assertions, and every broken rule answered invalid_client alike.

How every test here runs (the app in process, both databases): ``tests/support/token_flows.py``.
"""

from __future__ import annotations

import time

import pytest
from starlette.testclient import TestClient

from tests.support import token_flows as flows

ON_BOTH_ENGINES = True  # every test here that uses the state database runs on SQLite and on PostgreSQL


@pytest.mark.parametrize("algorithm", ["RS256", "PS256", "ES256"])
def test_private_key_jwt_accepts_rs256_ps256_and_es256(
    http: TestClient, signer: flows.Registered, rsa_key: flows.KeyPair, ec_key: flows.KeyPair, algorithm: str
) -> None:
    key = ec_key if algorithm == "ES256" else rsa_key

    response = flows.assertion_token_request(http, flows.client_assertion(signer.id, key, algorithm))

    assert response.status_code == 200, response.text
    assert flows.verified(http, response.json()["access_token"], flows.ISSUER)["client_id"] == signer.id


def test_private_key_jwt_accepts_the_token_endpoint_as_audience(
    http: TestClient, signer: flows.Registered, rsa_key: flows.KeyPair
) -> None:
    response = flows.assertion_token_request(http, flows.client_assertion(signer.id, rsa_key, aud=flows.TOKEN_URL))

    assert response.status_code == 200, response.text


def test_private_key_jwt_accepts_client_id_alongside_the_assertion(
    http: TestClient, signer: flows.Registered, rsa_key: flows.KeyPair
) -> None:
    response = flows.assertion_token_request(http, flows.client_assertion(signer.id, rsa_key), client_id=signer.id)

    assert response.status_code == 200, response.text


def test_replayed_client_assertion_is_invalid_client(
    http: TestClient, signer: flows.Registered, rsa_key: flows.KeyPair
) -> None:
    token = flows.client_assertion(signer.id, rsa_key)
    assert flows.assertion_token_request(http, token).status_code == 200

    flows.assert_invalid_client(flows.assertion_token_request(http, token))


def test_client_assertion_jti_is_single_use_even_in_a_new_assertion(
    http: TestClient, signer: flows.Registered, rsa_key: flows.KeyPair
) -> None:
    assert (
        flows.assertion_token_request(http, flows.client_assertion(signer.id, rsa_key, jti="once")).status_code == 200
    )

    again = flows.assertion_token_request(http, flows.client_assertion(signer.id, rsa_key, "PS256", jti="once"))

    flows.assert_invalid_client(again)


def bad_assertions(client_id: str, rsa_key: flows.KeyPair, stranger_key: flows.KeyPair) -> dict[str, str]:
    """One assertion per rule of RFC 7523 §3 it breaks."""
    hmac_key = flows.KeyPair(b"a shared secret of at least 32 bytes!!", {"kid": "rsa-1"})
    return {
        "expired": flows.client_assertion(client_id, rsa_key, expires_in=-60),
        "expiring_in_two_hours": flows.client_assertion(client_id, rsa_key, expires_in=7200),
        "wrong_audience": flows.client_assertion(client_id, rsa_key, aud="https://elsewhere.example.com"),
        "iss_not_sub": flows.client_assertion(client_id, rsa_key, sub="cli_someoneelse0000"),
        "unregistered_key": flows.client_assertion(client_id, stranger_key),
        "hs256": flows.client_assertion(client_id, hmac_key, "HS256"),
        "two_audiences": flows.client_assertion(client_id, rsa_key, aud=[flows.ISSUER, flows.TOKEN_URL]),
        "audience_list": flows.client_assertion(client_id, rsa_key, aud=[flows.ISSUER]),
        "without_jti": flows.client_assertion(client_id, rsa_key, omit=("jti",)),
        "without_exp": flows.client_assertion(client_id, rsa_key, omit=("exp",)),
        "unknown_client": flows.client_assertion("cli_0000000000000000", rsa_key),
        "exp_as_text": flows.client_assertion(client_id, rsa_key, replace={"exp": str(int(time.time()) + 300)}),
    }


BAD_ASSERTIONS = [
    "expired",
    "expiring_in_two_hours",
    "wrong_audience",
    "iss_not_sub",
    "unregistered_key",
    "hs256",
    "two_audiences",
    "audience_list",
    "without_jti",
    "without_exp",
    "unknown_client",
    "exp_as_text",  # RFC 7519 §4.1.4: a NumericDate is a JSON number
]


@pytest.mark.parametrize("case", BAD_ASSERTIONS)
def test_client_assertion_breaking_a_rule_is_invalid_client(
    http: TestClient, signer: flows.Registered, rsa_key: flows.KeyPair, stranger_key: flows.KeyPair, case: str
) -> None:
    token = bad_assertions(signer.id, rsa_key, stranger_key)[case]

    response = flows.assertion_token_request(http, token)

    flows.assert_invalid_client(response)
    assert "access_token" not in response.json()


def test_client_assertion_failures_all_say_the_same_thing(
    http: TestClient, signer: flows.Registered, rsa_key: flows.KeyPair, stranger_key: flows.KeyPair
) -> None:
    replayed = flows.client_assertion(signer.id, rsa_key)
    assert flows.assertion_token_request(http, replayed).status_code == 200
    tokens = [*bad_assertions(signer.id, rsa_key, stranger_key).values(), replayed]

    answers = [flows.assertion_token_request(http, token) for token in tokens]

    assert {response.status_code for response in answers} == {400}  # no Authorization header: 400 (RFC 6749 §5.2)
    assert len({response.content for response in answers}) == 1


def test_client_assertion_from_a_client_secret_client_is_invalid_client(
    http: TestClient, world: flows.World, rsa_key: flows.KeyPair
) -> None:
    response = flows.assertion_token_request(http, flows.client_assertion(world.reporter.id, rsa_key))

    flows.assert_invalid_client(response)


def test_private_key_jwt_client_sending_a_secret_is_invalid_client(http: TestClient, signer: flows.Registered) -> None:
    guessed = flows.Registered(signer.client, "cs_guessed")

    response = flows.application_token(http, guessed, scope="members:read")

    flows.assert_invalid_client(response)


def test_client_assertion_with_another_client_id_parameter_is_invalid_client(
    http: TestClient, world: flows.World, signer: flows.Registered, rsa_key: flows.KeyPair
) -> None:
    response = flows.assertion_token_request(
        http, flows.client_assertion(signer.id, rsa_key), client_id=world.reporter.id
    )

    flows.assert_invalid_client(response)


def test_client_assertion_with_an_absurd_expiry_is_invalid_client(
    http: TestClient, signer: flows.Registered, rsa_key: flows.KeyPair
) -> None:
    response = flows.assertion_token_request(http, flows.client_assertion(signer.id, rsa_key, expires_in=10**20))

    flows.assert_invalid_client(response)


def test_client_assertion_may_live_up_to_an_hour(
    http: TestClient, signer: flows.Registered, rsa_key: flows.KeyPair
) -> None:
    response = flows.assertion_token_request(http, flows.client_assertion(signer.id, rsa_key, expires_in=3600))

    assert response.status_code == 200, response.text


def test_private_key_jwt_authenticates_at_introspection_and_revocation(
    http: TestClient, signer: flows.Registered, rsa_key: flows.KeyPair, ec_key: flows.KeyPair
) -> None:
    access_token = flows.assertion_token_request(http, flows.client_assertion(signer.id, rsa_key)).json()[
        "access_token"
    ]

    def form(**fields: str) -> dict[str, str]:
        return {
            "token": access_token,
            **flows.assertion_form(flows.client_assertion(signer.id, ec_key, "ES256")),
            **fields,
        }

    active = http.post("/oauth2/introspect", data=form())
    assert active.status_code == 200, active.text
    assert active.json()["active"] is True
    assert active.json()["client_id"] == signer.id

    revoked = http.post("/oauth2/revoke", data=form())
    assert revoked.status_code == 200, revoked.text

    after = http.post("/oauth2/introspect", data=form())
    assert after.json() == {"active": False}


def test_private_key_jwt_failures_at_introspection_and_revocation_are_invalid_client(
    http: TestClient, signer: flows.Registered, rsa_key: flows.KeyPair, stranger_key: flows.KeyPair
) -> None:
    access_token = flows.assertion_token_request(http, flows.client_assertion(signer.id, rsa_key)).json()[
        "access_token"
    ]
    for path in ("/oauth2/introspect", "/oauth2/revoke"):
        forged = flows.assertion_form(flows.client_assertion(signer.id, stranger_key))
        flows.assert_invalid_client(http.post(path, data={"token": access_token, **forged}))
    check = flows.assertion_form(flows.client_assertion(signer.id, rsa_key))
    assert http.post("/oauth2/introspect", data={"token": access_token, **check}).json()["active"] is True
