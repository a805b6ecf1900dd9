"""The token endpoint: the raw form (repeats included) and the Authorization header go to the domain."""

from starlette.responses import Response

from handlers.authenticated_forms import answer_form
from service.identity_api.handler_support import NO_STORE, json, provider


async def exchange() -> Response:
    return json(await answer_form(provider().token_endpoint.exchange), headers=NO_STORE)
