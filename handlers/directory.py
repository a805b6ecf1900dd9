"""The member directory, read with an application token (``members:read``), in a worker thread (its SQL never
runs on the event loop)."""

from functools import partial

from starlette.responses import Response

from service.identity_api.handler_support import current, json, off_the_loop, provider
from service.web.link_header import next_link


async def list_members(limit: int = 20, cursor: str | None = None) -> Response:
    authorization = current().headers.get("Authorization")
    oidc = provider()
    page = await off_the_loop(partial(oidc.directory.members, authorization, limit=limit, cursor=cursor))
    headers = {"Cache-Control": "no-store"}
    if page["next_cursor"] is not None:
        endpoint = oidc.issuer.endpoint("/directory/members")
        headers["Link"] = next_link(endpoint, [("limit", limit)], page["next_cursor"])
    return json(page, headers=headers)
