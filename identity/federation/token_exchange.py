"""Redeeming the provider's authorization code and learning who signed in (OpenID Connect Core §3.1.3, §5.3).

The code goes to the provider's token endpoint with PKCE's verifier and our client credentials (HTTP Basic, RFC 6749
§2.3.1, unless the provider supports only ``client_secret_post``). The ID token is verified (id_tokens.py) with the
provider's keys (key_sets.py: fetched again once when it names a key the set lacks). Where the ID token does not carry
the address (providers that keep the scope's claims for UserInfo, as OpenID Connect Core §5.4 allows), UserInfo is
asked with the access token, and its ``sub`` must be the ID token's (§5.3.2).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from identity.federation.errors import UpstreamRefused, UpstreamUnavailable
from identity.federation.id_tokens import UnknownKey, verify_id_token
from identity.federation.key_sets import KeySets
from identity.federation.upstream_http import UpstreamHttp, json_object

MAX_CLAIM = 320  # characters of a string claim we take (email, name) at most


@dataclass(frozen=True, slots=True)
class UpstreamClient:
    """What the exchange needs of a connection: the provider's endpoints and our registration there."""

    connection_id: str
    issuer: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str | None
    client_id: str
    client_secret: str
    algorithms: Sequence[str]  # the ID token algorithms we accept from it
    basic_auth: bool  # client_secret_basic (else client_secret_post)


@dataclass(frozen=True, slots=True)
class Identity:
    """Who the provider says signed in: its ``iss`` and ``sub`` (the binding), and the claims we read."""

    issuer: str
    subject: str
    email: str | None
    email_verified: bool
    name: str | None
    session_id: str | None  # the provider's ``sid``, which its logout tokens name
    id_token: str  # for the provider's end-session request (id_token_hint)
    claims: dict[str, Any]  # the ID token's claims, UserInfo's added (the connection test shows them)


class TokenExchange:
    def __init__(self, http: UpstreamHttp, keys: KeySets, now: Callable[[], int], *, leeway: int) -> None:
        self._http = http
        self._keys = keys
        self._now = now  # seconds since the epoch, on the domain's clock
        self.leeway = leeway  # seconds of clock skew allowed on iat and exp

    def redeem(
        self, client: UpstreamClient, *, code: str, redirect_uri: str, code_verifier: str, nonce: str
    ) -> Identity:
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": code_verifier,
        }
        basic = None
        if client.basic_auth:
            basic = (client.client_id, client.client_secret)
        else:
            form |= {"client_id": client.client_id, "client_secret": client.client_secret}
        answer = self._http.post_form(client.token_endpoint, form, basic=basic)
        if answer.status in (400, 401):
            refused = json_object(answer, "token answer", statuses=(400, 401))
            error = str(refused.get("error", ""))[:60]
            raise UpstreamRefused(
                "Your organization's provider refused to complete the sign-in"
                + (f" ({error})." if error.isprintable() and error else "."),
                detail=f"token endpoint: {answer.status} {error!r}",
            )
        tokens = json_object(answer, "token answer")
        id_token, access_token = tokens.get("id_token"), tokens.get("access_token")
        if not isinstance(id_token, str) or not isinstance(access_token, str):
            raise UpstreamUnavailable("The provider's token answer carries no ID token.", detail="no id_token")
        claims = self._verified(client, id_token, nonce, access_token)
        if "email" not in claims and client.userinfo_endpoint:
            claims = {**self._userinfo(client, access_token, claims["sub"]), **claims}
        return identity_of(client.issuer, claims, id_token)

    def _verified(self, client: UpstreamClient, id_token: str, nonce: str, access_token: str) -> dict[str, Any]:
        def verify(keys: Any) -> dict[str, Any]:
            return verify_id_token(
                id_token,
                keys,
                algorithms=client.algorithms,
                issuer=client.issuer,
                client_id=client.client_id,
                nonce=nonce,
                access_token=access_token,
                now=self._now(),
                leeway=self.leeway,
            )

        try:
            return verify(self._keys.get(client.connection_id, client.jwks_uri))
        except UnknownKey:
            fresh = self._keys.refreshed(client.connection_id, client.jwks_uri)
            try:
                if fresh is not None:
                    return verify(fresh)
            except UnknownKey:
                pass
            raise UpstreamUnavailable(
                "The provider's ID token is signed with a key it does not publish.", detail="unknown kid"
            ) from None

    def _userinfo(self, client: UpstreamClient, access_token: str, subject: str) -> dict[str, Any]:
        assert client.userinfo_endpoint is not None
        info = json_object(self._http.get(client.userinfo_endpoint, bearer=access_token), "UserInfo answer")
        if info.get("sub") != subject:  # OpenID Connect Core §5.3.2: else the answer must not be used
            raise UpstreamUnavailable("The provider's UserInfo answer is about someone else.", detail="userinfo sub")
        return info


def identity_of(issuer: str, claims: dict[str, Any], id_token: str) -> Identity:
    email, name, sid = claims.get("email"), claims.get("name"), claims.get("sid")
    return Identity(
        issuer=issuer,
        subject=str(claims["sub"]),
        email=email if isinstance(email, str) and 0 < len(email) <= MAX_CLAIM else None,
        email_verified=claims.get("email_verified") is True,  # OpenID Connect Core §5.1: a boolean, true only
        name=name if isinstance(name, str) and 0 < len(name) <= MAX_CLAIM else None,
        session_id=sid if isinstance(sid, str) and 0 < len(sid) <= 255 else None,
        id_token=id_token,
        claims=claims,
    )
