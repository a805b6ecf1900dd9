"""Device cookies: a browser that signed in as a user before is recognised when it tries again.

OWASP's "Slow Brute Force Protection Using Device Cookies": a successful sign-in leaves a signed cookie
naming the user; a sign-in attempt at that user from a browser holding it skips the per-network count of
the sign-in throttle (``identity.accounts.throttle``), never the per-account one. An attacker who exhausted the
network's attempts at random emails from behind the user's address (a NAT, an IPv6 /64) cannot lock
the user out of a browser they have used before.

The cookie (``rm_device``) holds up to ``max_users`` entries, newest first, separated by ``~``; each is
``<user id>.<expiry, Unix seconds>.<tag>``, the tag the first 128 bits of HMAC-SHA256 under a service
secret over the user id and the expiry, compared in constant time (``hmac.compare_digest``). It names
the user by their opaque id, never their email. Bounds: at most ``max_users`` entries are read or kept,
and a value longer than ``MAX_VALUE`` is ignored whole. Python's ``hmac`` is the library here: the
format is three fields, and a general serializer would add a timestamp format and a dependency.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from identity.common.clock import SYSTEM_CLOCK, Clock

DEVICE_COOKIE = "rm_device"
MAX_VALUE = 1024  # characters: longer values are not read at all (a cookie of ours stays far below)
TAG_BYTES = 16  # the HMAC-SHA256 tag is cut to 128 bits (22 URL-safe base64 characters)
_ENTRY = re.compile(r"([A-Za-z0-9_-]{1,40})\.([0-9]{1,12})\.([A-Za-z0-9_-]{22})")


@dataclass(frozen=True, slots=True)
class DeviceCookiePolicy:
    """How long a device cookie lasts and how many users one browser keeps (the values: ``service/settings/``)."""

    lifetime: timedelta  # a device cookie stops counting this long after the sign-in that set it
    max_users: int  # users one browser is remembered for (the newest sign-ins)


@dataclass(frozen=True, slots=True)
class DeviceCookie:
    value: str
    expires: datetime


class DeviceCookies:
    def __init__(self, key: bytes, policy: DeviceCookiePolicy, clock: Clock = SYSTEM_CLOCK) -> None:
        self._key = key
        self._policy = policy
        self._clock = clock

    def knows(self, value: str | None, user_id: str) -> bool:
        """True when ``value`` holds a valid, unexpired entry for ``user_id``."""
        return any(entry_user == user_id for entry_user, _ in self._entries(value))

    def remember(self, value: str | None, user_id: str) -> DeviceCookie:
        """The cookie after a successful sign-in as ``user_id``: its new entry first, then the other users'
        valid entries, at most ``max_users`` in all."""
        expires_at = int((self._clock.now() + self._policy.lifetime).timestamp())
        others = [(user, expiry) for user, expiry in self._entries(value) if user != user_id]
        kept = [(user_id, expires_at), *others][: self._policy.max_users]
        return DeviceCookie(
            "~".join(f"{user}.{expiry}.{self._tag(user, expiry)}" for user, expiry in kept),
            datetime.fromtimestamp(max(expiry for _, expiry in kept), UTC),
        )

    def _entries(self, value: str | None) -> list[tuple[str, int]]:
        """The valid, unexpired entries of ``value`` (at most ``max_users``; forged or expired ones are left out)."""
        if not value or len(value) > MAX_VALUE:
            return []
        now = self._clock.now().timestamp()
        found: list[tuple[str, int]] = []
        for text in value.split("~")[: self._policy.max_users]:
            match = _ENTRY.fullmatch(text)
            if match is None:
                continue
            user, expiry, tag = match.group(1), int(match.group(2)), match.group(3)
            if expiry > now and hmac.compare_digest(tag.encode(), self._tag(user, expiry).encode()):
                found.append((user, expiry))
        return found

    def _tag(self, user_id: str, expiry: int) -> str:
        mac = hmac.new(self._key, f"device-cookie\n{user_id}\n{expiry}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac[:TAG_BYTES]).decode().rstrip("=")
