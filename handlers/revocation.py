"""Token revocation (RFC 7009): 200 with an empty body whether or not there was anything to revoke."""

from starlette.responses import Response

from service.identity_api.handler_support import NO_STORE, current, off_the_loop, provider
from service.web.request_reading import form_pairs


async def revoke() -> Response:
    request = current()
    await off_the_loop(
        provider().inspector.revoke,
        await form_pairs(request),
        request.headers.get("Authorization"),
        request.headers.get("Origin"),
    )
    return Response(status_code=200, headers=NO_STORE)  # the body is empty; it has no media type
