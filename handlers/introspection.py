"""Token introspection (RFC 7662): client-authenticated, the raw form goes to the domain."""

from starlette.responses import Response

from service.identity_api.handler_support import NO_STORE, current, json, off_the_loop, provider
from service.web.request_reading import form_pairs


async def introspect() -> Response:
    request = current()
    answer = await off_the_loop(
        provider().inspector.introspect,
        await form_pairs(request),
        request.headers.get("Authorization"),
        request.headers.get("Origin"),
    )
    return json(answer, headers=NO_STORE)
