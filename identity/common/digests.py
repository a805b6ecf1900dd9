"""The SHA-256 digest, in hex, under which a secret the provider hands out is stored and found again.

Authorization codes, refresh tokens, client secrets, API keys and the session, interaction and console
cookies are random and long, so a fast unsalted digest keeps them safe at rest (passwords, which people
choose, get Argon2: ``identity.accounts.passwords``). The sign-in throttle keys its counters by the digest of an
email address, so that none is kept in the clear.
"""

import hashlib


def sha256_hex(text: str) -> str:
    """The SHA-256 digest of ``text``'s UTF-8 bytes, as 64 lowercase hex digits."""
    return hashlib.sha256(text.encode()).hexdigest()
