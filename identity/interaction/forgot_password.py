"""The forgot-password page of a sign-in: a reset link mailed when the address has an account, and the same page
for every address (identity/accounts/password_reset.py)."""

from __future__ import annotations

from collections.abc import Sequence

from identity.accounts.password_reset import PasswordReset
from identity.clients.registry import Client
from identity.common.errors import Throttled
from identity.common.issuer import Issuer
from identity.common.page_data import Page
from identity.interaction.browser import Browser, Form, Outcome, throttled
from identity.interaction.pending import Pending
from identity.interaction.steps import started_at
from identity.interaction.store import Interaction


class ForgotPasswordPage:
    def __init__(self, issuer: Issuer, pending: Pending, password_reset: PasswordReset) -> None:
        self.issuer = issuer
        self.pending = pending
        self.password_reset = password_reset

    def show(self, interaction_id: str | None, browser: Browser) -> Outcome:
        interaction, client = self.pending.get(interaction_id, browser)
        return Outcome(page=self._page(interaction, client, email=interaction.request.login_hint or ""))

    def post(self, pairs: Sequence[tuple[str, str]], browser: Browser) -> Outcome:
        """Mail a reset link when the address has an account; the same page for every address."""
        form = Form.parse(pairs)
        interaction, client = self.pending.posted(form, browser)
        email = form.get("email").strip()
        if not email or len(email) > 320:
            return Outcome(page=self._page(interaction, client, email="", error="Enter your email address."))
        try:
            self.password_reset.request(email, browser.address, started_at(self.issuer, interaction))
        except Throttled as error:
            return Outcome(page=throttled(error))
        return Outcome(page=self._page(interaction, client, email=email, sent=True))

    def _page(
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
