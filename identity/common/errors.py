"""Errors of the identity domain. The web edge turns each family into HTTP in one place
(``service/identity_api/http_errors.py``).

An error the client sees carries two texts, as fosite's hint and debug: ``description``,
the public text the response carries, and ``detail``, what the provider knows beyond it
(which check failed, and why), which goes to the log only and never into a response.

- ``InvalidInput`` and ``UnknownRecord``: operators' and forms' mistakes.
- ``OAuthError`` (RFC 6749 §4.1.2.1, §5.2; OpenID Connect Core §3.1.2.6): ``error`` is
  the code, ``description`` the developer-facing text; ``status`` applies where the
  error is an HTTP response rather than a redirect.
- ``BearerError`` (RFC 6750 §3.1): errors of protected resources.
- ``ErrorPage``: an authorization or interaction error that must never redirect.
- ``Throttled``: too many failed sign-ins.
"""

from __future__ import annotations

# RFC 6749 §5.2 and RFC 6750 §3: error_description is printable ASCII without '"' and '\\'.
_DESCRIBABLE = frozenset(map(chr, range(0x20, 0x7F))) - {'"', "\\"}


def describable(text: str) -> str:
    """``text`` as an ``error_description`` may carry it: any other character becomes '?'."""
    return "".join(ch if ch in _DESCRIBABLE else "'" if ch == '"' else "?" for ch in text)


class InvalidInput(ValueError):
    """Bad input from an operator or a form; the message is safe to show."""


class UnknownRecord(LookupError):
    """No organization, user or client has that id."""


class OAuthError(Exception):
    error = "invalid_request"
    status = 400

    def __init__(self, description: str, *, detail: str | None = None) -> None:
        super().__init__(description)
        self.description = describable(description)  # it may quote what the client sent
        self.detail = detail  # logged only


class InvalidRequest(OAuthError):
    error = "invalid_request"


class InvalidClient(OAuthError):
    """RFC 6749 §5.2: client authentication failed. The web edge gives it its status, from how the client sent its
    credentials (service/identity_api/http_errors.py):

    - with the ``Authorization`` header (``client_secret_basic``): 401 with a ``Basic`` challenge, as §5.2 requires
      ("MUST respond with an HTTP 401 ... and include the WWW-Authenticate response header field matching the
      authentication scheme used by the client");
    - otherwise (``client_secret_post``, ``private_key_jwt``, a public client, no credentials): 400 without a
      challenge, as §5.2 allows. A 401 must carry a challenge (RFC 9110 §15.5.2), and a challenge for a scheme the
      client never used makes panva's openid-client raise a challenge error instead of reading ``invalid_client``;
      a 400 is read as ``invalid_client`` by openid-client, Authlib and pyoidc alike (docs/identity.md).

    The description never says which check failed; the ``detail`` (logged only) does."""

    error = "invalid_client"
    status = 400  # 401 with a Basic challenge where the request carried an Authorization header (the web edge)

    def __init__(self, description: str = "Client authentication failed.", *, detail: str | None = None) -> None:
        super().__init__(description, detail=detail)


class InvalidGrant(OAuthError):
    error = "invalid_grant"


class UnauthorizedClient(OAuthError):
    error = "unauthorized_client"


class UnsupportedGrantType(OAuthError):
    error = "unsupported_grant_type"


class InvalidScope(OAuthError):
    error = "invalid_scope"


class UnsupportedResponseType(OAuthError):
    error = "unsupported_response_type"


class AccessDenied(OAuthError):
    error = "access_denied"


class OriginNotAllowed(OAuthError):
    """A cross-origin request from a page whose origin the client did not register: refused before the
    grant is looked at, so that a page which could not read the answer never spends a code."""

    error = "access_denied"
    status = 403


class LoginRequired(OAuthError):
    error = "login_required"


class InteractionRequired(OAuthError):
    """OpenID Connect Core §3.1.2.6: a page is needed (here: "check your email") and ``prompt=none`` forbids it."""

    error = "interaction_required"


class ConsentRequired(OAuthError):
    error = "consent_required"


class AccountSelectionRequired(OAuthError):
    error = "account_selection_required"


class RequestNotSupported(OAuthError):
    error = "request_not_supported"


class RequestUriNotSupported(OAuthError):
    error = "request_uri_not_supported"


class BearerError(Exception):
    error = "invalid_token"
    status = 401

    def __init__(
        self, description: str, *, scope: str | None = None, token_sent: bool = True, detail: str | None = None
    ) -> None:
        super().__init__(description)
        self.description = describable(description)
        self.detail = detail  # logged only
        self.scope = scope
        self.token_sent = token_sent  # RFC 6750 §3.1: no error attribute when no token was sent


class InvalidToken(BearerError):
    error = "invalid_token"
    status = 401


class InsufficientScope(BearerError):
    error = "insufficient_scope"
    status = 403


class MalformedBearerRequest(BearerError):
    error = "invalid_request"
    status = 400


class ErrorPage(Exception):
    """An error shown to the person in the browser as a page; never a redirect."""

    def __init__(self, title: str, description: str, status: int = 400, *, detail: str | None = None) -> None:
        super().__init__(description)
        self.title = title
        self.description = description
        self.detail = detail  # logged only
        self.status = status


class Throttled(Exception):
    def __init__(self, retry_after: int) -> None:
        super().__init__(f"too many failed sign-ins; retry after {retry_after} s")
        self.retry_after = retry_after
