"""The identity API: Connexion over ``openapi/identity.yaml`` (``service.web.connexion_adapter``), at the issuer's path.

Connexion routes and validates; the handlers and the domain authenticate
clients and tokens themselves (an optional security alternative would let wrong
credentials through as anonymous), so Connexion's security middleware is left out.
Every error, Connexion's own (a malformed body, a wrong media type) included,
leaves in the form its operation declares (``http_errors.py``).

Handlers are coroutines on the server's event loop. The client endpoints (token, introspection, revocation,
userinfo, directory) hand their SQL (commits that wait for the disk included) and RSA signing to worker threads,
at most as many as the database pool has connections (``service/web/offload.py``); the browser pages hand
theirs to the shared worker threads, since signing in and up hashes a password with Argon2 for tens of
milliseconds. Every request to an operation takes Connexion's route; a plain token or introspection form the
contract's rules prove valid is read once, without Connexion's form parser (``service/web/fast_forms.py``);
discovery and the JWKS are answered before this app, from memory (``published.py``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from connexion.resolver import RelativeResolver
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from identity.provider import Provider
from service.identity_api.handler_support import CLIENT_THREADS, PROVIDER
from service.identity_api.http_errors import HANDLED, IdentityErrors
from service.web.body_limit import BodyLimit
from service.web.connexion_adapter import connexion_app
from service.web.contracts import contract
from service.web.offload import Workers
from service.web.problems import connexion_handler
from service.web.request_reading import BODY, BodyRecorder

# The paths clients call again and again (RFC 7662's introspection first, then tokens), routed before the browser
# pages: each is answered by the same route in any order (``Contract.specification``).
CLIENT_ENDPOINTS = ("/oauth2/introspect", "/oauth2/token", "/oauth2/revoke", "/oauth2/userinfo")


@dataclass(frozen=True)
class IdentityApp:
    app: ASGIApp
    # the 503 for load in each operation's own error form (an ``Api.overloaded``, ``service/web/edge.py``)
    overloaded: Callable[[Scope, Send, int], Awaitable[None]]
    # the 408 for a body too slow, in each operation's own error form (``Bodies.too_slow``, service/web/edge.py)
    too_slow: Callable[[Scope, Send], Awaitable[None]]


def create_identity_app(
    provider: Provider,
    *,
    client_threads: int,
    form_limit: int,
    validate_responses: bool = False,
    fast_forms: bool = True,
) -> IdentityApp:
    """The identity API; ``client_threads`` run the client endpoints' work at once, ``form_limit``: the largest
    form taken (bytes; a larger one is 413); ``fast_forms``: see ``service.web.contract_validators.ContractForm``."""
    issuer = provider.issuer
    identity = contract("identity.yaml")
    app = connexion_app(
        identity,
        base_path=issuer.path,  # "" for an issuer at the root: "/" breaks every operation
        strict_validation=False,  # OAuth and OpenID Connect: unknown parameters are ignored
        contract_parameters=True,  # every parameter error names the parameter, in the service's words
        validate_responses=validate_responses,
        resolver=RelativeResolver("handlers"),
        fast_forms=fast_forms,
        routed_first=CLIENT_ENDPOINTS,
    )

    errors = IdentityErrors(identity, issuer, connexion_handler(identity.allowed_methods(issuer.path)))
    for error in HANDLED:
        app.add_error_handler(error, errors.handle)
    threads = Workers(client_threads, "client-worker")

    async def overloaded(scope: Scope, send: Send, retry_after: int) -> None:
        await errors.overloaded(scope, retry_after)(scope, _nothing_to_receive, send)

    async def too_slow(scope: Scope, send: Send) -> None:
        await errors.too_slow(scope)(scope, _nothing_to_receive, send)

    entry = IdentityEntry(app, provider, threads)
    return IdentityApp(BodyLimit(entry, form_limit, errors.too_large), overloaded, too_slow)


async def _nothing_to_receive() -> Message:
    return {"type": "http.disconnect"}


class IdentityEntry:
    """Puts the provider, the client workers (and a POST's body recorder) in each request's state for the
    handlers, and answers HEAD.

    RFC 9110 §9.3.2: HEAD is GET without the body. Answered here, so that Connexion routes and
    validates it as the GET it stands for (an empty body would fail the GET's response validation)."""

    def __init__(self, app: ASGIApp, provider: Provider, client_threads: Workers) -> None:
        self.app = app
        self.provider = provider
        self.client_threads = client_threads

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            PROVIDER.put(scope, self.provider)
            CLIENT_THREADS.put(scope, self.client_threads)
            if scope["method"] == "POST":
                recorder = BodyRecorder(receive)
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
