"""The management API's operations (``openapi/management.yaml``): each authenticates its token for its scope,
hands the validated arguments to the organization's domain, and shapes the answer."""

from __future__ import annotations

from typing import Any

from connexion import context
from starlette.responses import Response

from identity.organizations import applications as apps
from identity.organizations import keys as org_keys
from identity.organizations.actors import Actor
from identity.organizations.idempotency import Answer
from service.identity_api.handler_support import current
from service.management_api.management_web import (
    AUDIT,
    CLIENTS,
    KEYS,
    MANAGEMENT,
    MEMBERS,
    ManagementWeb,
    idempotency_key,
    if_match,
    json_response,
)

NO_STORE = {"Cache-Control": "no-store"}


def _web() -> ManagementWeb:
    return MANAGEMENT.get(context.scope)


# Members


async def list_members(limit: int = 20, cursor: str | None = None) -> Response:
    web = _web()
    page = await web.run(current(), MEMBERS, lambda actor: web.members.page(actor.org_id, limit=limit, cursor=cursor))
    data = [member.as_dict() for member in page.members]
    return web.page("/members", data, page.total, page.next_cursor, {"limit": limit})


async def get_member(user_id: str) -> Response:
    web = _web()
    member = await web.run(current(), MEMBERS, lambda actor: web.members.get(actor.org_id, user_id))
    return json_response(member.as_dict(), headers={**NO_STORE, "ETag": member.tag})


async def update_member(user_id: str, body: dict[str, Any]) -> Response:
    web, request = _web(), current()
    expected = if_match(request, required=True)

    def change(actor: Actor) -> Any:
        return web.members.change_role(actor, user_id, body["role"], expected)

    member = await web.run(request, MEMBERS, change)
    return json_response(member.as_dict(), headers={**NO_STORE, "ETag": member.tag})


async def remove_member(user_id: str) -> Response:
    web, request = _web(), current()
    expected = if_match(request, required=False)
    await web.run(request, MEMBERS, lambda actor: web.members.remove(actor, user_id, expected))
    return Response(status_code=204, headers=NO_STORE)


# Invitations


async def list_invitations(limit: int = 20, cursor: str | None = None) -> Response:
    web = _web()
    page = await web.run(
        current(), MEMBERS, lambda actor: web.invitations.page(actor.org_id, limit=limit, cursor=cursor)
    )
    now = web.invitations.now()
    data = [invitation.as_dict(now) for invitation in page.invitations]
    return web.page("/invitations", data, page.total, page.next_cursor, {"limit": limit})


async def create_invitation(body: dict[str, Any]) -> Response:
    web, request = _web(), current()
    key = idempotency_key(request)

    def invite(actor: Actor) -> Answer:
        def create(connection: Any) -> tuple[int, dict[str, Any], list[Any]]:
            invitation, written = web.invitations.invite_in(
                connection, actor, body["email"], body.get("role", "member")
            )
            return 201, invitation.as_dict(web.invitations.now()), [written]

        return web.idempotency.run(actor.org_id, key, "create_invitation", body, create)

    answer = await web.run(request, MEMBERS, invite)
    return web.created(answer, web.location(f"/invitations/{answer.body['id']}"))


async def get_invitation(invitation_id: str) -> Response:
    web = _web()
    invitation = await web.run(current(), MEMBERS, lambda actor: web.invitations.get(actor.org_id, invitation_id))
    return json_response(invitation.as_dict(web.invitations.now()), headers=NO_STORE)


async def revoke_invitation(invitation_id: str) -> Response:
    """An action, not a DELETE: the revoked invitation stays readable by id, in state ``revoked``."""
    web = _web()
    invitation = await web.run(current(), MEMBERS, lambda actor: web.invitations.revoke(actor, invitation_id))
    return json_response(invitation.as_dict(web.invitations.now()), headers=NO_STORE)


async def resend_invitation(invitation_id: str) -> Response:
    web = _web()
    invitation = await web.run(current(), MEMBERS, lambda actor: web.invitations.resend(actor, invitation_id))
    return json_response(invitation.as_dict(web.invitations.now()), headers=NO_STORE)


# Clients


async def list_clients(limit: int = 20, cursor: str | None = None) -> Response:
    web = _web()
    page = await web.run(
        current(), CLIENTS, lambda actor: web.applications.page(actor.org_id, limit=limit, cursor=cursor)
    )
    data = [apps.as_dict(client) for client in page.clients]
    return web.page("/clients", data, page.total, page.next_cursor, {"limit": limit})


