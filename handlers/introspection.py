"""Token introspection (RFC 7662): client-authenticated, the raw form goes to the domain."""

from starlette.responses import Response

from service.identity_api.responses import NO_STORE, current, form_pairs, json, off_the_loop, provider


async def introspect() -> Response:
    request = current()
    answer = await off_the_loop(
        provider().introspection.introspect,
        await form_pairs(request),
        request.headers.get("Authorization"),
        request.headers.get("Origin"),
    )
    return json(answer, headers=NO_STORE)
