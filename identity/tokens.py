"""Access tokens (RFC 9068 JWTs), ID tokens (OpenID Connect Core §2) and refresh tokens.

Access and ID tokens are RS256 JWTs signed with the current signing key. Every
access token is also recorded by its ``jti`` so that revocation takes effect at
once; refresh tokens are opaque 256-bit values stored only as SHA-256 hashes,
grouped in families (one per authorization) that share an expiry.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from time import monotonic
from typing import Any

import jwt
import sqlalchemy as sa
from jwt.algorithms import RSAAlgorithm
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from identity.clock import new_id, now, utc
from identity.errors import InvalidToken
from identity.issuer import Issuer
from identity.keys import ALGORITHM, SigningKeys
from identity.organizations import Organization
from identity.storage import commit_without_waiting
from identity.tables import access_tokens, refresh_tokens, revoked_grants
from identity.users import User

ACCESS_TOKEN_TYPE = "at+jwt"  # RFC 9068 §2.1
KEYS_MAX_AGE = 300.0  # seconds the verification keys are used before they are read again
KEYS_MIN_RELOAD = 1.0  # seconds between reloads caused by an unknown kid
VERIFIED_TOKENS = 4096  # access tokens whose verified claims are remembered (about 2 KiB each)

# The statements of every token issued and verified, built once (building one costs more than running it).
_RECORD_ACCESS_TOKEN = access_tokens.insert()
_ACCESS_TOKEN_BY_JTI = sa.select(access_tokens).where(access_tokens.c.jti == sa.bindparam("jti"))


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


@dataclass(frozen=True, slots=True)
class Issued:
    token: str
    expires_in: int


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def left_half_hash(value: str) -> str:
    """OpenID Connect Core §3.1.3.6 ``at_hash``: base64url of the left half of SHA-256."""
    digest = hashlib.sha256(value.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode("ascii")


class TokenService:
    def __init__(
        self,
        engine: Engine,
        keys: SigningKeys,
        issuer: Issuer,
        access_ttl: timedelta,
        refresh_ttl: timedelta,
    ) -> None:
        self._engine = engine
        self._keys = keys
        self._issuer = issuer
        self.access_ttl = access_ttl
        self.refresh_ttl = refresh_ttl
        self._public: dict[str, jwt.PyJWK] = {}
        self._public_loaded = -KEYS_MAX_AGE  # monotonic time of the last load; never loaded yet
        # A live access token is presented again and again (each call of its client's, each introspection).
        # What its bytes prove is memoised: signature and claims, checked once. Expiry (against the clock)
        # and revocation (in the database) are checked at every use; a token that fails is never memoised.
        self._verified_access_claims = lru_cache(maxsize=VERIFIED_TOKENS)(self._check_access_claims)

    # Issuing

    def access_token(
        self,
        *,
        client_id: str,
        org: Organization,
        scope: tuple[str, ...],
        user_id: str | None,
        session_id: str | None = None,
        grant_id: str | None = None,
        auth_time: datetime | None = None,
    ) -> Issued:
        at = now()
        expires = at + self.access_ttl
        jti = new_id("at")
        claims: dict[str, Any] = {
            "iss": self._issuer.url,
            "sub": user_id or client_id,
            "aud": self._issuer.url,
            "exp": _epoch(expires),
            "iat": _epoch(at),
            "jti": jti,
            "client_id": client_id,
            "scope": " ".join(scope),
            "org_id": org.id,
            "org_name": org.name,
        }
        if session_id:
            claims["sid"] = session_id
        if auth_time:
            claims["auth_time"] = _epoch(auth_time)
        # Lost in a power cut, this record would only make the token inactive: its commit need not wait for the disk.
        record = {
            "jti": jti,
            "grant_id": grant_id,
            "client_id": client_id,
            "user_id": user_id,
            "org_id": org.id,
            "session_id": session_id,
            "scope": " ".join(scope),
            "issued_at": at,
            "expires_at": expires,
        }
        with commit_without_waiting(self._engine) as connection:
            connection.execute(_RECORD_ACCESS_TOKEN, record)
        return Issued(self._sign(claims, ACCESS_TOKEN_TYPE), int(self.access_ttl.total_seconds()))

    def id_token(
        self,
        *,
        client_id: str,
        user: User,
        org: Organization,
        scope: tuple[str, ...],
        session_id: str,
        auth_time: datetime,
        nonce: str | None,
        access_token: str,
    ) -> str:
        """OpenID Connect Core §2 and §5.4: identity claims, then profile and email claims by scope."""
        at = now()
        claims: dict[str, Any] = {
            "iss": self._issuer.url,
            "sub": user.id,
            "aud": client_id,
            "exp": _epoch(at + self.access_ttl),
            "iat": _epoch(at),
            "auth_time": _epoch(auth_time),
            "sid": session_id,
            "azp": client_id,
            "at_hash": left_half_hash(access_token),
            "org_id": org.id,
            "org_name": org.name,
        }
        if nonce is not None:
            claims["nonce"] = nonce
        claims.update(profile_claims(user, scope))
        return self._sign(claims, "JWT")

    def refresh_token(
        self,
        *,
        grant_id: str,
        client_id: str,
        user_id: str,
        org_id: str,
        session_id: str,
        scope: tuple[str, ...],
        auth_time: datetime,
        expires_at: datetime | None = None,
    ) -> str:
        """A new refresh token of the family ``grant_id``; a family lives ``refresh_ttl`` from its start."""
        token = "rt_" + secrets.token_urlsafe(32)
        at = now()
        with self._engine.begin() as connection:
            connection.execute(
                refresh_tokens.insert().values(
                    token_hash=hash_token(token),
                    id=new_id("rt"),
                    grant_id=grant_id,
                    client_id=client_id,
                    user_id=user_id,
                    org_id=org_id,
                    session_id=session_id,
                    scope=" ".join(scope),
                    auth_time=auth_time,
                    issued_at=at,
                    expires_at=expires_at or at + self.refresh_ttl,
                )
            )
        return token

    def revoke_grant(self, grant_id: str) -> None:
        """Revoke every access and refresh token issued from one authorization, and mark it revoked
        so that a token being issued from it at this very moment is revoked too (``grant_revoked``)."""
        at = now()
        try:
            with self._engine.begin() as connection:
                connection.execute(revoked_grants.insert().values(grant_id=grant_id, revoked_at=at))
        except IntegrityError:
            pass  # already marked
        with self._engine.begin() as connection:
            connection.execute(
                access_tokens.update()
                .where(access_tokens.c.grant_id == grant_id, access_tokens.c.revoked_at.is_(None))
                .values(revoked_at=at)
            )
            connection.execute(
                refresh_tokens.update()
                .where(refresh_tokens.c.grant_id == grant_id, refresh_tokens.c.revoked_at.is_(None))
                .values(revoked_at=at)
            )

    def grant_revoked(self, grant_id: str) -> bool:
        """Checked after issuing from a grant: a revocation that raced the issue wins."""
        with self._engine.connect() as connection:
            return (
                connection.scalar(sa.select(revoked_grants.c.grant_id).where(revoked_grants.c.grant_id == grant_id))
                is not None
            )

    # Verifying

    def verify_access_token(self, token: str) -> AccessToken:
        """The live access token ``token`` is, or ``InvalidToken`` (bad signature, expired, revoked, not ours)."""
        claims = self._verified_access_claims(token)
        if claims["exp"] <= _epoch(now()):  # checked at every use: the memo outlives no token
            raise InvalidToken("The access token has expired.")
        with self._engine.connect() as connection:
            row = connection.execute(_ACCESS_TOKEN_BY_JTI, {"jti": claims["jti"]}).first()
        if row is None or row.revoked_at is not None:
            raise InvalidToken("The access token was revoked.")
        if utc(row.expires_at) <= now():
            raise InvalidToken("The access token has expired.")
        return AccessToken(
            jti=row.jti,
            client_id=row.client_id,
            sub=claims["sub"],
            user_id=row.user_id,
            org_id=row.org_id,
            session_id=row.session_id,
            scope=tuple(row.scope.split()),
            claims=claims,
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
        """Check a JWT of ours: RS256, a known key, our issuer, ``audience``, unexpired (unless told not to)."""
        try:
            header = jwt.get_unverified_header(token)
            if header.get("alg") != ALGORITHM:
                raise InvalidToken("The token is not signed with RS256.")
            if typ is not None and str(header.get("typ", "")).lower() != typ:
                raise InvalidToken("The token is not of the expected type.")
            key = self._public_key(str(header.get("kid", "")))
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key,
                algorithms=[ALGORITHM],
                issuer=self._issuer.url,
                audience=audience,
                options={
                    "require": ["iss", "sub", "exp", "iat"],
                    "verify_aud": audience is not None,
                    "verify_exp": verify_exp,
                },
            )
        except jwt.ExpiredSignatureError:
            raise InvalidToken("The access token has expired.") from None
        except (jwt.InvalidTokenError, LookupError):
            raise InvalidToken("The token is invalid.") from None
        return claims

    def _public_key(self, kid: str) -> jwt.PyJWK:
        """The published key ``kid``. The set is reloaded when it is older than ``KEYS_MAX_AGE``, or on an
        unknown kid at most once per ``KEYS_MIN_RELOAD`` (a made-up kid must not cost a query each time).
        A rotated-in key is published long before it signs, so a reload always finds it in time."""
        age = monotonic() - self._public_loaded
        if age > KEYS_MAX_AGE or (kid not in self._public and age > KEYS_MIN_RELOAD):
            self._public = {jwk["kid"]: jwt.PyJWK(jwk) for jwk in self._keys.jwks()["keys"]}
            self._public_loaded = monotonic()
        key = self._public.get(kid)
        if key is None:
            raise LookupError(kid)
        return key

    def _sign(self, claims: dict[str, Any], typ: str) -> str:
        kid, private = self._keys.signing_key()
        if kid not in self._public:  # this node verifies what it signs, whenever it last read the keys
            self._public[kid] = jwt.PyJWK.from_dict(
                {**RSAAlgorithm.to_jwk(private.public_key(), as_dict=True), "kid": kid, "alg": ALGORITHM}
            )
        return jwt.encode(claims, private, algorithm=ALGORITHM, headers={"kid": kid, "typ": typ})


def profile_claims(user: User, scope: tuple[str, ...]) -> dict[str, Any]:
    """OpenID Connect Core §5.4: ``profile`` gives name, ``email`` gives email and email_verified."""
    claims: dict[str, Any] = {}
    if "profile" in scope:
        claims["name"] = user.name
    if "email" in scope:
        claims["email"] = user.email
        claims["email_verified"] = False  # addresses are not verified by this provider
    return claims


@dataclass(frozen=True, slots=True)
class RefreshToken:
    id: str
    token_hash: str
    grant_id: str
    client_id: str
    user_id: str
    org_id: str
    session_id: str
    scope: tuple[str, ...]
    auth_time: datetime
    issued_at: datetime
    expires_at: datetime
    rotated: bool
    revoked: bool

    @property
    def live(self) -> bool:
        return not self.rotated and not self.revoked and self.expires_at > now()


class RefreshTokenStore:
    """Refresh token families (RFC 9700 §4.14.2): rotation is one atomic statement."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def find(self, token: str) -> RefreshToken | None:
        with self._engine.connect() as connection:
            row = connection.execute(
                sa.select(refresh_tokens).where(refresh_tokens.c.token_hash == hash_token(token))
            ).first()
        if row is None:
            return None
        return RefreshToken(
            id=row.id,
            token_hash=row.token_hash,
            grant_id=row.grant_id,
            client_id=row.client_id,
            user_id=row.user_id,
            org_id=row.org_id,
            session_id=row.session_id,
            scope=tuple(row.scope.split()),
            auth_time=utc(row.auth_time),
            issued_at=utc(row.issued_at),
            expires_at=utc(row.expires_at),
            rotated=row.rotated_at is not None,
            revoked=row.revoked_at is not None,
        )

    def rotate(self, token: RefreshToken) -> bool:
        """Mark the token used; False when it was not live (used, revoked or expired) at that instant."""
        at = now()
        table = refresh_tokens
        with self._engine.begin() as connection:
            return (
                connection.execute(
                    table.update()
                    .where(
                        table.c.token_hash == token.token_hash,
                        table.c.rotated_at.is_(None),
                        table.c.revoked_at.is_(None),
                        table.c.expires_at > at,
                    )
                    .values(rotated_at=at)
                ).rowcount
                == 1
            )

    def revoke_session(self, session_id: str) -> None:
        """Sign-out: revoke the tokens issued in a browser session: refresh tokens, and access tokens
        issued in it or from its refresh tokens."""
        at = now()
        with self._engine.begin() as connection:
            grants = list(
                connection.scalars(
                    sa.select(refresh_tokens.c.grant_id).where(refresh_tokens.c.session_id == session_id).distinct()
                )
            )
            connection.execute(
                refresh_tokens.update()
                .where(refresh_tokens.c.session_id == session_id, refresh_tokens.c.revoked_at.is_(None))
                .values(revoked_at=at)
            )
            issued_here = access_tokens.c.session_id == session_id
            connection.execute(
                access_tokens.update()
                .where(sa.or_(issued_here, access_tokens.c.grant_id.in_(grants)) if grants else issued_here)
                .where(access_tokens.c.revoked_at.is_(None))
                .values(revoked_at=at)
            )
