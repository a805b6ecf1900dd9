"""Argon2id at its lowest cost, handed to the stores and apps of the tests that are not about hashing (they
sign in thousands of times). A hash made with it still verifies as any Argon2id hash does: its parameters are
in the hash itself. Servers the tests start (``tests/support/live.py``) keep the service's own hashing, and the
tests about hashing use ``identity.accounts.passwords.OWASP_ARGON2ID``."""

from __future__ import annotations

from argon2 import PasswordHasher

from identity.accounts.passwords import PasswordHashing

FAST_HASHING = PasswordHashing.of(PasswordHasher(time_cost=1, memory_cost=8, parallelism=1))
