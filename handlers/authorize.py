"""The authorization request (GET and form POST): every parameter is read raw, repeats included.

Browser endpoints run the flow in a worker thread (see ``service.identity_api.identity_app``)."""

from starlette.responses import Response

from service.identity_api.handler_support import current, outcome, provider
from service.web.offload import in_thread
from service.web.request_reading import browser, form_pairs, query_pairs


async def start() -> Response:
    identity, request = provider(), current()
    result = await in_thread(identity.sign_in_pages.authorization.start, query_pairs(request), browser(request))
    return outcome(result, identity.issuer)


async def start_post() -> Response:
    identity, request = provider(), current()
    pairs = await form_pairs(request)
    return outcome(
        await in_thread(identity.sign_in_pages.authorization.start, pairs, browser(request)), identity.issuer
    )
