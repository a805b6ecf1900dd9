"""Discovery and the JWKS answered at the identity API's edge: prepared bytes, with nothing else in the way.

``GET`` and ``HEAD`` of ``{issuer}/.well-known/openid-configuration`` and ``{issuer}/jwks`` (OpenID Connect
Discovery 1.0 §4, RFC 7517 §5) are fixed bytes: the metadata serialised once from the settings, and the JWK Set
as this node last read it (``identity/keys/signing_keys.py``, read again in the background). They are answered by a step
of the edge (``service/web/edge.py``), after CORS and the documents and before the identity API's Connexion app, with
exactly the headers ``openapi/identity.yaml`` gives them there: ``Content-Type`` and ``Cache-Control: public,
max-age=300``; the CORS step before it adds ``Vary: Origin`` and, for a request with an ``Origin``, the allow
headers, as for the API's other public documents. Anything else on these paths (another method, a JWKS never
read yet) goes on to the API, which answers it as before; so does every other path.

RFC 9110 §9.3.2: HEAD is GET without the body, its ``Content-Length`` the GET's.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.types import Receive, Scope

from identity.common.issuer import Issuer
from identity.keys.signing_keys import SigningKeys
from identity.provider import Provider
from service.identity_api.handler_support import PUBLIC_CACHE
from service.web.edge import Exchange

DISCOVERY_PATH = "/.well-known/openid-configuration"
JWKS_PATH = "/jwks"
ANSWERED = ("GET", "HEAD")
# the headers handlers/oidc.py answers with (service/identity_api/handler_support.py)
_HEADERS = [(b"content-type", b"application/json"), (b"cache-control", PUBLIC_CACHE["Cache-Control"].encode())]


class PublishedDocuments:
    """The edge step that answers discovery and the JWKS from memory; every other request goes on."""

    def __init__(self, *, issuer: Issuer, discovery: bytes, keys: SigningKeys) -> None:
        self._keys = keys
        self._bodies: dict[str, Callable[[], bytes | None]] = {
            issuer.path + DISCOVERY_PATH: lambda: discovery,
            issuer.path + JWKS_PATH: self._jwks,
        }

    @classmethod
    def of(cls, provider: Provider) -> PublishedDocuments:
        """The documents of ``provider``, as ``service/app.py`` builds it."""
        return cls(issuer=provider.issuer, discovery=provider.discovery_body, keys=provider.keys)

    def _jwks(self) -> bytes | None:
        """The JWK Set as last read; None before the first read (the API reads it then, in a thread)."""
        published = self._keys.last_published()
        return published.body if published is not None else None

    async def __call__(self, scope: Scope, receive: Receive, exchange: Exchange) -> tuple[Scope, Receive] | None:
        document = self._bodies.get(scope["path"]) if scope["method"] in ANSWERED else None
        body = document() if document is not None else None
        if body is None:
            return scope, receive
        headers = [*_HEADERS, (b"content-length", str(len(body)).encode())]
        await exchange({"type": "http.response.start", "status": 200, "headers": headers})
        await exchange({"type": "http.response.body", "body": body if scope["method"] == "GET" else b""})
        return None
