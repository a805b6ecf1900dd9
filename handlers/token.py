"""The token endpoint: the raw form (repeats included) and the Authorization header go to the domain."""

from starlette.responses import Response

from handlers.authenticated_forms import Pairs, answer_form
from identity.minting import IssuedTogether
from service.identity_api.handler_support import NO_STORE, json, provider


async def exchange() -> Response:
    identity = provider()

    def writes(pairs: Pairs) -> IssuedTogether | None:
        """A client_credentials exchange writes its token's record with the others run in a row."""
        return identity.issued_together if ("grant_type", "client_credentials") in pairs else None

    return json(await answer_form(identity.token_endpoint.exchange, writes=writes), headers=NO_STORE)
