"""The unit of work of a token or introspection request: one value, passed explicitly to the grant, the token
minter, the verifier and the access token store (as fosite's ``Requester`` is to its storage, with
``storage.Transactional`` for the transaction), instead of a mode switched on in the thread.

It carries:

- ``read``: the access token records read together with those of the requests run in the same row (one SQL
  statement for all: ``TokenWork.open``), each read after its request came in;
- ``issued``: the access token records a ``client_credentials`` exchange issues, written when the unit commits
  (``TokenWork.commit``: one transaction and one commit for every unit of the row, each record only while its
  client is registered and holds its secret);
- ``events``: the audit events of what it issued, written only once its records are (a token refused at commit
  is never handed out, nor logged as issued).

The workers that run the requests (service/web/offload.py) open the units of a row, run each call with its
own, and commit them after the last call, before any answer goes back.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from identity.common import audit
from identity.tokens.access_tokens import AccessTokenRecord, AccessTokenStore

Event = tuple[contextvars.Context, str, str, Mapping[str, str]]


@dataclass(eq=False, slots=True)
class UnitOfWork:
    read: Mapping[str, AccessTokenRecord | None] = field(default_factory=dict)
    issued: list[tuple[AccessTokenRecord, str | None]] = field(default_factory=list)  # (record, secret hash)
    events: list[Event] = field(default_factory=list)

    def issue(self, record: AccessTokenRecord, secret_hash: str | None) -> None:
        """The record of a token to write at commit (only while its client holds ``secret_hash``)."""
        self.issued.append((record, secret_hash))

    def record(self, event: str, outcome: str = audit.SUCCESS, **fields: str | None) -> None:
        """An audit event written once the unit's records are, in the context (request id) it happened in."""
        self.events.append((contextvars.copy_context(), event, outcome, audit.checked(event, fields)))

    def write_events(self) -> None:
        for context, event, outcome, present in self.events:
            context.run(audit.write, event, outcome, present)


class TokenWork:
    """Opens and commits the units of work of the token and introspection requests a worker runs in a row."""

    def __init__(self, access_tokens: AccessTokenStore, jti_of: Callable[[str], str | None]) -> None:
        self._access_tokens = access_tokens
        self._jti_of = jti_of  # the verifier's: the jti a token of ours proves, or None

    def open(self, tokens: Sequence[str | None]) -> list[UnitOfWork]:
        """One unit per call; the records of the access tokens among ``tokens`` (the introspected ones) read
        together when two or more calls introspect one (a client introspecting one token again and again is one
        record read once for the row). If that read fails, each call reads on its own."""
        jtis = {jti for jti in map(self._jti, tokens) if jti is not None}
        read: Mapping[str, AccessTokenRecord | None] = {}
        if jtis and len(tokens) > 1:
            try:
                read = self._access_tokens.read(jtis)
            except Exception:  # noqa: BLE001 - each call then reads on its own, and meets the error in its form
                read = {}
        return [UnitOfWork(read=read) for _ in tokens]

    def _jti(self, token: str | None) -> str | None:
        return None if token is None else self._jti_of(token)

    def commit(self, units: Sequence[UnitOfWork]) -> list[Exception | None]:
        """Write the records of ``units`` in one transaction, then the events of those written: for each unit,
        None, or why its tokens are not issued (``InvalidClient``, or the database's error for all)."""
        refused = self._access_tokens.commit([unit.issued for unit in units])
        for index, unit in enumerate(units):
            if refused[index] is None:
                unit.write_events()
        return refused
