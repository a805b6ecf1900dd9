"""UserInfo (OpenID Connect Core §5.3): the token in the Authorization header, or (POST) in the form body."""

from starlette.responses import Response

from service.identity_api.responses import current, form_pairs, json, provider


async def get_userinfo() -> Response:
    claims = provider().userinfo.claims(current().headers.get("Authorization"))
    return json(claims, headers={"Cache-Control": "no-store"})


async def post_userinfo() -> Response:
    """OpenID Connect Core §5.3.1 and RFC 6750 §2.2: a POST may carry the token as ``access_token`` in a form body."""
    request = current()
    claims = provider().userinfo.claims(request.headers.get("Authorization"), await form_pairs(request))
    return json(claims, headers={"Cache-Control": "no-store"})
