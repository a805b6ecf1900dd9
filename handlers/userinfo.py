"""UserInfo (OpenID Connect Core §5.3): the token in the Authorization header, or (POST) in the form body.

The claims are read from the database in a worker thread (``off_the_loop``), as every identity handler
that touches the database does: never SQL on the event loop."""

from starlette.responses import Response

from service.identity_api.handler_support import current, json, off_the_loop, provider
from service.web.request_reading import form_pairs


async def get_userinfo() -> Response:
    claims = await off_the_loop(provider().userinfo.claims, current().headers.get("Authorization"))
    return json(claims, headers={"Cache-Control": "no-store"})


async def post_userinfo() -> Response:
    """OpenID Connect Core §5.3.1 and RFC 6750 §2.2: a POST may carry the token as ``access_token`` in a form body."""
    request = current()
    pairs = await form_pairs(request)
    claims = await off_the_loop(provider().userinfo.claims, request.headers.get("Authorization"), pairs)
    return json(claims, headers={"Cache-Control": "no-store"})
