"""The interaction behind a page: loaded for the browser that started it, its form's CSRF token checked, and its
live user."""

from __future__ import annotations

from identity.accounts.users import User, UserStore
from identity.clients.registry import Client, ClientStore
from identity.common.errors import ErrorPage, UnknownRecord
from identity.interaction.browser import Browser, Form
from identity.interaction.store import Interaction, InteractionStore
from identity.sessions.sessions import BrowserSession, SessionStore


class Pending:
    def __init__(
        self, interactions: InteractionStore, clients: ClientStore, users: UserStore, sessions: SessionStore
    ) -> None:
        self.interactions = interactions
        self.clients = clients
        self.users = users
        self.sessions = sessions

    def get(self, interaction_id: str | None, browser: Browser) -> tuple[Interaction, Client]:
        """The interaction of a page's form, if it lives and was started in this browser, and its client."""
        interaction = self.interactions.get(interaction_id) if interaction_id else None
        if interaction is None:
            raise expired()
        if not interaction.belongs_to(browser.binding(interaction.id)):
            raise ErrorPage(
                "Sign-in started elsewhere",
                "This sign-in was started in another browser. Go back to the application and sign in again.",
            )
        client = self.clients.get(interaction.request.client_id)
        if client is None:
            raise ErrorPage("Unknown application", "The application of this sign-in no longer exists.")
        return interaction, client

    def posted(self, form: Form, browser: Browser) -> tuple[Interaction, Client]:
        """The interaction of a form post, whose CSRF token must be the interaction's."""
        interaction, client = self.get(form.get("interaction") or None, browser)
        if not interaction.csrf_matches(form.get("csrf_token") or None):
            raise ErrorPage("Form expired", "This form has expired. Go back to the application and sign in again.")
        return interaction, client

    def live_user(self, interaction: Interaction) -> tuple[User, BrowserSession] | None:
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

    def user_of(self, interaction: Interaction) -> User:
        live = self.live_user(interaction)
        if live is None:
            raise ErrorPage("Not signed in", "Sign in first. Go back to the application and sign in again.")
        return live[0]


def expired() -> ErrorPage:
    return ErrorPage(
        "Sign-in expired", "This sign-in has expired or is unknown. Go back to the application and sign in again."
    )
