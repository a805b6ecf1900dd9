"""The authorization request: validated, then an interaction that asks the policy for its first page."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import timedelta

from identity.clients.registry import ClientStore
from identity.common.clock import SYSTEM_CLOCK, Clock
from identity.interaction.authorization_request import RedirectableError, parse_request
from identity.interaction.browser import Browser, Outcome
from identity.interaction.steps import Steps, error_redirect
from identity.interaction.store import new_interaction
from identity.sessions.sessions import SessionStore


class Authorization:
    def __init__(
        self,
        clients: ClientStore,
        sessions: SessionStore,
        steps: Steps,
        interaction_ttl: timedelta,
        clock: Clock = SYSTEM_CLOCK,
        public_clients: bool = False,  # MENUS_PUBLIC_CLIENTS: whether public clients may sign users in here
    ) -> None:
        self.clients = clients
        self.sessions = sessions
        self.steps = steps
        self.interaction_ttl = interaction_ttl
        self._clock = clock
        self.public_clients = public_clients

    def start(self, pairs: Sequence[tuple[str, str]], browser: Browser) -> Outcome:
        """RFC 6749 §4.1.1 / OpenID Connect Core §3.1.2: validate, then sign in, choose, consent or finish."""
        try:
            request, client = parse_request(
                pairs, self.clients, public_clients=self.public_clients
            )  # an ErrorPage goes up as it is: never a redirect
        except RedirectableError as error:
            return error_redirect(self.steps.issuer, error.redirect_uri, error.state, error.error)
        binding = secrets.token_urlsafe(32)
        interaction = new_interaction(request, binding, self._clock.now() + self.interaction_ttl)
        session = self.sessions.current(browser.session)
        if session is not None:
            interaction = interaction.changed(
                user_id=session.user_id, session_id=session.id, auth_time=session.auth_time, org_id=session.org_id
            )
        return self.steps.advance(interaction, client, stored=False, binding=binding)
