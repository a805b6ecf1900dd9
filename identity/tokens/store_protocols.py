"""What the grants and the token services need of storage, one small protocol per artifact
(as fosite's ``AuthorizeCodeStorage``): record it, find it, use it up or rotate it, revoke it.

The stores of this package (``codes``, ``access_tokens``, ``refresh_tokens``) satisfy them; each owns
every write to its table.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Protocol

from identity.tokens.access_tokens import AccessTokenRecord
from identity.tokens.codes import CodeGrant, Consumed
from identity.tokens.refresh_tokens import RefreshToken, RefreshTokenRecord


class AuthorizationCodes(Protocol):
    """RFC 6749 §4.1.2: the code is short-lived and single-use; a code presented a second time is
    refused, and the tokens issued from it should be revoked. Consuming is one atomic statement, so two
    concurrent exchanges cannot both succeed."""

    def record(self, grant: CodeGrant) -> str:
        """A new code for this authorization (stored only as a hash)."""
        ...

    def consume(self, code: str, client_id: str) -> Consumed:
        """Use the code up and return its grant; a second use reports the replay."""
        ...


class AccessTokens(Protocol):
    """RFC 7009 §2.2: a revoked access token is invalid from then on, though it is a self-contained JWT:
    every token is recorded, and the record is read at every use."""

    def record(self, token: AccessTokenRecord, *, secret_hash: str | None = None) -> bool: ...

    def commit(self, issued: Sequence[Sequence[tuple[AccessTokenRecord, str | None]]]) -> list[Exception | None]: ...

    def get(self, jti: str, read: Mapping[str, AccessTokenRecord | None] | None = None) -> AccessTokenRecord | None: ...

    def read(self, jtis: Collection[str]) -> dict[str, AccessTokenRecord | None]: ...

    def revoke(self, jti: str) -> None: ...


class RefreshTokens(Protocol):
    """RFC 6749 §10.4 and RFC 9700 §4.14.2: refresh tokens rotate; each is used once, and presenting a
    rotated one revokes its family. Rotating is one atomic statement."""

    def record(self, token: str, record: RefreshTokenRecord) -> None:
        """Record a new token of the family ``grant_id`` (only as a hash)."""
        ...

    def find(self, token: str) -> RefreshToken | None: ...

    def rotate(self, token: RefreshToken) -> bool:
        """Mark the token used; False when it was not live at that instant."""
        ...
