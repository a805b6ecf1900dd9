"""Token revocation (RFC 7009): 200 with an empty body whether or not there was anything to revoke."""

from starlette.responses import Response

from service.identity_api.responses import NO_STORE, current, form_pairs, off_the_loop, provider


async def revoke() -> Response:
    request = current()
    await off_the_loop(
        provider().revocation.revoke,
        await form_pairs(request),
        request.headers.get("Authorization"),
        request.headers.get("Origin"),
    )
    return Response(status_code=200, headers=NO_STORE)  # the body is empty; it has no media type
