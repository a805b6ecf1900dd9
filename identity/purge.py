"""Deleting what nothing can use any more, so that no table grows without bound.

Each rule deletes a row only once it can no longer change an answer:

- interactions, once expired (their pages refuse them already);
- authorization codes, a day after they expire (a replay within the day still revokes
  what the code gave; after it, the tokens it gave have expired anyway);
- access-token and refresh-token records, once expired (the tokens are refused by their
  expiry; introspection says ``active: false`` with or without the record);
- browser sessions, a day after they ended or expired (no token depends on a session row:
  signing out revokes the session's tokens itself);
- client-assertion ``jti`` records, once the assertion expired (it is refused by then);
- revoked-grant records, a refresh-token lifetime after the revocation, when every token
  issued from the grant has expired;
- sign-in failure counters, once their window is over;
- signing keys, a day after they stopped being published.

Deletes are idempotent, so every node of a deployment may purge on its own schedule.
"""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from identity.clock import now
from identity.tables import (
    access_tokens,
    authorization_codes,
    browser_sessions,
    client_assertions,
    interactions,
    refresh_tokens,
    revoked_grants,
    sign_in_failures,
    signing_keys,
)
from identity.throttle import WINDOW

GRACE = timedelta(days=1)


class Purger:
    def __init__(self, engine: Engine, refresh_token_lifetime: timedelta) -> None:
        self._engine = engine
        self._refresh_token_lifetime = refresh_token_lifetime

    def purge(self) -> dict[str, int]:
        """Delete every row past its use, one table per transaction; the number deleted from each table."""
        at = now()
        rules: dict[str, sa.Delete] = {
            "interactions": interactions.delete().where(interactions.c.expires_at <= at),
            "authorization_codes": authorization_codes.delete().where(authorization_codes.c.expires_at < at - GRACE),
            "access_tokens": access_tokens.delete().where(access_tokens.c.expires_at < at),
            "refresh_tokens": refresh_tokens.delete().where(refresh_tokens.c.expires_at < at),
            "browser_sessions": browser_sessions.delete().where(
                sa.or_(browser_sessions.c.ended_at < at - GRACE, browser_sessions.c.expires_at < at - GRACE)
            ),
            "client_assertions": client_assertions.delete().where(client_assertions.c.expires_at < at),
            "revoked_grants": revoked_grants.delete().where(
                revoked_grants.c.revoked_at < at - self._refresh_token_lifetime
            ),
            "sign_in_failures": sign_in_failures.delete().where(sign_in_failures.c.window_start < at - WINDOW),
            "signing_keys": signing_keys.delete().where(signing_keys.c.expires_at < at - GRACE),
        }
        deleted = {}
        for table, statement in rules.items():
            with self._engine.begin() as connection:
                deleted[table] = connection.execute(statement).rowcount
        return deleted
