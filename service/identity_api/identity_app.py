"""The identity API: Connexion's AsyncApp over ``openapi/identity.yaml``, mounted at the issuer's path.

Connexion routes and validates; the handlers and the domain authenticate
clients and tokens themselves (an optional security alternative would let wrong
credentials through as anonymous), so the SecurityMiddleware is left out.
Every error, Connexion's own (a malformed body, a wrong media type) included,
leaves in the form its operation declares (``http_errors.py``).

Handlers are coroutines on the server's event loop. The token, introspection and revocation endpoints
hand their SQL (commits that wait for the disk included) and RSA signing to worker threads, at most as
many at once as the database pool has connections; the browser pages hand theirs to a thread too, since
signing in and up hashes a password with Argon2 for tens of milliseconds. The resource endpoints
(userinfo, directory, discovery, JWKS) only read, with keys cached, on the loop.
"""

from __future__ import annotations

import logging

import anyio
from connexion.middleware import ConnexionMiddleware
from connexion.middleware.security import SecurityMiddleware
from connexion.resolver import RelativeResolver
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from identity.provider import Provider
from service.database.db import POOL_CAPACITY
from service.identity_api import responses as web
from service.identity_api.http_errors import HANDLED, IdentityErrors
from service.web.async_app import AsyncApp
from service.web.body_limit import IDENTITY_FORM_LIMIT, BodyLimit
from service.web.contracts import specification
from service.web.documents import declared_methods
from service.web.problems import connexion_handler

MIDDLEWARES = [m for m in ConnexionMiddleware.default_middlewares if m is not SecurityMiddleware]
# Connexion logs each invalid form at ERROR with the offending value (a client secret, a token, a 60 KiB state):
# a client's mistake is no server error, and the request's own log line already records the 400.
logging.getLogger("connexion.validators.form_data").setLevel(logging.CRITICAL)


def create_identity_app(
    provider: Provider, *, validate_responses: bool = False, client_threads: int = POOL_CAPACITY
) -> ASGIApp:
    issuer = provider.issuer
    app = AsyncApp(__name__, middlewares=MIDDLEWARES)
    app.add_api(
        specification("identity.yaml"),
        base_path=issuer.path,  # "" for an issuer at the root: "/" breaks every operation
        strict_validation=False,  # OAuth and OpenID Connect: unknown parameters are ignored
        validate_responses=validate_responses,
        resolver=RelativeResolver("handlers"),
    )

    errors = IdentityErrors(issuer, connexion_handler(declared_methods("identity.yaml", issuer.path)))
    for error in HANDLED:
        app.add_error_handler(error, errors.handle)
    return BodyLimit(
        IdentityEntry(app, provider, anyio.CapacityLimiter(client_threads)), IDENTITY_FORM_LIMIT, errors.too_large
    )


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
            state = scope.setdefault("state", {})
            state["provider"] = self.provider
            state["client_threads"] = self.client_threads
            if scope["method"] == "POST":
                receive = state["body"] = web.BodyRecorder(receive)
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def without_body(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, without_body)
