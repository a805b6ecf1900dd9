"""Cross-origin access (CORS) for the public, read-only endpoints, with Starlette's ``CORSMiddleware``.

A browser page on another origin (a hosted Swagger UI or Redoc, a browser app, a JavaScript SDK) may
call the menus API, read the three OpenAPI documents, and read discovery and the JWKS. Userinfo, token
and revocation answer CORS in ``service/identity_api/client_cors.py`` (userinfo for these origins and
the public clients' registered web origins; token and revocation for the registered web origins only).
Introspection, the directory and the pages never answer CORS: they take client credentials or cookies,
and a browser on another origin has no business sending either.

Preflights are answered here, before the menus API's key check (a browser never sends credentials on
a preflight, Fetch §4.8). No cookies are involved: ``Authorization`` is allowed as a request header,
and credentials mode is off, so ``Access-Control-Allow-Origin`` may be ``*``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware.cors import CORSMiddleware
from starlette.types import Receive, Scope, Send

from service.web.edge import Exchange

VARY_ORIGIN = (b"vary", b"Origin")
ALLOW_METHODS = ("GET", "HEAD", "POST")  # POST: userinfo (OpenID Connect Core §5.3.1)
ALLOW_HEADERS = ("Authorization", "If-None-Match", "X-Request-ID")
EXPOSE_HEADERS = (
    "ETag",
    "Link",  # the next page of a cursor list (RFC 8288)
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "Retry-After",
    "X-Request-ID",
    "WWW-Authenticate",
    "Allow",
)


def cross_origin_paths(issuer_path: str | None) -> Callable[[str], bool]:
    """The paths that answer CORS: everything under ``/v1``, the documents, and (given the issuer's path, for the
    identity API) discovery and JWKS (userinfo: ``service/identity_api/client_cors.py``)."""
    exact = {"/ops/openapi.json", "/ops/openapi.yaml"}
    if issuer_path is not None:
        exact = {
            f"{issuer_path}/.well-known/openid-configuration",
            f"{issuer_path}/jwks",
            f"{issuer_path}/openapi.json",
            f"{issuer_path}/openapi.yaml",
        }

    def answers_cors(path: str) -> bool:
        return path in exact or path == "/v1" or path.startswith("/v1/")

    return answers_cors


class CrossOrigin:
    """The edge's CORS step (``service/web/edge.py``) for the ``selected`` paths, with the rules of Starlette's
    ``CORSMiddleware``: a preflight is answered here; any other request gets its headers as the response starts
    (``Vary: Origin`` always, the allow and expose headers when it came with an ``Origin``)."""

    def __init__(self, *, origins: Sequence[str], selected: Callable[[str], bool], max_age: int) -> None:
        self.selected = selected
        self.cors = CORSMiddleware(
            _never_called,
            allow_origins=list(origins),
            allow_methods=ALLOW_METHODS,
            allow_headers=ALLOW_HEADERS,
            expose_headers=EXPOSE_HEADERS,
            max_age=max_age,  # seconds a browser may keep a preflight's answer
        )

    async def __call__(self, scope: Scope, receive: Receive, exchange: Exchange) -> tuple[Scope, Receive] | None:
        if not self.selected(scope["path"]):
            return scope, receive
        origin: str | None = None
        for name, value in scope["headers"]:
            if name == b"origin":
                origin = value.decode("latin-1")
                break
        if origin is None:
            exchange.on_start.append(self._without_origin)
            return scope, receive
        request_headers = Headers(scope=scope)
        if scope["method"] == "OPTIONS" and "access-control-request-method" in request_headers:
            await self.cors.preflight_response(request_headers=request_headers)(scope, receive, exchange)
            return None
        exchange.on_start.append(functools.partial(self._with_origin, origin))
        return scope, receive

    def _without_origin(self, _: Exchange, headers: list[tuple[bytes, bytes]]) -> None:
        for name, _value in headers:
            if name == b"vary":  # the names MutableHeaders matches (it compares them as they are)
                break
        else:
            headers.append(VARY_ORIGIN)  # the usual case, without building MutableHeaders: the menus hot path
            return
        mutable = MutableHeaders(raw=headers)
        mutable["Vary"] = ", ".join([*mutable.getlist("Vary"), "Origin"])

    def _with_origin(self, origin: str, _: Exchange, headers: list[tuple[bytes, bytes]]) -> None:
        cors = self.cors
        mutable = MutableHeaders(raw=headers)
        mutable.update(cors.simple_headers)
        if (cors.allow_all_origins and cors.allow_credentials) or (
            not cors.allow_all_origins and cors.is_allowed_origin(origin=origin)
        ):
            cors.allow_explicit_origin(mutable, origin)
        else:
            mutable["Vary"] = ", ".join([*mutable.getlist("Vary"), "Origin"])


async def _never_called(scope: Scope, receive: Receive, send: Send) -> None:
    raise AssertionError("CrossOrigin calls CORSMiddleware's rules, never its app")
