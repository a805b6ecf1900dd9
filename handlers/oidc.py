"""Discovery and JWKS: computed from the issuer and the signing keys (read in a worker thread: no SQL on the
event loop)."""

from starlette.responses import Response

from service.identity_api.responses import PUBLIC_CACHE, json, off_the_loop, provider


async def discovery() -> Response:
    return json(provider().discovery(), headers=PUBLIC_CACHE)


async def jwks() -> Response:
    return json(await off_the_loop(provider().jwks), headers=PUBLIC_CACHE)
