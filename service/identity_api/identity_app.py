"""The identity API: Connexion over ``openapi/identity.yaml`` (``service.web.connexion_adapter``), at the issuer's path.

Connexion routes and validates; the handlers and the domain authenticate
clients and tokens themselves (an optional security alternative would let wrong
credentials through as anonymous), so Connexion's security middleware is left out.
Connexion's own errors (a malformed body, a wrong media type) are reshaped
here into each endpoint's documented form: an HTML page for browser
endpoints, an OAuth error for client endpoints, an RFC 6750 error for
resource endpoints.

Handlers are coroutines on the server's event loop. The token, introspection and revocation endpoints
hand their SQL (commits that wait for the disk included) and RSA signing to worker threads, at most as
many at once as the database pool has connections; the browser pages hand theirs to a thread too, since
signing in and up hashes a password with Argon2 for tens of milliseconds. The resource endpoints
(userinfo, directory, discovery, JWKS) only read, with keys cached, on the loop.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

import anyio
import orjson
from connexion.exceptions import ProblemException
from connexion.lifecycle import ConnexionRequest, ConnexionResponse
from connexion.resolver import RelativeResolver
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from identity.errors import BearerError, ErrorPage, OAuthError, describable
from identity.pages import message
from identity.provider import Provider
from service.identity_api import responses as web
from service.web.body_limit import BodyLimit
from service.web.connexion_adapter import connexion_app
from service.web.contracts import contract
from service.web.problems import connexion_handler
from service.web.request_state import BODY, CLIENT_THREADS, PROVIDER


def create_identity_app(
    provider: Provider, *, client_threads: int, form_limit: int, validate_responses: bool = False
) -> ASGIApp:
    """The identity API; ``client_threads`` run the client endpoints' work at once, ``form_limit``: the largest
    form taken (bytes; a larger one is 413)."""
    issuer = provider.issuer
    identity = contract("identity.yaml")
    app = connexion_app(
        identity,
        base_path=issuer.path,  # "" for an issuer at the root: "/" breaks every operation
        strict_validation=False,  # OAuth and OpenID Connect: unknown parameters are ignored
        validate_responses=validate_responses,
        resolver=RelativeResolver("handlers"),
    )

    async def oauth_error(_: ConnexionRequest, error: Exception) -> ConnexionResponse:
        assert isinstance(error, OAuthError)
        return web.as_connexion(web.oauth_error(error, issuer))

    async def bearer_error(_: ConnexionRequest, error: Exception) -> ConnexionResponse:
        assert isinstance(error, BearerError)
        return web.as_connexion(web.bearer_error(error, issuer))

    async def error_page(_: ConnexionRequest, error: Exception) -> ConnexionResponse:
        assert isinstance(error, ErrorPage)
        return web.as_connexion(web.error_page(error))

    app.add_error_handler(OAuthError, oauth_error)
    app.add_error_handler(BearerError, bearer_error)
    app.add_error_handler(ErrorPage, error_page)
    handler = _connexion_errors(provider, connexion_handler(identity.allowed_methods(issuer.path)))
    for error in (ProblemException, HTTPException, Exception):
        app.add_error_handler(error, handler)
    base = issuer.path
    return BodyLimit(
        IdentityEntry(app, provider, anyio.CapacityLimiter(client_threads)),
        form_limit,
        lambda scope, limit: web.too_large(str(scope["path"])[len(base) :], limit),
    )


def _connexion_errors(
    provider: Provider, problem: web.ProblemHandler
) -> Callable[[ConnexionRequest, Exception], Awaitable[ConnexionResponse]]:
    """Connexion's 400 and 415 in the endpoint's own error form; 404 and 405 as the service's problems;
    anything else a handler raised as the endpoint's 500 (or 503 when the database is unreachable)."""
    base = provider.issuer.path

    async def handle(request: ConnexionRequest, error: Exception) -> ConnexionResponse:
        if not isinstance(error, HTTPException | ProblemException | MultiPartException):
            # Raised by a handler or the domain: logged with its trace, answered without it (503: database down).
            return web.as_connexion(web.server_error(error, str(request.scope.get("path", ""))[len(base) :]))
        status = error.status_code if isinstance(error, HTTPException) else 500
        if isinstance(error, MultiPartException):  # Starlette's form parser: a field over 1 MiB, too many fields
            status = 400
        if status in (404, 405) or status >= 500:
            return problem(request, error)
        kind = web.kind_of(str(request.scope.get("path", ""))[len(base) :])
        detail = _plain(
            str(getattr(error, "detail", "") or getattr(error, "message", "") or "The request is malformed.")
        )
        if status == 415:
            detail = "The body must be application/x-www-form-urlencoded."
        if kind == "browser":
            rendered = message("Invalid request", detail, status=status)
            return ConnexionResponse(
                status_code=status, mimetype="text/html", body=rendered.html.encode(), headers=web.PAGE_HEADERS
            )
        headers = web.NO_STORE if kind == "client" else {"Cache-Control": "no-store"}
        body = {"error": "invalid_request", "error_description": detail}
        return ConnexionResponse(
            status_code=status,
            mimetype="application/json",
            body=orjson.dumps(body),
            headers=headers,
        )

    return handle


def _plain(detail: str) -> str:
    """Connexion's validation detail without its jsonschema dump, in the words of RFC 6749 §5.2."""
    detail = detail.split("\n\n", 1)[0]
    missing = re.fullmatch(r"'([^']+)' is a required property", detail)
    if missing:
        return f"The parameter {describable(missing.group(1))} is missing."
    too_long = re.fullmatch(r".* is too long(?: - '([^']+)')?", detail, re.DOTALL)
    if too_long:  # jsonschema's message quotes the whole value: never echo it (it may be a secret, or 1 MB)
        name = too_long.group(1)
        return f"The parameter {describable(name)} is too long." if name else "A parameter is too long."
    return describable(detail)


class IdentityEntry:
    """Puts the provider (and a POST's body recorder) in each request's state for the handlers, and answers HEAD.

    RFC 9110 §9.3.2: HEAD is GET without the body. Answered here, so that Connexion routes and
    validates it as the GET it stands for (an empty body would fail the GET's response validation)."""

    def __init__(self, app: ASGIApp, provider: Provider, client_threads: anyio.CapacityLimiter) -> None:
        self.app = app
        self.provider = provider
        self.client_threads = client_threads

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            PROVIDER.put(scope, self.provider)
            CLIENT_THREADS.put(scope, self.client_threads)
            if scope["method"] == "POST":
                recorder = web.BodyRecorder(receive)
                BODY.put(scope, recorder)
                receive = recorder
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def without_body(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, without_body)
