"""Secrets at rest: signing keys and service secrets are sealed with the operator's keys before they are stored.

``cryptography``'s Fernet (AES-128-CBC with HMAC-SHA256, a timestamped and authenticated token) under
MultiFernet: the first key seals, every key opens, so keys rotate without a flag day (as Ory Hydra's
system secret does). A database from before sealing holds clear values: ``open`` hands those back as they
are, and the start-up step and ``secrets rotate`` seal them. A sealed value is a Fernet token, which always
starts with the version byte 0x80 (``gAAAAA`` once base64-encoded); a PEM starts with ``-----BEGIN``, and a
32-byte random secret starts with those six characters once in 2**48.
"""

from __future__ import annotations

from collections.abc import Sequence

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

TOKEN_PREFIX = b"gAAAAA"


class SealingError(RuntimeError):
    """A sealed value that none of the keys opens: the operator's keys are not the ones it was sealed with."""


class Sealer:
    def __init__(self, keys: Sequence[bytes | str]) -> None:
        if not keys:
            raise ValueError("at least one key is needed")
        self._fernet = MultiFernet([Fernet(key) for key in keys])

    @staticmethod
    def is_sealed(stored: bytes) -> bool:
        return stored.startswith(TOKEN_PREFIX)

    def seal(self, clear: bytes) -> bytes:
        return self._fernet.encrypt(clear)

    def open(self, stored: bytes) -> bytes:
        """The clear value: a sealed one opened with whichever key sealed it, a clear one as it is."""
        if not self.is_sealed(stored):
            return stored
        try:
            return self._fernet.decrypt(stored)
        except InvalidToken:
            raise SealingError(
                "a stored secret does not open with any key of MENUS_SECRET_KEYS (or the key file): "
                "set the keys it was sealed with"
            ) from None

    def resealed(self, stored: bytes, *, rotate: bool) -> bytes | None:
        """The value to store instead of ``stored``, or None when it is fine as it is.

        A clear value is sealed; with ``rotate``, a sealed one is sealed again with the first key.
        """
        if not self.is_sealed(stored):
            return self.seal(stored)
        if not rotate:
            return None
        try:
            return self._fernet.rotate(stored)
        except InvalidToken:
            raise SealingError("a stored secret does not open with any key of MENUS_SECRET_KEYS") from None


def new_key() -> str:
    """A fresh key for MENUS_SECRET_KEYS (32 random bytes, URL-safe base64)."""
    return Fernet.generate_key().decode()
