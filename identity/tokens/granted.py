"""What an authorization grants, as one record value (RFC 6749 §1.3; fosite passes one ``Requester``).

An authorization code, and every refresh token of the family it starts, stand for the same grant: a user of an
organization, signed in at ``auth_time`` in a browser session under a credential version, allowed ``scope`` for a
client. The records of ``identity/tokens/codes.py`` and ``identity/tokens/refresh_tokens.py`` extend this value; the
caller builds it once and the store takes it whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from identity.common.clock import utc


@dataclass(frozen=True, slots=True)
class Granted:
    grant_id: str  # the family: every token issued from one authorization shares it
    client_id: str
    user_id: str
    org_id: str
    session_id: str
    scope: tuple[str, ...]
    auth_time: datetime
    credential_version: int  # the user's credential version its session's sign-in verified (identity/accounts/users.py)
    # how its session's sign-in was made (identity/sessions/sessions.py: pwd or fed), for the amr and acr claims
    amr: str = field(default="pwd", kw_only=True)


GRANTED_FIELDS = tuple(item.name for item in fields(Granted))


def granted_fields(granted: Granted) -> dict[str, Any]:
    """The grant's own fields of ``granted`` (a record that extends it, or the grant itself)."""
    return {name: getattr(granted, name) for name in GRANTED_FIELDS}


def granted_columns(granted: Granted) -> dict[str, Any]:
    """The columns a record of the grant is written with: the scope space-separated (RFC 6749 §3.3)."""
    return {**granted_fields(granted), "scope": " ".join(granted.scope)}


def granted_of_row(row: Any) -> dict[str, Any]:
    """The grant's fields of a row written with ``granted_columns``."""
    return {
        **{name: getattr(row, name) for name in GRANTED_FIELDS},
        "scope": tuple(row.scope.split()),
        "auth_time": utc(row.auth_time),
        "credential_version": int(row.credential_version),
    }
