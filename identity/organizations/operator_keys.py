"""The operator's API keys (the command line's ``api-keys create --org`` and ``api-keys revoke``): a key of an
organization made or revoked there enters that organization's trail, actor the command line, in the transaction
that makes or revokes it, as one made in the console or by the management API does (``keys.py``). A key of no
organization (made before ownership existed, or without ``--org``) has no trail to enter."""

from __future__ import annotations

from identity.api_keys.keys import ApiKey, ApiKeyStore
from identity.organizations import trail
from identity.organizations.actors import Actor


def create(keys: ApiKeyStore, name: str, org_id: str | None) -> tuple[ApiKey, str]:
    """A new key (of ``org_id`` when given) and the key itself, shown once."""
    written = None
    with keys.transaction() as connection:
        record, key = keys.create_in(connection, name, org_id=org_id)
        if org_id is not None:
            operator = Actor.command_line(org_id)
            at = record.created_at
            written = trail.entry_in(connection, operator, trail.API_KEY_CREATED, at, record.id, name=record.name)
    keys.created(record)
    if written is not None:
        trail.logged(written)
    return record, key


def revoke(keys: ApiKeyStore, key_id: str) -> tuple[ApiKey, bool]:
    """The key revoked, and whether it was revoked already (then nothing is written again). ``UnknownApiKey``."""
    written = None
    with keys.transaction() as connection:
        record, now = keys.revoke_in(connection, key_id)
        if now and record.org_id is not None and record.revoked_at is not None:
            operator = Actor.command_line(record.org_id)
            at = record.revoked_at
            written = trail.entry_in(connection, operator, trail.API_KEY_REVOKED, at, key_id, name=record.name)
    keys.revoked(record, now)
    if written is not None:
        trail.logged(written)
    return record, not now
