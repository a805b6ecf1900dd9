"""Discovery and the JWKS answered in front of the identity API: prepared bytes, with nothing else in the way.

``GET`` and ``HEAD`` of ``{issuer}/.well-known/openid-configuration`` and ``{issuer}/jwks`` (OpenID Connect
Discovery 1.0 §4, RFC 7517 §5) are fixed bytes: the metadata serialised once from the settings, and the JWK Set
as this node last read it (``identity/keys.py``, read again in the background). They are answered here, before
the identity API's Connexion app, with exactly the headers ``openapi/identity.yaml`` gives them there:
``Content-Type``, ``Cache-Control: public, max-age=300`` and the ``Vary: Origin`` of CORS; a request carrying an
``Origin`` goes through the same CORS layer (``service/web/cors.py``) the API's other public documents use.
Anything else on these paths (a preflight, another method, a JWKS never read yet) goes on to the API, which
answers it as before; so does every other path.

RFC 9110 §9.3.2: HEAD is GET without the body, its ``Content-Length`` the GET's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

from identity.issuer import Issuer
from identity.keys import SigningKeys
from identity.provider import Provider
from service.identity_api.responses import PUBLIC_CACHE
from service.settings import Settings
from service.web.cors import CrossOrigin

DISCOVERY_PATH = "/.well-known/openid-configuration"
JWKS_PATH = "/jwks"
ANSWERED = ("GET", "HEAD")
# the headers handlers/oidc.py answers with (service/identity_api/responses.py)
_HEADERS = [(b"content-type", b"application/json"), (b"cache-control", PUBLIC_CACHE["Cache-Control"].encode())]
_VARY = (b"vary", b"Origin")  # what CORS adds to an answer to a request without Origin (service/web/cors.py)


class PublishedDocuments:
    """Answers discovery and the JWKS from memory; passes every other request to ``app`` (the identity API).

    ``cors_origins`` and ``cors_max_age``: those of the API's public documents (``MENUS_CORS_ORIGINS``), for a
    request that carries an ``Origin``."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        issuer: Issuer,
        discovery: bytes,
        keys: SigningKeys,
        cors_origins: Sequence[str],
        cors_max_age: int,
    ) -> None:
        self.app = app
        self._keys = keys
        self._bodies: dict[str, Callable[[], bytes | None]] = {
            issuer.path + DISCOVERY_PATH: lambda: discovery,
            issuer.path + JWKS_PATH: self._jwks,
        }
        self._with_cors = CrossOrigin(self._answer, origins=cors_origins, selected=_every_path, max_age=cors_max_age)

    @classmethod
    def of(cls, app: ASGIApp, provider: Provider, settings: Settings) -> PublishedDocuments:
        """In front of ``app``, the identity API of ``provider`` as ``service/app.py`` builds it."""
        return cls(
            app,
            issuer=provider.issuer,
            discovery=provider.discovery_body,
            keys=provider.keys,
            cors_origins=settings.cors_origins,
            cors_max_age=settings.cors_max_age,
        )

    def _jwks(self) -> bytes | None:
        """The JWK Set as last read; None before the first read (the API reads it then, in a thread)."""
        published = self._keys.last_published()
        return published.body if published is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = self._bodies.get(scope["path"]) if scope["type"] == "http" and scope["method"] in ANSWERED else None
        if body is None or body() is None:
            await self.app(scope, receive, send)
        elif any(name == b"origin" for name, _ in scope["headers"]):
            await self._with_cors(scope, receive, send)
        else:
            await self._send(scope, send, [_VARY])

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._send(scope, send, [])  # CORS adds its headers, Vary: Origin among them

    async def _send(self, scope: Scope, send: Send, more: list[tuple[bytes, bytes]]) -> None:
        body = self._bodies[scope["path"]]() or b""
        headers = [*_HEADERS, (b"content-length", str(len(body)).encode()), *more]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body if scope["method"] == "GET" else b""})


def _every_path(_: str) -> bool:
    return True
