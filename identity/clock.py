"""Time and identifiers, in one place so tests can reason about them."""

import secrets
from datetime import UTC, datetime


def now() -> datetime:
    return datetime.now(UTC)


def utc(moment: datetime) -> datetime:
    """SQLite returns naive datetimes; every stored time is UTC."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def new_id(prefix: str) -> str:
    """A random public identifier such as ``org_5f3a9c0e1b2d4f67``."""
    return f"{prefix}_{secrets.token_hex(8)}"
