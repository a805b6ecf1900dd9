"""Disabling a user (``users disable``) and enabling them again (``users enable``).

A disabled user keeps their account, memberships and password, but nothing works for them: the flag is
set first, so no grant issues a token from then on (``UserStore.member`` answers None, and the sign-in flow
refuses); then every browser session ends and every refresh and access token is revoked in one
transaction (``Revoker.revoke_user``, which also tells the clients that registered a back-channel
logout URI). A token that was being issued at that very moment is revoked by the grant's own check after
issuing (``identity.grants.revoke_if_raced``: its session has ended). Introspection answers
``active: false`` and userinfo ``invalid_token``; the member directory no longer lists the user.

Enabling lets the user sign in again; the tokens revoked when they were disabled stay revoked.
"""

from __future__ import annotations

from identity import audit
from identity.revoked_grants import Revoker
from identity.users import UserStore


def disable(users: UserStore, revoker: Revoker, user_id: str) -> bool:
    """Disable the user and end everything they are signed in with; False when they were disabled already
    (their sessions and tokens are ended again all the same). Audited."""
    changed = users.set_disabled(user_id, True)
    revoker.revoke_user(user_id)
    if changed:
        audit.record(audit.USER_DISABLED, user_id=user_id)
    return changed


def enable(users: UserStore, user_id: str) -> bool:
    """Let the user sign in again; False when they were not disabled. Audited."""
    changed = users.set_disabled(user_id, False)
    if changed:
        audit.record(audit.USER_ENABLED, user_id=user_id)
    return changed
