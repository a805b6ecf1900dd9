"""The token endpoint: the raw form (repeats included) and the Authorization header go to the domain."""

from starlette.responses import Response

from service.identity_api.handler_support import NO_STORE, current, json, off_the_loop, provider
from service.web.request_reading import form_pairs


async def exchange() -> Response:
    request = current()
    tokens = await off_the_loop(
        provider().token_endpoint.exchange,
        await form_pairs(request),
        request.headers.get("Authorization"),
        request.headers.get("Origin"),
    )
    return json(tokens, headers=NO_STORE)
