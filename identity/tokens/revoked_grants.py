"""Revoking an authorization (a grant) and every token issued from it: the one module that writes
``revoked_grants``.

RFC 6749 §4.1.2: a replayed authorization code revokes the tokens issued from it; RFC 9700 §4.14.2: a
reused refresh token revokes its family; RFC 7009 §2.1: revoking a refresh token revokes the access
tokens of the same authorization. The grant is marked revoked, so that a token being issued from it at
this very moment is revoked too (``revoked``, checked after issuing).

Ending a browser session or every session of a user also tells the clients that hold them (OpenID Connect
Back-Channel Logout 1.0, identity/sessions/backchannel_logout.py): their logout tokens enter the outbox in the
transaction of the revocation, whoever calls it.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from identity.common.clock import SYSTEM_CLOCK, Clock
from identity.common.tables import revoked_grants
from identity.mail.outbox import Doorbell
from identity.sessions import backchannel_logout
from identity.sessions.sessions import SessionStore
from identity.tokens.access_tokens import AccessTokenStore
from identity.tokens.refresh_tokens import RefreshTokenStore


class Revoker:
    def __init__(self, engine: Engine, clock: Clock = SYSTEM_CLOCK, logouts: Doorbell | None = None) -> None:
        """``logouts``: rung once a revocation that wrote logout tokens has committed (the node's worker posts them
        at once; without it, at its next poll)."""
        self._engine = engine
        self._clock = clock
        self._logouts = logouts

    def revoke_grant(self, grant_id: str) -> None:
        """Mark the authorization revoked, then revoke every access and refresh token issued from it."""
        at = self._clock.now()
        try:
            with self._engine.begin() as connection:
                connection.execute(revoked_grants.insert().values(grant_id=grant_id, revoked_at=at))
        except IntegrityError:
            pass  # already marked
        with self._engine.begin() as connection:
            AccessTokenStore.revoke_grant(connection, grant_id, at)
            RefreshTokenStore.revoke_grant(connection, grant_id, at)

    def revoked(self, grant_id: str) -> bool:
        """Checked after issuing from a grant: a revocation that raced the issue wins."""
        with self._engine.connect() as connection:
            return (
                connection.scalar(sa.select(revoked_grants.c.grant_id).where(revoked_grants.c.grant_id == grant_id))
                is not None
            )

    def revoke_session(self, session_id: str) -> None:
        """Sign-out: revoke the tokens issued in a browser session: refresh tokens, and access tokens
        issued in it or from its refresh tokens; and a logout token to each client holding it."""
        at = self._clock.now()
        with self._engine.begin() as connection:
            grant_ids = RefreshTokenStore.revoke_session(connection, session_id, at)
            AccessTokenStore.revoke_session(connection, session_id, grant_ids, at)
            told = backchannel_logout.notify_session(connection, session_id, at)
        self.written(told)

    def revoke_user(self, user_id: str) -> None:
        """Everything a user is signed in with ends, in one transaction (``revoke_user_in``)."""
        with self._engine.begin() as connection:
            told = self.revoke_user_in(connection, user_id)
        self.written(told)

    def revoke_user_in(self, connection: Connection, user_id: str) -> int:
        """In the caller's transaction (with the change of credential that ends them:
        identity/accounts/password_reset.py, identity/accounts/disabled_users.py): browser sessions, refresh tokens and
        access tokens of the user end (RFC 9700 §4.14: a credential change revokes the grants it backed), and the
        clients holding its sessions get logout tokens. Returns how many were written: once the caller has committed, it
        hands them to ``written``."""
        at = self._clock.now()
        SessionStore.end_all_of(connection, user_id, at)
        RefreshTokenStore.revoke_user(connection, user_id, at)
        AccessTokenStore.revoke_user(connection, user_id, at)
        return backchannel_logout.notify_user(connection, user_id, at)

    def revoke_member_in(self, connection: Connection, user_id: str, org_id: str) -> int:
        """In the caller's transaction (the membership's end: identity/organizations/members.py): the user's access
        and refresh tokens for the organization are revoked, their browser sessions signed in to it end, and the
        clients holding those sessions get logout tokens (Back-Channel Logout 1.0). Their sessions and tokens for
        their other organizations live on. How many logout tokens were written (``written`` after the commit)."""
        at = self._clock.now()
        issued_in = RefreshTokenStore.sessions_of_member(connection, user_id, org_id)
        issued_in |= AccessTokenStore.sessions_of_member(connection, user_id, org_id)
        RefreshTokenStore.revoke_member(connection, user_id, org_id, at)
        AccessTokenStore.revoke_member(connection, user_id, org_id, at)
        told = 0
        for session_id in SessionStore.end_in_organization(connection, user_id, org_id, at, issued_in):
            told += backchannel_logout.notify_session(connection, session_id, at)
        return told

    def written(self, logout_tokens: int) -> None:
        """After the commit: logout tokens were written, the node's worker may post them now."""
        if logout_tokens and self._logouts is not None:
            self._logouts.ring()

    @staticmethod
    def purge(connection: Connection, revoked_before: datetime) -> int:
        """Forget the revocations older than ``revoked_before`` (every token of those grants has expired);
        how many."""
        return connection.execute(revoked_grants.delete().where(revoked_grants.c.revoked_at < revoked_before)).rowcount
