"""Bearer tokens as a request presents them (RFC 6750 §2): the one reading of an ``Authorization: Bearer``
header, for the identity endpoints (userinfo, the member directory) and the menus API's key gate alike."""

from __future__ import annotations

import re
from collections.abc import Sequence

from identity.common.errors import InvalidToken, MalformedBearerRequest

TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")  # RFC 6750 §2.1 b64token


def bearer_credentials(authorization: str | None) -> str | None:
    """RFC 6750 §2.1, RFC 9110 §11.4: what follows the scheme of an ``Authorization`` header whose scheme is
    ``Bearer`` (case-insensitive), stripped ("" for the scheme alone); None for no header or another scheme."""
    if not authorization:
        return None
    scheme, _, credentials = authorization.strip().partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" else None


def bearer_token(authorization: str | None) -> str:
    """RFC 6750 §2.1: the token of an ``Authorization: Bearer`` header."""
    token = bearer_credentials(authorization)
    if token is None:
        raise InvalidToken("An access token is required.", token_sent=False)
    if not TOKEN68.fullmatch(token):
        raise MalformedBearerRequest("The Authorization header is malformed.")
    return token


def presented_token(authorization: str | None, form: Sequence[tuple[str, str]] = ()) -> str:
    """The access token of a request to a protected resource, sent in exactly one way.

    RFC 6750 §2.1: an ``Authorization: Bearer`` header; §2.2 (and OpenID Connect Core §5.3.1 for UserInfo):
    the ``access_token`` field of a form-encoded POST body. RFC 6750 §2: "Clients MUST NOT use more than one
    method to transmit the token in each request", so a Bearer header beside a body token is
    ``invalid_request`` (400), and so is a repeated ``access_token`` field."""
    in_body = [value for name, value in form if name == "access_token"]
    if len(in_body) > 1:
        raise MalformedBearerRequest("The parameter access_token is repeated.")
    if not in_body:
        return bearer_token(authorization)
    if bearer_credentials(authorization) is not None:
        raise MalformedBearerRequest(
            "Send the access token one way only: in the Authorization header or in the body, not both."
        )
    return in_body[0]
