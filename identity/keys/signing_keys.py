"""RS256 signing keys: created on first start, kept in the database, rotated with ``keys rotate``.

A rotated-in key is published in the JWKS ``publish_delay`` before it signs, so
relying parties that cache the JWKS already know it when its first token
arrives. The key it replaces stops signing then, and stays published for
``verify_window`` (the longest token lifetime) so tokens it signed still verify.
Key ids are RFC 7638 thumbprints. Private keys are stored sealed (``identity.keys.sealing``).

The JWKS is answered from memory (``published``): the document as this node last read it, serialised once.
It is read again by ``refresh_published`` (in the background, at most every quarter publish delay:
``service/app.py``) and at once after this node rotates, so a key rotated in on any node is published by
every node well before it signs.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson
import sqlalchemy as sa
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from sqlalchemy.engine import Engine

from identity.common import audit
from identity.common.clock import SYSTEM_CLOCK, Clock, utc
from identity.common.tables import signing_keys
from identity.keys.resealing import reseal_column
from identity.keys.sealing import Sealer

ALGORITHM = "RS256"
KEY_SIZE = 2048

NewKey = Callable[[], rsa.RSAPrivateKey]  # where a new signing key's private key comes from


def new_private_key() -> rsa.RSAPrivateKey:
    """A new RSA key of ``KEY_SIZE`` bits: the service's keys, always (tests of other things hand in keys made once
    a process: ``SigningKeys(new_key=…)``; one costs about 0.1 s of CPU)."""
    return rsa.generate_private_key(public_exponent=65537, key_size=KEY_SIZE)


@dataclass(frozen=True, slots=True)
class KeyInfo:
    kid: str
    created_at: datetime
    signs_from: datetime
    retired_at: datetime | None
    expires_at: datetime | None

    def state(self, at: datetime) -> str:
        if self.expires_at is not None and self.expires_at <= at:
            return "expired"
        if self.retired_at is not None and self.retired_at <= at:
            return "retired"
        return "signing" if self.signs_from <= at else "published"

    def as_dict(self, at: datetime) -> dict[str, Any]:
        return {
            "kid": self.kid,
            "state": self.state(at),
            "created_at": self.created_at.isoformat(),
            "signs_from": self.signs_from.isoformat(),
            "retired_at": self.retired_at.isoformat() if self.retired_at else None,
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
        }


def thumbprint(jwk: dict[str, Any]) -> str:
    """RFC 7638 JWK thumbprint of an RSA public key."""
    canonical = json.dumps({k: jwk[k] for k in ("e", "kty", "n")}, separators=(",", ":"), sort_keys=True)
    return base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A key that signs now or will: read from the table, judged against the clock at each use."""

    kid: str
    private_pem: str  # sealed (or clear, in a database from before sealing)
    signs_from: datetime
    retired_at: datetime | None

    def signs(self, at: datetime) -> bool:
        return self.signs_from <= at and (self.retired_at is None or self.retired_at > at)


@dataclass(frozen=True, slots=True)
class PublishedKeys:
    """The JWKS as a node last read it: its keys, and the document serialised once (the answer of ``/jwks``)."""

    keys: tuple[dict[str, Any], ...]
    body: bytes

    @classmethod
    def of(cls, document: dict[str, Any]) -> PublishedKeys:
        return cls(tuple(document["keys"]), orjson.dumps(document))


def reseal_signing_keys(engine: Engine, sealer: Sealer, *, rotate: bool) -> int:
    """Seal the private keys stored in clear (with ``rotate``, every key again with the first of the keys);
    how many rows changed. Each row changes only if nobody changed it meanwhile: several nodes may run this
    at once, and running it again changes nothing."""
    return reseal_column(engine, sealer, signing_keys.c.kid, signing_keys.c.private_pem, rotate=rotate)


