"""The token endpoint: the raw form (repeats included) and the Authorization header go to the domain, with the
request's unit of work (identity/tokens/unit_of_work.py: a client_credentials token's record is written at its commit,
with those of the others a worker runs in a row)."""

from starlette.responses import Response

from handlers.authenticated_forms import answer_form
from service.identity_api.handler_support import NO_STORE, json, provider


async def exchange() -> Response:
    identity = provider()
    answer = await answer_form(identity.token_endpoint.exchange, units=identity.token_work, hint=lambda _: None)
    return json(answer, headers=NO_STORE)
