"""``INSERT … ON CONFLICT`` in the dialect of the connection at hand (SQLite or PostgreSQL).

The way to write a unique row that may not exist yet, when several requests (or nodes) may write it at once: one
statement, never a read and then an insert (which meets the primary key, or loses a write). CONTRIBUTING.md,
"Stores under concurrency", says which pattern fits which store.
"""

from __future__ import annotations

from typing import Any


def dialect_insert(dialect: str) -> Any:
    """The ``insert`` of ``dialect`` (its ``ON CONFLICT``): the dialect's module is imported when first needed, so
    a process on SQLite never loads SQLAlchemy's PostgreSQL dialect (start-up time)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert
    from sqlalchemy.dialects import sqlite

    return sqlite.insert
