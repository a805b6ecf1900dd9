"""What the identity handlers take from their app and how they shape a reply.

The provider and the worker threads of the request's state in (the slots ``PROVIDER`` and
``CLIENT_THREADS``, filled by ``identity_app.py``); JSON, pages (``page_rendering.py``) and redirects
with cookies out. Everything but discovery and the JWKS carries ``Cache-Control: no-store``; errors are
``http_errors.py``'s. The request's form and query pairs and the browser's cookies are read by
``service/web/request_reading.py``, which the console shares.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
from connexion import context
from starlette.requests import Request
from starlette.responses import Response

from identity.common.issuer import Issuer
from identity.interaction.browser import Outcome
from identity.provider import Provider
from service.identity_api.page_rendering import page_response
from service.web.request_state import Slot

if TYPE_CHECKING:
    from service.web.offload import Units, Workers

T = TypeVar("T")

PROVIDER: Slot[Provider] = Slot("provider")  # the identity API's entry: the OpenID provider
CLIENT_THREADS: Slot[Workers] = Slot("client_threads")  # the identity API: worker threads it may use

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
PUBLIC_CACHE = {"Cache-Control": "public, max-age=300"}  # discovery and JWKS: safe to cache briefly


def provider() -> Provider:
    """The provider of the app serving this request (put in the request's state by ``create_identity_app``)."""
    return PROVIDER.get(context.scope)


async def off_the_loop(call: Callable[..., T], *args: Any, units: Units | None = None, hint: Any = None) -> T:
    """Run the domain's blocking work (its SQL, commits that wait for the disk, RSA signing) in a worker thread,
    so that one slow commit never holds every request of the worker. At most as many at once as the database
    pool has connections (the request's ``client_threads``, ``service/web/offload.py``): more would only wait there."""
    return await CLIENT_THREADS.get(context.scope).run(call, *args, units=units, hint=hint)


def current() -> Request:
    """The request being answered."""
    return Request(context.scope, context.receive)


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
