"""The apps the tests build: ``service.app.create_app`` with the three parts whose real cost every test would
otherwise pay again and that no test of an app's behaviour needs new:

- ``password_hashing``: Argon2id at its lowest cost (``FAST_HASHING``), not the service's 19 MiB and two passes;
- ``new_signing_key``: the process's keys made once (``KEYS_MADE_ONCE``; a new RSA key is 0.1 s of CPU);
- ``engine``: on the process's state database, a copy of the engine the apps keep on it (``tests/support/engines.py``:
  its statements compiled once a process, not once an app).

A test passes any part itself to use another (a hasher that counts its calls, the service's own keys). The
tests of the service's hashing parameters and of its keys' rotation use the product's parts directly
(``tests/unit/test_identity_core.py``), and every server the tests start runs as users run it
(``tests/support/live.py``).
"""

from __future__ import annotations

from typing import Any

from service.app import Dispatcher, create_app
from service.settings import Settings
from tests.support.engines import APPS, KEPT
from tests.support.passwords import FAST_HASHING
from tests.support.signing_keys import KEYS_MADE_ONCE


def make_app(settings: Settings | None = None, **parts: Any) -> Dispatcher:
    """``create_app(settings, **parts)``, with ``FAST_HASHING``, ``KEYS_MADE_ONCE`` and the kept engine unless
    ``parts`` name others."""
    parts.setdefault("password_hashing", FAST_HASHING)
    parts.setdefault("new_signing_key", KEYS_MADE_ONCE)
    if settings is not None and "engine" not in parts:
        kept = KEPT.copy(settings.database_url, settings.database_pool(), user=APPS)
        if kept is not None:
            parts["engine"] = kept
    return create_app(settings, **parts)
