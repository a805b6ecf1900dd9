"""The console's relying party checks the ID token it is given (OpenID Connect Core §3.1.3.7), against a
provider that answers what ours never would: a token signed with a key it does not publish, one whose signature
or audience is wrong, one issued to another party (``azp``), one without the organization or session. Each is
a ``SignInFailed`` with its reason (the page it gives is tested in tests/api/test_console_sign_in_callback.py)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from identity.common.issuer import Issuer
from service.console_api.relying_party import CLIENT_ID, ConsoleClient, PendingSignIn, SignInFailed

ISSUER = "http://127.0.0.1:8000"
PENDING = PendingSignIn("the-state", "the-nonce", "v" * 43)


def key_pair(kid: str) -> tuple[Any, dict[str, Any]]:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return private, {
        **RSAAlgorithm.to_jwk(private.public_key(), as_dict=True),
        "kid": kid,
        "use": "sig",
        "alg": "RS256",
    }


PUBLISHED, PUBLISHED_JWK = key_pair("published")
UNPUBLISHED, _ = key_pair("unpublished")


class TokenEndpoint:
    def __init__(self, id_token: str) -> None:
        self.id_token = id_token

    def exchange(self, pairs: Sequence[tuple[str, str]], authorization: str | None) -> dict[str, Any]:
        return {"id_token": self.id_token, "access_token": "at", "token_type": "Bearer"}


class AnsweringProvider:
    """The three things the relying party asks of the provider: its issuer, its token endpoint, its JWKS."""

    def __init__(self, id_token: str) -> None:
        self.issuer = Issuer(ISSUER)
        self.token_endpoint = TokenEndpoint(id_token)

    def jwks(self) -> dict[str, Any]:
        return {"keys": [PUBLISHED_JWK]}


def id_token(key: Any = PUBLISHED, kid: str = "published", **changes: Any) -> str:
    now = int(time.time())
    claims = {
        "iss": ISSUER,
        "sub": "usr_1",
        "aud": CLIENT_ID,
        "azp": CLIENT_ID,
        "iat": now,
        "exp": now + 300,
        "nonce": PENDING.nonce,
        "org_id": "org_1",
        "sid": "ses_1",
        **changes,
    }
    return jwt.encode({k: v for k, v in claims.items() if v is not None}, key, algorithm="RS256", headers={"kid": kid})


def finish(token: str, clock_skew: int = 0) -> Any:
    client = ConsoleClient(AnsweringProvider(token), ISSUER + "/console", "cs_secret", clock_skew=clock_skew)  # type: ignore[arg-type]
    return client.finish({"state": PENDING.state, "code": "a-code", "iss": ISSUER}, PENDING)


def test_a_well_formed_id_token_signs_in() -> None:
    """The refusals below are each of one claim or key: the token they change signs in."""
    signed_in = finish(id_token())
    assert (signed_in.user_id, signed_in.org_id, signed_in.session_id) == ("usr_1", "org_1", "ses_1")


UNVERIFIED = "The ID token could not be verified."
NO_ORG = "The ID token names no organization or session."

# Each case: the key that signs, the kid it names, the claims changed (None: left out), and the reason given. The
# tokens are made when the test runs (their iat and exp are then): a slow run never turns one case into another.
CASES = {
    "unknown-kid": (UNPUBLISHED, "unpublished", {}, "The ID token is signed with a key the provider does not publish."),
    "bad-signature": (UNPUBLISHED, "published", {}, UNVERIFIED),  # a published kid, another key's signature
    "audience": (PUBLISHED, "published", {"aud": "cli_other"}, UNVERIFIED),
    "issuer": (PUBLISHED, "published", {"iss": "https://elsewhere.example"}, UNVERIFIED),
    "expired": (PUBLISHED, "published", {"exp": -60}, UNVERIFIED),  # seconds from now, past the clock skew
    "no-nonce": (PUBLISHED, "published", {"nonce": None}, UNVERIFIED),  # the nonce is required
    "nonce": (PUBLISHED, "published", {"nonce": "another-nonce"}, "The ID token was issued for another sign-in."),
    "azp": (PUBLISHED, "published", {"azp": "cli_other"}, "The ID token was issued to another client."),
    "no-org": (PUBLISHED, "published", {"org_id": None}, NO_ORG),
    "no-sid": (PUBLISHED, "published", {"sid": None}, NO_ORG),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_an_id_token_the_console_cannot_trust_fails_the_sign_in(case: str) -> None:
    key, kid, changes, reason = CASES[case]
    if "exp" in changes:
        changes = {**changes, "exp": int(time.time()) + changes["exp"]}
    with pytest.raises(SignInFailed) as failed:
        finish(id_token(key, kid, **changes))
    assert str(failed.value) == reason  # the words the page shows


def test_an_id_token_expired_within_the_clock_skew_still_signs_in() -> None:
    """The console allows its clock skew (MENUS_CONSOLE_CLOCK_SKEW) on exp and iat, and no more."""
    token = id_token(exp=int(time.time()) - 30)
    assert finish(token, clock_skew=60).user_id == "usr_1"
    with pytest.raises(SignInFailed):
        finish(token, clock_skew=10)


def test_an_id_token_without_azp_signs_in() -> None:
    """OpenID Connect Core §2: ``azp`` is optional with a single audience; only another party's refuses."""
    assert finish(id_token(azp=None)).user_id == "usr_1"
