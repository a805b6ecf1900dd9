"""The browser sign-in: from the authorization request, through the pages it needs, back to the client.

``SignInFlow.start`` validates the request (``identity.authorization``) and
decides the next step from the browser's session and the request's ``prompt``
and ``max_age``: sign in (or sign up for ``prompt=create``), choose an
organization, consent, or finish with a code. Each page's form post records
its step on the interaction and asks again, until the request finishes with a
redirect to the client.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from identity import audit
from identity.authorization import RedirectableError, parse_request, redirect_with
from identity.clients import Client, ClientStore
from identity.clock import SYSTEM_CLOCK, Clock, new_id
from identity.codes import CodeGrant
from identity.consents import ConsentStore
from identity.device_cookies import DEVICE_COOKIE, DeviceCookies
from identity.email_verification import EmailVerification, verified_page
from identity.errors import (
    AccessDenied,
    AccountSelectionRequired,
    ConsentRequired,
    ErrorPage,
    InteractionRequired,
    InvalidInput,
    LoginRequired,
    OAuthError,
    Throttled,
    UnknownRecord,
)
from identity.interactions import Interaction, InteractionStore, new_interaction
from identity.issuer import AUTHORIZATION_PATH, Issuer
from identity.organizations import check_name as check_organization_name
from identity.outbox import Mail, Outbox
from identity.page_data import Page, message
from identity.password_reset import PasswordReset
from identity.passwords import WeakPassword, check_strength
from identity.sessions import BrowserSession, SessionStore
from identity.store_protocols import AuthorizationCodes
from identity.throttle import SignInThrottle
from identity.users import CredentialMoved, User, UserStore, check_email, check_name

# Binds an interaction to the browser that started it: one cookie per interaction (its name carries the
# interaction's id), so that starting a sign-in never disturbs another one pending in the same browser.
INTERACTION_COOKIE_PREFIX = "rm_ia_"
SESSION_COOKIE = "rm_session"  # the browser session's secret
EXPIRED = datetime(1970, 1, 1, tzinfo=UTC)  # a cookie set to expire then is deleted
DISABLED = "This account is disabled. Contact your organization's administrator."
FIELDS = ("interaction", "csrf_token", "email", "password", "name", "organization", "org_id", "decision", "action")
CHECK_EMAIL = "check-email"  # the page of a sign-in paused until the user's address is verified


@dataclass(frozen=True, slots=True)
class Browser:
    """What the request tells about the browser: its cookies and its address."""

    bindings: Mapping[str, str] = field(default_factory=dict)  # interaction cookies, by name
    session: str | None = None
    address: str = "unknown"
    device: str | None = None  # the device cookie (identity/device_cookies.py), as sent

    def binding(self, interaction_id: str) -> str | None:
        return self.bindings.get(interaction_cookie(interaction_id))


def interaction_cookie(interaction_id: str) -> str:
    return INTERACTION_COOKIE_PREFIX + interaction_id


@dataclass(frozen=True, slots=True)
class SetCookie:
    name: str
    value: str
    expires: datetime | None = None  # None: a browser-session cookie


@dataclass(frozen=True, slots=True)
class Outcome:
    """A page to show or a place to redirect to, and cookies to set on the way."""

    page: Page | None = None
    location: str | None = None
    cookies: tuple[SetCookie, ...] = field(default=())

    def with_cookies(self, *cookies: SetCookie) -> Outcome:
        return Outcome(self.page, self.location, self.cookies + cookies)


@dataclass(frozen=True, slots=True)
class Form:
    """A form post's fields; a field sent twice makes the whole post malformed."""

    fields: dict[str, str]

    @classmethod
    def parse(cls, pairs: Sequence[tuple[str, str]]) -> Form:
        fields: dict[str, str] = {}
        for name, value in pairs:
            if name in FIELDS and name in fields:
                raise ErrorPage("Invalid form", f"The field {name} was sent more than once.")
            fields.setdefault(name, value)
        return cls(fields)

    def get(self, name: str) -> str:
        return self.fields.get(name, "")


