"""CORS of the endpoints a browser app calls itself: token, revocation and userinfo.

A public client registers the web origins whose pages may call these endpoints (``clients create
--web-origin``; ``identity/clients/web_origins.py``). A preflight (Fetch §4.8: ``OPTIONS`` with ``Origin``
and ``Access-Control-Request-Method``) from a registered origin is answered here with
``Access-Control-Allow-Origin`` that origin, the methods and headers allowed (``DPoP`` among them, ignored: RFC 9449
§5), and
``Access-Control-Max-Age``; from any other origin it is ``403 access_denied`` without a CORS header.
Answers to a registered origin's requests carry ``Access-Control-Allow-Origin`` that origin; every
answer of these paths carries ``Vary: Origin``, since it depends on it. No credentials mode: the
browser app sends its tokens itself, never a cookie of ours.

Userinfo keeps answering the origins of ``MENUS_CORS_ORIGINS`` too (``service/web/cors.py``, default
``*``: a bearer token is the whole credential), so a registered origin is one more, never one less.
An ``OPTIONS`` that is not a preflight goes to the operation the contract declares for it.

The pages, the console and introspection never answer CORS (a POST from another origin to the token,
revocation or introspection endpoint is refused by the domain before anything is spent).
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson
from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from identity.clients.web_origins import WebOrigins
from identity.common.issuer import REVOCATION_PATH, TOKEN_PATH, USERINFO_PATH
from service.web.cors import EXPOSE_HEADERS
from service.web.offload import in_thread

# RFC 9449 §5: a server that does not do DPoP may ignore the DPoP header, and issues Bearer tokens; a browser app
# that sends one (oidc-client-ts with ``dpop`` set) must pass the preflight to get them.
CLIENT_HEADERS = "content-type, authorization, dpop"
# The contract's bounds of the two headers; a longer one is no preflight of ours: the contract's 400 answers it.
MAX_ORIGIN, MAX_REQUEST_METHOD = 2048, 64  # a form body, and Basic or DPoP-less bearer credentials
METHODS = {TOKEN_PATH: "POST", REVOCATION_PATH: "POST", USERINFO_PATH: "GET, POST"}


class ClientCrossOrigin:
    """CORS of the token, revocation and userinfo endpoints below ``issuer_path``; other paths pass untouched."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        issuer_path: str,
        origins: WebOrigins,
        userinfo_origins: Sequence[str],  # MENUS_CORS_ORIGINS: the userinfo endpoint answers these too
        max_age: int,  # seconds a browser may keep a preflight's answer
    ) -> None:
        self.app = app
        self.origins = origins
        self.methods = {issuer_path + path: methods for path, methods in METHODS.items()}
        self.userinfo = issuer_path + USERINFO_PATH
        self.userinfo_origins = frozenset(userinfo_origins)
        self.max_age = str(max_age)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        methods = self.methods.get(scope["path"]) if scope["type"] == "http" else None
        if methods is None:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        allowed = await self._allowed(scope["path"], origin) if origin else None
        if scope["method"] == "OPTIONS" and origin and _bounded(origin, headers.get("access-control-request-method")):
            await self._preflight(allowed, origin, methods)(scope, receive, send)
            return

        async def with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                answer = MutableHeaders(scope=message)
                answer.add_vary_header("Origin")
                if allowed:
                    answer["Access-Control-Allow-Origin"] = allowed
                    answer["Access-Control-Expose-Headers"] = ", ".join(EXPOSE_HEADERS)
            await send(message)

        await self.app(scope, receive, with_cors)

    async def _allowed(self, path: str, origin: str) -> str | None:
        """The ``Access-Control-Allow-Origin`` value for ``origin`` on ``path``, or None: no CORS."""
        if path == self.userinfo and "*" in self.userinfo_origins:
            return "*"
        if path == self.userinfo and origin in self.userinfo_origins:
            return origin
        if origin == self.origins.issuer_origin:
            return None  # the provider's own pages need no CORS
        # The registered origins are read from the database now and then: off the event loop.
        return origin if await in_thread(self.origins.registered, origin) else None

    def _preflight(self, allowed: str | None, origin: str, methods: str) -> Response:
        if allowed is None:
            # The answer never repeats the Origin sent (docs/security.md): a preflight's answer is read by the page.
            text = "Pages of this request's origin may not call this endpoint."
            body = orjson.dumps({"error": "access_denied", "error_description": text})
            return Response(
                body,
                status_code=403,
                media_type="application/json",
                headers={"Cache-Control": "no-store", "Vary": "Origin"},
            )
        return Response(
            status_code=204,
            headers={
                "Access-Control-Allow-Origin": allowed,
                "Access-Control-Allow-Methods": methods,
                "Access-Control-Allow-Headers": CLIENT_HEADERS,
                "Access-Control-Max-Age": self.max_age,
                "Vary": "Origin",
            },
        )


def _bounded(origin: str, method: str | None) -> bool:
    """A preflight (both headers) within the contract's bounds."""
    return method is not None and len(origin) <= MAX_ORIGIN and len(method) <= MAX_REQUEST_METHOD
