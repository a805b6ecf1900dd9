"""Grants of the token endpoint, one small unit each, picked by ``grant_type``.

Each grant reads the parameters it needs, validates them, and answers a token
response (RFC 6749 §5.1) or raises an ``OAuthError`` (§5.2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from identity.accounts.users import Membership, User, UserStore
from identity.clients.registry import Client
from identity.common import audit
from identity.common.errors import InvalidGrant, InvalidRequest
from identity.sessions.sessions import SessionStore
from identity.tokens.granted import Granted
from identity.tokens.minting import Issued
from identity.tokens.revoked_grants import Revoker

if TYPE_CHECKING:
    from identity.tokens.unit_of_work import UnitOfWork


class Grant(Protocol):
    grant_type: str

    def exchange(self, client: Client, params: Mapping[str, str], work: UnitOfWork | None = None) -> dict[str, Any]:
        """The token response; ``work``: the request's unit of work (``identity.tokens.unit_of_work``), which a grant
        may have write its tokens' records at its commit (``client_credentials``). The grants of a user's
        authorization write theirs at once: ``revoke_if_raced`` must see them."""
        ...


def required(params: Mapping[str, str], name: str) -> str:
    value = params.get(name)
    if not value:
        raise InvalidRequest(f"The parameter {name} is missing.")
    return value


def member_of_grant(users: UserStore, granted: Granted, client: Client) -> tuple[User, Membership]:
    """The grant's user and their membership now, read after the code was used up or the refresh token rotated.
    ``invalid_grant`` if either is gone; if the user's credential version is no longer the one the grant's sign-in
    verified (a password changed or reset, or the user disabled, since: RFC 9700 §4.14); or if the client requires a
    verified address and the user's is not (docs/identity.md: no code is issued for it either)."""
    found = users.member(granted.user_id, granted.org_id)
    if found is None:
        raise InvalidGrant("The user no longer exists, is disabled, or no longer belongs to the organization.")
    user = found[0]
    if user.credential_version != granted.credential_version:
        raise InvalidGrant("The user's password was changed, or the user disabled, since this grant's sign-in.")
    if client.require_verified_email and not user.email_verified:
        raise InvalidGrant("This client requires a verified email address; the user's is not verified.")
    return found


def token_response(access: Issued, scope: tuple[str, ...]) -> dict[str, Any]:
    """RFC 6749 §5.1: the access token part of every grant's answer."""
    return {
        "access_token": access.token,
        "token_type": "Bearer",
        "expires_in": access.expires_in,
        "scope": " ".join(scope),
    }


def issued(
    grant_type: str,
    client: Client,
    user_id: str | None,
    org_id: str,
    grant_id: str | None,
    work: UnitOfWork | None = None,
) -> None:
    """The audit line of a successful exchange (and the tokens-issued metric): ids, never the tokens; with
    ``work``, written once its records are."""
    (work.record if work is not None else audit.record)(
        audit.TOKEN_ISSUED,
        grant_type=grant_type,
        client_id=client.id,
        user_id=user_id,
        org_id=org_id,
        grant_id=grant_id,
    )


def revoke_if_raced(revoker: Revoker, sessions: SessionStore, grant_id: str, session_id: str) -> None:
    """A replay, a reuse, a revocation or a sign-out that raced this grant revoked only what existed
    then: checked after issuing, it revokes what was just issued too."""
    if revoker.revoked(grant_id) or sessions.ended(session_id):
        revoker.revoke_grant(grant_id)
        raise InvalidGrant("The authorization was revoked while tokens were being issued from it.")
