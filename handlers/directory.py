"""The member directory, read with an application token (``members:read``), in a worker thread (its SQL never
runs on the event loop)."""

from functools import partial

from starlette.responses import Response

from service.identity_api.responses import current, json, off_the_loop, provider


async def list_members(limit: int = 20, cursor: str | None = None) -> Response:
    authorization = current().headers.get("Authorization")
    members = partial(provider().directory.members, authorization, limit=limit, cursor=cursor)
    return json(await off_the_loop(members), headers={"Cache-Control": "no-store"})
