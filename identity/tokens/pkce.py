"""Proof Key for Code Exchange (RFC 7636), S256 only.

RFC 7636 §4.2: the challenge is BASE64URL(SHA-256(ASCII(code_verifier))), 43
characters. ``plain`` is refused, and so is a challenge without a method, which
§4.3 reads as ``plain``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re

METHOD = "S256"
VERIFIER = re.compile(r"[A-Za-z0-9\-._~]{43,128}")  # RFC 7636 §4.1
CHALLENGE = re.compile(r"[A-Za-z0-9\-_]{43}")


def challenge_of(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def verifies(verifier: str, challenge: str) -> bool:
    """True when ``verifier`` is well formed and hashes to ``challenge`` (constant-time)."""
    if not VERIFIER.fullmatch(verifier):
        return False
    return hmac.compare_digest(challenge_of(verifier), challenge)
