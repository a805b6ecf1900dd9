"""Token introspection (RFC 7662): client-authenticated, the raw form goes to the domain, with the request's
unit of work (identity/tokens/unit_of_work.py: the token's record read with those of the others a worker runs in a
row)."""

from starlette.responses import Response

from handlers.authenticated_forms import Pairs, answer_form
from service.identity_api.handler_support import NO_STORE, json, provider


def _token(pairs: Pairs) -> str | None:
    return next((value for name, value in pairs if name == "token"), None)


async def introspect() -> Response:
    identity = provider()
    answer = await answer_form(identity.introspection.introspect, units=identity.token_work, hint=_token)
    return json(answer, headers=NO_STORE)
