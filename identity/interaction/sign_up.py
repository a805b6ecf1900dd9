"""The sign-up page: a new user and a new organization they own, then the sign-in goes on signed in.

A sign-in that carries an invitation (the authorization request's ``invitation``, kept as its hash) signs up into
the invitation's organization instead, with its role, and makes no organization (identity/organizations/
invitations.py); the page says which organization, and asks for no organization's name. An invitation that no
longer opens is said so on the page, and nothing is made.

An address in a domain an organization claims, where that organization signs its members in with its own provider
(``HomeRealm``, identity/federation/), gets no password account: the browser goes to that provider instead, whose
first sign-in makes the account and the membership (identity/federation/accounts.py). The organization, not a
password typed here, vouches for its addresses.
"""

from __future__ import annotations

from collections.abc import Sequence

from identity.accounts.organizations import check_name as check_organization_name
from identity.accounts.passwords import WeakPassword, check_strength
from identity.accounts.throttle import SignInThrottle
from identity.accounts.users import CredentialMoved, UserStore, check_email, check_name
from identity.clients.registry import Client
from identity.common import audit
from identity.common.errors import InvalidInput, Throttled
from identity.common.issuer import Issuer
from identity.common.page_data import Page
from identity.interaction.browser import Browser, Form, Outcome, throttled
from identity.interaction.home_realm import HomeRealm
from identity.interaction.pending import Pending
from identity.interaction.signed_in import SignedIn
from identity.interaction.steps import VerificationMail
from identity.interaction.store import Interaction
from identity.mail.outbox import Mail, Outbox
from identity.organizations.invitations import Invitations
from identity.organizations.rules import Unknown


class SignUpPage:
    def __init__(
        self,
        issuer: Issuer,
        pending: Pending,
        users: UserStore,
        throttle: SignInThrottle,
        outbox: Outbox,
        mail: VerificationMail,
        signed_in: SignedIn,
        invitations: Invitations | None = None,
        home_realm: HomeRealm | None = None,
    ) -> None:
        self.issuer = issuer
        self.pending = pending
        self.users = users
        self.throttle = throttle
        self.outbox = outbox
        self.mail = mail
        self.signed_in = signed_in
        self.invitations = invitations
        self.home_realm = home_realm  # an address of a claimed domain signs up at its organization's provider

    def show(self, interaction_id: str | None, browser: Browser) -> Outcome:
        interaction, client = self.pending.get(interaction_id, browser)
        joining = self._joining(interaction)
        email = interaction.request.login_hint or (joining["email"] if joining else "")
        errors = {}
        if interaction.request.invitation is not None and joining is None:
            errors["invitation"] = "This invitation has expired, was revoked, or was already used."
        return Outcome(page=self._page(interaction, client, Form({"email": email}), errors))

    def post(self, pairs: Sequence[tuple[str, str]], browser: Browser) -> Outcome:
        """Create the user and a new organization they own, then continue signed in."""
        form = Form.parse(pairs)
        interaction, client = self.pending.posted(form, browser)
        joining = self._joining(interaction)
        errors = _sign_up_errors(form, organization=joining is None)
        if interaction.request.invitation is not None and joining is None:
            errors["invitation"] = "This invitation has expired, was revoked, or was already used."
        if errors:
            return Outcome(page=self._page(interaction, client, form, errors))
        try:
            self.throttle.signing_up(browser.address)  # never charges the account of an existing email
        except Throttled as error:
            audit.record(audit.SIGN_UP, audit.FAILURE, reason="throttled", client_id=client.id)
            return Outcome(page=throttled(error))
        routed = self.home_realm.route(interaction, email=form.get("email")) if self.home_realm is not None else None
        if routed is not None:  # nothing is made here: the provider's first sign-in makes the account
            audit.record(audit.SIGN_UP, audit.FAILURE, reason="federated_domain", client_id=client.id)
            return routed
        try:
            if joining is not None and interaction.request.invitation is not None and self.invitations is not None:
                user = self.invitations.sign_up(
                    interaction.request.invitation,
                    form.get("email"),
                    form.get("name"),
                    form.get("password"),
                    browser.address,
                )
            else:
                user = self.users.sign_up(
                    form.get("email"), form.get("name"), form.get("password"), form.get("organization")
                )
        except Unknown as error:
            return Outcome(page=self._page(interaction, client, form, {"invitation": str(error)}))
        except InvalidInput as error:
            audit.record(audit.SIGN_UP, audit.FAILURE, reason="account_exists", client_id=client.id)
            self._tell_owner(form.get("email"))
            return Outcome(page=self._page(interaction, client, form, {"email": str(error).capitalize() + "."}))
        audit.record(audit.SIGN_UP, user_id=user.id, org_id=user.memberships[0].org.id, client_id=client.id)
        self.throttle.signed_up(form.get("email"))
        # A mail in the outbox; the authorization goes on as before. Its link also resumes this sign-in, should
        # the client require a verified address (it then pauses on the check-your-email page). A new account
        # always gets it, and it counts against the account's bound of verification mails like any other (5 in
        # the window in all: docs/identity.md).
        if not user.email_verified:  # signing up at the address an invitation was mailed to verifies it
            self.throttle.verification_mail(user.email)
            self.mail.send(user, interaction)
            interaction = interaction.changed(verification_sent=True)
        try:
            started = self.signed_in.start_session(interaction, browser, user, org_id=user.memberships[0].org.id)
        except CredentialMoved:  # disabled (or its password reset) in the instant after it was created
            return Outcome(location=f"{self.issuer.page('sign-in')}?interaction={interaction.id}")
        return self.signed_in.go_on(started, client, browser, user)

    def _tell_owner(self, email: str) -> None:
        """The owner of a taken address learns that someone tried to sign up with it (by mail, through the
        outbox: the answer on the page stays the one it was)."""
        account = self.users.account_id(email)
        if account is not None and self.throttle.account_exists_mail(email):  # within the account's bound
            self.outbox.enqueue(Mail("account_exists", self.users.get(account).email, {}))

    def _page(self, interaction: Interaction, client: Client, form: Form, errors: dict[str, str]) -> Page:
        """``values``: what the person typed, shown again (never the password); ``errors`` by field."""
        return Page(
            "sign_up",
            {
                "client_name": client.name,
                "action": self.issuer.page("sign-up"),
                "sign_in_url": f"{self.issuer.page('sign-in')}?interaction={interaction.id}",
                "interaction": interaction.id,
                "csrf_token": interaction.csrf_token,
                "values": {name: form.get(name) for name in ("name", "email", "organization")},
                "errors": errors,
                "joining": self._joining(interaction),
            },
        )

    def _joining(self, interaction: Interaction) -> dict[str, str] | None:
        """The organization and role an invitation of this sign-in joins, while it opens; else None."""
        hashed = interaction.request.invitation
        if hashed is None or self.invitations is None:
            return None
        preview = self.invitations.opens(hashed)
        if preview is None:
            return None
        return {"org_name": preview.org_name, "role": preview.invitation.role, "email": preview.invitation.email}


def _sign_up_errors(form: Form, *, organization: bool = True) -> dict[str, str]:
    errors: dict[str, str] = {}
    checks = [("name", check_name), ("email", check_email)]
    if organization:  # no organization is made for someone joining through an invitation
        checks.append(("organization", check_organization_name))
    for name, check in checks:
        try:
            check(form.get(name))
        except InvalidInput as error:
            errors[name] = str(error).capitalize() + "."
    try:
        check_strength(form.get("password"))
    except WeakPassword as error:
        errors["password"] = str(error).capitalize() + "."
    return errors
