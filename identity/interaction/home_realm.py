"""Where an address signs in: here with a password, or at the provider of the organization that claims its domain
(identity/federation/sign_in.py implements it). The sign-in page asks it after the email; the sign-up page before it
makes an account, so that an address an organization vouches for gets none with a password.
"""

from __future__ import annotations

from typing import Protocol

from identity.accounts.users import User
from identity.interaction.browser import Outcome
from identity.interaction.store import Interaction


class HomeRealm(Protocol):
    """Where an address signs in (identity/federation/sign_in.py implements it)."""

    def asks_email_first(self) -> bool:
        """Whether the page asks for the email alone first (some organization claims a domain)."""
        ...

    def route(self, interaction: Interaction, *, email: str | None = None, domain: str | None = None) -> Outcome | None:
        """To the provider of the organization that claims ``domain``, or the domain of ``email``; None: here."""
        ...

    def password_refused(self, interaction: Interaction, user: User) -> Outcome | None:
        """For the right password of a user whose organization requires its provider: to it; None: signed in."""
        ...
