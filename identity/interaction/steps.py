"""What every page does once its form is handled: ask the interaction policy for the next step, then show that
page, or finish with a code (RFC 6749 §4.1.2), or with an error redirect (§4.1.2.1); ``prompt=none`` errors
instead of asking. The redirects carry RFC 9207's ``iss``."""

from __future__ import annotations

from identity.accounts.email_verification import EmailVerification
from identity.accounts.throttle import SignInThrottle
from identity.accounts.users import User, UserStore
from identity.clients.registry import Client
from identity.common.clock import SYSTEM_CLOCK, Clock, new_id
from identity.common.errors import OAuthError
from identity.common.issuer import AUTHORIZATION_PATH, Issuer
from identity.interaction.authorization_request import redirect_with
from identity.interaction.browser import EXPIRED, Outcome, SetCookie, interaction_cookie
from identity.interaction.pending import Pending, expired
from identity.interaction.policy import CHECK_EMAIL, SIGN_IN_POLICY, Policy, Situation, StoredConsents
from identity.interaction.store import Interaction, InteractionStore
from identity.sessions.sessions import BrowserSession
from identity.tokens.codes import CodeGrant
from identity.tokens.store_protocols import AuthorizationCodes


def started_at(issuer: Issuer, interaction: Interaction) -> str:
    """Where ``interaction``'s flow started: its authorization request, to make again (the way onward of the
    pages that a mailed link ends on)."""
    return interaction.request.again(issuer.endpoint(AUTHORIZATION_PATH))


def error_redirect(issuer: Issuer, redirect_uri: str, state: str | None, error: OAuthError) -> Outcome:
    """RFC 6749 §4.1.2.1 with RFC 9207 ``iss``."""
    params = {"error": error.error, "error_description": error.description, "state": state, "iss": issuer.url}
    return Outcome(location=redirect_with(redirect_uri, params))


class VerificationMail:
    """The link that verifies the user's address and resumes a sign-in paused on the check-your-email page."""

    def __init__(
        self, issuer: Issuer, users: UserStore, throttle: SignInThrottle, verification: EmailVerification
    ) -> None:
        self.issuer = issuer
        self.users = users
        self.throttle = throttle
        self.verification = verification

    def pause(self, interaction: Interaction) -> Interaction:
        """The sign-in pauses for a verified address: mail its user a link that resumes it, once per sign-in (a
        sign-up mailed one already), within the account's bound of verification mails."""
        user = self.users.get(interaction.user_id or "")
        if self.throttle.verification_mail(user.email):
            self.send(user, interaction)
        return interaction.changed(verification_sent=True)

    def send(self, user: User, interaction: Interaction) -> None:
        self.verification.send(user, interaction_id=interaction.id, return_to=started_at(self.issuer, interaction))


class Steps:
    def __init__(
        self,
        *,
        issuer: Issuer,
        pending: Pending,
        interactions: InteractionStore,
        consents: StoredConsents,
        codes: AuthorizationCodes,
        mail: VerificationMail,
        clock: Clock = SYSTEM_CLOCK,
        policy: Policy = SIGN_IN_POLICY,
    ) -> None:
        self.issuer = issuer
        self.pending = pending
        self.interactions = interactions
        self.consents = consents
        self.codes = codes
        self.mail = mail
        self._clock = clock
        self.policy = policy

    def advance(self, interaction: Interaction, client: Client, *, stored: bool, binding: str | None = None) -> Outcome:
        """Ask for what is missing, or finish with a code; ``prompt=none`` errors instead of asking.

        A new interaction (``stored`` false) that needs a page is saved, and its ``binding`` secret
        goes to the browser in the interaction's cookie.
        """
        ended = SetCookie(interaction_cookie(interaction.id), "", EXPIRED)  # the binding, once it is over
        try:
            step, interaction, session = self.next_step(interaction, client)
            if step == CHECK_EMAIL and not interaction.verification_sent:
                interaction = self.mail.pause(interaction)
        except OAuthError as error:
            if not stored:
                return self.error_redirect(interaction, error)
            self.interactions.delete(interaction.id)
            return self.error_redirect(interaction, error).with_cookies(ended)
        if step is None:
            assert session is not None  # no step is left only for a signed-in user
            if not stored:
                return self.finish(interaction, session)
            if not self.interactions.delete(interaction.id):
                raise expired()
            return self.finish(interaction, session).with_cookies(ended)
        if stored:
            if not self.interactions.update(interaction):  # finished (or expired) by a concurrent post of its form
                raise expired()
        else:
            self.interactions.add(interaction)
        outcome = Outcome(location=f"{self.issuer.page(step)}?interaction={interaction.id}")
        if binding is not None:
            return outcome.with_cookies(SetCookie(interaction_cookie(interaction.id), binding, interaction.expires_at))
        return outcome

    def next_step(
        self, interaction: Interaction, client: Client
    ) -> tuple[str | None, Interaction, BrowserSession | None]:
        """The page the sign-in needs next (None: none, a code), the interaction as it stands, and its live
        session; the policy's error where no page can help or ``prompt=none`` forbids one."""
        live = self.pending.live_user(interaction)
        needed = self.policy.evaluate(Situation(interaction, client, live, self._clock.now(), self.consents))
        interaction, session = needed.situation.interaction, None if live is None else live[1]
        if needed.check is None:
            return None, interaction, session
        page = needed.page
        if page is None or "none" in interaction.request.prompt:
            raise needed.check.error()
        return page, interaction, session

    def finish(self, interaction: Interaction, session: BrowserSession) -> Outcome:
        """RFC 6749 §4.1.2: redirect with the code, ``state`` and (RFC 9207) ``iss``. The code carries the
        credential version of its session's sign-in: redeemed after a change of credential, it is refused."""
        request = interaction.request
        assert interaction.user_id and interaction.session_id and interaction.org_id and interaction.auth_time
        code = self.codes.record(
            CodeGrant(
                grant_id=new_id("grt"),
                client_id=request.client_id,
                redirect_uri=request.redirect_uri,
                user_id=interaction.user_id,
                org_id=interaction.org_id,
                session_id=interaction.session_id,
                scope=request.scope,
                nonce=request.nonce,
                code_challenge=request.code_challenge,
                auth_time=interaction.auth_time,
                credential_version=session.credential_version,
                amr=session.amr,
            )
        )
        location = redirect_with(request.redirect_uri, {"code": code, "state": request.state, "iss": self.issuer.url})
        return Outcome(location=location)

    def error_redirect(self, interaction: Interaction, error: OAuthError) -> Outcome:
        return error_redirect(self.issuer, interaction.request.redirect_uri, interaction.request.state, error)
