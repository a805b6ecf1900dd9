"""The management API's operations on the organization's identity provider connection (``openapi/management.yaml``,
``/connection``, ``manage:connection``), over ``identity/federation/administration.py``."""

from __future__ import annotations

from typing import Any

from connexion import context
from starlette.responses import Response

from identity.federation.administration import ConnectionAdministration, ConnectionView, tag
from identity.federation.connections import Connection
from identity.organizations.actors import Actor
from service.identity_api.handler_support import current
from service.management_api.management_web import CONNECTION, MANAGEMENT, ManagementWeb, if_match, json_response

NO_STORE = {"Cache-Control": "no-store"}


def _web() -> tuple[ManagementWeb, ConnectionAdministration]:
    web = MANAGEMENT.get(context.scope)
    assert web.connection is not None  # wired by service.app with the management API
    return web, web.connection


def shown(connection: Connection, view: ConnectionView) -> dict[str, Any]:
    """The contract's ``Connection``: never the secret."""
    document = connection.as_dict()
    document.pop("org_id")
    ours = view.endpoints
    document["ours"] = {
        "redirect_uri": ours.redirect_uri,
        "backchannel_logout_uri": ours.backchannel_logout_uri,
        "post_logout_redirect_uri": ours.post_logout_redirect_uri,
        "try_it_url": ours.try_it,
    }
    return document


async def get_connection() -> Response:
    web, administration = _web()
    view = await web.run(current(), CONNECTION, administration.current)
    assert view.connection is not None  # current() is Unknown (404) without one
    return json_response(shown(view.connection, view), headers={**NO_STORE, "ETag": tag(view.connection)})


async def put_connection(body: dict[str, Any]) -> Response:
    web, administration = _web()
    request = current()
    expected = if_match(request, required=False)

    def save(actor: Actor) -> tuple[Connection, ConnectionView, bool]:
        before = administration.show(actor)
        if before.connection is not None and expected is None:
            if_match(request, required=True)  # a change of an existing connection: 428 without If-Match
        saved = administration.save(actor, web.connection_form(body), expected)
        return saved, before, before.connection is None

    saved, view, created = await web.run(request, CONNECTION, save)
    headers = {**NO_STORE, "ETag": tag(saved)}
    return json_response(shown(saved, view), 201 if created else 200, headers)


async def delete_connection() -> Response:
    web, administration = _web()
    request = current()
    expected = if_match(request, required=False)
    await web.run(request, CONNECTION, lambda actor: administration.delete(actor, expected))
    return Response(status_code=204, headers=NO_STORE)


async def check_connection() -> Response:
    web, administration = _web()
    result = await web.run(current(), CONNECTION, administration.check)
    return json_response(result.as_dict(), headers=NO_STORE)
