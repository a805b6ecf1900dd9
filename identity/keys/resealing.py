"""Sealing what is stored in clear, row by row: the start-up step and ``secrets rotate`` for the signing keys
(``identity/keys/signing_keys.py``) and the service's own secrets (``service/database``). Apart from
``identity/keys/sealing.py`` so that a command that only makes a key imports no SQLAlchemy."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from identity.keys.sealing import Sealer


def reseal_column(engine: Engine, sealer: Sealer, key: sa.Column[str], sealed: sa.Column[Any], *, rotate: bool) -> int:
    """Seal the values of ``sealed`` stored in clear (with ``rotate``, every value again with the first key); how
    many rows changed. ``key`` names the row; ``sealed`` holds bytes or, when it is a string column, ASCII text.

    Each row changes only if it still holds what was read (compare-and-set): several nodes may run this at
    once, and running it again changes nothing.
    """
    as_text = isinstance(sealed.type, sa.String)
    changed = 0
    with engine.connect() as connection:
        rows = connection.execute(sa.select(key, sealed)).all()
    for name, value in rows:
        resealed = sealer.resealed(value.encode() if as_text else bytes(value), rotate=rotate)
        if resealed is None:
            continue
        with engine.begin() as connection:
            result = connection.execute(
                sa.update(sealed.table)
                .where(key == name, sealed == value)
                .values({sealed.name: resealed.decode() if as_text else resealed})
            )
        changed += result.rowcount
    return changed
