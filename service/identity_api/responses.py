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
from typing import Any, TypeVar

import anyio.to_thread
import orjson
from connexion import context
from connexion.lifecycle import ConnexionRequest, ConnexionResponse
from sqlalchemy.exc import DBAPIError
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, Response
from starlette.types import Message, Receive

from identity.errors import BearerError, ErrorPage, InvalidClient, OAuthError
from identity.flow import INTERACTION_COOKIE_PREFIX, SESSION_COOKIE, Browser, Outcome
from identity.issuer import Issuer
from identity.pages import CONTENT_SECURITY_POLICY, Page, message
from identity.provider import Provider
from service.web.body_limit import describe
from service.web.html_headers import page_headers
from service.web.problems import UNAVAILABLE_RETRY_AFTER
from service.web.request_state import BODY, CLIENT_THREADS, PROVIDER

log = logging.getLogger("service.identity")
T = TypeVar("T")

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
PAGE_HEADERS = page_headers(CONTENT_SECURITY_POLICY)
PUBLIC_CACHE = {"Cache-Control": "public, max-age=300"}  # discovery and JWKS: safe to cache briefly


def provider() -> Provider:
    """The provider of the app serving this request (put in the request's state by ``create_identity_app``)."""
    return PROVIDER.get(context.scope)


async def off_the_loop(call: Callable[..., T], *args: Any) -> T:
    """Run the domain's blocking work (its SQL, commits that wait for the disk, RSA signing) in a worker thread,
    so that one slow commit never holds every request of the worker. At most as many at once as the database
    pool has connections (the request's ``client_threads`` limiter): more would only wait there."""
    limiter = CLIENT_THREADS.get(context.scope)
    return await anyio.to_thread.run_sync(call, *args, limiter=limiter)


def current() -> Request:
    """The request being answered."""
    return Request(context.scope, context.receive)


class BodyRecorder:
    """The request's ``receive``, keeping the body as its first reader (Connexion's validation) reads it.

    Downstream of validation a body is a one-time replay, and Connexion's own parse keeps only joined values;
    the handlers need every pair as sent (a repeated parameter is an error), so they parse the kept body.
    """

    def __init__(self, receive: Receive) -> None:
        self.receive = receive
        self.chunks: list[bytes] = []
        self.complete = False

    async def __call__(self) -> Message:
        message = await self.receive()
        if message["type"] == "http.request":
            self.chunks.append(message.get("body", b""))
            self.complete = not message.get("more_body", False)
        return message

    async def body(self) -> bytes:
        while not self.complete:  # nobody has read it all yet
            if (await self())["type"] == "http.disconnect":
                raise ClientDisconnect()
        return b"".join(self.chunks)


async def form_pairs(request: Request) -> list[tuple[str, str]]:
    """Every name/value pair of the form, repeated names included, parsed as Connexion's validation parsed it."""
    body = await BODY.get(request.scope).body()

    async def replay() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    form = await Request(request.scope, replay).form()
    return [(name, value) for name, value in form.multi_items() if isinstance(value, str)]


def query_pairs(request: Request) -> list[tuple[str, str]]:
    return list(request.query_params.multi_items())


def browser(request: Request) -> Browser:
    cookies = request.cookies
    return Browser(
        bindings={k: v for k, v in cookies.items() if k.startswith(INTERACTION_COOKIE_PREFIX)},
        session=cookies.get(SESSION_COOKIE),
        address=request.client.host if request.client else "unknown",
    )


def json(document: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(document), status_code=status, headers=headers, media_type="application/json")


def page(rendered: Page) -> Response:
    headers = dict(PAGE_HEADERS)
    if rendered.retry_after is not None:
        headers["Retry-After"] = str(rendered.retry_after)
    return HTMLResponse(rendered.html, status_code=rendered.status, headers=headers)


def outcome(result: Outcome, issuer: Issuer) -> Response:
    if result.page is not None:
        response = page(result.page)
    else:
        assert result.location is not None
        response = Response(status_code=302, headers={"Location": result.location, "Cache-Control": "no-store"})
    for cookie in result.cookies:
        # Starlette's cookie writer (RFC 6265 attributes; names are case-insensitive, so its "expires" is fine).
        response.set_cookie(
            cookie.name,
            cookie.value,
            expires=cookie.expires,
            path=issuer.cookie_path,
            secure=issuer.secure,
            httponly=True,
            samesite="Lax",  # type: ignore[arg-type]  # its usual spelling; Starlette takes any case
        )
    return response


def oauth_error(error: OAuthError, issuer: Issuer) -> Response:
    """RFC 6749 §5.2."""
    headers = dict(NO_STORE)
    if isinstance(error, InvalidClient) and error.basic:
        headers["WWW-Authenticate"] = f'Basic realm="{issuer.url}", charset="UTF-8"'
    return json({"error": error.error, "error_description": error.description}, error.status, headers)


def bearer_error(error: BearerError, issuer: Issuer) -> Response:
    """RFC 6750 §3: the challenge names the error unless no token was sent."""
    challenge = f'Bearer realm="{issuer.url}"'
    if error.token_sent:
        challenge += f', error="{error.error}", error_description="{error.description.rstrip(".")}"'
    if error.scope:
        challenge += f', scope="{error.scope}"'
    headers = {"WWW-Authenticate": challenge, "Cache-Control": "no-store"}
    return json({"error": error.error, "error_description": error.description}, error.status, headers)


def error_page(error: ErrorPage) -> Response:
    return page(message(error.title, error.message, status=error.status))


def server_error(error: Exception, path: str) -> Response:
    """The last resort: log the error with its trace and answer without it (503 when the database is down)."""
    unavailable = isinstance(error, DBAPIError)
    if unavailable:
        log.error("database unavailable: %s", type(error).__name__)
    else:
        log.exception("unexpected error in the identity API", exc_info=error)
    status = 503 if unavailable else 500
    retry = {"Retry-After": str(UNAVAILABLE_RETRY_AFTER)} if unavailable else {}
    text = "The service cannot reach its database; retry shortly." if unavailable else "Something went wrong."
    if kind_of(path) == "browser":
        title = "Temporarily unavailable" if unavailable else "Something went wrong"
        rendered = message(title, text, status=status, retry_after=UNAVAILABLE_RETRY_AFTER if unavailable else None)
        return page(rendered)
    code = "temporarily_unavailable" if unavailable else "server_error"
    return json({"error": code, "error_description": text}, status, {**NO_STORE, **retry})


def too_large(path: str, limit: int) -> Response:
    """413 in the endpoint's own form (``path`` below the issuer's path): a page, or an OAuth-style JSON error."""
    text = describe(limit)
    if kind_of(path) == "browser":
        return page(message("Request too large", text, status=413))
    headers = NO_STORE if kind_of(path) == "client" else {"Cache-Control": "no-store"}
    return json({"error": "invalid_request", "error_description": text}, 413, dict(headers))


def as_connexion(response: Response) -> ConnexionResponse:
    """An error handler's answer in the form Connexion's error handling takes (it makes a response of it again)."""
    headers = {k: v for k, v in response.headers.items() if k not in ("content-length", "content-type")}
    return ConnexionResponse(
        status_code=response.status_code, mimetype=response.media_type, body=response.body, headers=headers
    )


def kind_of(path: str) -> str:
    """Which error form the endpoint at ``path`` (below the issuer's path) answers in."""
    for suffix in BROWSER_ENDPOINTS:
        if path.endswith(suffix):
            return "browser"
    for suffix in CLIENT_ENDPOINTS:
        if path.endswith(suffix):
            return "client"
    return "resource"
