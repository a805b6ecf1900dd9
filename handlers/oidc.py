"""Discovery and JWKS: computed from the issuer and the signing keys."""

from starlette.responses import Response

from service.identity_api.responses import PUBLIC_CACHE, json, provider


async def discovery() -> Response:
    return json(provider().discovery(), headers=PUBLIC_CACHE)


async def jwks() -> Response:
    return json(provider().jwks(), headers=PUBLIC_CACHE)
