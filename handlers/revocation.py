"""Token revocation (RFC 7009): 200 with an empty body whether or not there was anything to revoke."""

from starlette.responses import Response

from handlers.authenticated_forms import answer_form
from service.identity_api.handler_support import NO_STORE, provider


async def revoke() -> Response:
    await answer_form(provider().revocation.revoke)
    return Response(status_code=200, headers=NO_STORE)  # the body is empty; it has no media type
