"""Verifying the JWTs this provider signed: access tokens (RFC 9068 §4) and ID tokens used as hints.

Signatures are checked against the published keys (``PublicKeys``, re-read now and then); what a live
access token's bytes prove is remembered, and its expiry and revocation are checked at every use.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache
from time import monotonic
from typing import TYPE_CHECKING, Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from identity.common.clock import SYSTEM_CLOCK, Clock, epoch
from identity.common.errors import InvalidToken
from identity.common.issuer import Issuer
from identity.keys.signing_keys import ALGORITHM, SigningKeys
from identity.tokens.store_protocols import AccessTokens

if TYPE_CHECKING:
    from identity.tokens.unit_of_work import UnitOfWork

ACCESS_TOKEN_TYPE = "at+jwt"  # RFC 9068 §2.1


@dataclass(frozen=True, slots=True)
class AccessToken:
    """A verified, live access token."""

    jti: str
    client_id: str
    sub: str
    user_id: str | None  # None for application tokens (client_credentials)
    org_id: str
    session_id: str | None
    scope: tuple[str, ...]
    claims: dict[str, Any]
    credential_version: int = 0  # the user's credential version it was issued under (0 for application tokens)


class PublicKeys:
    """The published verification keys (the JWKS), as this node last read them."""

    def __init__(self, keys: SigningKeys, max_age: timedelta, min_reload: timedelta) -> None:
        self._keys = keys
        self._max_age = max_age.total_seconds()  # the set is used this long before it is read again
        self._min_reload = min_reload.total_seconds()  # at most one reload this often for an unknown kid
        self._public: dict[str, jwt.PyJWK] = {}
        self._loaded = -self._max_age  # monotonic time of the last load; never loaded yet

    def get(self, kid: str) -> jwt.PyJWK:
        """The published key ``kid``. The set is reloaded when it is older than its maximum age, or on an
        unknown kid at most once per its minimum reload interval (a made-up kid must not cost a query each time).
        A rotated-in key is published long before it signs, so a reload always finds it in time."""
        age = monotonic() - self._loaded
        if age > self._max_age or (kid not in self._public and age > self._min_reload):
            self._public = {jwk["kid"]: jwt.PyJWK(jwk) for jwk in self._keys.jwks()["keys"]}
            self._loaded = monotonic()
        key = self._public.get(kid)
        if key is None:
            raise LookupError(kid)
        return key

    def signing_with(self, kid: str, private: rsa.RSAPrivateKey) -> None:
        """This node verifies what it signs, whenever it last read the keys."""
        if kid not in self._public:
            self._public[kid] = jwt.PyJWK.from_dict(
                {**RSAAlgorithm.to_jwk(private.public_key(), as_dict=True), "kid": kid, "alg": ALGORITHM}
            )


class TokenVerifier:
    def __init__(
        self,
        issuer: Issuer,
        public_keys: PublicKeys,
        access_tokens: AccessTokens,
        verified_tokens: int,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._issuer = issuer
        self._public_keys = public_keys
        self._access_tokens = access_tokens
        self._clock = clock
        # A live access token is presented again and again (each call of its client's, each introspection).
        # What its bytes prove is memoised: signature and claims, checked once. Expiry (against the clock)
        # and revocation (in the database) are checked at every use; a token that fails is never memoised.
        self._verified_access_claims = lru_cache(maxsize=verified_tokens)(self._check_access_claims)

    def jti_of(self, token: str) -> str | None:
        """The ``jti`` an access token of ours proves (its signature and claims checked), or None: what the units
        of work of introspections read together (``identity.tokens.unit_of_work.TokenWork.open``)."""
        try:
            return str(self._verified_access_claims(token)["jti"])
        except InvalidToken:
            return None

    def verify_access_token(self, token: str, work: UnitOfWork | None = None) -> AccessToken:
        """The live access token ``token`` is, or ``InvalidToken`` (bad signature, expired, revoked, not ours);
        its record from ``work``'s records read together, when it is among them."""
        claims = self._verified_access_claims(token)
        at = self._clock.now()
        if claims["exp"] <= epoch(at):  # checked at every use: the memo outlives no token
            raise InvalidToken("The access token has expired.")
        record = self._access_tokens.get(claims["jti"], None if work is None else work.read)
        if record is None or record.revoked:
            raise InvalidToken("The access token was revoked.")
        if record.expires_at <= at:
            raise InvalidToken("The access token has expired.")
        return AccessToken(
            jti=record.jti,
            client_id=record.client_id,
            sub=claims["sub"],
            user_id=record.user_id,
            org_id=record.org_id,
            session_id=record.session_id,
            scope=record.scope,
            claims=claims,
            credential_version=record.credential_version,
        )

    def _check_access_claims(self, token: str) -> dict[str, Any]:
        """Signature, issuer, audience, type and claims of an access token: what cannot change while it lives."""
        claims = self.decode(token, audience=self._issuer.url, typ=ACCESS_TOKEN_TYPE)
        for name in ("jti", "client_id", "sub", "org_id", "scope"):
            if not isinstance(claims.get(name), str):
                raise InvalidToken("The access token is malformed.")
        if not isinstance(claims["exp"], int | float):
            raise InvalidToken("The access token is malformed.")
        return claims

    def decode(
        self, token: str, *, audience: str | None, typ: str | None = None, verify_exp: bool = True
    ) -> dict[str, Any]:
        """Check a JWT of ours: RS256, a known key, our issuer, ``audience``, issued and unexpired by the clock
        (expiry unless told not to). PyJWT reads the system's time, so the clock's is checked here instead."""
        try:
            header = jwt.get_unverified_header(token)
            if header.get("alg") != ALGORITHM:
                raise InvalidToken("The token is not signed with RS256.")
            if typ is not None and str(header.get("typ", "")).lower() != typ:
                raise InvalidToken("The token is not of the expected type.")
            key = self._public_keys.get(str(header.get("kid", "")))
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key,
                algorithms=[ALGORITHM],
                issuer=self._issuer.url,
                audience=audience,
                options={
                    "require": ["iss", "sub", "exp", "iat"],
                    "verify_aud": audience is not None,
                    "verify_exp": False,  # against the clock, below
                    "verify_iat": False,
                },
            )
            now = self._clock.now().timestamp()
            if _numeric(claims, "iat") > now + ISSUED_AT_LEEWAY:
                raise jwt.ImmatureSignatureError("The token is not yet valid (iat)")
            if verify_exp and _numeric(claims, "exp") <= now:
                raise jwt.ExpiredSignatureError("Signature has expired")
        except jwt.ExpiredSignatureError:
            raise InvalidToken("The access token has expired.") from None
        except (jwt.InvalidTokenError, LookupError):
            raise InvalidToken("The token is invalid.") from None
        return claims


# Seconds a token's ``iat`` may lie in this node's future: another node whose clock runs ahead (NTP keeps nodes
# within milliseconds; a VM resumed from a pause may not be) signed it. Without it, that node's tokens are refused
# everywhere else until the clocks agree. Expiry gets none: a token never lives longer than its lifetime here.
ISSUED_AT_LEEWAY = 60


def _numeric(claims: dict[str, Any], name: str) -> int:
    """RFC 7519 §2 NumericDate claim ``name``, as PyJWT reads it when it checks the time itself."""
    try:
        return int(claims[name])
    except (ValueError, TypeError, OverflowError):
        raise jwt.DecodeError(f"The claim {name} must be an integer.") from None