class SignInFlow:
    def __init__(
        self,
        *,
        issuer: Issuer,
        clients: ClientStore,
        users: UserStore,
        sessions: SessionStore,
        consents: ConsentStore,
        codes: AuthorizationCodes,
        interactions: InteractionStore,
        throttle: SignInThrottle,
        devices: DeviceCookies,
        interaction_ttl: timedelta,
        outbox: Outbox,
        verification: EmailVerification,
        password_reset: PasswordReset,
        clock: Clock = SYSTEM_CLOCK,
        public_clients: bool = False,  # MENUS_PUBLIC_CLIENTS: whether public clients may sign users in here
    ) -> None:
        self.issuer = issuer
        self.public_clients = public_clients
        self.clients = clients
        self.users = users
        self.sessions = sessions
        self.consents = consents
        self.codes = codes
        self.interactions = interactions
        self.throttle = throttle
        self.devices = devices
        self.interaction_ttl = interaction_ttl
        self.outbox = outbox
        self.verification = verification
        self.password_reset = password_reset
        self._clock = clock

    # The authorization request

    def start(self, pairs: Sequence[tuple[str, str]], browser: Browser) -> Outcome:
        """RFC 6749 §4.1.1 / OpenID Connect Core §3.1.2: validate, then sign in, choose, consent or finish."""
        try:
            request, client = parse_request(
                pairs, self.clients, public_clients=self.public_clients
            )  # an ErrorPage goes up as it is: never a redirect
        except RedirectableError as error:
            return self._error_redirect(error.redirect_uri, error.state, error.error)
        binding = secrets.token_urlsafe(32)
        interaction = new_interaction(request, binding, self._clock.now() + self.interaction_ttl)
        session = self.sessions.current(browser.session)
        if session is not None:
            interaction = interaction.changed(
                user_id=session.user_id, session_id=session.id, auth_time=session.auth_time, org_id=session.org_id
            )
        return self._advance(interaction, client, stored=False, binding=binding)

    # The pages (GET shows, POST acts)

    def sign_in_form(self, interaction_id: str | None, browser: Browser) -> Outcome:
        interaction, client = self._pending(interaction_id, browser)
        return Outcome(page=self._sign_in_page(interaction, client, email=interaction.request.login_hint or ""))

    def sign_in(self, pairs: Sequence[tuple[str, str]], browser: Browser) -> Outcome:
        form = Form.parse(pairs)
        interaction, client = self._posted(form, browser)
        email, password = form.get("email").strip(), form.get("password")
        if not email or not password:
            return Outcome(
                page=self._sign_in_page(interaction, client, email=email, error="Enter your email and password.")
            )
        known_device = self._known_device(email, browser)
        try:
            self.throttle.attempt(email, browser.address, known_device=known_device)
        except Throttled as error:
            audit.record(audit.SIGN_IN, audit.FAILURE, reason="throttled", client_id=client.id)
            return Outcome(page=self._throttled(error))
        user = self.users.authenticate(email, password)  # an unknown email pays for an Argon2 check too
        if user is None:
            self.throttle.failed(email)
            account = self.users.account_id(email)
            reason = "wrong_password" if account else "unknown_account"
            audit.record(audit.SIGN_IN, audit.FAILURE, reason=reason, user_id=account, client_id=client.id)
            return Outcome(
                page=self._sign_in_page(interaction, client, email=email, error="Invalid email or password.")
            )
        if user.disabled:
            # Said only to whoever gave the right password (a wrong one gets the answer above, whether or not
            # the account is disabled): the account's state is not told to someone guessing.
            audit.record(audit.SIGN_IN, audit.FAILURE, reason="disabled", user_id=user.id, client_id=client.id)
            return Outcome(page=self._sign_in_page(interaction, client, email=email, error=DISABLED))
        try:
            started = self._start_session(interaction, browser, user, org_id=None)
        except CredentialMoved:
            # The password was replaced (or the user disabled) while it was being checked: it is wrong now.
            audit.record(
                audit.SIGN_IN, audit.FAILURE, reason="credential_changed", user_id=user.id, client_id=client.id
            )
            return Outcome(
                page=self._sign_in_page(interaction, client, email=email, error="Invalid email or password.")
            )
        audit.record(audit.SIGN_IN, user_id=user.id, client_id=client.id)
        self.throttle.succeeded(email, browser.address, known_device=known_device)
        return self._signed_in(started, client, browser, user)

    def sign_up_form(self, interaction_id: str | None, browser: Browser) -> Outcome:
        interaction, client = self._pending(interaction_id, browser)
        return Outcome(
            page=self._sign_up_page(interaction, client, Form({"email": interaction.request.login_hint or ""}), {})
        )

    def sign_up(self, pairs: Sequence[tuple[str, str]], browser: Browser) -> Outcome:
        """Create the user and a new organization they own, then continue signed in."""
        form = Form.parse(pairs)
        interaction, client = self._posted(form, browser)
        errors = _sign_up_errors(form)
        if errors:
            return Outcome(page=self._sign_up_page(interaction, client, form, errors))
        try:
            self.throttle.signing_up(browser.address)  # never charges the account of an existing email
        except Throttled as error:
            audit.record(audit.SIGN_UP, audit.FAILURE, reason="throttled", client_id=client.id)
            return Outcome(page=self._throttled(error))
        try:
            user = self.users.sign_up(
                form.get("email"), form.get("name"), form.get("password"), form.get("organization")
            )
        except InvalidInput as error:
            audit.record(audit.SIGN_UP, audit.FAILURE, reason="account_exists", client_id=client.id)
            self._tell_owner(form.get("email"))
            return Outcome(page=self._sign_up_page(interaction, client, form, {"email": str(error).capitalize() + "."}))
        audit.record(audit.SIGN_UP, user_id=user.id, org_id=user.memberships[0].org.id, client_id=client.id)
        self.throttle.signed_up(form.get("email"))
        # A mail in the outbox; the authorization goes on as before. Its link also resumes this sign-in, should
        # the client require a verified address (it then pauses on the check-your-email page). A new account
        # always gets it, and it counts against the account's bound of verification mails like any other (5 in
        # the window in all: docs/identity.md).
        self.throttle.verification_mail(user.email)
        self.verification.send(user, interaction_id=interaction.id, return_to=self._started_at(interaction))
        interaction = interaction.changed(verification_sent=True)
        try:
            started = self._start_session(interaction, browser, user, org_id=user.memberships[0].org.id)
        except CredentialMoved:  # disabled (or its password reset) in the instant after it was created
            return Outcome(location=f"{self.issuer.page('sign-in')}?interaction={interaction.id}")
        return self._signed_in(started, client, browser, user)

    def forgot_password_form(self, interaction_id: str | None, browser: Browser) -> Outcome:
        interaction, client = self._pending(interaction_id, browser)
        return Outcome(page=self._forgot_password_page(interaction, client, email=interaction.request.login_hint or ""))

    def forgot_password(self, pairs: Sequence[tuple[str, str]], browser: Browser) -> Outcome:
        """Mail a reset link when the address has an account; the same page for every address."""
        form = Form.parse(pairs)
        interaction, client = self._posted(form, browser)
        email = form.get("email").strip()
        if not email or len(email) > 320:
            return Outcome(
                page=self._forgot_password_page(interaction, client, email="", error="Enter your email address.")
            )
        try:
            self.password_reset.request(email, browser.address, self._started_at(interaction))
        except Throttled as error:
            return Outcome(page=self._throttled(error))
        return Outcome(page=self._forgot_password_page(interaction, client, email=email, sent=True))

    def _forgot_password_page(
        self, interaction: Interaction, client: Client, *, email: str, error: str | None = None, sent: bool = False
    ) -> Page:
        return Page(
            "forgot_password",
            {
                "client_name": client.name,
                "action": self.issuer.page("forgot-password"),
                "sign_in_url": f"{self.issuer.page('sign-in')}?interaction={interaction.id}",
                "interaction": interaction.id,
                "csrf_token": interaction.csrf_token,
                "email": email,
                "error": error,
                "sent": sent,
            },
        )

    def _tell_owner(self, email: str) -> None:
        """The owner of a taken address learns that someone tried to sign up with it (by mail, through the
        outbox: the answer on the page stays the one it was)."""
        account = self.users.account_id(email)
        if account is not None and self.throttle.account_exists_mail(email):  # within the account's bound
            self.outbox.enqueue(Mail("account_exists", self.users.get(account).email, {}))

    def check_email_form(self, interaction_id: str | None, browser: Browser) -> Outcome:
        """The paused sign-in's page; once the address is verified (from another browser), it goes on."""
        interaction, client = self._pending(interaction_id, browser)
        user = self._user_of(interaction)
        if not self._must_verify_email(client, user):
            return self._advance(interaction, client, stored=True)
        return Outcome(page=self._check_email_page(interaction, client, user))

    def check_email(self, pairs: Sequence[tuple[str, str]], browser: Browser) -> Outcome:
        """``action=continue``: go on if the address is verified now; ``action=resend``: mail a new link (bounded
        per account and per network; the same page whatever happened)."""
        form = Form.parse(pairs)
        interaction, client = self._posted(form, browser)
        user = self._user_of(interaction)
        action = form.get("action")
        if action == "continue":
            if not self._must_verify_email(client, user):
                return self._advance(interaction, client, stored=True)
            note = "Your address is not verified yet. Follow the link in the mail we sent, then continue."
            return Outcome(page=self._check_email_page(interaction, client, user, note=note))
        if action != "resend":
            raise ErrorPage("Invalid form", "Choose Continue or Send a new link.")
        try:
            may_send = self.throttle.requesting_verification(user.email, browser.address)
        except Throttled:
            may_send = False  # the same page: a bound reached is not told apart from a mail sent
        if may_send and not user.email_verified:
            self.verification.send(user, interaction_id=interaction.id, return_to=self._started_at(interaction))
        note = "If your address still needs it, a new link is on its way. Links already sent keep working."
        return Outcome(page=self._check_email_page(interaction, client, user, note=note))

    def verify_email(self, token: str | None, browser: Browser) -> Outcome:
        """A verification link followed: the address is verified; in the browser of the sign-in it resumes, that
        sign-in goes on (to the client with a code); elsewhere, a page says to go back to that browser.

        Nothing of the authorization comes from the link: it carries only its token; the sign-in is the stored
        interaction the link's row names, and only the browser holding that interaction's cookie resumes it."""
        followed = self.verification.consume(token)
        interaction = self.interactions.get(followed.interaction_id) if followed.interaction_id else None
        if interaction is None or interaction.user_id != followed.user_id:
            return Outcome(page=verified_page(return_to=followed.return_to))
        client = self.clients.get(interaction.request.client_id)
        if client is None:
            return Outcome(page=verified_page())
        if not interaction.belongs_to(browser.binding(interaction.id)):
            return Outcome(page=verified_page(elsewhere=client.name, return_to=followed.return_to))
        return self._advance(interaction, client, stored=True)

    def select_organization_form(self, interaction_id: str | None, browser: Browser) -> Outcome:
        interaction, client = self._pending(interaction_id, browser)
        user = self._user_of(interaction)
        return Outcome(page=self._organization_page(interaction, client, user))

    def select_organization(self, pairs: Sequence[tuple[str, str]], browser: Browser) -> Outcome:
        form = Form.parse(pairs)
        interaction, client = self._posted(form, browser)
        user = self._user_of(interaction)
        chosen = user.membership(form.get("org_id"))
        if chosen is None:
            page = self._organization_page(interaction, client, user, error="Choose one of your organizations.")
            return Outcome(page=page)
        if interaction.session_id:
            self.sessions.choose_organization(interaction.session_id, chosen.org.id)
        interaction = interaction.changed(org_id=chosen.org.id, org_chosen=True)
        return self._advance(interaction, client, stored=True)

    def consent_form(self, interaction_id: str | None, browser: Browser) -> Outcome:
        interaction, client = self._pending(interaction_id, browser)
        return Outcome(page=self._consent_page(interaction, client))

    def consent(self, pairs: Sequence[tuple[str, str]], browser: Browser) -> Outcome:
        form = Form.parse(pairs)
        interaction, client = self._posted(form, browser)
        user = self._user_of(interaction)
        decision = form.get("decision")
        if decision == "deny":
            audit.record(audit.CONSENT, audit.DENIED, user_id=user.id, client_id=client.id)
            self.interactions.delete(interaction.id)
            return self._error_redirect(
                interaction.request.redirect_uri,
                interaction.request.state,
                AccessDenied("The user denied the request."),
            ).with_cookies(SetCookie(interaction_cookie(interaction.id), "", EXPIRED))
        if decision != "allow":
            raise ErrorPage("Invalid form", "Choose Allow or Deny.")
        if interaction.org_id is None:
            raise ErrorPage(
                "Not signed in", "Choose an organization first. Go back to the application and sign in again."
            )
        self.consents.grant(user.id, client.id, interaction.org_id, interaction.request.scope)
        audit.record(audit.CONSENT, user_id=user.id, client_id=client.id, scope=" ".join(interaction.request.scope))
        return self._advance(interaction.changed(consented=True), client, stored=True)

    # Steps

    def _advance(
        self, interaction: Interaction, client: Client, *, stored: bool, binding: str | None = None
    ) -> Outcome:
        """Ask for what is missing, or finish with a code; ``prompt=none`` errors instead of asking.

        A new interaction (``stored`` false) that needs a page is saved, and its ``binding`` secret
        goes to the browser in the interaction's cookie.
        """
        ended = SetCookie(interaction_cookie(interaction.id), "", EXPIRED)  # the binding, once it is over
        try:
            step, interaction, session = self._next_step(interaction, client)
            if step == CHECK_EMAIL and not interaction.verification_sent:
                interaction = self._mail_verification(interaction, self.users.get(interaction.user_id or ""))
        except OAuthError as error:
            if not stored:
                return self._error_redirect(interaction.request.redirect_uri, interaction.request.state, error)
            self.interactions.delete(interaction.id)
            redirect = self._error_redirect(interaction.request.redirect_uri, interaction.request.state, error)
            return redirect.with_cookies(ended)
        if step is None:
            assert session is not None  # no step is left only for a signed-in user
            if not stored:
                return self._finish(interaction, session)
            if not self.interactions.delete(interaction.id):
                raise _expired()
            return self._finish(interaction, session).with_cookies(ended)
        if stored:
            if not self.interactions.update(interaction):  # finished (or expired) by a concurrent post of its form
                raise _expired()
        else:
            self.interactions.add(interaction)
        outcome = Outcome(location=f"{self.issuer.page(step)}?interaction={interaction.id}")
        if binding is not None:
            return outcome.with_cookies(SetCookie(interaction_cookie(interaction.id), binding, interaction.expires_at))
        return outcome

    def _next_step(
        self, interaction: Interaction, client: Client
    ) -> tuple[str | None, Interaction, BrowserSession | None]:
        """The page the sign-in needs next (None: none, a code), the interaction as it stands, and its live
        session."""
        request = interaction.request
        prompt = request.prompt
        live = self._live_user(interaction)
        if live is None or not interaction.signed_in and self._must_sign_in_again(interaction):
            if "none" in prompt:
                raise LoginRequired("The user must sign in.")
            return ("sign-up" if "create" in prompt else "sign-in"), interaction, None
        user, session = live
        if not user.memberships:
            raise AccessDenied("The user belongs to no organization.")
        if not interaction.org_chosen:
            member = user.membership(interaction.org_id) if interaction.org_id else None
            if "select_account" in prompt or member is None:
                if len(user.memberships) == 1 and "select_account" not in prompt:
                    interaction = interaction.changed(org_id=user.memberships[0].org.id)
                elif "none" in prompt:
                    raise AccountSelectionRequired("The user must choose an organization.")
                else:
                    return "select-organization", interaction, session
        if self._must_verify_email(client, user):
            if "none" in prompt:
                raise InteractionRequired("The user must verify their email address.")
            return CHECK_EMAIL, interaction, session
        if not interaction.consented and (
            "consent" in prompt
            or not client.first_party
            and (client.public or not self.consents.covers(user.id, client.id, interaction.org_id or "", request.scope))
        ):
            # A third-party public client is asked for consent every time: anyone may send its client_id, so
            # a consent given once proves nothing about who asks now. RFC 8252 §8.6: the authorization server
            # "SHOULD NOT process authorization requests automatically without user consent or interaction,
            # except when the identity of the client can be assured"; RFC 6749 §10.2 says the same.
            if "none" in prompt:
                raise ConsentRequired("The user must consent to this application.")
            return "consent", interaction, session
        return None, interaction, session

    @staticmethod
    def _must_verify_email(client: Client, user: User) -> bool:
        """A client registered with ``--require-verified-email`` gets no code for an unverified address."""
        return client.require_verified_email and not user.email_verified

    def _mail_verification(self, interaction: Interaction, user: User) -> Interaction:
        """The sign-in pauses for a verified address: mail ``user`` a link that resumes it, once per sign-in (a
        sign-up mailed one already), within the account's bound of verification mails."""
        if self.throttle.verification_mail(user.email):
            self.verification.send(user, interaction_id=interaction.id, return_to=self._started_at(interaction))
        return interaction.changed(verification_sent=True)

    def _started_at(self, interaction: Interaction) -> str:
        """Where ``interaction``'s flow started: its authorization request, to make again (the way onward of the
        pages that a mailed link ends on)."""
        return interaction.request.again(self.issuer.endpoint(AUTHORIZATION_PATH))

    def _must_sign_in_again(self, interaction: Interaction) -> bool:
        """``prompt=login`` or ``create``, or a sign-in older than ``max_age`` (OpenID Connect Core §3.1.2.1)."""
        request = interaction.request
        if request.prompt & {"login", "create"}:
            return True
        if request.max_age is not None and interaction.auth_time is not None:
            return (self._clock.now() - interaction.auth_time).total_seconds() > request.max_age
        return False

    def _finish(self, interaction: Interaction, session: BrowserSession) -> Outcome:
        """RFC 6749 §4.1.2: redirect with the code, ``state`` and (RFC 9207) ``iss``. The code carries the
        credential version of its session's sign-in: redeemed after a change of credential, it is refused."""
        request = interaction.request
        assert interaction.user_id and interaction.session_id and interaction.org_id and interaction.auth_time
        code = self.codes.record(
            CodeGrant(
                grant_id=new_id("grt"),
                client_id=request.client_id,
                redirect_uri=request.redirect_uri,
                user_id=interaction.user_id,
                org_id=interaction.org_id,
                session_id=interaction.session_id,
                scope=request.scope,
                nonce=request.nonce,
                code_challenge=request.code_challenge,
                auth_time=interaction.auth_time,
                credential_version=session.credential_version,
            )
        )
        location = redirect_with(request.redirect_uri, {"code": code, "state": request.state, "iss": self.issuer.url})
        return Outcome(location=location)

    def _error_redirect(self, redirect_uri: str, state: str | None, error: OAuthError) -> Outcome:
        """RFC 6749 §4.1.2.1 with RFC 9207 ``iss``."""
        params = {"error": error.error, "error_description": error.description, "state": state, "iss": self.issuer.url}
        return Outcome(location=redirect_with(redirect_uri, params))

    def _start_session(
        self, interaction: Interaction, browser: Browser, user: User, org_id: str | None
    ) -> tuple[Interaction, BrowserSession, str]:
        """Start or renew the session (a new secret: no fixation), remembering the organization of the previous one:
        the interaction signed in, the session and its cookie secret. ``CredentialMoved`` (nothing written) when the
        password checked was replaced, or the user disabled, meanwhile.

        ``org_id`` is given for a sign-up (the new organization); after a sign-in the organization
        is the previous session's, if it was the same user's, or is chosen next.
        """
        chosen = org_id is not None
        previous = self.sessions.current(browser.session)
        if org_id is None and previous is not None and previous.user_id == user.id:
            org_id = previous.org_id
        session, secret = self.sessions.start(user.id, org_id, user.credential_version, replacing=browser.session)
        interaction = interaction.changed(
            user_id=user.id,
            session_id=session.id,
            auth_time=session.auth_time,
            org_id=org_id,
            signed_in=True,
            org_chosen=chosen,
        )
        return interaction, session, secret

    def _signed_in(
        self, started: tuple[Interaction, BrowserSession, str], client: Client, browser: Browser, user: User
    ) -> Outcome:
        """Go on from a session just started: the next step, with the session's and the device's cookies."""
        interaction, session, secret = started
        outcome = self._advance(interaction, client, stored=True)
        device = self.devices.remember(browser.device, user.id)  # this browser is known for this user from now on
        return outcome.with_cookies(
            SetCookie(SESSION_COOKIE, secret, session.expires_at),
            SetCookie(DEVICE_COOKIE, device.value, device.expires),
        )

    def _known_device(self, email: str, browser: Browser) -> bool:
        """Whether the browser holds a device cookie for the account of ``email`` (no query without a cookie)."""
        if not browser.device:
            return False
        account = self.users.account_id(email)
        return account is not None and self.devices.knows(browser.device, account)

    def _live_user(self, interaction: Interaction) -> tuple[User, BrowserSession] | None:
        """The interaction's user and session, while the session lives (its credential version still the user's)
        and the user is enabled."""
        if interaction.user_id is None or interaction.session_id is None:
            return None
        session: BrowserSession | None = self.sessions.get(interaction.session_id)
        if session is None or session.user_id != interaction.user_id:
            return None
        try:
            user = self.users.get(interaction.user_id)
        except UnknownRecord:
            return None
        return None if user.disabled else (user, session)

    # Loading the interaction behind a page

    def _pending(self, interaction_id: str | None, browser: Browser) -> tuple[Interaction, Client]:
        interaction = self.interactions.get(interaction_id) if interaction_id else None
        if interaction is None:
            raise _expired()
        if not interaction.belongs_to(browser.binding(interaction.id)):
            raise ErrorPage(
                "Sign-in started elsewhere",
                "This sign-in was started in another browser. Go back to the application and sign in again.",
            )
        client = self.clients.get(interaction.request.client_id)
        if client is None:
            raise ErrorPage("Unknown application", "The application of this sign-in no longer exists.")
        return interaction, client

    def _posted(self, form: Form, browser: Browser) -> tuple[Interaction, Client]:
        interaction, client = self._pending(form.get("interaction") or None, browser)
        if not interaction.csrf_matches(form.get("csrf_token") or None):
            raise ErrorPage("Form expired", "This form has expired. Go back to the application and sign in again.")
        return interaction, client

    def _user_of(self, interaction: Interaction) -> User:
        live = self._live_user(interaction)
        if live is None:
            raise ErrorPage("Not signed in", "Sign in first. Go back to the application and sign in again.")
        return live[0]

    # The pages

    def _sign_in_page(self, interaction: Interaction, client: Client, *, email: str, error: str | None = None) -> Page:
        return Page(
            "sign_in",
            {
                "client_name": client.name,
                "action": self.issuer.page("sign-in"),
                "sign_up_url": f"{self.issuer.page('sign-up')}?interaction={interaction.id}",
                "forgot_password_url": f"{self.issuer.page('forgot-password')}?interaction={interaction.id}",
                "interaction": interaction.id,
                "csrf_token": interaction.csrf_token,
                "email": email,
                "error": error,
            },
        )

    def _sign_up_page(self, interaction: Interaction, client: Client, form: Form, errors: dict[str, str]) -> Page:
        """``values``: what the person typed, shown again (never the password); ``errors`` by field."""
        return Page(
            "sign_up",
            {
                "client_name": client.name,
                "action": self.issuer.page("sign-up"),
                "sign_in_url": f"{self.issuer.page('sign-in')}?interaction={interaction.id}",
                "interaction": interaction.id,
                "csrf_token": interaction.csrf_token,
                "values": {name: form.get(name) for name in ("name", "email", "organization")},
                "errors": errors,
            },
        )

    def _organization_page(
        self, interaction: Interaction, client: Client, user: User, error: str | None = None
    ) -> Page:
        return Page(
            "select_organization",
            {
                "client_name": client.name,
                "user_email": user.email,
                "organizations": [{"id": m.org.id, "name": m.org.name, "role": m.role} for m in user.memberships],
                "selected": interaction.org_id,
                "action": self.issuer.page("select-organization"),
                "interaction": interaction.id,
                "csrf_token": interaction.csrf_token,
                "error": error,
            },
        )

    def _consent_page(self, interaction: Interaction, client: Client) -> Page:
        user = self._user_of(interaction)
        member = user.membership(interaction.org_id or "")
        return Page(
            "consent",
            {
                "client_name": client.name,
                "scope": interaction.request.scope,
                "user_email": user.email,
                "org_name": member.org.name if member else "",
                "action": self.issuer.page("consent"),
                "interaction": interaction.id,
                "csrf_token": interaction.csrf_token,
            },
        )

    def _check_email_page(
        self, interaction: Interaction, client: Client, user: User, *, note: str | None = None
    ) -> Page:
        return Page(
            "check_email",
            {
                "client_name": client.name,
                "user_email": user.email,
                "action": self.issuer.page(CHECK_EMAIL),
                "interaction": interaction.id,
                "csrf_token": interaction.csrf_token,
                "note": note,
                "valid_for_hours": max(1, int(self.verification.lifetime.total_seconds() // 3600)),
            },
        )

    @staticmethod
    def _throttled(error: Throttled) -> Page:
        minutes = max(1, round(error.retry_after / 60))
        text = f"Too many failed sign-ins. Try again in about {minutes} minute{'s' if minutes > 1 else ''}."
        return message("Too many attempts", text, status=429, retry_after=error.retry_after)


def _expired() -> ErrorPage:
    return ErrorPage(
        "Sign-in expired", "This sign-in has expired or is unknown. Go back to the application and sign in again."
    )


def _sign_up_errors(form: Form) -> dict[str, str]:
    errors: dict[str, str] = {}
    for name, check in (("name", check_name), ("email", check_email), ("organization", check_organization_name)):
        try:
            check(form.get(name))
        except InvalidInput as error:
            errors[name] = str(error).capitalize() + "."
    try:
        check_strength(form.get("password"))
    except WeakPassword as error:
        errors["password"] = str(error).capitalize() + "."
    return errors
