"""OpenID Connect Back-Channel Logout 1.0: telling the clients that hold a session that it ended.

**Who holds a session.** A client holds a browser session once it redeemed a code issued in it, and so got an
ID token with that ``sid`` (``record_holder``, called by ``CodeStore.consume`` in the transaction that uses the
code up). The holders have a table of their own, ``session_clients``: the records that also carry a session id
do not live as long as a session (14 days by default): an access token's record is purged when it expires (10
minutes), a code's a day after, and a refresh token exists only with ``offline_access``. Its rows are purged
with their session's.

**When they are told.** ``Revoker.revoke_session`` (the end-session endpoint) and ``Revoker.revoke_user`` (a
password reset, a disabled user) call ``notify_session`` and ``notify_user`` in the transaction of the
revocation, so every caller of those tells the clients, and nothing is told of a revocation that did not
happen. Each writes one outbox message (channel ``backchannel_logout``) per logout token and forgets the
holders it told, so a second sign-out of the same session tells nobody twice. A session's token carries its
``sid`` and ``sub``. For a user's revocation, a client registered with ``backchannel_logout_session_required``
gets one token per session it holds (each with its ``sid``, §2.2); any other client one token with ``sub``
alone, which §2.6 reads as every session of that user.

**What a message holds.** The client's id, ``sub`` and ``sid``: no secret, so it is written unsealed. The token
is signed at delivery (``identity/tokens/logout_tokens.py``), not at enqueue: its ``exp`` (``LOGOUT_TOKEN_TTL``, two
minutes, §2.4 asks for a short one) then runs from each attempt, so a token posted after hours of retries is
still valid when it arrives, and it is signed with the key current then (a key rotated meanwhile is the one
the client finds in the JWKS). Its ``jti`` is the message's id, the same at every attempt: a client that got a
token and whose answer was lost recognises the next attempt as the same logout. The URI is the one registered
at delivery: a client deleted, or whose URI was removed, meanwhile is sent nothing.
"""

from __future__ import annotations

import ipaddress
from datetime import datetime
from urllib.parse import urlsplit

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from identity.common.errors import InvalidInput
from identity.common.outbound_uris import OutboundRule
from identity.common.tables import browser_sessions, clients, session_clients
from identity.common.text import has_control
from identity.common.upsert import dialect_insert
from identity.mail.outbox import Mail, Outbox

CHANNEL = "backchannel_logout"  # the outbox channel of logout tokens
KIND = "logout_token"
MAX_URI_LENGTH = 2000  # characters of a back-channel logout URI


def check_backchannel_logout_uri(uri: str, rule: OutboundRule) -> str:
    """§2.2: an absolute URL without a fragment; it may have a port, a path and a query. Ours are stricter: https,
    or http on a loopback address only (a logout token crossing a network in the clear could be replayed to the
    client within its lifetime), no user or password in it, at most ``MAX_URI_LENGTH`` characters, and a host the
    outbound ``rule`` allows (identity/common/outbound_uris.py: no loopback, private, link-local… address)."""
    shown = uri if len(uri) <= 100 else uri[:100] + "…"
    if len(uri) > MAX_URI_LENGTH:
        raise InvalidInput(f"back-channel logout URI {shown!r} is longer than {MAX_URI_LENGTH} characters")
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018  # raises ValueError for a port that is not a number from 0 to 65535
    except ValueError:
        raise InvalidInput(f"back-channel logout URI {shown!r} is not a URI") from None
    if has_control(uri) or " " in uri or parts.fragment or "#" in uri or not parts.hostname:
        raise InvalidInput(f"back-channel logout URI {shown!r} must be an absolute URL without a fragment")
    if parts.username is not None or parts.password is not None:
        raise InvalidInput(f"back-channel logout URI {shown!r} must not carry a user or a password")
    if parts.scheme != "https" and not (parts.scheme == "http" and _loopback(parts.hostname)):
        raise InvalidInput(f"back-channel logout URI {shown!r} must use https (http only on a loopback address)")
    rule.check_host(parts.hostname, f"back-channel logout URI {shown!r}")
    return uri


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def record_holder(connection: Connection, session_id: str, client_id: str, user_id: str, at: datetime) -> None:
    """In the caller's transaction: ``client_id`` holds ``session_id`` (it redeemed a code issued in it)."""
    insert = dialect_insert(connection.dialect.name)(session_clients)
    connection.execute(
        insert.values(
            session_id=session_id, client_id=client_id, user_id=user_id, held_since=at
        ).on_conflict_do_nothing(index_elements=["session_id", "client_id"])
    )


_HOLDERS = sa.select(
    session_clients.c.session_id,
    session_clients.c.client_id,
    session_clients.c.user_id,
    clients.c.backchannel_logout_session_required,
).join(clients, clients.c.id == session_clients.c.client_id)


def notify_session(connection: Connection, session_id: str, at: datetime) -> int:
    """In the revocation's transaction: a logout token (``sid`` and ``sub``) for every client with a back-channel
    logout URI that holds the session; the holders are forgotten. How many tokens."""
    rows = connection.execute(
        _HOLDERS.where(session_clients.c.session_id == session_id, clients.c.backchannel_logout_uri.is_not(None))
    ).all()
    for row in rows:
        _enqueue(connection, row.client_id, row.user_id, row.session_id, at)
    connection.execute(session_clients.delete().where(session_clients.c.session_id == session_id))
    return len(rows)


def notify_user(connection: Connection, user_id: str, at: datetime) -> int:
    """In the revocation's transaction: logout tokens for every client with a back-channel logout URI that holds
    a session of the user (one per session for a client that requires ``sid``, else one with ``sub`` alone);
    the holders are forgotten. How many tokens."""
    rows = connection.execute(
        _HOLDERS.where(session_clients.c.user_id == user_id, clients.c.backchannel_logout_uri.is_not(None))
    ).all()
    tokens = {
        (row.client_id, row.session_id if row.backchannel_logout_session_required else None): None for row in rows
    }  # in order, once each
    for client_id, session_id in tokens:
        _enqueue(connection, client_id, user_id, session_id, at)
    connection.execute(session_clients.delete().where(session_clients.c.user_id == user_id))
    return len(tokens)


def _enqueue(connection: Connection, client_id: str, subject: str, session_id: str | None, at: datetime) -> None:
    params = {"sub": subject, **({"sid": session_id} if session_id is not None else {})}
    Outbox.write(connection, CHANNEL, Mail(KIND, client_id, params), at)


def purge(connection: Connection) -> int:
    """Forget the holders of sessions whose row was purged; how many."""
    gone = ~sa.exists().where(browser_sessions.c.id == session_clients.c.session_id)
    return int(connection.execute(session_clients.delete().where(gone)).rowcount)