class SigningKeys:
    def __init__(
        self,
        engine: Engine,
        publish_delay: timedelta,
        verify_window: timedelta,
        *,
        sealer: Sealer,
        max_age: timedelta,
        clock: Clock = SYSTEM_CLOCK,
        monotonic: Callable[[], float] = time.monotonic,  # when the table was last read (tests move it)
        new_key: NewKey = new_private_key,
    ) -> None:
        self._engine = engine
        self._clock = clock
        self._monotonic = monotonic
        self._new_key = new_key
        self._sealer = sealer
        self._publish_delay = publish_delay
        self._verify_window = verify_window
        self._private: dict[str, rsa.RSAPrivateKey] = {}  # loading a PEM costs milliseconds; keep the objects
        # Every token signed asks which key signs now. The answer is read from the table at most every
        # half publish delay (and every ``max_age``): a key rotated in on any node is published a
        # whole delay before it signs, so every node has read it before its first token is due.
        self._candidates: list[_Candidate] = []
        self._candidates_read = -math.inf  # monotonic time of the last read: never yet
        self._reread_every = min(max_age.total_seconds(), publish_delay.total_seconds() / 2)
        self._published: PublishedKeys | None = None  # the JWKS as last read; never read yet

    def published(self) -> PublishedKeys:
        """The JWKS as this node last read it (``refresh_published``): no SQL unless it was never read."""
        published = self._published
        return published if published is not None else self.refresh_published()

    def last_published(self) -> PublishedKeys | None:
        """The JWKS as this node last read it, or None if it never did: never any SQL."""
        return self._published

    def refresh_published(self) -> PublishedKeys:
        """Read the JWKS from the table and keep it, serialised, for ``published``."""
        published = self._published = PublishedKeys.of(self.jwks())
        return published

    def ensure(self) -> None:
        """Create a key that signs at once when no key signs now or later (first start)."""
        at = self._clock.now()
        if not any(info.state(at) in ("signing", "published") for info in self.list()):
            self._create(signs_from=at)
        self.refresh_published()

    def rotate(self) -> KeyInfo:
        """Publish a new key now; it signs after the publish delay, when the current keys retire.

        With no key signing now (an empty database), the new key signs at once.
        """
        at = self._clock.now()
        signing = any(info.state(at) == "signing" for info in self.list())
        signs_from = at + self._publish_delay if signing else at
        with self._engine.begin() as connection:
            connection.execute(
                signing_keys.update()
                .where(signing_keys.c.retired_at.is_(None))
                .values(retired_at=signs_from, expires_at=signs_from + self._verify_window)
            )
        info = self._create(signs_from=signs_from)
        self.refresh_published()  # this node publishes the next key at once; the others at their next read
        audit.record(audit.KEY_ROTATED, kid=info.kid)
        return info

    def signing_key(self) -> tuple[str, rsa.RSAPrivateKey]:
        """The newest key that signs now: its kid and private key."""
        at = self._clock.now()
        if self._monotonic() - self._candidates_read >= self._reread_every:
            self._read_candidates(at)
        signing = next((c for c in self._candidates if c.signs(at)), None)
        if signing is None:
            raise LookupError("no signing key signs now; run 'regional-menus keys rotate'")
        key = self._private.get(signing.kid)
        if key is None:
            pem = self._sealer.open(signing.private_pem.encode())
            loaded = serialization.load_pem_private_key(pem, password=None)
            assert isinstance(loaded, rsa.RSAPrivateKey)
            key = self._private[signing.kid] = loaded
        return signing.kid, key

    def _read_candidates(self, at: datetime) -> None:
        """The keys not retired at ``at``, newest first: the one signing now and any rotated in after it."""
        table = signing_keys.c
        query = (
            sa.select(table.kid, table.private_pem, table.signs_from, table.retired_at)
            .where(sa.or_(table.retired_at.is_(None), table.retired_at > at))
            .order_by(table.signs_from.desc())
        )
        with self._engine.connect() as connection:
            rows = connection.execute(query).all()
        self._candidates = [
            _Candidate(row.kid, row.private_pem, utc(row.signs_from), utc(row.retired_at) if row.retired_at else None)
            for row in rows
        ]
        self._candidates_read = self._monotonic()

    def jwks(self) -> dict[str, Any]:
        """Every key that may still verify a live token, and the next key before it signs."""
        at = self._clock.now()
        query = (
            sa.select(signing_keys.c.public_jwk)
            .where(sa.or_(signing_keys.c.expires_at.is_(None), signing_keys.c.expires_at > at))
            .order_by(signing_keys.c.signs_from.desc())
        )
        with self._engine.connect() as connection:
            return {"keys": [dict(jwk) for jwk in connection.scalars(query)]}

    def list(self) -> list[KeyInfo]:
        query = sa.select(signing_keys).order_by(signing_keys.c.signs_from, signing_keys.c.kid)
        with self._engine.connect() as connection:
            return [
                KeyInfo(
                    row.kid,
                    utc(row.created_at),
                    utc(row.signs_from),
                    utc(row.retired_at) if row.retired_at else None,
                    utc(row.expires_at) if row.expires_at else None,
                )
                for row in connection.execute(query)
            ]

    def reseal(self, *, rotate: bool) -> int:
        """``reseal_signing_keys`` with this store's sealer; the keys are read again before the next token."""
        changed = reseal_signing_keys(self._engine, self._sealer, rotate=rotate)
        self._candidates_read = -math.inf
        return changed

    def _create(self, signs_from: datetime) -> KeyInfo:
        private = self._new_key()
        jwk = json.loads(RSAAlgorithm.to_jwk(private.public_key()))
        kid = thumbprint(jwk)
        jwk.update(kid=kid, use="sig", alg=ALGORITHM)
        pem = private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        sealed = self._sealer.seal(pem).decode()
        created = self._clock.now()
        with self._engine.begin() as connection:
            connection.execute(
                signing_keys.insert().values(
                    kid=kid, private_pem=sealed, public_jwk=jwk, created_at=created, signs_from=signs_from
                )
            )
        self._private[kid] = private
        self._candidates_read = -math.inf  # this node changed the table: read it again at the next token
        return KeyInfo(kid, created, signs_from, None, None)
