"""The console's page of the organization's identity provider connection (``openapi/console.yaml``, ``/connection``),
over ``identity/federation/administration.py``.

Owners only: where the members sign in is an owner's decision (an admin or a member gets 403). The page shows the
connection (never its secret), what to register at the provider, the form that registers or changes it, the "try
it" sign-in (the identity API's ``/federation/{org_id}/test``, which shows the claims received and signs nobody in)
and deleting it. Every form carries the console session's CSRF token and is bounded as every console form
(``ConsoleWeb.posted``, and the contract's ``ConnectionForm``). What is refused is answered in the domain's words:
a field 400, a role 403, a change meanwhile 409, too many discovery fetches 429 with ``Retry-After``, a provider that
cannot be used 502; each shows the page again with the values typed (never the secret).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response

from identity.api_keys.console_rules import NotAllowed
from identity.common.errors import InvalidInput
from identity.common.vocabulary import ROLES
from identity.federation.administration import ConnectionAdministration, ConnectionView
from identity.federation.connections import ConnectionForm
from identity.federation.errors import FederationError
from identity.organizations import rules
from identity.organizations.actors import Actor
from service.web.offload import in_thread
from service.web.request_reading import browser

if TYPE_CHECKING:
    from service.console_api.console_web import ConsoleWeb, Visitor

DISCOVERY_RETRY_AFTER = 60  # seconds: the bound of discovery fetches is counted over a minute (connections.py)


class ConnectionPages:
    def __init__(self, web: ConsoleWeb, administration: ConnectionAdministration) -> None:
        self.web = web
        self.administration = administration
        self.path = web.path + "/connection"

    async def page(self, request: Request) -> Response:
        visitor = await in_thread(self.web.visitor, request)
        if visitor is None:
            return self.web.redirect(self.web.home)
        return await self._page(visitor, _actor(visitor, request))

    async def _page(
        self,
        visitor: Visitor,
        actor: Actor,
        *,
        error: str | None = None,
        values: dict[str, str] | None = None,
        status: int = 200,
    ) -> Response:
        try:
            view = await in_thread(self.administration.show, actor)
        except NotAllowed as refused:
            return self.web.message("Not allowed", str(refused), visitor, status=403)
        return self.web.page(
            "connection.html", "Sign-in connection", visitor, status=status, view=view, error=error,
            values=values if values is not None else _values(view), roles=ROLES, section="connection",
        )  # fmt: skip

    async def save(self, request: Request) -> Response:
        visitor, form, refused = await self.web.posted(request)
        if refused is not None:
            return refused
        assert visitor is not None
        actor = _actor(visitor, request)
        shown = {name: value for name, value in form.items() if name not in ("client_secret", "csrf_token")}
        change = ConnectionForm(
            issuer=form.get("issuer", ""),
            client_id=form.get("client_id", ""),
            client_secret=form.get("client_secret") or None,
            scopes=form.get("scopes", "").split(),
            default_role=form.get("default_role", "member"),
            sso_required=form.get("sso_required") == "on",
            domains=form.get("domains", "").lower().split() or None,
        )
        try:
            await in_thread(self.administration.save, actor, change, form.get("version") or None)
        except NotAllowed as error:
            return self.web.message("Not allowed", str(error), visitor, status=403)
        except InvalidInput as error:
            return await self._page(visitor, actor, error=str(error).capitalize() + ".", values=shown, status=400)
        except rules.Stale as error:
            return await self._page(visitor, actor, error=str(error), status=409)
        except FederationError as error:
            response = await self._page(
                visitor, actor, error=f"{error.title}: {error.description}", values=shown, status=error.status
            )
            if error.status == 429:
                response.headers["Retry-After"] = str(DISCOVERY_RETRY_AFTER)
            return response
        return self.web.redirect(self.path)

    async def delete(self, request: Request) -> Response:
        visitor, _form, refused = await self.web.posted(request)
        if refused is not None:
            return refused
        assert visitor is not None
        actor = _actor(visitor, request)
        try:
            await in_thread(self.administration.delete, actor)
        except NotAllowed as error:
            return self.web.message("Not allowed", str(error), visitor, status=403)
        except rules.Unknown as error:
            return await self._page(visitor, actor, error=str(error), status=404)
        return self.web.redirect(self.path)


def _actor(visitor: Visitor, request: Request) -> Actor:
    member = visitor.member
    return Actor.member(member.user_id, member.org_id, member.role, browser(request).address, member.org_name)


def _values(view: ConnectionView) -> dict[str, str]:
    """The form's fields as stored (the secret never: an empty field keeps it)."""
    connection = view.connection
    if connection is None:
        return {"scopes": "openid email profile", "default_role": "member"}
    return {
        "version": view.tag or "",
        "issuer": connection.issuer,
        "client_id": connection.client_id,
        "scopes": " ".join(connection.scopes),
        "domains": " ".join(connection.domains or ()),
        "default_role": connection.default_role,
        "sso_required": "on" if connection.sso_required else "",
    }
