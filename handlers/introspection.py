"""Token introspection (RFC 7662): client-authenticated, the raw form goes to the domain."""

from starlette.responses import Response

from handlers.authenticated_forms import answer_form
from service.identity_api.handler_support import NO_STORE, json, provider


async def introspect() -> Response:
    return json(await answer_form(provider().introspection.introspect), headers=NO_STORE)
