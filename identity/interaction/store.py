"""Pending sign-ins ("interactions"): an authorization request waiting for the pages it needs.

An interaction is bound to the browser that started it (the SHA-256 of a random
cookie) and carries the CSRF token of its forms. It lives a few minutes and is
deleted when it ends, with a code or with an error.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from identity.common.clock import SYSTEM_CLOCK, Clock, utc
from identity.common.digests import sha256_hex
from identity.common.tables import interactions
from identity.common.text import has_control
from identity.interaction.authorization_request import AuthorizationRequest


@dataclass(frozen=True, slots=True)
class Interaction:
    id: str
    browser_hash: str
    csrf_token: str
    request: AuthorizationRequest
    expires_at: datetime
    user_id: str | None = None
    session_id: str | None = None
    auth_time: datetime | None = None
    org_id: str | None = None
    signed_in: bool = False  # the user gave credentials (or signed up) during this interaction
    org_chosen: bool = False
    consented: bool = False
    verification_sent: bool = False  # a verification link that resumes this sign-in was mailed

    def changed(self, **changes: Any) -> Interaction:
        return replace(self, **changes)

    def belongs_to(self, browser_secret: str | None) -> bool:
        return browser_secret is not None and hmac.compare_digest(hash_browser(browser_secret), self.browser_hash)

    def csrf_matches(self, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token.encode(), self.csrf_token.encode())


hash_browser = sha256_hex


def new_interaction(request: AuthorizationRequest, browser_secret: str, expires_at: datetime) -> Interaction:
    return Interaction(
        id="int_" + secrets.token_urlsafe(24),
        browser_hash=hash_browser(browser_secret),
        csrf_token=secrets.token_urlsafe(24),
        request=request,
        expires_at=expires_at,
    )


class InteractionStore:
    def __init__(self, engine: Engine, clock: Clock = SYSTEM_CLOCK) -> None:
        self._engine = engine
        self._clock = clock

    def add(self, interaction: Interaction) -> None:
        """Store a new interaction (its id is new: random, 192 bits)."""
        with self._engine.begin() as connection:
            connection.execute(interactions.insert().values(id=interaction.id, **_row(interaction)))

    def update(self, interaction: Interaction) -> bool:
        """Record the interaction's new state; False when it is gone (finished by a concurrent post of one of its
        forms, or purged): it is never written again then, so a finished sign-in cannot come back."""
        with self._engine.begin() as connection:
            return bool(
                connection.execute(
                    interactions.update().where(interactions.c.id == interaction.id).values(**_row(interaction))
                ).rowcount
            )

    def get(self, interaction_id: str) -> Interaction | None:
        """The unexpired interaction with this id, or None."""
        if has_control(interaction_id):  # names none (and PostgreSQL refuses a NUL byte in a query)
            return None
        query = sa.select(interactions).where(
            interactions.c.id == interaction_id, interactions.c.expires_at > self._clock.now()
        )
        with self._engine.connect() as connection:
            row = connection.execute(query).first()
        if row is None:
            return None
        return Interaction(
            id=row.id,
            browser_hash=row.browser_hash,
            csrf_token=row.csrf_token,
            request=AuthorizationRequest.from_dict(row.request),
            expires_at=utc(row.expires_at),
            user_id=row.user_id,
            session_id=row.session_id,
            auth_time=utc(row.auth_time) if row.auth_time else None,
            org_id=row.org_id,
            signed_in=bool(row.signed_in),
            org_chosen=bool(row.org_chosen),
            consented=bool(row.consented),
            verification_sent=bool(row.verification_sent),
        )

    def delete(self, interaction_id: str) -> bool:
        """End the interaction; True for the one caller that ended it (a double submit finishes once)."""
        with self._engine.begin() as connection:
            return connection.execute(interactions.delete().where(interactions.c.id == interaction_id)).rowcount == 1


def _row(interaction: Interaction) -> dict[str, Any]:
    return {
        "browser_hash": interaction.browser_hash,
        "csrf_token": interaction.csrf_token,
        "request": interaction.request.as_dict(),
        "user_id": interaction.user_id,
        "session_id": interaction.session_id,
        "auth_time": interaction.auth_time,
        "org_id": interaction.org_id,
        "signed_in": interaction.signed_in,
        "org_chosen": interaction.org_chosen,
        "consented": interaction.consented,
        "verification_sent": interaction.verification_sent,
        "expires_at": interaction.expires_at,
    }
