"""The sign-in page: email and password, throttled per account and per network (identity/accounts/throttle.py).

Where organizations sign their members in with their own providers (identity/federation/), the page asks for the
email first (home-realm discovery, ``HomeRealm``): an address in a claimed domain goes to its organization's
provider, every other address gets the password form; the email step is throttled per network (never per email).
``login_hint`` and ``domain_hint`` skip the question, without the email step's bound (docs/identity.md says why:
a bound there could be spent by anyone on an office's network against its members). The right password of a member
of an organization that requires its provider sends them there, with no session.
"""

from __future__ import annotations

from collections.abc import Sequence

from identity.accounts.device_cookies import DeviceCookies
from identity.accounts.throttle import SignInThrottle
from identity.accounts.users import CredentialMoved, UserStore
from identity.clients.registry import Client
from identity.common import audit
from identity.common.errors import Throttled
from identity.common.issuer import Issuer
from identity.common.page_data import Page
from identity.interaction.browser import Browser, Form, Outcome, throttled
from identity.interaction.home_realm import HomeRealm
from identity.interaction.pending import Pending
from identity.interaction.signed_in import SignedIn
from identity.interaction.store import Interaction

DISABLED = "This account is disabled. Contact your organization's administrator."


class SignInPage:
    def __init__(
        self,
        issuer: Issuer,
        pending: Pending,
        users: UserStore,
        throttle: SignInThrottle,
        devices: DeviceCookies,
        signed_in: SignedIn,
        home_realm: HomeRealm | None = None,
    ) -> None:
        self.issuer = issuer
        self.pending = pending
        self.users = users
        self.throttle = throttle
        self.devices = devices
        self.signed_in = signed_in
        self.home_realm = home_realm

    def show(self, interaction_id: str | None, browser: Browser) -> Outcome:
        interaction, client = self.pending.get(interaction_id, browser)
        hint = interaction.request.login_hint or ""
        if self.home_realm is not None:
            domain = interaction.request.domain_hint
            routed = self.home_realm.route(interaction, email=hint or None, domain=domain) if hint or domain else None
            if routed is not None:  # login_hint or domain_hint: no question asked
                return routed
            if not hint and self.home_realm.asks_email_first():
                return Outcome(page=self._page(interaction, client, email="", email_first=True))
        return Outcome(page=self._page(interaction, client, email=hint))

    def post(self, pairs: Sequence[tuple[str, str]], browser: Browser) -> Outcome:
        form = Form.parse(pairs)
        interaction, client = self.pending.posted(form, browser)
        email, password = form.get("email").strip(), form.get("password")
        if "password" not in form.fields:  # the email asked first
            if not email:
                error = "Enter your email address."
                return Outcome(page=self._page(interaction, client, email="", email_first=True, error=error))
            try:
                self.throttle.discovering(browser.address)  # per network, never per email
            except Throttled as error:
                audit.record(audit.SIGN_IN, audit.FAILURE, reason="throttled", client_id=client.id)
                return Outcome(page=throttled(error))
            routed = self.home_realm.route(interaction, email=email) if self.home_realm is not None else None
            return routed or Outcome(page=self._page(interaction, client, email=email))
        if not email or not password:
            return Outcome(page=self._page(interaction, client, email=email, error="Enter your email and password."))
        known_device = self._known_device(email, browser)
        try:
            self.throttle.attempt(email, browser.address, known_device=known_device)
        except Throttled as error:
            audit.record(audit.SIGN_IN, audit.FAILURE, reason="throttled", client_id=client.id)
            return Outcome(page=throttled(error))
        user = self.users.authenticate(email, password)  # an unknown email pays for an Argon2 check too
        if user is None:
            self.throttle.failed(email)
            account = self.users.account_id(email)
            reason = "wrong_password" if account else "unknown_account"
            audit.record(audit.SIGN_IN, audit.FAILURE, reason=reason, user_id=account, client_id=client.id)
            return Outcome(page=self._page(interaction, client, email=email, error="Invalid email or password."))
        if user.disabled:
            # Said only to whoever gave the right password (a wrong one gets the answer above, whether or not
            # the account is disabled): the account's state is not told to someone guessing.
            audit.record(audit.SIGN_IN, audit.FAILURE, reason="disabled", user_id=user.id, client_id=client.id)
            return Outcome(page=self._page(interaction, client, email=email, error=DISABLED))
        if self.home_realm is not None:
            elsewhere = self.home_realm.password_refused(interaction, user)
            if elsewhere is not None:  # the organization requires its provider: the password signs nobody in
                self.throttle.succeeded(email, browser.address, known_device=known_device)
                return elsewhere
        try:
            started = self.signed_in.start_session(interaction, browser, user, org_id=None)
        except CredentialMoved:
            # The password was replaced (or the user disabled) while it was being checked: it is wrong now.
            audit.record(
                audit.SIGN_IN, audit.FAILURE, reason="credential_changed", user_id=user.id, client_id=client.id
            )
            return Outcome(page=self._page(interaction, client, email=email, error="Invalid email or password."))
        audit.record(audit.SIGN_IN, user_id=user.id, client_id=client.id)
        self.throttle.succeeded(email, browser.address, known_device=known_device)
        return self.signed_in.go_on(started, client, browser, user)

    def _known_device(self, email: str, browser: Browser) -> bool:
        """Whether the browser holds a device cookie for the account of ``email`` (no query without a cookie)."""
        if not browser.device:
            return False
        account = self.users.account_id(email)
        return account is not None and self.devices.knows(browser.device, account)

    def _page(
        self,
        interaction: Interaction,
        client: Client,
        *,
        email: str,
        error: str | None = None,
        email_first: bool = False,
    ) -> Page:
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
                "email_first": email_first,  # the email alone, asked first (home-realm discovery)
            },
        )
