"""Logout tokens from an organization's provider (OpenID Connect Back-Channel Logout 1.0 §2.5–§2.8): the sessions
started here through that provider session, or by that account, end as a sign-out ends them.

The token is verified against the connection's provider (id_tokens.py: its JWKS, fetched again once for an unknown
``kid``, within the key sets' bound). Each named session ends, its refresh tokens are revoked, and the applications
that hold it are told in turn by our own back-channel logout (identity/sessions/backchannel_logout.py, through the
revocation). Every refusal is an ``InvalidRequest`` (§2.8: 400), with what failed in its log-only detail.

A token is taken once (logout_tokens.py): a replay of a valid token, on any node, is refused and audited.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

from identity.common import audit
from identity.common.errors import InvalidRequest
from identity.federation.accounts import binding_of
from identity.federation.connections import ConnectionStore
from identity.federation.errors import FederationError
from identity.federation.id_tokens import UnknownKey, verify_logout_token
from identity.federation.key_sets import KeySets
from identity.federation.logout_tokens import LogoutTokenLedger
from identity.federation.sessions import FederatedSessions
from identity.sessions.sessions import SessionStore
from identity.tokens.revoked_grants import Revoker


class UpstreamLogout:
    def __init__(
        self,
        connections: ConnectionStore,
        keys: KeySets,
        sessions: FederatedSessions,
        browser_sessions: SessionStore,
        revoker: Revoker,
        now: Callable[[], int],
        *,
        leeway: int,
        ledger: LogoutTokenLedger,
    ) -> None:
        self._ledger = ledger
        self._connections = connections
        self._keys = keys
        self._sessions = sessions
        self._browser_sessions = browser_sessions
        self._revoker = revoker
        self._now = now
        self.leeway = leeway

    def receive(self, org_id: str, pairs: Sequence[tuple[str, str]]) -> int:
        """End the sessions the logout token names; how many. ``InvalidRequest`` when it is refused."""
        tokens = [value for name, value in pairs if name == "logout_token"]
        if len(tokens) != 1:
            raise InvalidRequest("Send exactly one logout_token.")
        connection = self._connections.get(org_id)
        if connection is None:
            raise InvalidRequest("This organization has no identity provider connection.")
        client = connection.client()

        def verify(keys: object) -> dict[str, object]:
            return verify_logout_token(
                tokens[0],
                keys,  # type: ignore[arg-type]
                algorithms=client.algorithms,
                issuer=client.issuer,
                client_id=client.client_id,
                now=self._now(),
                leeway=self.leeway,
            )

        try:
            try:
                claims = verify(self._keys.get(org_id, client.jwks_uri))
            except UnknownKey:
                fresh = self._keys.refreshed(org_id, client.jwks_uri)
                if fresh is None:
                    raise InvalidRequest("The logout token is signed with an unknown key.") from None
                claims = verify(fresh)
        except UnknownKey:
            raise InvalidRequest("The logout token is signed with an unknown key.") from None
        except FederationError as error:
            audit.record(audit.FEDERATED_LOGOUT, audit.FAILURE, reason="invalid_token", org_id=org_id)
            raise InvalidRequest(error.description, detail=error.detail) from None
        expires = int(cast(float, claims["exp"])) + self.leeway  # a number: verify_logout_token checked it
        if not self._ledger.take(org_id, client.issuer, str(claims["jti"]), expires):
            audit.record(audit.FEDERATED_LOGOUT, audit.FAILURE, reason="replayed", org_id=org_id)
            raise InvalidRequest("This logout token was already received.", detail="logout token: jti replayed")
        sub, sid = claims.get("sub"), claims.get("sid")
        binding = binding_of(client.issuer, sub) if isinstance(sub, str) else None
        ended = 0
        for session_id in self._sessions.named(org_id, binding, sid if isinstance(sid, str) else None):
            if self._browser_sessions.end(session_id):
                ended += 1
            self._revoker.revoke_session(session_id)
            audit.record(audit.FEDERATED_LOGOUT, org_id=org_id, session_id=session_id)
        return ended
