"""The browser sessions started through an organization's provider: which provider session (``sid``) and account
(the binding of ``iss`` and ``sub``) each came from, and the provider's ID token (sealed), so that

- a logout token from the provider (Back-Channel Logout 1.0) ends the sessions it names here, and
- our sign-out of such a session goes on to the provider's end-session endpoint with that ID token as its hint
  (RP-Initiated Logout 1.0 §2), coming back to ``/federation/signed-out``, which goes on to where our sign-out
  was asked to go.

A session renewed since by a password sign-in (its ``amr`` is ``pwd`` again) no longer counts as the provider's.
Rows are purged with their browser session's.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from identity.common.clock import SYSTEM_CLOCK, Clock
from identity.common.digests import sha256_hex
from identity.common.tables import browser_sessions
from identity.common.text import has_control
from identity.federation.tables import federated_sessions, federation_connections, federation_sign_outs
from identity.interaction.authorization_request import redirect_with
from identity.keys.sealing import Sealer
from identity.sessions.sessions import FEDERATED

SIGN_OUT_TTL = timedelta(minutes=10)  # the provider has this long to send the browser back


@dataclass(frozen=True, slots=True)
class SignOutOnward:
    """Where a sign-out goes on after the provider's end-session endpoint."""

    redirect_uri: str | None
    state: str | None


class FederatedSessions:
    def __init__(self, engine: Engine, sealer: Sealer, clock: Clock = SYSTEM_CLOCK) -> None:
        self._engine = engine
        self._sealer = sealer
        self._clock = clock

    def record(self, session_id: str, org_id: str, binding: str, upstream_sid: str | None, id_token: str) -> None:
        """The session ``session_id`` was started (or renewed) through ``org_id``'s provider."""
        values = {
            "org_id": org_id,
            "binding": binding,
            "upstream_sid": upstream_sid,
            "id_token": self._sealer.seal(id_token.encode()).decode(),
            "started_at": self._clock.now(),
        }
        with self._engine.begin() as connection:
            connection.execute(federated_sessions.delete().where(federated_sessions.c.session_id == session_id))
            connection.execute(federated_sessions.insert().values(session_id=session_id, **values))

    def named(self, org_id: str, binding: str | None, upstream_sid: str | None) -> list[str]:
        """The live sessions a logout token names (Back-Channel Logout 1.0 §2.7): those of its provider session
        (``sid``), else every session of its account (``sub`` alone)."""
        query = (
            sa.select(federated_sessions.c.session_id)
            .join(browser_sessions, browser_sessions.c.id == federated_sessions.c.session_id)
            .where(
                federated_sessions.c.org_id == org_id,
                browser_sessions.c.ended_at.is_(None),
                browser_sessions.c.amr == FEDERATED,  # not renewed since by a password sign-in
            )
        )
        if upstream_sid is not None:
            query = query.where(federated_sessions.c.upstream_sid == upstream_sid)
        if binding is not None:
            query = query.where(federated_sessions.c.binding == binding)
        with self._engine.connect() as connection:
            return list(connection.scalars(query))

    def sign_out_at_provider(
        self, session_id: str, redirect_uri: str | None, state: str | None, back: str
    ) -> str | None:
        """Where our sign-out of ``session_id`` goes on: the provider's end-session endpoint, with the ID token it
        gave as ``id_token_hint``, ``back`` as its post-logout redirect URI and a new ``state`` that remembers
        ``redirect_uri`` and ``state``; None when the session did not come from a provider that has one."""
        query = (
            sa.select(
                federated_sessions.c.id_token, federation_connections.c.provider, federation_connections.c.client_id
            )
            .join(federation_connections, federation_connections.c.org_id == federated_sessions.c.org_id)
            .join(browser_sessions, browser_sessions.c.id == federated_sessions.c.session_id)
            .where(federated_sessions.c.session_id == session_id, browser_sessions.c.amr == FEDERATED)
        )
        with self._engine.connect() as connection:
            row = connection.execute(query).first()
        endpoint = None if row is None else dict(row.provider).get("end_session_endpoint")
        if row is None or not endpoint:
            return None
        onward = secrets.token_urlsafe(32)
        with self._engine.begin() as connection:
            connection.execute(
                federation_sign_outs.insert().values(
                    state_hash=sha256_hex(onward),
                    redirect_uri=redirect_uri,
                    state=state,
                    expires_at=self._clock.now() + SIGN_OUT_TTL,
                )
            )
        hint = self._sealer.open(row.id_token.encode()).decode()
        params = {
            "id_token_hint": hint,
            "client_id": row.client_id,
            "post_logout_redirect_uri": back,
            "state": onward,
        }
        return redirect_with(str(endpoint), params)

    def back_from_provider(self, state: str | None) -> SignOutOnward | None:
        """The sign-out the provider sends the browser back from (single use); None when unknown or expired."""
        if not state or len(state) > 512 or has_control(state):
            return None
        query = (
            federation_sign_outs.delete()
            .where(
                federation_sign_outs.c.state_hash == sha256_hex(state),
                federation_sign_outs.c.expires_at > self._clock.now(),
            )
            .returning(federation_sign_outs.c.redirect_uri, federation_sign_outs.c.state)
        )
        with self._engine.begin() as connection:
            row = connection.execute(query).first()
        return None if row is None else SignOutOnward(row.redirect_uri, row.state)


def purge(connection: Connection, now: datetime) -> int:
    """Forget the sessions whose browser session was purged, and the sign-outs never come back; how many."""
    gone = ~sa.exists().where(browser_sessions.c.id == federated_sessions.c.session_id)
    sessions = connection.execute(federated_sessions.delete().where(gone)).rowcount
    sign_outs = connection.execute(
        federation_sign_outs.delete().where(federation_sign_outs.c.expires_at <= now)
    ).rowcount
    return int(sessions) + int(sign_outs)
