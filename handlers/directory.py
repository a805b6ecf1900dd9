"""The member directory, read with an application token (``members:read``)."""

import flask

from service.identity_web import json, provider


def list_members(limit: int = 20, cursor: str | None = None) -> flask.Response:
    page = provider().directory.members(flask.request.headers.get("Authorization"), limit=limit, cursor=cursor)
    return json(page, headers={"Cache-Control": "no-store"})
