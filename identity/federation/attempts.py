"""Pending sign-ins at a provider ("attempts"), from the authorization request we send to the answer we take.

An attempt is found by the SHA-256 of its ``state`` (the state itself is never stored), is bound to the browser
that started it (the SHA-256 of a cookie only that browser holds: the interaction's binding for a sign-in, the
browser session's secret for a connection test), lives ``ATTEMPT_TTL``, and is taken once: the statement that reads
it deletes it, so a replayed answer finds nothing. Its PKCE verifier is sealed at rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy.engine import Connection, Engine

from identity.common.clock import SYSTEM_CLOCK, Clock
from identity.common.digests import sha256_hex
from identity.common.text import has_control
from identity.federation.tables import federation_attempts
from identity.keys.sealing import Sealer

ATTEMPT_TTL = timedelta(minutes=10)  # a person has this long at their provider's sign-in page
SIGN_IN, TEST = "sign_in", "test"


@dataclass(frozen=True, slots=True)
class Attempt:
    org_id: str
    issuer: str
    purpose: str  # SIGN_IN or TEST
    browser_hash: str
    nonce: str
    code_verifier: str = field(repr=False)
    interaction_id: str | None = None
    user_id: str | None = None  # a test: the owner running it


class AttemptStore:
    def __init__(self, engine: Engine, sealer: Sealer, clock: Clock = SYSTEM_CLOCK) -> None:
        self._engine = engine
        self._sealer = sealer
        self._clock = clock

    def add(self, state: str, attempt: Attempt) -> None:
        with self._engine.begin() as connection:
            connection.execute(
                federation_attempts.insert().values(
                    state_hash=sha256_hex(state),
                    org_id=attempt.org_id,
                    issuer=attempt.issuer,
                    purpose=attempt.purpose,
                    interaction_id=attempt.interaction_id,
                    browser_hash=attempt.browser_hash,
                    nonce=attempt.nonce,
                    code_verifier=self._sealer.seal(attempt.code_verifier.encode()).decode(),
                    user_id=attempt.user_id,
                    expires_at=self._clock.now() + ATTEMPT_TTL,
                )
            )

    def take(self, state: str) -> Attempt | None:
        """The live attempt of ``state``, deleted as it is read (single use); None when unknown, used or expired."""
        if not state or len(state) > 512 or has_control(state):
            return None
        query = (
            federation_attempts.delete()
            .where(
                federation_attempts.c.state_hash == sha256_hex(state),
                federation_attempts.c.expires_at > self._clock.now(),
            )
            .returning(*federation_attempts.c)
        )
        with self._engine.begin() as connection:
            row = connection.execute(query).first()
        if row is None:
            return None
        return Attempt(
            org_id=row.org_id,
            issuer=row.issuer,
            purpose=row.purpose,
            browser_hash=row.browser_hash,
            nonce=row.nonce,
            code_verifier=self._sealer.open(row.code_verifier.encode()).decode(),
            interaction_id=row.interaction_id,
            user_id=row.user_id,
        )


def purge(connection: Connection, now: datetime) -> int:
    """Delete the expired attempts; how many."""
    return int(connection.execute(federation_attempts.delete().where(federation_attempts.c.expires_at <= now)).rowcount)
