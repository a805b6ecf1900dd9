"""The check-your-email page: a sign-in paused until the user's address is verified (a client registered with
``--require-verified-email``); it goes on once the address is, and mails a new link on request."""

from __future__ import annotations

from collections.abc import Sequence

from identity.accounts.email_verification import EmailVerification
from identity.accounts.throttle import SignInThrottle
from identity.accounts.users import User
from identity.clients.registry import Client
from identity.common.errors import ErrorPage, Throttled
from identity.common.issuer import Issuer
from identity.common.page_data import Page
from identity.interaction.browser import Browser, Form, Outcome
from identity.interaction.pending import Pending
from identity.interaction.policy import CHECK_EMAIL, must_verify_email
from identity.interaction.steps import Steps, VerificationMail
from identity.interaction.store import Interaction


class CheckEmailPage:
    def __init__(
        self,
        issuer: Issuer,
        pending: Pending,
        throttle: SignInThrottle,
        verification: EmailVerification,
        mail: VerificationMail,
        steps: Steps,
    ) -> None:
        self.issuer = issuer
        self.pending = pending
        self.throttle = throttle
        self.verification = verification
        self.mail = mail
        self.steps = steps

    def show(self, interaction_id: str | None, browser: Browser) -> Outcome:
        """The paused sign-in's page; once the address is verified (from another browser), it goes on."""
        interaction, client = self.pending.get(interaction_id, browser)
        user = self.pending.user_of(interaction)
        if not must_verify_email(client, user):
            return self.steps.advance(interaction, client, stored=True)
        return Outcome(page=self._page(interaction, client, user))

    def post(self, pairs: Sequence[tuple[str, str]], browser: Browser) -> Outcome:
        """``action=continue``: go on if the address is verified now; ``action=resend``: mail a new link (bounded
        per account and per network; the same page whatever happened)."""
        form = Form.parse(pairs)
        interaction, client = self.pending.posted(form, browser)
        user = self.pending.user_of(interaction)
        action = form.get("action")
        if action == "continue":
            if not must_verify_email(client, user):
                return self.steps.advance(interaction, client, stored=True)
            note = "Your address is not verified yet. Follow the link in the mail we sent, then continue."
            return Outcome(page=self._page(interaction, client, user, note=note))
        if action != "resend":
            raise ErrorPage("Invalid form", "Choose Continue or Send a new link.")
        try:
            may_send = self.throttle.requesting_verification(user.email, browser.address)
        except Throttled:
            may_send = False  # the same page: a bound reached is not told apart from a mail sent
        if may_send and not user.email_verified:
            self.mail.send(user, interaction)
        note = "If your address still needs it, a new link is on its way. Links already sent keep working."
        return Outcome(page=self._page(interaction, client, user, note=note))

    def _page(self, interaction: Interaction, client: Client, user: User, *, note: str | None = None) -> Page:
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
