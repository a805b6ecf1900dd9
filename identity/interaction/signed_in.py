"""A session started by a page (sign-in or sign-up), and the sign-in going on from it with the session's and the
device's cookies."""

from __future__ import annotations

from identity.accounts.device_cookies import DEVICE_COOKIE, DeviceCookies
from identity.accounts.users import User
from identity.clients.registry import Client
from identity.interaction.browser import SESSION_COOKIE, Browser, Outcome, SetCookie
from identity.interaction.steps import Steps
from identity.interaction.store import Interaction
from identity.sessions.sessions import PASSWORD, BrowserSession, SessionStore


class SignedIn:
    def __init__(self, sessions: SessionStore, devices: DeviceCookies, steps: Steps) -> None:
        self.sessions = sessions
        self.devices = devices
        self.steps = steps

    def start_session(
        self, interaction: Interaction, browser: Browser, user: User, org_id: str | None, amr: str = PASSWORD
    ) -> tuple[Interaction, BrowserSession, str]:
        """Start or renew the session (a new secret: no fixation), remembering the organization of the previous one:
        the interaction signed in, the session and its cookie secret. ``CredentialMoved`` (nothing written) when the
        password checked was replaced, or the user disabled, meanwhile.

        ``org_id`` is given for a sign-up (the new organization) and a federated sign-in (the connection's); after a
        password sign-in the organization is the previous session's, if it was the same user's, or is chosen next.
        ``amr``: how the user signed in (identity/sessions/sessions.py), which the tokens of the session say.
        """
        chosen = org_id is not None
        previous = self.sessions.current(browser.session)
        if org_id is None and previous is not None and previous.user_id == user.id:
            org_id = previous.org_id
        session, secret = self.sessions.start(
            user.id, org_id, user.credential_version, replacing=browser.session, amr=amr
        )
        interaction = interaction.changed(
            user_id=user.id,
            session_id=session.id,
            auth_time=session.auth_time,
            org_id=org_id,
            signed_in=True,
            org_chosen=chosen,
        )
        return interaction, session, secret

    def go_on(
        self, started: tuple[Interaction, BrowserSession, str], client: Client, browser: Browser, user: User
    ) -> Outcome:
        """Go on from a session just started: the next step, with the session's and the device's cookies."""
        interaction, session, secret = started
        outcome = self.steps.advance(interaction, client, stored=True)
        device = self.devices.remember(browser.device, user.id)  # this browser is known for this user from now on
        return outcome.with_cookies(
            SetCookie(SESSION_COOKIE, secret, session.expires_at),
            SetCookie(DEVICE_COOKIE, device.value, device.expires),
        )
