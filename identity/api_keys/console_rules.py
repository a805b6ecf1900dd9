"""The developer console's rules: what a member of an organization sees of its API keys and may do with them.

Every member sees the organization's keys and their usage; owners and admins create and revoke
them (``MANAGING_ROLES``); anyone else is refused with ``NotAllowed``. A key of another
organization, or of none, is unknown here, whatever its id. Roles are read from the database on
every call, so a member removed or demoted loses the rights at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from identity.accounts.users import UserStore
from identity.api_keys.keys import ApiKey, ApiKeyStore, UnknownApiKey
from identity.api_keys.usage import DailyUsage, KeyUsage, UsageReport
from identity.common.tables import clients, users

MANAGING_ROLES = frozenset({"owner", "admin"})


class NotAllowed(PermissionError):
    """The member's role does not allow this; the message is safe to show."""


class NotAMember(PermissionError):
    """The user is no longer a member of the organization (or no longer exists)."""


@dataclass(frozen=True, slots=True)
class Member:
    user_id: str
    name: str
    email: str
    org_id: str
    org_name: str
    role: str

    @property
    def manages_keys(self) -> bool:
        return self.role in MANAGING_ROLES


@dataclass(frozen=True, slots=True)
class KeyRow:
    key: ApiKey
    created_by: str | None  # the creator's name; None when made at the command line or the user is gone
    usage: KeyUsage


@dataclass(frozen=True, slots=True)
class KeysView:
    member: Member
    keys: list[KeyRow]
    daily: list[DailyUsage]

    @property
    def has_keys(self) -> bool:
        return bool(self.keys)


class Console:
    def __init__(self, engine: Engine, keys: ApiKeyStore, users: UserStore, usage: UsageReport) -> None:
        self._engine = engine
        self._keys = keys
        self._users = users
        self._usage = usage

    def member(self, user_id: str, org_id: str) -> Member:
        found = self._users.member(user_id, org_id)
        if found is None:
            raise NotAMember(user_id)
        user, membership = found
        return Member(user.id, user.name, user.email, org_id, membership.org.name, membership.role)

    def keys(self, member: Member) -> KeysView:
        records = self._keys.list(org_id=member.org_id)
        names = self._names({r.created_by for r in records if r.created_by})
        usage = self._usage.per_key(member.org_id)
        none = KeyUsage(0, 0)
        rows = [
            KeyRow(r, names.get(r.created_by) if r.created_by else None, usage.get(r.id, none))
            for r in reversed(records)  # newest first
        ]
        return KeysView(member, rows, self._usage.daily(member.org_id))

    def key(self, member: Member, key_id: str) -> ApiKey:
        """A key of the member's organization; ``UnknownApiKey`` for any other id."""
        return self._keys.get(key_id, org_id=member.org_id)

    def create_key(self, member: Member, name: str) -> tuple[ApiKey, str]:
        """Owners and admins: a new key of their organization; the key itself is returned this once."""
        self._require_manager(member, "create")
        return self._keys.create(name, org_id=member.org_id, created_by=member.user_id)

    def revoke_key(self, member: Member, key_id: str) -> ApiKey:
        """Owners and admins: revoke a key of their organization at once (every node reads the database)."""
        self._require_manager(member, "revoke")
        return self._keys.revoke(key_id, org_id=member.org_id, by=member.user_id)

    @staticmethod
    def _require_manager(member: Member, action: str) -> None:
        if not member.manages_keys:
            raise NotAllowed(f"Only an owner or an admin of {member.org_name} may {action} API keys.")

    def names(self, ids: set[str]) -> dict[str, str]:
        """The names of the users and clients among ``ids`` (the audit trail's page shows them)."""
        found = self._names({i for i in ids if i.startswith("usr_")})
        client_ids = {i for i in ids if i.startswith("cli_")}
        if client_ids:
            with self._engine.connect() as connection:
                rows = connection.execute(sa.select(clients.c.id, clients.c.name).where(clients.c.id.in_(client_ids)))
                found.update({row.id: row.name for row in rows})
        return found

    def _names(self, user_ids: set[str]) -> dict[str, str]:
        if not user_ids:
            return {}
        with self._engine.connect() as connection:
            rows = connection.execute(sa.select(users.c.id, users.c.name).where(users.c.id.in_(user_ids)))
            return {row.id: row.name for row in rows}


__all__ = ["Console", "KeyRow", "KeysView", "Member", "NotAMember", "NotAllowed", "UnknownApiKey"]
