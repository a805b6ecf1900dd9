"""The consent page: the user allows the client the scopes it asks for, for the chosen organization, or denies
it (RFC 6749 §4.1.2.1: ``access_denied``)."""

from __future__ import annotations

from collections.abc import Sequence

from identity.clients.consents import ConsentStore
from identity.clients.registry import Client
from identity.common import audit
from identity.common.errors import AccessDenied, ErrorPage
from identity.common.issuer import Issuer
from identity.common.page_data import Page
from identity.interaction.browser import EXPIRED, Browser, Form, Outcome, SetCookie, interaction_cookie
from identity.interaction.pending import Pending
from identity.interaction.policy import CONSENT
from identity.interaction.steps import Steps
from identity.interaction.store import Interaction, InteractionStore


class ConsentPage:
    def __init__(
        self, issuer: Issuer, pending: Pending, consents: ConsentStore, interactions: InteractionStore, steps: Steps
    ) -> None:
        self.issuer = issuer
        self.pending = pending
        self.consents = consents
        self.interactions = interactions
        self.steps = steps

    def show(self, interaction_id: str | None, browser: Browser) -> Outcome:
        interaction, client = self.pending.get(interaction_id, browser)
        return Outcome(page=self._page(interaction, client))

    def post(self, pairs: Sequence[tuple[str, str]], browser: Browser) -> Outcome:
        form = Form.parse(pairs)
        interaction, client = self.pending.posted(form, browser)
        user = self.pending.user_of(interaction)
        decision = form.get("decision")
        if decision == "deny":
            audit.record(audit.CONSENT, audit.DENIED, user_id=user.id, client_id=client.id)
            self.interactions.delete(interaction.id)
            return self.steps.error_redirect(interaction, AccessDenied("The user denied the request.")).with_cookies(
                SetCookie(interaction_cookie(interaction.id), "", EXPIRED)
            )
        if decision != "allow":
            raise ErrorPage("Invalid form", "Choose Allow or Deny.")
        if interaction.org_id is None:
            raise ErrorPage(
                "Not signed in", "Choose an organization first. Go back to the application and sign in again."
            )
        self.consents.grant(user.id, client.id, interaction.org_id, interaction.request.scope)
        audit.record(audit.CONSENT, user_id=user.id, client_id=client.id, scope=" ".join(interaction.request.scope))
        return self.steps.advance(interaction.changed(consented=True), client, stored=True)

    def _page(self, interaction: Interaction, client: Client) -> Page:
        user = self.pending.user_of(interaction)
        member = user.membership(interaction.org_id or "")
        return Page(
            "consent",
            {
                "client_name": client.name,
                "scope": interaction.request.scope,
                "user_email": user.email,
                "org_name": member.org.name if member else "",
                "action": self.issuer.page(CONSENT),
                "interaction": interaction.id,
                "csrf_token": interaction.csrf_token,
            },
        )
