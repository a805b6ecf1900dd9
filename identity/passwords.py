"""Password hashing with Argon2id at OWASP's recommended parameters.

OWASP Password Storage Cheat Sheet: Argon2id, m=19 MiB, t=2, p=1.
"""

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

MIN_LENGTH = 8
MAX_LENGTH = 1024  # bounds the work an attacker can ask for

_hasher = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)
# Verified against when the account does not exist, so the answer takes as long either way: the hash of
# "not a real password" at ``_hasher``'s parameters, written out rather than computed by every process at import
# (one Argon2 hash, 19 MiB and 50 ms of its start-up). tests/unit/test_identity_core.py checks that it verifies
# at these parameters.
_DUMMY_HASH = "$argon2id$v=19$m=19456,t=2,p=1$2h3JdFGjiAjFKcRHplcwmg$gAeWo/foyjUi3VmWi5NH6XtdMA6BvS7WdHgFruUrnpc"


class WeakPassword(ValueError):
    pass


def check_strength(password: str) -> None:
    if not MIN_LENGTH <= len(password) <= MAX_LENGTH:
        raise WeakPassword(f"the password must be {MIN_LENGTH} to {MAX_LENGTH} characters")


def hash_password(password: str) -> str:
    check_strength(password)
    return _hasher.hash(password)


def verify_password(stored_hash: str | None, password: str) -> bool:
    """True when ``password`` matches; with no stored hash, spend the same time and answer False."""
    if len(password) > MAX_LENGTH:
        return False
    try:
        return _hasher.verify(stored_hash or _DUMMY_HASH, password) and stored_hash is not None
    except (VerificationError, InvalidHashError):
        return False
