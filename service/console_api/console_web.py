"""The console's HTTP side: cookies in, forms in, pages and redirects out.

Every page carries the sign-in pages' security headers (with the console's own style and script
hashes). Every form posts a CSRF token tied to the console session. A POST that is not signed in
goes back to the home page (303); a member's attempt to create or revoke is 403; a key of another
organization is 404, as if it did not exist.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlencode, urljoin

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from werkzeug.http import dump_cookie

from identity.accounts.own_account import OwnAccount, WrongPassword
from identity.accounts.passwords import WeakPassword
from identity.api_keys.console_rules import Console, Member, NotAllowed, NotAMember
from identity.api_keys.keys import KeyLimitReached, UnknownApiKey
from identity.common.errors import InvalidInput, Throttled
from identity.common.fields import RepeatedField, once_each
from identity.sessions.console_sessions import ConsoleSessionStore
from identity.sessions.sessions import SessionStore
from service.console_api import rendering as pages
from service.console_api.cookies import (
    NEW_KEY_COOKIE,
    SESSION_COOKIE,
    SIGN_IN_COOKIE,
    ConsoleSession,
    Cookies,
    NewKey,
)
from service.console_api.relying_party import ConsoleClient, PendingSignIn, SignInFailed
from service.web.offload import in_thread
from service.web.problems import Problem
from service.web.request_reading import browser, form_pairs
from service.web.request_state import Slot

if TYPE_CHECKING:
    from identity.organizations.actors import Actor
    from identity.organizations.invitations import Invitations
    from identity.organizations.keys import OrganizationKeys

log = logging.getLogger("service.console")


@dataclass(frozen=True, slots=True)
class Visitor:
    session: ConsoleSession
    member: Member


class OrganizationSide(Protocol):
    """What the console's own pages use of the organization's pages (``organization_pages.OrganizationPages``, which
    build on this module): its keys with their trail, its invitations, and the visitor as one who acts on it."""

    keys: OrganizationKeys
    invitations: Invitations

    def actor_of(self, visitor: Visitor, address: str | None) -> Actor: ...


class ConsoleWeb:
    def __init__(
        self,
        *,
        path: str,
        base_url: str,
        issuer_url: str,
        client: ConsoleClient,
        cookies: Cookies,
        console: Console,
        sessions: SessionStore,
        console_sessions: ConsoleSessionStore,
        secure: bool,
        form_limit: int,
        own_account: OwnAccount | None = None,
        signed_in: Callable[[str, str, str], None] | None = None,
    ) -> None:
        self.path = path  # e.g. /console
        self.form_limit = form_limit  # bytes of a console form at most (a larger one is 413)
        self.home = path + "/"
        self.new_key_path = path + "/keys/new"
        self.base_url = base_url
        self.issuer_url = issuer_url
        self.client = client
        self.cookies = cookies
        self.console = console
        self.sessions = sessions
        self.console_sessions = console_sessions
        self.secure = secure
        self.own_account = own_account  # the account page's changes (None: no account page)
        self.account_path = path + "/account"
        self.signed_in = signed_in  # told of each sign-in (user, organization, network): the organization's trail
        self.organization: OrganizationSide | None = None  # the organization's pages (organization_pages.py)
        # its identity provider connection (connection_pages.ConnectionPages, which builds on this module: typed where
        # it is used, handlers/console.py's _connection)
        self.connection: object | None = None

    # Pages

    async def home_page(self, request: Request) -> Response:
        visitor = await in_thread(self.visitor, request)
        if visitor is None:
            response = self.page("welcome.html", "Developer console")
            if SESSION_COOKIE in request.cookies:
                self.forget_cookie(response, SESSION_COOKIE)
            return response
        view = await in_thread(self.console.keys, visitor.member)
        return self.page("keys.html", "API keys", visitor, view=view, chart=pages.chart(view.daily), section="keys")

    async def sign_in(self, request: Request) -> Response:
        url, pending = self.client.start(request.query_params.get("prompt"), request.query_params.get("invitation"))
        response = self.redirect(url)
        self.set_cookie(
            response,
            SIGN_IN_COOKIE,
            self.cookies.seal(pending.as_dict()),
            self.cookies.lifetimes.sign_in,
            self.path + "/callback",
        )
        return response

    async def callback(self, request: Request) -> Response:
        params = _single(request.query_params.multi_items())
        sealed = self.cookies.open(request.cookies.get(SIGN_IN_COOKIE), self.cookies.lifetimes.sign_in)
        pending = PendingSignIn.from_dict(sealed) if sealed is not None else None
        try:
            if params is None:
                raise SignInFailed("The answer repeats a parameter.")
            signed_in = await in_thread(self.client.finish, params, pending)
        except SignInFailed as failure:
            response = self.message("Sign-in failed", f"{failure} Please sign in again.", status=400)
            self.forget_cookie(response, SIGN_IN_COOKIE, self.path + "/callback")
            return response
        console_id = await in_thread(self.console_sessions.start, signed_in.user_id)
        _, value = self.cookies.new_session(
            signed_in.user_id, signed_in.org_id, signed_in.session_id, signed_in.id_token, console_id
        )
        if self.signed_in is not None:  # the organization's audit trail: a sign-in to the console
            await in_thread(self.signed_in, signed_in.user_id, signed_in.org_id, browser(request).address)
        response = self.redirect(self.home)
        if pending is not None and pending.invitation is not None and self.organization is not None:
            # back to the invitation it started from, unless signing up through it used it (joined: home)
            if await in_thread(self.organization.invitations.preview, pending.invitation) is not None:
                response = self.redirect(f"{self.path}/invitation?{urlencode({'token': pending.invitation})}")
        self.forget_cookie(response, SIGN_IN_COOKIE, self.path + "/callback")  # a replayed callback finds no sign-in
        self.set_cookie(response, SESSION_COOKIE, value, self.cookies.lifetimes.session, self.path)
        return response

    async def create_key(self, request: Request) -> Response:
        visitor, form, refused = await self.posted(request)
        if refused is not None:
            return refused
        assert visitor is not None
        try:
            record, key = await in_thread(self._create_key, visitor, form.get("name", ""), browser(request).address)
        except NotAllowed as error:
            return self.message("Not allowed", str(error), visitor, status=403)
        except KeyLimitReached as error:
            return self.message("Too many API keys", str(error) + ".", visitor, status=409)
        except InvalidInput as error:
            return self.message("Invalid key name", str(error).capitalize() + ".", visitor, status=400)
        # POST/redirect/GET: the key rides to the page that shows it in a cookie that page clears, so
        # reloading that page neither shows the key again nor posts the form again (no second key).
        response = self.redirect(self.new_key_path)
        sealed = NewKey(record.id, key, visitor.session.csrf_token).seal(self.cookies)
        self.set_cookie(response, NEW_KEY_COOKIE, sealed, self.cookies.lifetimes.new_key, self.new_key_path)
        return response

    def _create_key(self, visitor: Visitor, name: str, address: str) -> tuple[Any, str]:
        """A key of the visitor's organization, written with its entry of the organization's trail."""
        if self.organization is None:
            return self.console.create_key(visitor.member, name)
        return self.organization.keys.create(self.organization.actor_of(visitor, address), name)

    def _revoke_key(self, visitor: Visitor, key_id: str, address: str) -> None:
        if self.organization is None:
            self.console.revoke_key(visitor.member, key_id)
        else:
            self.organization.keys.revoke(self.organization.actor_of(visitor, address), key_id)

    async def new_key_page(self, request: Request) -> Response:
        """The key just created, shown once: the cookie that carries it is cleared by this very answer."""
        visitor = await in_thread(self.visitor, request)
        new = NewKey.open(self.cookies, request.cookies.get(NEW_KEY_COOKIE))
        if visitor is None:
            response = self.redirect(self.home)
        elif new is None or not new.belongs_to(visitor.session):
            response = self.page("key_gone.html", "This key is no longer shown", visitor)
        else:
            try:
                record = await in_thread(self.console.key, visitor.member, new.key_id)
            except UnknownApiKey:  # the organization was switched in between
                record = None
            if record is None or record.revoked_at is not None:
                response = self.page("key_gone.html", "This key is no longer shown", visitor)
            else:
                response = self.page("key_created.html", "Your new API key", visitor, record=record, key=new.key)
        if NEW_KEY_COOKIE in request.cookies:
            self.forget_cookie(response, NEW_KEY_COOKIE, self.new_key_path)
        return response

    async def revoke_form(self, request: Request, key_id: str) -> Response:
        visitor = await in_thread(self.visitor, request)
        if visitor is None:
            return self.redirect(self.home)
        if not visitor.member.manages_keys:
            text = f"Only an owner or an admin of {visitor.member.org_name} may revoke API keys."
            return self.message("Not allowed", text, visitor, status=403)
        try:
            record = await in_thread(self.console.key, visitor.member, key_id)
        except UnknownApiKey:
            return self.message("No such key", "Your organization has no API key with this id.", visitor, status=404)
        if record.revoked_at is not None:
            return self.redirect(self.home)
        return self.page("revoke.html", "Revoke this key?", visitor, record=record)

    async def revoke(self, request: Request, key_id: str) -> Response:
        visitor, _, refused = await self.posted(request)
        if refused is not None:
            return refused
        assert visitor is not None
        try:
            await in_thread(self._revoke_key, visitor, key_id, browser(request).address)
        except NotAllowed as error:
            return self.message("Not allowed", str(error), visitor, status=403)
        except (UnknownApiKey, LookupError):
            return self.message("No such key", "Your organization has no API key with this id.", visitor, status=404)
        return self.redirect(self.home)

    async def account_page(self, request: Request) -> Response:
        visitor = await in_thread(self.visitor, request)
        if visitor is None or self.own_account is None:
            return self.redirect(self.home)
        return await self._account(visitor)

    async def change_password(self, request: Request) -> Response:
        """The current password checked under the sign-in throttle, then every session and token of the user
        ends (this console session with them): a page says so, and the console's cookie is cleared."""
        visitor, form, refused = await self.posted(request, member_needed=False)
        if refused is not None:
            return refused
        assert visitor is not None and self.own_account is not None
        change = self.own_account.change_password
        current, new = form.get("current_password", ""), form.get("new_password", "")
        try:
            await in_thread(change, visitor.member.user_id, current, new, browser(request).address)
        except WeakPassword as error:
            return await self._account(visitor, error=f"The new password is refused: {error}.", status=400)
        except WrongPassword:
            return await self._account(visitor, error="The current password is wrong.", status=400)
        except Throttled as error:
            minutes = max(1, round(error.retry_after / 60))
            text = f"Too many attempts. Try again in about {minutes} minute{'s' if minutes > 1 else ''}."
            response = self.message("Too many attempts", text, visitor, status=429)
            response.headers["Retry-After"] = str(error.retry_after)
            return response
        await in_thread(self.console_sessions.end, visitor.session.console_id)
        text = "Your password is changed, and you are signed out everywhere. Sign in again with the new one."
        response = self.message("Password changed", text)
        self.forget_cookie(response, SESSION_COOKIE)
        return response

    async def send_verification(self, request: Request) -> Response:
        visitor, _, refused = await self.posted(request, member_needed=False)
        if refused is not None:
            return refused
        assert visitor is not None and self.own_account is not None
        account = urljoin(self.base_url, self.account_path)  # the "verified" page links back here
        send = self.own_account.send_verification
        await in_thread(send, visitor.member.user_id, browser(request).address, account)
        return await self._account(visitor, note="If your address still needs it, a new link is on its way.")

    async def _account(
        self, visitor: Visitor, *, error: str | None = None, note: str | None = None, status: int = 200
    ) -> Response:
        assert self.own_account is not None
        user = await in_thread(self.own_account.user, visitor.member.user_id)
        return self.page("account.html", "Your account", visitor, status=status, user=user, error=error, note=note)

    async def sign_out(self, request: Request) -> Response:
        """End the console session on the server (a copy of its cookie opens nothing after this), forget the
        cookie, and send the browser to the provider's end-session endpoint (global)."""
        visitor, _, refused = await self.posted(request, member_needed=False)
        if refused is not None:
            return refused
        assert visitor is not None
        await in_thread(self.console_sessions.end, visitor.session.console_id)
        response = self.redirect(self.client.end_session_url(visitor.session.id_token))
        self.forget_cookie(response, SESSION_COOKIE)
        return response

    # Shapes

    def redirect(self, location: str) -> Response:
        return RedirectResponse(location, status_code=303, headers={"Cache-Control": "no-store"})

    def too_large(self) -> Response:
        return self.message("Request too large", f"A console form is at most {self.form_limit} bytes.", status=413)

    def too_slow(self) -> Response:
        """408: the form did not arrive within the bound (service/web/body_arrival.py)."""
        return self.message("Request timeout", "The form did not arrive in time; please send it again.", status=408)

    def error_response(self, status: int, error: Exception) -> Response:
        if status >= 500:
            log.exception("unexpected error in the console", exc_info=error)
            return self.message("Something went wrong", "Something went wrong; please try again.", status=500)
        titles = {404: "Not found", 405: "Method not allowed"}
        texts = {
            404: "There is no console page here.",
            405: "This page does not take this method.",
            415: "This page takes a form (application/x-www-form-urlencoded).",
        }
        text = texts.get(status, "The request is malformed.")
        if status == 400 and isinstance(error, Problem):  # the contract's rules, by name (service.web.validation)
            text = f"This request was refused: {error.detail}."
        return self.message(titles.get(status, "Invalid request"), text, status=status)

    # Helpers

    def visitor(self, request: Request) -> Visitor | None:
        """The signed-in member, while both the console session (its cookie and its row) and the provider's
        session live."""
        session = self.cookies.session(request.cookies.get(SESSION_COOKIE))
        if session is None or not self.console_sessions.live(session.console_id, session.user_id):
            return None
        live = self.sessions.get(session.session_id)
        if live is None or live.user_id != session.user_id:
            return None  # signed out at the provider (from any application), or expired there
        try:
            member = self.console.member(session.user_id, session.org_id)
        except NotAMember:
            return None
        return Visitor(session, member)

    async def posted(
        self, request: Request, *, member_needed: bool = True
    ) -> tuple[Visitor | None, dict[str, str], Response | None]:
        """The visitor and the form of a POST, or the answer that refuses it (not signed in, CSRF, repeats)."""
        pairs = await form_pairs(request)
        visitor = await in_thread(self.visitor, request)
        if visitor is None:
            if not member_needed and SESSION_COOKIE in request.cookies:
                return None, {}, self._signed_out_anyway()
            return None, {}, self.redirect(self.home)
        form = _single(pairs)
        if form is None:
            return visitor, {}, self.message("Invalid request", "A field of the form is repeated.", visitor, 400)
        if not visitor.session.csrf_matches(form.get("csrf_token")):
            text = "This form has expired or did not come from the console. Go back and try again."
            return visitor, form, self.message("Form expired", text, visitor, status=403)
        return visitor, form, None

    def _signed_out_anyway(self) -> Response:
        response = self.redirect(self.home)
        self.forget_cookie(response, SESSION_COOKIE)
        return response

    def page(
        self, template: str, title: str, visitor: Visitor | None = None, *, status: int = 200, **context: object
    ) -> Response:
        html = pages.render(
            template,
            title=title,
            home=self.home,
            base_url=self.base_url,
            issuer=self.issuer_url,
            member=visitor.member if visitor else None,
            csrf_token=visitor.session.csrf_token if visitor else "",
            **context,
        )
        return HTMLResponse(html, status_code=status, headers=pages.PAGE_HEADERS)

    def message(self, title: str, text: str, visitor: Visitor | None = None, status: int = 200) -> Response:
        return self.page("message.html", title, visitor, status=status, message=text, alert=status >= 400)

    def forget_session(self, response: Response) -> None:
        self.forget_cookie(response, SESSION_COOKIE)

    def switch_organization(self, response: Response, visitor: Visitor, org_id: str) -> None:
        """The console session goes on in another of the user's organizations (one they just joined)."""
        session = visitor.session
        _, value = self.cookies.new_session(
            session.user_id, org_id, session.session_id, session.id_token, session.console_id
        )
        self.set_cookie(response, SESSION_COOKIE, value, self.cookies.lifetimes.session, self.path)

    def set_cookie(self, response: Response, name: str, value: str, max_age: int, path: str) -> None:
        cookie = dump_cookie(name, value, max_age=max_age, path=path, secure=self.secure, httponly=True, samesite="Lax")
        response.headers.append("Set-Cookie", cookie)

    def forget_cookie(self, response: Response, name: str, path: str | None = None) -> None:
        self.set_cookie(response, name, "", 0, path or self.path)


def _single(pairs: list[tuple[str, str]]) -> dict[str, str] | None:
    """The pairs as a dict; None when a name repeats."""
    try:
        return once_each(pairs)
    except RepeatedField:
        return None


CONSOLE: Slot[ConsoleWeb] = Slot("console")  # the console's entry: its web side, for the handlers
