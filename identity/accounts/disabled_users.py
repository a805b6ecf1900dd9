"""Disabling a user (``users disable``) and enabling them again (``users enable``).

A disabled user keeps their account, memberships and password, but nothing works for them. In one transaction
the flag is set, the user's credential version moves on (identity/accounts/users.py), every browser session ends and
every refresh and access token is revoked (``Revoking.revoke_user_in``, which also tells the clients that registered a
back-channel logout URI). A sign-in racing the disable cannot start a session under the old version, and a code
or token issued at that very moment carries the old version, which every grant, userinfo and introspection
refuse (docs/identity.md, "Credential versions"). Introspection answers ``active: false`` and userinfo
``invalid_token``; the member directory no longer lists the user.

Enabling lets the user sign in again; the tokens revoked when they were disabled stay revoked.
"""

from __future__ import annotations

from identity.accounts.ending import Revoking
from identity.accounts.users import UserStore
from identity.common import audit


def disable(users: UserStore, revoker: Revoking, user_id: str) -> bool:
    """Disable the user and end everything they are signed in with; False when they were disabled already
    (their sessions and tokens are ended again all the same). Audited."""
    with users.transaction() as connection:
        changed = users.set_disabled(connection, user_id, True)
        told = revoker.revoke_user_in(connection, user_id)
    revoker.written(told)
    if changed:
        audit.record(audit.USER_DISABLED, user_id=user_id)
    return changed


def enable(users: UserStore, user_id: str) -> bool:
    """Let the user sign in again; False when they were not disabled. Audited."""
    with users.transaction() as connection:
        changed = users.set_disabled(connection, user_id, False)
    if changed:
        audit.record(audit.USER_ENABLED, user_id=user_id)
    return changed
