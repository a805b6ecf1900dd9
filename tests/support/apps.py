"""The apps the tests build: ``service.app.create_app`` with the two parts whose real cost every test would
otherwise pay again and that no test of an app's behaviour needs new:

- ``password_hashing``: Argon2id at its lowest cost (``FAST_HASHING``), not the service's 19 MiB and two passes;
- ``new_signing_key``: the process's keys made once (``KEYS_MADE_ONCE``; a new RSA key is 0.1 s of CPU).

A test passes either part itself to use another (a hasher that counts its calls, the service's own keys). The
tests of the service's hashing parameters and of its keys' rotation use the product's parts directly
(``tests/unit/test_identity_core.py``), and every server the tests start runs as users run it
(``tests/support/live.py``).
"""

from __future__ import annotations

from typing import Any

from service.app import Dispatcher, create_app
from service.settings import Settings
from tests.support.passwords import FAST_HASHING
from tests.support.signing_keys import KEYS_MADE_ONCE


def make_app(settings: Settings | None = None, **parts: Any) -> Dispatcher:
    """``create_app(settings, **parts)``, with ``FAST_HASHING`` and ``KEYS_MADE_ONCE`` unless ``parts`` name others."""
    parts.setdefault("password_hashing", FAST_HASHING)
    parts.setdefault("new_signing_key", KEYS_MADE_ONCE)
    return create_app(settings, **parts)
