"""The pages of the browser sign-in, one handler each, built from the stores they share.

The authorization request (``authorization.start``) validates the request and asks the interaction policy
(identity/interaction/policy.py) for the page it needs: sign in (or sign up for ``prompt=create``), choose an
organization, verify the email address, consent, or none, and finishes with a code. Each page's form post
records its step on the interaction and asks the policy again, until the request finishes with a redirect to
the client.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from identity.accounts.device_cookies import DeviceCookies
from identity.accounts.email_verification import EmailVerification
from identity.accounts.password_reset import PasswordReset
from identity.accounts.throttle import SignInThrottle
from identity.accounts.users import UserStore
from identity.clients.consents import ConsentStore
from identity.clients.registry import ClientStore
from identity.common.clock import SYSTEM_CLOCK, Clock
from identity.common.issuer import Issuer
from identity.interaction.authorize import Authorization
from identity.interaction.check_email import CheckEmailPage
from identity.interaction.consent import ConsentPage
from identity.interaction.forgot_password import ForgotPasswordPage
from identity.interaction.home_realm import HomeRealm
from identity.interaction.pending import Pending
from identity.interaction.select_organization import SelectOrganizationPage
from identity.interaction.sign_in import SignInPage
from identity.interaction.sign_up import SignUpPage
from identity.interaction.signed_in import SignedIn
from identity.interaction.steps import Steps, VerificationMail
from identity.interaction.store import InteractionStore
from identity.interaction.verify_email import VerifyEmailLink
from identity.mail.outbox import Outbox
from identity.organizations.invitations import Invitations
from identity.sessions.sessions import SessionStore
from identity.tokens.store_protocols import AuthorizationCodes


@dataclass(frozen=True, slots=True)
class SignInPages:
    authorization: Authorization
    sign_in: SignInPage
    sign_up: SignUpPage
    forgot_password: ForgotPasswordPage
    check_email: CheckEmailPage
    verify_email: VerifyEmailLink
    select_organization: SelectOrganizationPage
    consent: ConsentPage

    @classmethod
    def build(
        cls,
        *,
        issuer: Issuer,
        clients: ClientStore,
        users: UserStore,
        sessions: SessionStore,
        consents: ConsentStore,
        codes: AuthorizationCodes,
        interactions: InteractionStore,
        throttle: SignInThrottle,
        devices: DeviceCookies,
        interaction_ttl: timedelta,
        outbox: Outbox,
        verification: EmailVerification,
        password_reset: PasswordReset,
        clock: Clock = SYSTEM_CLOCK,
        public_clients: bool = False,  # MENUS_PUBLIC_CLIENTS: whether public clients may sign users in here
        invitations: Invitations | None = None,  # signing up through an invitation joins its organization
        # where an address signs in (identity/federation/), made from the pages' pending sign-ins and sessions
        home_realm: Callable[[Pending, SignedIn], HomeRealm] | None = None,
    ) -> SignInPages:
        pending = Pending(interactions, clients, users, sessions)
        mail = VerificationMail(issuer, users, throttle, verification)
        steps = Steps(
            issuer=issuer,
            pending=pending,
            interactions=interactions,
            consents=consents,
            codes=codes,
            mail=mail,
            clock=clock,
        )
        signed_in = SignedIn(sessions, devices, steps)
        realm = home_realm(pending, signed_in) if home_realm is not None else None
        return cls(
            authorization=Authorization(clients, sessions, steps, interaction_ttl, clock, public_clients),
            sign_in=SignInPage(
                issuer,
                pending,
                users,
                throttle,
                devices,
                signed_in,
                realm,
            ),
            sign_up=SignUpPage(issuer, pending, users, throttle, outbox, mail, signed_in, invitations, realm),
            forgot_password=ForgotPasswordPage(issuer, pending, password_reset),
            check_email=CheckEmailPage(issuer, pending, throttle, verification, mail, steps),
            verify_email=VerifyEmailLink(verification, interactions, clients, steps),
            select_organization=SelectOrganizationPage(issuer, pending, sessions, steps),
            consent=ConsentPage(issuer, pending, consents, interactions, steps),
        )
