"""The sign-in throttle's bound per network (``identity/accounts/throttle.py``), driven to its end."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from identity.common.errors import Throttled
from tests.support.defaults import ADDRESS_LIMIT


def assert_network_bounded(ask: Callable[[str, str], object], address: str) -> None:
    """From ``address``, ``ask`` (email, address) succeeds for as many accounts as a network's bound allows; the
    next account's is refused."""
    for n in range(ADDRESS_LIMIT):
        ask(f"user{n}@example.com", address)
    with pytest.raises(Throttled):
        ask("new@example.com", address)
