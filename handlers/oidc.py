"""Discovery and JWKS: computed from the issuer and the signing keys.

The JWKS reads the keys' table in a worker thread (no SQL on the event loop) of the common pool, not the
client endpoints' limiter (``off_the_loop``): a read of public keys must not queue behind their writes."""

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from service.identity_api.responses import PUBLIC_CACHE, json, provider


async def discovery() -> Response:
    return json(provider().discovery(), headers=PUBLIC_CACHE)


async def jwks() -> Response:
    return json(await run_in_threadpool(provider().jwks), headers=PUBLIC_CACHE)
