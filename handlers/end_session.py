"""RP-initiated sign-out (GET with a query, POST with a form), run in a worker thread like every page."""

from functools import partial

from starlette.responses import Response

from service.identity_api.handler_support import current, outcome, provider
from service.web.offload import in_thread
from service.web.request_reading import browser, form_pairs, query_pairs


async def end_session() -> Response:
    identity, request = provider(), current()
    result = await in_thread(partial(identity.end_session.handle, posted=False), query_pairs(request), browser(request))
    return outcome(result, identity.issuer)


async def end_session_post() -> Response:
    identity, request = provider(), current()
    pairs = await form_pairs(request)
    result = await in_thread(partial(identity.end_session.handle, posted=True), pairs, browser(request))
    return outcome(result, identity.issuer)
