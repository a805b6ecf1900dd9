"""A verification link followed (identity/accounts/email_verification.py): the address is verified, and in the browser
of the sign-in it resumes, that sign-in goes on."""

from __future__ import annotations

from identity.accounts.email_verification import EmailVerification, verified_page
from identity.clients.registry import ClientStore
from identity.interaction.browser import Browser, Outcome
from identity.interaction.steps import Steps
from identity.interaction.store import InteractionStore


class VerifyEmailLink:
    def __init__(
        self, verification: EmailVerification, interactions: InteractionStore, clients: ClientStore, steps: Steps
    ) -> None:
        self.verification = verification
        self.interactions = interactions
        self.clients = clients
        self.steps = steps

    def follow(self, token: str | None, browser: Browser) -> Outcome:
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
        return self.steps.advance(interaction, client, stored=True)
