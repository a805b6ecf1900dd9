"""The console's pages of an organization run by its members: members and invitations, applications, the audit
trail (``openapi/console.yaml``), over ``identity/organizations/``.

Every page needs a signed-in member; every form carries the console session's CSRF token and is bounded as every
console form (``ConsoleWeb.posted``). What the domain refuses is answered in its words: a role too low 403, a
record of another organization (or none) 404, a conflict 409, a bound per hour 429 with ``Retry-After``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from starlette.requests import Request
from starlette.responses import Response

from cursors import InvalidCursor
from identity.api_keys.console_rules import NotAllowed
from identity.common.errors import InvalidInput
from identity.common.vocabulary import GRANTS, MANAGEMENT_SCOPES
from identity.organizations import applications as apps
from identity.organizations import rules, trail
from identity.organizations.actors import Actor
from identity.organizations.applications import Applications
from identity.organizations.invitations import Invitations
from identity.organizations.keys import OrganizationKeys
from identity.organizations.members import Members
from identity.organizations.trail import Trail
from service.console_api import organization_views as views
from service.console_api.cookies import NEW_SECRET_COOKIE, NewKey
from service.web.offload import in_thread
from service.web.request_reading import browser

if TYPE_CHECKING:
    from service.console_api.console_web import ConsoleWeb, Visitor

AUDIT_PAGE = 50  # entries of the trail a page shows
MEMBERS_PAGE = 100  # members a page shows
NO_APP = "No such application"  # the title of the page that answers 404 for an application
T = TypeVar("T")


class OrganizationPages:
    def __init__(
        self,
        web: ConsoleWeb,
        members: Members,
        invitations: Invitations,
        applications: Applications,
        journal: Trail,
        keys: OrganizationKeys,
    ) -> None:
        self.web = web
        self.keys = keys
        self.members = members
        self.invitations = invitations
        self.applications = applications
        self.trail = journal
        self.secret_path = web.path + "/app-secret"

    # Members and invitations

    async def members_page(self, request: Request) -> Response:
        visitor = await in_thread(self.web.visitor, request)
        if visitor is None:
            return self.web.redirect(self.web.home)
        return await self._members(visitor, cursor=request.query_params.get("cursor"))

    async def _members(
        self,
        visitor: Visitor,
        *,
        cursor: str | None = None,
        error: str | None = None,
        note: str | None = None,
        status: int = 200,
    ) -> Response:
        try:
            view = await in_thread(self._members_view, visitor, cursor)
        except InvalidCursor:
            return self.web.message("Invalid request", "This page of members does not exist.", visitor, 400)
        return self.web.page(
            "members.html", "Members", visitor, status=status, view=view, error=error, note=note, section="members"
        )

    def _members_view(self, visitor: Visitor, cursor: str | None) -> views.MembersView:
        actor = self._actor(visitor, None)
        page = self.members.page(actor.org_id, limit=MEMBERS_PAGE, cursor=cursor)
        owners = self.members.owners(actor.org_id)
        manages = actor.role in ("owner", "admin")
        rows = [
            views.member_row(actor, member, owners) if manages else views.plain_row(member) for member in page.members
        ]
        pending = self.invitations.pending(actor.org_id) if manages else []
        return views.MembersView(manages, rows, page.next_cursor, pending, rules.assignable_roles(actor))

    async def change_role(self, request: Request, user_id: str) -> Response:
        return await self._members_form(
            request,
            lambda actor, form: self.members.change_role(actor, user_id, form.get("role", ""), form.get("version")),
            "The role is changed.",
        )

    async def remove_form(self, request: Request, user_id: str) -> Response:
        visitor = await in_thread(self.web.visitor, request)
        if visitor is None:
            return self.web.redirect(self.web.home)
        load = partial(self.members.get, visitor.member.org_id, user_id)
        row = await self._managed(visitor, "remove members", load, "No such member")
        if isinstance(row, Response):
            return row
        return self.web.page("member_remove.html", "Remove this member?", visitor, row=row, section="members")

    async def remove(self, request: Request, user_id: str) -> Response:
        return await self._members_form(
            request, lambda actor, _form: self.members.remove(actor, user_id), "The member is removed."
        )

    async def leave_form(self, request: Request) -> Response:
        visitor = await in_thread(self.web.visitor, request)
        if visitor is None:
            return self.web.redirect(self.web.home)
        return self.web.page("leave.html", f"Leave {visitor.member.org_name}?", visitor, section="members")

    async def leave(self, request: Request) -> Response:
        visitor, _form, refused = await self.web.posted(request)
        if refused is not None:
            return refused
        assert visitor is not None
        try:
            await in_thread(self.members.leave, self._actor(visitor, request))
        except rules.Conflict as error:
            return await self._members(visitor, error=str(error), status=409)
        await in_thread(self.web.console_sessions.end, visitor.session.console_id)
        text = f"You left {visitor.member.org_name}. Sign in again to use the console with another organization."
        response = self.web.message("You left the organization", text)
        self.web.forget_session(response)
        return response

    async def invite(self, request: Request) -> Response:
        return await self._members_form(
            request,
            lambda actor, form: self.invitations.invite(actor, form.get("email", ""), form.get("role", "member")),
            "The invitation is on its way.",
        )

    async def resend(self, request: Request, invitation_id: str) -> Response:
        return await self._members_form(
            request, lambda actor, _form: self.invitations.resend(actor, invitation_id), "The invitation is sent again."
        )

    async def revoke_invitation(self, request: Request, invitation_id: str) -> Response:
        return await self._members_form(
            request, lambda actor, _form: self.invitations.revoke(actor, invitation_id), "The invitation is revoked."
        )

    async def _members_form(
        self, request: Request, change: Callable[[Actor, dict[str, str]], object], done: str
    ) -> Response:
        """A form of the members page: the change, then the page (303); refused, the page again with why."""
        visitor, form, refused = await self.web.posted(request)
        if refused is not None:
            return refused
        assert visitor is not None
        actor = self._actor(visitor, request)
        try:
            await in_thread(change, actor, form)
        except NotAllowed as error:
            return await self._members(visitor, error=str(error), status=403)
        except rules.Unknown as error:
            return await self._members(visitor, error=str(error), status=404)
        except (rules.Conflict, rules.Stale) as error:
            return await self._members(visitor, error=str(error), status=409)
        except InvalidInput as error:
            return await self._members(visitor, error=str(error).capitalize() + ".", status=400)
        except rules.TooMany as error:
            response = await self._members(visitor, error=str(error), status=429)
            response.headers["Retry-After"] = str(error.retry_after)
            return response
        return self.web.redirect(self.web.path + "/members")

    # Whoever holds an invitation's link

    async def invitation_page(self, request: Request) -> Response:
        token = request.query_params.get("token", "")
        visitor = await in_thread(self.web.visitor, request)
        preview = await in_thread(self.invitations.preview, token)
        context: dict[str, Any] = {"invitation": None, "token": token}
        if preview is not None:
            invitation = preview.invitation
            context["invitation"] = {
                "org_name": preview.org_name,
                "role": invitation.role,
                "email": invitation.email,
            }
            if visitor is not None:
                member = visitor.member
                context["same_address"] = member.email.casefold() == invitation.email.casefold()
                context["already_member"] = await in_thread(self._is_member, member.user_id, invitation.org_id)
        status = 200 if preview is not None else 404
        return self.web.page("invitation.html", "Invitation", visitor, status=status, **context)

    def _is_member(self, user_id: str, org_id: str) -> bool:
        try:
            self.members.get(org_id, user_id)
        except rules.Unknown:
            return False
        return True

    async def accept(self, request: Request) -> Response:
        """The signed-in user joins; the console switches to the organization they joined."""
        visitor, form, refused = await self.web.posted(request, member_needed=False)
        if refused is not None:
            return refused
        assert visitor is not None
        try:
            invitation = await in_thread(
                self.invitations.accept, form.get("token", ""), visitor.member.user_id, browser(request).address
            )
        except rules.Unknown as error:
            return self.web.message("Invitation expired", str(error), visitor, status=404)
        response = self.web.redirect(self.web.path + "/members")
        self.web.switch_organization(response, visitor, invitation.org_id)
        return response

    # Applications

    async def apps_page(self, request: Request) -> Response:
        visitor = await in_thread(self.web.visitor, request)
        if visitor is None:
            return self.web.redirect(self.web.home)
        return await self._apps(visitor)

    async def _apps(
        self, visitor: Visitor, *, error: str | None = None, values: dict[str, str] | None = None, status: int = 200
    ) -> Response:
        listed = await in_thread(self.applications.list, visitor.member.org_id)
        view = views.AppsView(
            visitor.member.role in ("owner", "admin"),
            [views.app_view(client) for client in listed],
            self.applications.auth_methods,
            GRANTS,
            apps.ORGANIZATION_SCOPES,
        )
        return self.web.page(
            "apps.html", "Applications", visitor, status=status, view=view, error=error, values=values or {},
            section="apps",
        )  # fmt: skip

    async def create_app(self, request: Request) -> Response:
        visitor, form, refused = await self.web.posted(request)
        if refused is not None:
            return refused
        assert visitor is not None
        try:
            registration = views.registration_of(form)
            client, secret = await in_thread(self.applications.register, self._actor(visitor, request), registration)
        except NotAllowed as error:
            return await self._apps(visitor, error=str(error), values=form, status=403)
        except InvalidInput as error:
            return await self._apps(visitor, error=str(error).capitalize() + ".", values=form, status=400)
        if secret is None:
            return self.web.redirect(f"{self.web.path}/apps/{client.id}")
        return self._secret_redirect(visitor, client.id, secret)

    async def app_page(self, request: Request, client_id: str) -> Response:
        visitor = await in_thread(self.web.visitor, request)
        if visitor is None:
            return self.web.redirect(self.web.home)
        return await self._app(visitor, client_id)

    async def _app(
        self,
        visitor: Visitor,
        client_id: str,
        *,
        error: str | None = None,
        note: str | None = None,
        values: dict[str, str] | None = None,
        status: int = 200,
    ) -> Response:
        load = partial(self.applications.get, visitor.member.org_id, client_id)
        client = await self._managed(visitor, "see an application's settings", load, NO_APP)
        if isinstance(client, Response):
            return client
        shown = views.app_view(client)
        grace = views.duration(self.applications.secret_grace)
        return self.web.page(
            "app.html", client.name, visitor, status=status, app=shown, values=values or views.form_values(client),
            error=error, note=note, grace=grace, management_scopes=MANAGEMENT_SCOPES, section="apps",
        )  # fmt: skip

    async def update_app(self, request: Request, client_id: str) -> Response:
        def change(actor: Actor, form: dict[str, str]) -> object:
            return self.applications.change(actor, client_id, views.changes_of(form), form.get("version"))

        return await self._app_form(request, client_id, change, lambda _visitor, _done: self._app_path(client_id))

    async def rotate_secret(self, request: Request, client_id: str) -> Response:
        return await self._app_form(
            request,
            client_id,
            lambda actor, _form: self.applications.rotate_secret(actor, client_id),
            lambda visitor, rotated: self._secret_redirect(visitor, rotated[0].id, rotated[1]),
        )

    def _secret_redirect(self, visitor: Visitor, client_id: str, secret: str) -> Response:
        """POST/redirect/GET, as for a new key: the secret rides to the page that shows it once in a cookie that
        page clears (``console_new_secret``: sealed, two minutes, this console session only)."""
        response = self.web.redirect(self.secret_path)
        sealed = NewKey(client_id, secret, visitor.session.csrf_token).seal(self.web.cookies)
        self.web.set_cookie(response, NEW_SECRET_COOKIE, sealed, self.web.cookies.lifetimes.new_key, self.secret_path)
        return response

    async def secret_page(self, request: Request) -> Response:
        visitor = await in_thread(self.web.visitor, request)
        new = NewKey.open(self.web.cookies, request.cookies.get(NEW_SECRET_COOKIE))
        if visitor is None:
            response = self.web.redirect(self.web.home)
        elif new is None or not new.belongs_to(visitor.session):
            response = self.web.message(
                "This secret is no longer shown",
                "A secret is shown once. Rotate it again from the application's page if it was lost.",
                visitor,
            )
        else:
            try:
                client = await in_thread(self.applications.get, visitor.member.org_id, new.key_id)
            except rules.Unknown:
                client = None
            if client is None:
                response = self.web.message("This secret is no longer shown", "The application is gone.", visitor)
            else:
                response = self.web.page(
                    "app_secret.html", "Your application's secret", visitor, client_id=client.id, name=client.name,
                    secret=new.key, previous_until=client.previous_secret_expires_at, section="apps",
                )  # fmt: skip
        if NEW_SECRET_COOKIE in request.cookies:
            self.web.forget_cookie(response, NEW_SECRET_COOKIE, self.secret_path)
        return response

    async def set_management_scopes(self, request: Request, client_id: str) -> Response:
        def change(actor: Actor, form: dict[str, str]) -> object:
            wanted = [scope for scope in MANAGEMENT_SCOPES if form.get(scope.replace(":", "_")) == "on"]
            return self.applications.set_management_scopes(actor, client_id, wanted)

        return await self._app_form(request, client_id, change, lambda _visitor, _done: self._app_path(client_id))

    async def delete_app(self, request: Request, client_id: str) -> Response:
        return await self._app_form(
            request,
            client_id,
            lambda actor, _form: self.applications.delete(actor, client_id),
            lambda _visitor, _done: self.web.redirect(self.web.path + "/apps"),
        )

    def _app_path(self, client_id: str) -> Response:
        return self.web.redirect(f"{self.web.path}/apps/{client_id}")

    async def _app_form(
        self,
        request: Request,
        client_id: str,
        change: Callable[[Actor, dict[str, str]], Any],
        done: Callable[[Visitor, Any], Response],
    ) -> Response:
        """A form of an application's page: the change as the visitor, then ``done`` with what it returned.
        Refused: a role too low 403, an application of another organization (or none) 404, a conflict or a version
        no longer the application's the page again with why (409), a value refused the page with the form (400)."""
        visitor, form, refused = await self.web.posted(request)
        if refused is not None:
            return refused
        assert visitor is not None
        try:
            result = await in_thread(change, self._actor(visitor, request), form)
        except NotAllowed as error:
            return self.web.message("Not allowed", str(error), visitor, status=403)
        except rules.Unknown as error:
            return self.web.message(NO_APP, str(error), visitor, status=404)
        except (rules.Conflict, rules.Stale) as error:
            return await self._app(visitor, client_id, error=str(error), status=409)
        except InvalidInput as error:
            return await self._app(visitor, client_id, error=str(error).capitalize() + ".", values=form, status=400)
        return done(visitor, result)

    async def _managed(self, visitor: Visitor, what: str, load: Callable[[], T], missing: str) -> T | Response:
        """What only an owner or an admin opens: loaded, or the page that says why not (403 for another role,
        404 for a record of another organization or none)."""
        if visitor.member.role not in ("owner", "admin"):
            text = f"Only an owner or an admin of {visitor.member.org_name} may {what}."
            return self.web.message("Not allowed", text, visitor, status=403)
        try:
            return await in_thread(load)
        except rules.Unknown as error:
            return self.web.message(missing, str(error), visitor, status=404)

    # The audit trail

    async def audit_page(self, request: Request) -> Response:
        visitor = await in_thread(self.web.visitor, request)
        if visitor is None:
            return self.web.redirect(self.web.home)
        kind = request.query_params.get("kind") or None
        cursor = request.query_params.get("cursor")
        try:
            page = await in_thread(
                lambda: self.trail.page(visitor.member.org_id, kind=kind, limit=AUDIT_PAGE, cursor=cursor)
            )
        except InvalidCursor:
            return self.web.message("Invalid request", "This page of the audit trail does not exist.", visitor, 400)
        labels = await in_thread(self.web.console.names, trail.names(page.entries))
        shown = views.AuditPage([views.shown_entry(entry, labels) for entry in page.entries], page.next_cursor)
        return self.web.page(
            "audit.html", "Audit trail", visitor, page=shown, kinds=trail.KINDS, selected=kind or "", section="audit"
        )

    # Helpers

    def _actor(self, visitor: Visitor, request: Request | None) -> Actor:
        return self.actor_of(visitor, browser(request).address if request is not None else None)

    @staticmethod
    def actor_of(visitor: Visitor, address: str | None) -> Actor:
        member = visitor.member
        return Actor.member(member.user_id, member.org_id, member.role, address, member.org_name)
