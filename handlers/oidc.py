"""Discovery and JWKS: prepared bytes, answered from memory (no SQL, no serialising per request).

The metadata is fixed by the settings; the JWKS is the one this node last read (``identity.keys.signing_keys``), read
again in the background and at once after a rotation here."""

from starlette.responses import Response

from service.identity_api.handler_support import PUBLIC_CACHE, provider


async def discovery() -> Response:
    return Response(provider().discovery_body, headers=PUBLIC_CACHE, media_type="application/json")


async def jwks() -> Response:
    return Response(provider().keys.published().body, headers=PUBLIC_CACHE, media_type="application/json")
