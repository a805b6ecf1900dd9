"""What an authorization grants, as one record value (RFC 6749 §1.3; fosite passes one ``Requester``).

An authorization code, and every refresh token of the family it starts, stand for the same grant: a user of an
organization, signed in at ``auth_time`` in a browser session, allowed ``scope`` for a client. The records of
``identity/codes.py`` and ``identity/refresh_tokens.py`` extend this value; the caller builds it once and the
store takes it whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class Granted:
    grant_id: str  # the family: every token issued from one authorization shares it
    client_id: str
    user_id: str
    org_id: str
    session_id: str
    scope: tuple[str, ...]
    auth_time: datetime
