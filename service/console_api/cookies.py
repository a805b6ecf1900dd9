"""The console's cookies: its session and the pending sign-in, each encrypted and authenticated (Fernet).

Fernet (from ``cryptography``, already a dependency) gives AES-CBC with an HMAC-SHA256 tag and a
timestamp checked against a time-to-live on reading: a cookie cannot be read, forged or kept past
its lifetime. The key is a shared service secret, so every node reads every node's cookies. The
session holds no secret of the provider's beyond the ID token it must hand back at sign-out.

A third cookie carries a key just created across the redirect to the page that shows it once
(POST/redirect/GET): it is bound to the console session that created the key, lives two minutes, is
scoped to that page's path and is cleared by the page. No copy of the key is kept on the server.

The session cookie also names a console session kept on the server (``identity.sessions.console_sessions``):
signing out ends it there, so a copy of the cookie opens nothing afterwards, on any node.

The cookies are HttpOnly, SameSite=Lax, scoped to the console's path, and Secure when the issuer
or the console is served over https. Each session carries its own CSRF token, which every form
posts back (compared in constant time).
"""

from __future__ import annotations

import base64
import hmac
import secrets
from dataclasses import dataclass
from typing import Any

import orjson
from cryptography.fernet import Fernet, InvalidToken

from identity.common.clock import SYSTEM_CLOCK, Clock

SESSION_COOKIE = "console_session"
SIGN_IN_COOKIE = "console_sign_in"
NEW_KEY_COOKIE = "console_new_key"
NEW_SECRET_COOKIE = "console_new_secret"  # an application's secret just made, on its way to the page that shows it


@dataclass(frozen=True, slots=True)
class CookieLifetimes:
    """Seconds each console cookie is accepted after it was sealed (the values: ``service/settings/table.py``)."""

    session: int  # a console session (the provider's session may end it sooner)
    sign_in: int  # a started sign-in, until it comes back
    new_key: int  # a key just created, until the page that shows it (one redirect)


@dataclass(frozen=True, slots=True)
class ConsoleSession:
    user_id: str
    org_id: str
    session_id: str  # the provider's sid
    id_token: str
    csrf_token: str
    console_id: str  # the console's own session, on the server (identity/sessions/console_sessions.py)

    def csrf_matches(self, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token.encode(), self.csrf_token.encode())


class Cookies:
    def __init__(self, key: bytes, lifetimes: CookieLifetimes, clock: Clock = SYSTEM_CLOCK) -> None:
        self.lifetimes = lifetimes
        self._fernet = Fernet(base64.urlsafe_b64encode(key[:32].ljust(32, b"\0")))
        self._clock = clock  # a cookie's age is read on the service's one clock (Fernet's *_at_time)

    def _now(self) -> int:
        return int(self._clock.now().timestamp())

    def seal(self, payload: dict[str, Any]) -> str:
        return self._fernet.encrypt_at_time(orjson.dumps(payload), self._now()).decode()

    def open(self, value: str | None, ttl: int) -> dict[str, Any] | None:
        if not value or len(value) > 4096:
            return None
        try:
            data = orjson.loads(self._fernet.decrypt_at_time(value.encode(), ttl, self._now()))
        except (InvalidToken, orjson.JSONDecodeError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def new_session(
        self, user_id: str, org_id: str, session_id: str, id_token: str, console_id: str
    ) -> tuple[ConsoleSession, str]:
        session = ConsoleSession(user_id, org_id, session_id, id_token, secrets.token_urlsafe(32), console_id)
        payload = {"u": user_id, "o": org_id, "s": session_id, "t": id_token, "c": session.csrf_token, "i": console_id}
        return session, self.seal(payload)

    def session(self, value: str | None) -> ConsoleSession | None:
        data = self.open(value, self.lifetimes.session)
        if data is None:
            return None
        fields = [data.get(name) for name in ("u", "o", "s", "t", "c", "i")]
        if not all(isinstance(field, str) and field for field in fields):
            return None  # a cookie from before server-side sessions (no "i") opens nothing: sign in again
        return ConsoleSession(*fields)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class NewKey:
    """A key just created, on its way to the page that shows it once."""

    key_id: str
    key: str
    session_token: str  # the CSRF token of the console session that created it: no other session shows it

    def seal(self, cookies: Cookies) -> str:
        return cookies.seal({"i": self.key_id, "k": self.key, "s": self.session_token})

    def belongs_to(self, session: ConsoleSession) -> bool:
        return session.csrf_matches(self.session_token)

    @classmethod
    def open(cls, cookies: Cookies, value: str | None) -> NewKey | None:
        data = cookies.open(value, cookies.lifetimes.new_key)
        if data is None:
            return None
        fields = [data.get(name) for name in ("i", "k", "s")]
        if not all(isinstance(field, str) and field for field in fields):
            return None
        return cls(*fields)  # type: ignore[arg-type]
