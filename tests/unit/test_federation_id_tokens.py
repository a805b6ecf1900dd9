"""What an organization's provider signs, checked without a sign-in around it (identity/federation/id_tokens.py):
the ID token's rules (OpenID Connect Core §3.1.3.7) and the logout token's (Back-Channel Logout 1.0 §2.6)."""

from __future__ import annotations

from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet, OctKey, RSAKey

from identity.federation.errors import UpstreamUnavailable
from identity.federation.id_tokens import LOGOUT_EVENT, MAX_TOKEN, UnknownKey, verify_id_token, verify_logout_token

ISSUER = "https://idp.corp.example"
CLIENT = "menus-at-corp"
NOW = 1_800_000_000
KEY = RSAKey.generate_key(2048, parameters={"kid": "k-1", "alg": "RS256"})
KEYS = KeySet([KEY])


def signed(claims: dict[str, Any], *, key: RSAKey = KEY, **header: Any) -> str:
    return jwt.encode({"alg": "RS256", "kid": key.kid, **header}, claims, key)


def id_token(**claims: Any) -> str:
    body = {"iss": ISSUER, "aud": CLIENT, "sub": "up-ana", "nonce": "n-1", "iat": NOW, "exp": NOW + 300, **claims}
    return signed({name: value for name, value in body.items() if value is not None})


def verified_id(token: str, nonce: str = "n-1", now: int = NOW) -> dict[str, Any]:
    return verify_id_token(
        token, KEYS, algorithms=["RS256"], issuer=ISSUER, client_id=CLIENT, nonce=nonce, access_token=None, now=now,
        leeway=30,
    )  # fmt: skip


def logout_token(*, header: dict[str, Any] | None = None, **claims: Any) -> str:
    body = {
        "iss": ISSUER, "aud": CLIENT, "iat": NOW, "exp": NOW + 120, "jti": "j-1", "sub": "up-ana",
        "events": {LOGOUT_EVENT: {}}, **claims,
    }  # fmt: skip
    return signed({name: value for name, value in body.items() if value is not None}, **(header or {}))


def verified_logout(token: str) -> dict[str, Any]:
    return verify_logout_token(token, KEYS, algorithms=["RS256"], issuer=ISSUER, client_id=CLIENT, now=NOW, leeway=30)


def refusal(call: Any) -> UpstreamUnavailable:
    with pytest.raises(UpstreamUnavailable) as raised:
        call()
    assert raised.value.status == 502
    return raised.value


def test_an_id_token_of_the_provider_for_this_client_and_nonce_gives_its_claims() -> None:
    assert verified_id(id_token())["sub"] == "up-ana"


@pytest.mark.parametrize(
    ("claims", "said"),
    [
        ({"iss": "https://other.example"}, "not issued for this sign-in"),
        ({"aud": "another-client"}, "not issued for this sign-in"),
        ({"nonce": "n-2"}, "not issued for this sign-in"),
        ({"sub": None}, "lacks a claim"),
        ({"nonce": None}, "lacks a claim"),
        ({"sub": "x" * 256}, "no valid subject"),
    ],
)
def test_an_id_token_for_another_issuer_client_or_nonce_or_without_a_subject_is_refused(
    claims: dict[str, Any], said: str
) -> None:
    assert said in refusal(lambda: verified_id(id_token(**claims))).description


def test_an_id_token_is_taken_up_to_the_leeway_past_its_expiry_and_not_after() -> None:
    assert verified_id(id_token(), now=NOW + 300 + 29)["sub"] == "up-ana"
    assert "expired" in refusal(lambda: verified_id(id_token(), now=NOW + 300 + 30)).description


def test_a_token_of_another_key_with_a_known_kid_does_not_verify_and_an_unknown_kid_asks_for_the_set_again() -> None:
    stranger = RSAKey.generate_key(2048, parameters={"kid": "k-1", "alg": "RS256"})
    forged = jwt.encode({"alg": "RS256", "kid": "k-1"}, {"iss": ISSUER, "aud": CLIENT}, stranger)
    assert "does not verify" in refusal(lambda: verified_id(forged)).description
    rotated = RSAKey.generate_key(2048, parameters={"kid": "k-2", "alg": "RS256"})
    with pytest.raises(UnknownKey):
        verified_id(jwt.encode({"alg": "RS256", "kid": "k-2"}, {"iss": ISSUER}, rotated))


def test_only_the_announced_algorithms_verify_never_an_hmac() -> None:
    secret = OctKey.import_key("a-shared-secret-of-32-bytes-long")
    hmac = jwt.encode({"alg": "HS256"}, {"iss": ISSUER, "aud": CLIENT, "sub": "s"}, secret)
    assert "does not verify" in refusal(lambda: verified_id(hmac)).description
    assert "does not verify" in refusal(lambda: verified_id("not.a.token")).description


def test_a_token_over_its_bound_is_refused_before_it_is_decoded() -> None:
    error = refusal(lambda: verified_id("a" * (MAX_TOKEN + 1)))
    assert "too long" in error.description
    assert "does not verify" in refusal(lambda: verified_id("a" * MAX_TOKEN)).description


def test_a_logout_token_of_the_provider_gives_its_claims() -> None:
    assert verified_logout(logout_token())["jti"] == "j-1"
    assert verified_logout(logout_token(sub=None, sid="s-1"))["sid"] == "s-1"
    assert verified_logout(logout_token(header={"typ": "JWT"}))["sub"] == "up-ana"


@pytest.mark.parametrize(
    ("token", "said"),
    [
        (lambda: logout_token(header={"typ": "at+jwt"}), "wrong type"),
        (lambda: logout_token(iss="https://other.example"), "does not verify"),
        (lambda: logout_token(aud="another-client"), "does not verify"),
        (lambda: logout_token(jti=None), "does not verify"),
        (lambda: logout_token(exp=NOW - 31), "does not verify"),
        (lambda: logout_token(events={"http://schemas.openid.net/event/other": {}}), "no logout event"),
        (lambda: logout_token(events={LOGOUT_EVENT: "yes"}), "no logout event"),
        (lambda: logout_token(nonce="n-1"), "must not carry a nonce"),
        (lambda: logout_token(sub=None), "neither a subject nor a session"),
    ],
)
def test_a_logout_token_of_another_type_audience_or_event_or_naming_nobody_is_refused(token: Any, said: str) -> None:
    assert said in refusal(lambda: verified_logout(token())).description
