"""RP-initiated sign-out (GET with a query, POST with a form), run in a worker thread like every page."""

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from service.identity_api.handler_support import current, outcome, provider
from service.web.request_reading import browser, form_pairs, query_pairs


async def end_session() -> Response:
    identity, request = provider(), current()
    result = await run_in_threadpool(identity.end_session.handle, query_pairs(request), browser(request), posted=False)
    return outcome(result, identity.issuer)


async def end_session_post() -> Response:
    identity, request = provider(), current()
    pairs = await form_pairs(request)
    result = await run_in_threadpool(identity.end_session.handle, pairs, browser(request), posted=True)
    return outcome(result, identity.issuer)
