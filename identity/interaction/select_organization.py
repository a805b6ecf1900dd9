"""The select-organization page: a user of several organizations (or under ``prompt=select_account``) chooses
the one the sign-in is for; the session remembers it."""

from __future__ import annotations

from collections.abc import Sequence

from identity.accounts.users import User
from identity.clients.registry import Client
from identity.common.issuer import Issuer
from identity.common.page_data import Page
from identity.interaction.browser import Browser, Form, Outcome
from identity.interaction.pending import Pending
from identity.interaction.policy import SELECT_ORGANIZATION
from identity.interaction.steps import Steps
from identity.interaction.store import Interaction
from identity.sessions.sessions import SessionStore


class SelectOrganizationPage:
    def __init__(self, issuer: Issuer, pending: Pending, sessions: SessionStore, steps: Steps) -> None:
        self.issuer = issuer
        self.pending = pending
        self.sessions = sessions
        self.steps = steps

    def show(self, interaction_id: str | None, browser: Browser) -> Outcome:
        interaction, client = self.pending.get(interaction_id, browser)
        user = self.pending.user_of(interaction)
        return Outcome(page=self._page(interaction, client, user))

    def post(self, pairs: Sequence[tuple[str, str]], browser: Browser) -> Outcome:
        form = Form.parse(pairs)
        interaction, client = self.pending.posted(form, browser)
        user = self.pending.user_of(interaction)
        chosen = user.membership(form.get("org_id"))
        if chosen is None:
            page = self._page(interaction, client, user, error="Choose one of your organizations.")
            return Outcome(page=page)
        if interaction.session_id:
            self.sessions.choose_organization(interaction.session_id, chosen.org.id)
        interaction = interaction.changed(org_id=chosen.org.id, org_chosen=True)
        return self.steps.advance(interaction, client, stored=True)

    def _page(self, interaction: Interaction, client: Client, user: User, error: str | None = None) -> Page:
        return Page(
            "select_organization",
            {
                "client_name": client.name,
                "user_email": user.email,
                "organizations": [{"id": m.org.id, "name": m.org.name, "role": m.role} for m in user.memberships],
                "selected": interaction.org_id,
                "action": self.issuer.page(SELECT_ORGANIZATION),
                "interaction": interaction.id,
                "csrf_token": interaction.csrf_token,
                "error": error,
            },
        )
