"""An organization's API keys of the menus API, as its owners and admins (and its clients with ``manage:keys``)
make and revoke them: ``identity.api_keys`` does the work, this writes the organization's trail beside it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from cursors import CursorCodec
from identity.api_keys.keys import ApiKey, ApiKeyStore, UnknownApiKey
from identity.organizations import rules, trail
from identity.organizations.actors import Actor
from identity.organizations.trail import Trail


def as_dict(key: ApiKey) -> dict[str, Any]:
    """The management API's ``ApiKey``."""

    def iso(moment: Any) -> str | None:
        return moment.isoformat().replace("+00:00", "Z") if moment else None

    return {
        "id": key.id,
        "name": key.name,
        "prefix": key.prefix,
        "state": key.state,
        "created_at": iso(key.created_at),
        "revoked_at": iso(key.revoked_at),
        "last_used_at": iso(key.last_used_at),
    }


@dataclass(frozen=True, slots=True)
class KeyPage:
    keys: list[ApiKey]
    total: int
    next_cursor: str | None


class OrganizationKeys:
    def __init__(self, keys: ApiKeyStore, journal: Trail, cursor_key: bytes) -> None:
        self._keys = keys
        self._trail = journal
        self._cursors = CursorCodec(cursor_key)

    def page(self, org_id: str, *, limit: int = 20, cursor: str | None = None) -> KeyPage:
        """Oldest first, revoked keys included."""
        every = self._keys.list(org_id=org_id)
        filters = f"keys|{org_id}"
        start = 0
        if cursor is not None:
            created, key_id = self._cursors.decode(cursor, filters)
            later = [i for i, k in enumerate(every) if (k.created_at.isoformat(), k.id) > (created, key_id)]
            start = later[0] if later else len(every)
        chosen = every[start : start + limit]
        next_cursor = None
        if start + limit < len(every) and chosen:
            next_cursor = self._cursors.encode((chosen[-1].created_at.isoformat(), chosen[-1].id), filters)
        return KeyPage(chosen, len(every), next_cursor)

    def get(self, org_id: str, key_id: str) -> ApiKey:
        try:
            return self._keys.get(key_id, org_id=org_id)
        except UnknownApiKey:
            raise rules.Unknown("The organization has no API key with this id.") from None

    def create_in(self, connection: Connection, actor: Actor, name: str) -> tuple[ApiKey, str, trail.Written]:
        """In the caller's transaction (begun as a writer): a new key, the key itself (shown once), the trail entry."""
        rules.require_manager(actor, "create API keys")
        record, key = self._keys.create_in(connection, name, org_id=actor.org_id, created_by=actor.user_id)
        return record, key, self._trail.record(connection, actor, trail.API_KEY_CREATED, record.id, name=record.name)

    def create(self, actor: Actor, name: str) -> tuple[ApiKey, str]:
        with self._keys.transaction() as connection:
            record, key, written = self.create_in(connection, actor, name)
        self.created(record)
        trail.logged(written)
        return record, key

    def created(self, record: ApiKey) -> None:
        """After the commit of ``create_in``'s transaction: the key's audit line (``api_key_created``)."""
        self._keys.created(record)

    def revoke(self, actor: Actor, key_id: str) -> ApiKey:
        """The key revoked and its trail entry, in one transaction (a key revoked already: no entry again)."""
        rules.require_manager(actor, "revoke API keys")
        written = None
        with self._keys.transaction() as connection:
            try:
                record, now = self._keys.revoke_in(connection, key_id, org_id=actor.org_id)
            except UnknownApiKey:
                raise rules.Unknown("The organization has no API key with this id.") from None
            if now:
                written = self._trail.record(connection, actor, trail.API_KEY_REVOKED, key_id, name=record.name)
        self._keys.revoked(record, now, by=actor.user_id)
        if written is not None:
            trail.logged(written)
        return record
