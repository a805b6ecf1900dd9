"""The token services as the provider wires them, for the unit tests that issue and verify tokens directly."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.engine import Engine

from identity.common.clock import SYSTEM_CLOCK, Clock
from identity.common.issuer import Issuer
from identity.keys.signing_keys import SigningKeys
from identity.tokens.access_tokens import AccessTokenStore
from identity.tokens.minting import TokenMinter
from identity.tokens.refresh_tokens import RefreshTokenStore
from identity.tokens.revoked_grants import Revoker
from identity.tokens.unit_of_work import TokenWork
from identity.tokens.verification import PublicKeys, TokenVerifier
from tests.support.defaults import TUNING

ISSUER = Issuer("http://127.0.0.1:8000")
ACCESS_TTL = timedelta(minutes=10)
REFRESH_TTL = timedelta(days=1)


@dataclass(frozen=True)
class TokenServices:
    minter: TokenMinter
    verifier: TokenVerifier
    revoker: Revoker
    refresh_tokens: RefreshTokenStore
    token_work: TokenWork


def token_services(engine: Engine, keys: SigningKeys, clock: Clock = SYSTEM_CLOCK) -> TokenServices:
    access_tokens = AccessTokenStore(engine, clock)
    refresh_tokens = RefreshTokenStore(engine, clock)
    public_keys = PublicKeys(keys, TUNING.published_keys_max_age, TUNING.published_keys_min_reload)
    verifier = TokenVerifier(ISSUER, public_keys, access_tokens, TUNING.verified_tokens, clock)
    return TokenServices(
        minter=TokenMinter(keys, public_keys, ISSUER, access_tokens, refresh_tokens, ACCESS_TTL, REFRESH_TTL, clock),
        verifier=verifier,
        revoker=Revoker(engine, clock),
        refresh_tokens=refresh_tokens,
        token_work=TokenWork(access_tokens, verifier.jti_of),
    )
