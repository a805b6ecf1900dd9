"""The identity API's HTTP shapes, in one place.

Each family of identity errors becomes HTTP here: ``OAuthError`` as an RFC 6749
§5.2 JSON body (401 with a Basic challenge for ``invalid_client`` over Basic),
``BearerError`` as RFC 6750 JSON with its ``WWW-Authenticate`` challenge,
``ErrorPage`` and ``Throttled`` as HTML pages. Pages carry the security headers;
everything but discovery and the JWKS carries ``Cache-Control: no-store``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import flask
import orjson
from connexion.lifecycle import ConnexionRequest, ConnexionResponse
from sqlalchemy.exc import DBAPIError

from identity.errors import BearerError, ErrorPage, InvalidClient, OAuthError
from identity.flow import INTERACTION_COOKIE_PREFIX, SESSION_COOKIE, Browser, Outcome
from identity.issuer import Issuer
from identity.pages import CONTENT_SECURITY_POLICY, Page, message
from identity.provider import Provider
from service.problems import UNAVAILABLE_RETRY_AFTER

log = logging.getLogger("service.identity")

ProblemHandler = Callable[[ConnexionRequest, Exception], ConnexionResponse]

CLIENT_ENDPOINTS = ("/oauth2/token", "/oauth2/introspect", "/oauth2/revoke")  # RFC 6749 §5.2 errors
BROWSER_ENDPOINTS = (
    "/oauth2/authorize",
    "/oauth2/end-session",
    "/sign-in",
    "/sign-up",
    "/select-organization",
    "/consent",
)
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}
PUBLIC_CACHE = {"Cache-Control": "public, max-age=300"}  # discovery and JWKS: safe to cache briefly


def provider() -> Provider:
    """The provider of the app serving this request."""
    return flask.current_app.config["PROVIDER"]  # type: ignore[no-any-return]


def browser() -> Browser:
    request = flask.request
    return Browser(
        bindings={k: v for k, v in request.cookies.items() if k.startswith(INTERACTION_COOKIE_PREFIX)},
        session=request.cookies.get(SESSION_COOKIE),
        address=request.remote_addr or "unknown",
    )


def pairs(source: Any) -> list[tuple[str, str]]:
    """Every name/value pair of a MultiDict, repeated names included (Connexion would join them)."""
    return list(source.items(multi=True))


def json(document: Any, status: int = 200, headers: dict[str, str] | None = None) -> flask.Response:
    return flask.Response(orjson.dumps(document), status=status, headers=headers, mimetype="application/json")


def page(rendered: Page) -> flask.Response:
    response = flask.Response(rendered.html, status=rendered.status, headers=PAGE_HEADERS, mimetype="text/html")
    if rendered.retry_after is not None:
        response.headers["Retry-After"] = str(rendered.retry_after)
    return response


def outcome(result: Outcome, issuer: Issuer) -> flask.Response:
    if result.page is not None:
        response = page(result.page)
    else:
        assert result.location is not None
        response = flask.Response(status=302, headers={"Location": result.location, "Cache-Control": "no-store"})
    for cookie in result.cookies:
        response.set_cookie(
            cookie.name,
            cookie.value,
            expires=cookie.expires,
            path=issuer.cookie_path,
            secure=issuer.secure,
            httponly=True,
            samesite="Lax",
        )
    return response


def oauth_error(error: OAuthError, issuer: Issuer) -> flask.Response:
    """RFC 6749 §5.2."""
    headers = dict(NO_STORE)
    if isinstance(error, InvalidClient) and error.basic:
        headers["WWW-Authenticate"] = f'Basic realm="{issuer.url}", charset="UTF-8"'
    return json({"error": error.error, "error_description": error.description}, error.status, headers)


def bearer_error(error: BearerError, issuer: Issuer) -> flask.Response:
    """RFC 6750 §3: the challenge names the error unless no token was sent."""
    challenge = f'Bearer realm="{issuer.url}"'
    if error.token_sent:
        challenge += f', error="{error.error}", error_description="{error.description.rstrip(".")}"'
    if error.scope:
        challenge += f', scope="{error.scope}"'
    headers = {"WWW-Authenticate": challenge, "Cache-Control": "no-store"}
    return json({"error": error.error, "error_description": error.description}, error.status, headers)


def error_page(error: ErrorPage) -> flask.Response:
    return page(message(error.title, error.message, status=error.status))


def server_error(error: Exception) -> flask.Response:
    """The last resort: log the error with its trace and answer without it (503 when the database is down)."""
    unavailable = isinstance(error, DBAPIError)
    if unavailable:
        log.error("database unavailable: %s", type(error).__name__)
    else:
        log.exception("unexpected error in the identity API", exc_info=error)
    status = 503 if unavailable else 500
    retry = {"Retry-After": str(UNAVAILABLE_RETRY_AFTER)} if unavailable else {}
    text = "The service cannot reach its database; retry shortly." if unavailable else "Something went wrong."
    if kind_of(flask.request.path) == "browser":
        title = "Temporarily unavailable" if unavailable else "Something went wrong"
        rendered = message(title, text, status=status, retry_after=UNAVAILABLE_RETRY_AFTER if unavailable else None)
        return page(rendered)
    code = "temporarily_unavailable" if unavailable else "server_error"
    return json({"error": code, "error_description": text}, status, {**NO_STORE, **retry})


def kind_of(path: str) -> str:
    """Which error form the endpoint at ``path`` (below the issuer's path) answers in."""
    for suffix in BROWSER_ENDPOINTS:
        if path.endswith(suffix):
            return "browser"
    for suffix in CLIENT_ENDPOINTS:
        if path.endswith(suffix):
            return "client"
    return "resource"
