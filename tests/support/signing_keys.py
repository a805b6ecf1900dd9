"""RSA keys for the signing keys of the apps the tests build (``create_app(new_signing_key=KEYS_MADE_ONCE)``): a
new 2048-bit key costs about 0.1 s of CPU, and the API tests build an app, which makes its first key, a thousand
times and more. Each process makes ``KEPT`` keys as it first needs them and then hands them out again in turn, so
any ``KEPT`` keys asked for in a row all differ: a test's key rotations still give new keys, and two apps of one
test have keys of their own. The servers the tests start (``tests/support/live.py``) and the tests of key creation
make new keys, as the service always does (``identity.keys.signing_keys.new_private_key``)."""

from __future__ import annotations

import threading

from cryptography.hazmat.primitives.asymmetric import rsa

from identity.keys.signing_keys import new_private_key

KEPT = 16  # more than any test asks for (a few rotations, two or three apps)


class KeysMadeOnce:
    def __init__(self, kept: int = KEPT) -> None:
        self._kept = kept
        self._keys: list[rsa.RSAPrivateKey] = []
        self._handed = 0
        self._lock = threading.Lock()  # apps rotate keys from their own threads too

    def __call__(self) -> rsa.RSAPrivateKey:
        with self._lock:
            if len(self._keys) < self._kept:
                self._keys.append(new_private_key())
            key = self._keys[self._handed % self._kept]
            self._handed += 1
            return key


KEYS_MADE_ONCE = KeysMadeOnce()
