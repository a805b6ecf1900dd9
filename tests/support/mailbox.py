"""The mail an app has written to its outbox, read as its recipient would: the rows of ``mail_outbox`` opened
with the app's own sealer (``MENUS_SECRET_KEYS``, or the key file beside a SQLite database), whether or not the
app's worker has sent them yet. A test takes a mailed link from the mail itself, never by replacing the code
that made it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload
from urllib.parse import parse_qs, urlsplit

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from identity.common.tables import email_links, mail_outbox
from service.database.sealing_keys import load_sealer
from service.settings import Settings


@dataclass(frozen=True)
class Mailed:
    kind: str
    recipient: str
    params: dict[str, str]


@dataclass(frozen=True)
class Link:
    """A single-use link as mailed: its token, and what its row says it is for."""

    token: str
    user_id: str
    interaction_id: str | None  # the sign-in it resumes, if any


def mails(engine: Engine, settings: Settings, kind: str | None = None) -> list[Mailed]:
    """Every mail in the outbox, oldest first, its template's values opened."""
    sealer = load_sealer(settings.secret_keys, settings.database_url)
    query = sa.select(mail_outbox.c.kind, mail_outbox.c.recipient, mail_outbox.c.params).order_by(
        mail_outbox.c.created_at, mail_outbox.c.id
    )
    if kind is not None:
        query = query.where(mail_outbox.c.kind == kind)
    with engine.connect() as connection:
        rows = connection.execute(query).all()
    opened = []
    for row in rows:
        params = row.params
        if "sealed" in params:
            params = json.loads(sealer.open(params["sealed"].encode("ascii")))
        opened.append(Mailed(row.kind, row.recipient, dict(params)))
    return opened


class MailedLinks(Sequence[Link]):
    """The links of one kind of mail (``verify_email``, ``reset_password``), read afresh at each look."""

    def __init__(self, engine: Engine, settings: Settings, kind: str) -> None:
        self._engine, self._settings, self._kind = engine, settings, kind

    def _read(self) -> list[Link]:
        found = []
        for mail in mails(self._engine, self._settings, self._kind):
            [token] = parse_qs(urlsplit(mail.params["link"]).query)["token"]
            with self._engine.connect() as connection:
                row = connection.execute(
                    sa.select(email_links.c.user_id, email_links.c.interaction_id).where(
                        email_links.c.token_hash == hashlib.sha256(token.encode()).hexdigest()
                    )
                ).one()
            found.append(Link(token, row.user_id, row.interaction_id))
        return found

    @overload
    def __getitem__(self, index: int) -> Link: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Link]: ...

    def __getitem__(self, index: Any) -> Any:
        return self._read()[index]

    def __len__(self) -> int:
        return len(self._read())

    def __iter__(self) -> Iterator[Link]:
        return iter(self._read())

    def __eq__(self, other: object) -> bool:
        return self._read() == list(other) if isinstance(other, Sequence) else NotImplemented

    def __repr__(self) -> str:
        return repr(self._read())
