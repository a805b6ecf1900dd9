"""Sign-in through an organization's own provider (identity/federation/): its answer comes back to the callback,
its logout tokens to the back-channel logout endpoint, and the browser after its sign-out to ``signed-out``. Each
runs in a worker thread like every page: the callback redeems a code at the provider and verifies an ID token."""

from functools import partial

from starlette.responses import Response

from service.identity_api.handler_support import NO_STORE, current, outcome, provider
from service.web.offload import in_thread
from service.web.request_reading import browser, form_pairs, query_pairs


async def callback(org_id: str) -> Response:
    identity, request = provider(), current()
    act = partial(identity.federation.callback, org_id)
    return outcome(await in_thread(act, query_pairs(request), browser(request)), identity.issuer)


async def test(org_id: str) -> Response:
    """The console's "try it": an owner signs in at the organization's provider; nobody signs in here."""
    identity, request = provider(), current()
    return outcome(await in_thread(identity.federation.test, org_id, browser(request)), identity.issuer)


async def backchannel_logout(org_id: str) -> Response:
    """Back-Channel Logout 1.0 §2.8: 200 with no body when the token was valid (an error is 400, in JSON)."""
    identity, request = provider(), current()
    pairs = await form_pairs(request)
    await in_thread(identity.federation_logout.receive, org_id, pairs)
    return Response(status_code=200, headers=NO_STORE)


async def signed_out() -> Response:
    identity, request = provider(), current()
    state = dict(query_pairs(request)).get("state")
    return outcome(await in_thread(identity.federation.signed_out, state), identity.issuer)
