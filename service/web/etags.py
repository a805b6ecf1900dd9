"""Strong entity tags and ``If-None-Match`` (RFC 9110 §8.8.3, §13.1.2), shared by the APIs and their documents."""

from __future__ import annotations

import hashlib


def strong_etag(body: bytes) -> bytes:
    """A strong ETag for ``body``: its BLAKE2b-128 digest in hex, quoted."""
    return b'"' + hashlib.blake2b(body, digest_size=16).hexdigest().encode() + b'"'


def none_match(if_none_match: bytes, etag: bytes) -> bool:
    """RFC 9110 §13.1.2: ``*`` alone, or weak comparison against each listed tag (True: answer 304)."""
    if if_none_match.strip() == b"*":
        return True
    return any(tag.strip().removeprefix(b"W/") == etag for tag in if_none_match.split(b","))
