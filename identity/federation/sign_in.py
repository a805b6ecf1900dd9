"""Signing in through an organization's provider: home-realm discovery, the start, and the provider's answer.

**Home-realm discovery.** Where an organization claims a domain, the sign-in page asks for the email first: an
address in a claimed domain whose organization has a connection goes to that organization's provider; every other
address gets the password form. ``login_hint`` (an address) and ``domain_hint`` (a domain) skip the question. A
member of an organization that requires its provider (``sso_required``) is sent there after giving the right
password, and gets no session from it: their password no longer signs them in.

**The answer** (``callback``) is taken once (attempts.py), only at the callback of the organization it was asked
of, only in the browser that started it; the code is redeemed and the ID token verified (token_exchange.py); the
account is found, linked or made (accounts.py); and the sign-in goes on from a session of the connection's
organization, with ``amr`` ``fed``, exactly as after a password: the policy asks for what is still missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from identity.accounts.users import User
from identity.common import audit
from identity.common.issuer import Issuer
from identity.common.page_data import Page, message
from identity.federation.accounts import FederatedAccounts, Refused
from identity.federation.administration import Endpoints
from identity.federation.attempts import SIGN_IN, TEST, Attempt, AttemptStore
from identity.federation.authorization import code_of, start
from identity.federation.connections import Connection, ConnectionStore
from identity.federation.domains import DomainClaims, domain_of, normalize
from identity.federation.errors import FederationError
from identity.federation.sessions import FederatedSessions
from identity.federation.token_exchange import TokenExchange
from identity.interaction.authorization_request import redirect_with
from identity.interaction.browser import Browser, Outcome
from identity.interaction.pending import Pending
from identity.interaction.signed_in import SignedIn
from identity.interaction.store import Interaction, hash_browser
from identity.sessions.sessions import FEDERATED

CALLBACK_PARAMETERS = ("code", "state", "iss", "error", "error_description")


def expired() -> FederationError:
    return FederationError(
        "Sign-in expired",
        "This sign-in at your organization's provider has expired, was already completed, or was started in "
        "another browser. Go back to the application and sign in again.",
    )


class FederatedSignIn:
    def __init__(
        self,
        *,
        issuer: Issuer,
        domains: DomainClaims,
        connections: ConnectionStore,
        attempts: AttemptStore,
        exchange: TokenExchange,
        accounts: FederatedAccounts,
        sessions: FederatedSessions,
        pending: Pending,
        signed_in: SignedIn,
    ) -> None:
        self.issuer = issuer
        self.domains = domains
        self.connections = connections
        self.attempts = attempts
        self.exchange = exchange
        self.accounts = accounts
        self.sessions = sessions
        self.pending = pending
        self.signed_in = signed_in

    def redirect_uri(self, org_id: str) -> str:
        """The callback of ``org_id``'s connection: the redirect URI to register at its provider."""
        return self.issuer.endpoint(f"/federation/{org_id}/callback")

    def backchannel_logout_uri(self, org_id: str) -> str:
        return self.issuer.endpoint(f"/federation/{org_id}/backchannel-logout")

    def endpoints(self, org_id: str) -> Endpoints:
        """Ours, to register at ``org_id``'s provider, and its "try it" sign-in."""
        return Endpoints(
            redirect_uri=self.redirect_uri(org_id),
            backchannel_logout_uri=self.backchannel_logout_uri(org_id),
            post_logout_redirect_uri=self.post_logout_redirect_uri,
            try_it=self.issuer.endpoint(f"/federation/{org_id}/test"),
        )

    @property
    def post_logout_redirect_uri(self) -> str:
        return self.issuer.endpoint("/federation/signed-out")

    # Home-realm discovery (the sign-in page's HomeRealm)

    def asks_email_first(self) -> bool:
        return self.domains.any_claimed()

    def route(self, interaction: Interaction, *, email: str | None = None, domain: str | None = None) -> Outcome | None:
        """To the provider of the organization that claims ``domain`` (or the domain of ``email``), if it has a
        connection; None for everyone else (the password form)."""
        if domain is not None:
            try:
                domain = normalize(domain)
            except ValueError:
                domain = None
        elif email is not None:
            domain = domain_of(email)
        if domain is None:
            return None
        org_id = self.domains.holder(domain)
        connection = self.connections.get(org_id) if org_id is not None else None
        if connection is None or not connection.covers(domain):
            return None
        return self._start(interaction, connection, login_hint=email)

    def password_refused(self, interaction: Interaction, user: User) -> Outcome | None:
        """For the right password of a member of an organization that requires its provider: to that provider
        (the first such organization of the user's), and no session; None when the password may sign in."""
        required = self.connections.sso_required_of([m.org.id for m in user.memberships])
        connection = self.connections.get(required[0]) if required else None
        if connection is None:
            return None
        audit.record(audit.SIGN_IN, audit.FAILURE, reason="sso_required", user_id=user.id, org_id=connection.org_id)
        return self._start(interaction, connection, login_hint=user.email)

    def _start(self, interaction: Interaction, connection: Connection, *, login_hint: str | None) -> Outcome:
        begun = start(
            connection.provider.authorization_endpoint,
            client_id=connection.client_id,
            redirect_uri=self.redirect_uri(connection.org_id),
            scopes=connection.scopes,
            login_hint=login_hint,
        )
        attempt = Attempt(
            org_id=connection.org_id,
            issuer=connection.issuer,
            purpose=SIGN_IN,
            browser_hash=interaction.browser_hash,
            nonce=begun.nonce,
            code_verifier=begun.code_verifier,
            interaction_id=interaction.id,
        )
        self.attempts.add(begun.state, attempt)
        return Outcome(location=begun.url)

    # The connection test (the console's "try it"): the owner signs in at the provider; nobody signs in here

    def test(self, org_id: str, browser: Browser) -> Outcome:
        """The console's "try it": an owner of ``org_id``, signed in here, signs in at its provider; the callback
        shows the claims received and signs nobody in. A browser not signed in is asked to sign in first; 404 for an
        organization the user is not a member of, or one without a connection (nothing is told about another
        organization's); 403 for an admin or a member."""
        session = self.pending.sessions.current(browser.session)
        if session is None or browser.session is None:
            text = "Sign in to the console as an owner of the organization, then try its connection again."
            return Outcome(page=message("Sign in first", text))
        user = self.pending.users.get(session.user_id)
        membership = user.membership(org_id)
        connection = self.connections.get(org_id) if membership is not None else None
        if membership is None or connection is None:
            raise FederationError(
                "Not found",
                "No connection of yours is here. Sign in to the console as an owner of the organization, "
                "then try its connection.",
                status=404,
            )
        if membership.role != "owner":  # as the console's connection page (administration.py)
            raise FederationError("Not allowed", "Only an owner of the organization can try its sign-in.", status=403)
        return self.start_test(connection, browser.session, user.id)

    def start_test(self, connection: Connection, browser_session: str, user_id: str) -> Outcome:
        begun = start(
            connection.provider.authorization_endpoint,
            client_id=connection.client_id,
            redirect_uri=self.redirect_uri(connection.org_id),
            scopes=connection.scopes,
        )
        attempt = Attempt(
            org_id=connection.org_id,
            issuer=connection.issuer,
            purpose=TEST,
            browser_hash=hash_browser(browser_session),
            nonce=begun.nonce,
            code_verifier=begun.code_verifier,
            user_id=user_id,
        )
        self.attempts.add(begun.state, attempt)
        return Outcome(location=begun.url)

    # Sign-out (RP-initiated logout's UpstreamSignOut)

    def onward(self, session_id: str, redirect_uri: str | None, state: str | None) -> str | None:
        return self.sessions.sign_out_at_provider(session_id, redirect_uri, state, self.post_logout_redirect_uri)

    def signed_out(self, state: str | None) -> Outcome:
        """Back from the provider's end-session endpoint: on to where our sign-out was asked to go."""
        onward = self.sessions.back_from_provider(state)
        if onward is not None and onward.redirect_uri is not None:
            return Outcome(location=redirect_with(onward.redirect_uri, {"state": onward.state}))
        return Outcome(page=message("Signed out", "You have signed out of every application."))

    # The provider's answer

    def callback(self, org_id: str, pairs: Sequence[tuple[str, str]], browser: Browser) -> Outcome:
        params: dict[str, str] = {}
        for name, value in pairs:
            if name in CALLBACK_PARAMETERS and name in params:
                raise FederationError("Invalid answer", f"The provider's answer repeats {name}.")
            params.setdefault(name, value)
        attempt = self.attempts.take(params.get("state", ""))
        if attempt is None:
            raise expired()
        if attempt.org_id != org_id:  # RFC 9700 §4.4.2.2: an answer is taken only at its connection's callback
            raise FederationError(
                "Invalid answer", "This answer came back for another organization's sign-in.", detail="mix-up"
            )
        connection = self.connections.get(org_id)
        if connection is None or connection.issuer != attempt.issuer:
            raise FederationError(
                "Sign-in expired",
                "Your organization's sign-in settings changed during this sign-in. Go back to the application and "
                "sign in again.",
            )
        if attempt.purpose == TEST:
            return self._tested(connection, attempt, params, browser)
        interaction, client = self.pending.get(attempt.interaction_id, browser)
        if interaction.browser_hash != attempt.browser_hash:
            raise expired()
        try:
            code = code_of(params, issuer=connection.issuer, iss_required=connection.provider.iss_parameter)
            who = self.exchange.redeem(
                connection.client(),
                code=code,
                redirect_uri=self.redirect_uri(org_id),
                code_verifier=attempt.code_verifier,
                nonce=attempt.nonce,
            )
            federated = self.accounts.sign_in(connection, who)
        except Refused as refused:
            audit.record(
                audit.FEDERATED_SIGN_IN, audit.DENIED, reason=refused.reason, org_id=org_id, client_id=client.id
            )
            raise
        except FederationError as failed:
            audit.record(audit.FEDERATED_SIGN_IN, audit.FAILURE, reason="upstream", org_id=org_id, client_id=client.id)
            raise failed
        user = federated.user
        if federated.how != "bound":
            audit.record(audit.FEDERATED_LINK, reason=federated.how, user_id=user.id, org_id=org_id)
        started = self.signed_in.start_session(interaction, browser, user, org_id=org_id, amr=FEDERATED)
        session = started[1]
        self.sessions.record(session.id, org_id, federated.binding, who.session_id, who.id_token)
        audit.record(
            audit.FEDERATED_SIGN_IN, user_id=user.id, org_id=org_id, client_id=client.id, session_id=session.id
        )
        return self.signed_in.go_on(started, client, browser, user)

    def _tested(self, connection: Connection, attempt: Attempt, params: dict[str, str], browser: Browser) -> Outcome:
        if browser.session is None or hash_browser(browser.session) != attempt.browser_hash:
            raise expired()
        code = code_of(params, issuer=connection.issuer, iss_required=connection.provider.iss_parameter)
        who = self.exchange.redeem(
            connection.client(),
            code=code,
            redirect_uri=self.redirect_uri(connection.org_id),
            code_verifier=attempt.code_verifier,
            nonce=attempt.nonce,
        )
        return Outcome(page=Page("federation_test", {"issuer": connection.issuer, "claims": _shown(who.claims)}))


def _shown(claims: dict[str, Any]) -> list[tuple[str, str]]:
    """The claims as the test page lists them: name and value, in order, each value at most 200 characters."""
    shown = []
    for name in sorted(claims):
        value = str(claims[name])
        shown.append((name[:100], value if len(value) <= 200 else value[:200] + "…"))
    return shown[:100]