async def create_client(body: dict[str, Any]) -> Response:
    web, request = _web(), current()
    key = idempotency_key(request)
    registration = web.registration(body)

    def register(actor: Actor) -> Answer:
        def create(connection: Any) -> tuple[int, dict[str, Any], list[Any]]:
            client, secret, written = web.applications.register_in(connection, actor, registration)
            return 201, {**apps.as_dict(client), "client_secret": secret}, [written]

        return web.idempotency.run(actor.org_id, key, "create_client", body, create)

    answer = await web.run(request, CLIENTS, register)
    client_id = answer.body["client_id"]
    etag = apps.tag(await web.run(request, CLIENTS, lambda actor: web.applications.get(actor.org_id, client_id)))
    return web.created(answer, web.location(f"/clients/{client_id}"), etag)


async def get_client(client_id: str) -> Response:
    web = _web()
    client = await web.run(current(), CLIENTS, lambda actor: web.applications.get(actor.org_id, client_id))
    return json_response(apps.as_dict(client), headers={**NO_STORE, "ETag": apps.tag(client)})


async def update_client(client_id: str, body: dict[str, Any]) -> Response:
    web, request = _web(), current()
    expected = if_match(request, required=True)
    changes = web.changes(body)
    client = await web.run(request, CLIENTS, lambda actor: web.applications.change(actor, client_id, changes, expected))
    return json_response(apps.as_dict(client), headers={**NO_STORE, "ETag": apps.tag(client)})


async def delete_client(client_id: str) -> Response:
    web, request = _web(), current()
    expected = if_match(request, required=False)
    await web.run(request, CLIENTS, lambda actor: web.applications.delete(actor, client_id, expected))
    return Response(status_code=204, headers=NO_STORE)


async def rotate_client_secret(client_id: str) -> Response:
    web = _web()
    client, secret = await web.run(current(), CLIENTS, lambda actor: web.applications.rotate_secret(actor, client_id))
    expires = client.previous_secret_expires_at
    document = {
        "client_id": client.id,
        "client_secret": secret,
        "previous_secret_expires_at": expires.isoformat().replace("+00:00", "Z") if expires else None,
    }
    return json_response(document, headers={**NO_STORE, "ETag": apps.tag(client)})


# API keys


async def list_api_keys(limit: int = 20, cursor: str | None = None) -> Response:
    web = _web()
    page = await web.run(current(), KEYS, lambda actor: web.keys.page(actor.org_id, limit=limit, cursor=cursor))
    data = [org_keys.as_dict(key) for key in page.keys]
    return web.page("/api-keys", data, page.total, page.next_cursor, {"limit": limit})


async def create_api_key(body: dict[str, Any]) -> Response:
    web, request = _web(), current()
    key = idempotency_key(request)

    def make(actor: Actor) -> Answer:
        made: list[Any] = []

        def create(connection: Any) -> tuple[int, dict[str, Any], list[Any]]:
            record, secret, written = web.keys.create_in(connection, actor, body["name"])
            made.append(record)
            return 201, {**org_keys.as_dict(record), "key": secret}, [written]

        answer = web.idempotency.run(actor.org_id, key, "create_api_key", body, create)
        if not answer.replayed:  # made and committed by this request (a replay, or a create rolled back: no line)
            web.keys.created(made[-1])
        return answer

    answer = await web.run(request, KEYS, make)
    return web.created(answer, web.location(f"/api-keys/{answer.body['id']}"))


async def get_api_key(key_id: str) -> Response:
    web = _web()
    record = await web.run(current(), KEYS, lambda actor: web.keys.get(actor.org_id, key_id))
    return json_response(org_keys.as_dict(record), headers=NO_STORE)


async def revoke_api_key(key_id: str) -> Response:
    """An action, not a DELETE: the revoked key's record stays readable, in state ``revoked``."""
    web = _web()
    record = await web.run(current(), KEYS, lambda actor: web.keys.revoke(actor, key_id))
    return json_response(org_keys.as_dict(record), headers=NO_STORE)


# Audit


async def list_audit_events(kind: str | None = None, limit: int = 20, cursor: str | None = None) -> Response:
    web = _web()
    page = await web.run(
        current(), AUDIT, lambda actor: web.trail.page(actor.org_id, kind=kind, limit=limit, cursor=cursor)
    )
    data = [entry.as_dict() for entry in page.entries]
    return web.page("/audit", data, None, page.next_cursor, {"kind": kind, "limit": limit})
