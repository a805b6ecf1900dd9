"""UserInfo (OpenID Connect Core §5.3): the token is read from the Authorization header only.

The claims are read from the database in a worker thread (``off_the_loop``), as every identity handler
that touches the database does: never SQL on the event loop."""

from starlette.responses import Response

from service.identity_api.responses import current, json, off_the_loop, provider


async def get_userinfo() -> Response:
    claims = await off_the_loop(provider().userinfo.claims, current().headers.get("Authorization"))
    return json(claims, headers={"Cache-Control": "no-store"})


async def post_userinfo() -> Response:
    return await get_userinfo()
