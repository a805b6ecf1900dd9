"""UserInfo (OpenID Connect Core §5.3): the token is read from the Authorization header only."""

from starlette.responses import Response

from service.identity_api.responses import current, json, provider


async def get_userinfo() -> Response:
    claims = provider().userinfo.claims(current().headers.get("Authorization"))
    return json(claims, headers={"Cache-Control": "no-store"})


async def post_userinfo() -> Response:
    return await get_userinfo()
