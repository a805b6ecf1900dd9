"""What the identity handlers read from a request and how they shape a reply.

The request's form and query pairs and the browser's cookies in; JSON, pages
(``page_rendering.py``) and redirects with cookies out. Everything but discovery
and the JWKS carries ``Cache-Control: no-store``; errors are ``http_errors.py``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import orjson
from connexion import context
from connexion.lifecycle import ConnexionResponse
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Message, Receive

from identity.device_cookies import DEVICE_COOKIE
from identity.flow import INTERACTION_COOKIE_PREFIX, SESSION_COOKIE, Browser, Outcome
from identity.issuer import Issuer
from identity.provider import Provider
from identity.text import has_control
from service.identity_api.page_rendering import page_response
from service.web.request_state import BODY, CLIENT_THREADS, PROVIDER

T = TypeVar("T")

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
PUBLIC_CACHE = {"Cache-Control": "public, max-age=300"}  # discovery and JWKS: safe to cache briefly


def provider() -> Provider:
    """The provider of the app serving this request (put in the request's state by ``create_identity_app``)."""
    return PROVIDER.get(context.scope)


async def off_the_loop(call: Callable[..., T], *args: Any) -> T:
    """Run the domain's blocking work (its SQL, commits that wait for the disk, RSA signing) in a worker thread,
    so that one slow commit never holds every request of the worker. At most as many at once as the database
    pool has connections (the request's ``client_threads``, ``client_threads.py``): more would only wait there."""
    return await CLIENT_THREADS.get(context.scope).run(call, *args)


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
    return without_controls([(name, value) for name, value in form.multi_items() if isinstance(value, str)])


def query_pairs(request: Request) -> list[tuple[str, str]]:
    return without_controls(list(request.query_params.multi_items()))


def without_controls(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``pairs``, refused (400, in the endpoint's error form) when a name or value holds a control character:
    no parameter of ours may (RFC 6749 Appendix A: client_id, state, code… are visible ASCII), and a NUL byte
    would reach the database (identity/text.py). The refusal names neither the parameter's value nor its name."""
    if any(has_control(name) or has_control(value) for name, value in pairs):
        raise HTTPException(400, "A parameter contains a control character.")
    return pairs


def browser(request: Request) -> Browser:
    """The browser's cookies of ours; one holding a control character (a quoted cookie may: ``"\\000"``) is
    treated as absent, as any other cookie we did not set."""
    cookies = {name: value for name, value in request.cookies.items() if not has_control(value)}
    return Browser(
        bindings={k: v for k, v in cookies.items() if k.startswith(INTERACTION_COOKIE_PREFIX)},
        session=cookies.get(SESSION_COOKIE),
        address=request.client.host if request.client else "unknown",
        device=cookies.get(DEVICE_COOKIE),
    )


def json(document: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(document), status_code=status, headers=headers, media_type="application/json")


def outcome(result: Outcome, issuer: Issuer) -> Response:
    response: Response
    if result.page is not None:
        response = page_response(result.page)
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


def as_connexion(response: Response) -> ConnexionResponse:
    """An error handler's answer in the form Connexion's error handling takes (it makes a response of it again)."""
    headers = {k: v for k, v in response.headers.items() if k not in ("content-length", "content-type")}
    return ConnexionResponse(
        status_code=response.status_code, mimetype=response.media_type, body=response.body, headers=headers
    )
