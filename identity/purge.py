"""Deleting what nothing can use any more, so that no table grows without bound.

Each rule deletes a row only once it can no longer change an answer:

- interactions, once expired (their pages refuse them already);
- authorization codes, a day after they expire (a replay within the day still revokes
  what the code gave; after it, the tokens it gave have expired anyway);
- access-token and refresh-token records, once expired (the tokens are refused by their
  expiry; introspection says ``active: false`` with or without the record);
- browser sessions, a day after they ended or expired (no token depends on a session row:
  signing out revokes the session's tokens itself);
- console sessions, once ended or expired (a missing row admits nothing);
- client-assertion ``jti`` records, once the assertion expired (it is refused by then);
- revoked-grant records, a refresh-token lifetime after the revocation, when every token
  issued from the grant has expired;
- sign-in failure counters, once their window is over;
- signing keys, a day after they stopped being published;
- mails sent or given up, a day after they were written (their links have expired by then);
- mailed links (email verification, password reset), a day after they expired;
- the clients holding a browser session (back-channel logout), with the session's row;
- federation: pending sign-ins at an organization's provider and sign-outs gone there, once expired; the record of
  a session started through a provider, with the session's row; the logout tokens a provider sent, once expired.

Deletes are idempotent, so every node of a deployment may purge on its own schedule.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from identity.common.clock import SYSTEM_CLOCK, Clock
from identity.common.tables import (
    browser_sessions,
    client_assertions,
    console_sessions,
    interactions,
    sign_in_failures,
    signing_keys,
)
from identity.federation import attempts, logout_tokens
from identity.federation import sessions as federated_sessions
from identity.mail.email_links import EmailLinks
from identity.mail.outbox import Outbox
from identity.organizations.idempotency import IdempotencyKeys
from identity.organizations.invitations import Invitations
from identity.sessions import backchannel_logout
from identity.tokens.access_tokens import AccessTokenStore
from identity.tokens.codes import CodeStore
from identity.tokens.refresh_tokens import RefreshTokenStore
from identity.tokens.revoked_grants import Revoker

Rule = Callable[[Connection], int]  # deletes in the given transaction; how many rows


def _deleting(statement: sa.Delete) -> Rule:
    return lambda connection: connection.execute(statement).rowcount


class Purger:
    def __init__(
        self,
        engine: Engine,
        refresh_token_lifetime: timedelta,
        grace: timedelta,
        throttle_window: timedelta,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._engine = engine
        self._refresh_token_lifetime = refresh_token_lifetime
        self._grace = grace  # rows past their use are kept this long (for audits and late explanations)
        self._throttle_window = throttle_window  # a sign-in failure counts this long
        self._clock = clock

    def purge(self) -> dict[str, int]:
        """Delete every row past its use, one table per transaction; the number deleted from each table.
        The tokens' and codes' tables are purged by the stores that own them."""
        at = self._clock.now()
        rules: dict[str, Rule] = {
            "interactions": _deleting(interactions.delete().where(interactions.c.expires_at <= at)),
            "authorization_codes": lambda connection: CodeStore.purge(connection, at - self._grace),
            "access_tokens": lambda connection: AccessTokenStore.purge(connection, at),
            "refresh_tokens": lambda connection: RefreshTokenStore.purge(connection, at),
            "browser_sessions": _deleting(
                browser_sessions.delete().where(
                    sa.or_(
                        browser_sessions.c.ended_at < at - self._grace, browser_sessions.c.expires_at < at - self._grace
                    )
                )
            ),
            "console_sessions": _deleting(
                console_sessions.delete().where(
                    sa.or_(console_sessions.c.ended_at.is_not(None), console_sessions.c.expires_at < at)
                )
            ),
            "client_assertions": _deleting(client_assertions.delete().where(client_assertions.c.expires_at < at)),
            "revoked_grants": lambda connection: Revoker.purge(connection, at - self._refresh_token_lifetime),
            "sign_in_failures": _deleting(
                sign_in_failures.delete().where(sign_in_failures.c.window_start < at - self._throttle_window)
            ),
            "signing_keys": _deleting(signing_keys.delete().where(signing_keys.c.expires_at < at - self._grace)),
            "mail_outbox": lambda connection: Outbox.purge(connection, at - self._grace),
            "email_links": lambda connection: EmailLinks.purge(connection, at - self._grace),
            "invitations": lambda connection: Invitations.purge(connection, at - self._grace),
            "idempotency_keys": lambda connection: IdempotencyKeys.purge(connection, at),
            "session_clients": backchannel_logout.purge,  # after browser_sessions
            "federation_attempts": lambda connection: attempts.purge(connection, at),
            "federation_logout_tokens": lambda connection: logout_tokens.purge(connection, at),
            "federated_sessions": lambda connection: federated_sessions.purge(connection, at),  # after browser_sessions
        }
        deleted = {}
        for table, rule in rules.items():
            with self._engine.begin() as connection:
                deleted[table] = rule(connection)
        return deleted
