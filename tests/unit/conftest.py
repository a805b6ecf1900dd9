"""Fixtures of the unit tests of the organizations' records: a clock held still, and the trail written on it."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine

from identity.organizations.trail import Trail
from tests.support.clocks import MovableClock


@pytest.fixture
def held_clock() -> MovableClock:
    """A clock that moves only when the test moves it (entries written in a row share their second)."""
    clock = MovableClock()
    clock.hold()
    return clock


@pytest.fixture
def held_journal(engine: Engine, held_clock: MovableClock) -> Trail:
    """The organizations' audit trail on the test's database, on ``held_clock``."""
    return Trail(engine, b"k" * 32, held_clock)
