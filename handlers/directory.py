"""The member directory, read with an application token (``members:read``)."""

from starlette.responses import Response

from service.identity_api.responses import current, json, provider


async def list_members(limit: int = 20, cursor: str | None = None) -> Response:
    authorization = current().headers.get("Authorization")
    page = provider().directory.members(authorization, limit=limit, cursor=cursor)
    return json(page, headers={"Cache-Control": "no-store"})
