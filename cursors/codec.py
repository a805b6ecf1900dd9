"""Opaque, stateless, filter-bound cursors for keyset pagination.

A cursor names the last item of a page by its sort position, and is bound to
the filters it was made for. It is signed with HMAC-SHA256, so it survives
restarts and works on any node that shares the key, and an altered cursor is
refused rather than silently misread.

Layout before base64url: version (1 byte) | MAC (16) | filter digest (8) | JSON [sort key, slug].
"""

import base64
import binascii
import hashlib
import hmac
import json
from functools import lru_cache

_VERSION = b"\x01"
_MAC_SIZE = 16
_DIGEST_SIZE = 8
_HEADER = 1 + _MAC_SIZE + _DIGEST_SIZE

Position = tuple[str, str]


class InvalidCursor(Exception):
    """The cursor does not decode, was altered, or was made for other filters; the message is safe to show a client."""


class CursorCodec:
    def __init__(self, key: bytes) -> None:
        if len(key) < 32:
            raise ValueError("the cursor key must be at least 32 bytes")
        self._key = key

    def encode(self, position: Position, filters: str) -> str:
        """Return the cursor for the page after ``position`` under ``filters``."""
        digest = _digest(filters)
        body = _position_body(position)
        mac = self._mac(digest + body)
        return base64.urlsafe_b64encode(_VERSION + mac + digest + body).rstrip(b"=").decode("ascii")

    def decode(self, cursor: str, filters: str) -> Position:
        """Return the position a cursor names; raise InvalidCursor unless it is intact and ours."""
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        except (binascii.Error, ValueError):
            raise InvalidCursor("The cursor is not a cursor of this API.") from None
        if len(raw) <= _HEADER or raw[:1] != _VERSION:
            raise InvalidCursor("The cursor is not a cursor of this API.")
        mac, digest, body = raw[1 : 1 + _MAC_SIZE], raw[1 + _MAC_SIZE : _HEADER], raw[_HEADER:]
        if not hmac.compare_digest(mac, self._mac(digest + body)):
            raise InvalidCursor("The cursor was altered or was not issued by this API.")
        if not hmac.compare_digest(digest, _digest(filters)):
            raise InvalidCursor(
                "The cursor was made for other filters; send it with the filters of the page it came from."
            )
        try:
            key, slug = json.loads(body)
        except (ValueError, TypeError):
            raise InvalidCursor("The cursor is not a cursor of this API.") from None
        if not isinstance(key, str) or not isinstance(slug, str):
            raise InvalidCursor("The cursor is not a cursor of this API.")
        return key, slug

    def _mac(self, message: bytes) -> bytes:
        return hmac.new(self._key, message, hashlib.sha256).digest()[:_MAC_SIZE]


@lru_cache(maxsize=1024)  # positions are those of the dataset's dishes: a few hundred
def _position_body(position: Position) -> bytes:
    return json.dumps(list(position), ensure_ascii=False, separators=(",", ":")).encode()


@lru_cache(maxsize=4096)  # the same filters come back page after page
def _digest(filters: str) -> bytes:
    return hashlib.sha256(filters.encode()).digest()[:_DIGEST_SIZE]
