"""Password hashing with Argon2id at OWASP's recommended parameters.

OWASP Password Storage Cheat Sheet: Argon2id, m=19 MiB, t=2, p=1.

The hashing is a value its users are given (``UserStore(hashing=…)``, ``Provider(password_hashing=…)``): the
service always uses ``OWASP_ARGON2ID``; a test that signs in thousands of times hands in a cheaper one, and a test
about the hashing itself counts what it is asked, without replacing anything in this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

MIN_LENGTH = 8
MAX_LENGTH = 1024  # bounds the work an attacker can ask for
DUMMY_PASSWORD = "not a real password"  # the password of each hashing's stand-in hash (below)


class Hasher(Protocol):
    """What the store asks of argon2-cffi's ``PasswordHasher``."""

    def hash(self, password: str) -> str: ...

    def verify(self, hash: str, password: str) -> bool: ...  # noqa: A002 (argon2-cffi's own name)


@dataclass(frozen=True, slots=True)
class PasswordHashing:
    """A hasher and its stand-in hash: the hash of ``DUMMY_PASSWORD`` at the hasher's parameters, verified
    against when no account has the address, so that the answer takes as long either way."""

    hasher: Hasher
    dummy_hash: str

    @classmethod
    def of(cls, hasher: Hasher) -> PasswordHashing:
        """A hashing whose stand-in hash is computed now (one hash at the hasher's cost)."""
        return cls(hasher, hasher.hash(DUMMY_PASSWORD))

    def hash(self, password: str) -> str:
        check_strength(password)
        return self.hasher.hash(password)

    def verify(self, stored_hash: str | None, password: str) -> bool:
        """True when ``password`` matches; with no stored hash, or one that stands for no password (``!…``: an
        account that signs in through its organization's provider), spend the same time and answer False."""
        if len(password) > MAX_LENGTH:
            return False
        if stored_hash is not None and stored_hash.startswith("!"):
            stored_hash = None
        try:
            return self.hasher.verify(stored_hash or self.dummy_hash, password) and stored_hash is not None
        except (VerificationError, InvalidHashError):
            return False


# The service's hashing. Its stand-in hash is written out rather than computed by every process at import (one
# Argon2 hash, 19 MiB and 50 ms of its start-up); tests/unit/test_identity_core.py checks that it verifies at
# these parameters.
OWASP_ARGON2ID = PasswordHashing(
    PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1),
    "$argon2id$v=19$m=19456,t=2,p=1$2h3JdFGjiAjFKcRHplcwmg$gAeWo/foyjUi3VmWi5NH6XtdMA6BvS7WdHgFruUrnpc",
)


class WeakPassword(ValueError):
    pass


def check_strength(password: str) -> None:
    if not MIN_LENGTH <= len(password) <= MAX_LENGTH:
        raise WeakPassword(f"the password must be {MIN_LENGTH} to {MAX_LENGTH} characters")
