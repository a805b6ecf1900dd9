"""Token introspection (RFC 7662): client-authenticated, the raw form goes to the domain."""

from starlette.responses import Response

from handlers.authenticated_forms import Pairs, answer_form
from service.identity_api.handler_support import NO_STORE, json, provider
from service.web.offload import Together


async def introspect() -> Response:
    identity = provider()

    def together(pairs: Pairs) -> Together | None:
        """The token's record, read with those of the others introspected in a row."""
        token = next((value for name, value in pairs if name == "token"), None)
        return None if token is None else (identity.verifier.read_together, token)

    return json(await answer_form(identity.introspection.introspect, together=together), headers=NO_STORE)
