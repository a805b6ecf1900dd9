"""Password reset by a single-use mailed link (30 minutes), and what a new password ends.

Asking for a link gives the same answer for every address, known or not (no account enumeration), after the
same work: the request is counted (per network like a sign-in, and per account: ``SignInThrottle.
requesting_reset``, so nobody can flood a mailbox) and written to the outbox's channel of reset requests. The
account is looked up, and its link and mail written, by the background worker that takes the request from there
(``deliver``), on no request's time: neither the answer's timing nor that of the next request tells whether
the address has an account (it did when the mail was written first: 8.5 ms against 6.0 ms).

A reset (or ``users reset-password``, or the console's change) replaces the password, moves the user's credential
version on, ends every browser session and revokes every refresh and access token of the user, all in one
transaction (RFC 9700 §4.14: tokens obtained with the old credential must not outlive it), and is audited. A
reset link is spent in that same transaction, and only while the credential version it was issued under is
current: the first link used ends every other (identity/mail/email_links.py). A sign-in with the old password racing
the reset gets no session, or one, and codes and tokens, that stop working at the commit (identity/accounts/users.py,
docs/identity.md "Credential versions").
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from sqlalchemy.engine import Connection

from identity.accounts.ending import Revoking
from identity.accounts.passwords import WeakPassword, check_strength
from identity.accounts.throttle import SignInThrottle
from identity.accounts.users import CredentialMoved, User, UserStore, email_key
from identity.common import audit
from identity.common.errors import ErrorPage
from identity.common.fields import RepeatedField, once_each
from identity.common.issuer import Issuer
from identity.common.page_data import Onward, Page, message
from identity.mail.email_links import RESET_PASSWORD, EmailLinks, Followed
from identity.mail.outbox import Claimed, Mail, Outbox

RESET_PASSWORD_PAGE = "reset-password"  # below the issuer: the link's path
RESET_REQUESTS = "reset_request"  # the outbox channel of reset requests, which the worker turns into mails
RESET_REQUEST = "reset_request"  # their kind: the address asked for, sealed in the params


class PasswordReset:
    def __init__(
        self,
        links: EmailLinks,
        outbox: Outbox,
        users: UserStore,
        revoker: Revoking,
        throttle: SignInThrottle,
        issuer: Issuer,
        lifetime: timedelta,
        *,
        requests: Outbox,  # the channel of reset requests (RESET_REQUESTS), sealed as the mail outbox is
    ) -> None:
        self.links = links
        self.outbox = outbox
        self.requests = requests
        self.users = users
        self.revoker = revoker
        self.throttle = throttle
        self.issuer = issuer
        self.lifetime = lifetime  # a reset link opens this long (30 minutes by default)

    def request(self, email: str, address: str, return_to: str | None = None) -> None:
        """Ask for a reset link for ``email``: counted, then written as a request for the worker (``deliver``); the
        same statements for every address, since the counters are keyed by the address's hash and the request is
        sealed. ``Throttled`` when the network is over its bound (whatever the address); past the account's bound,
        nothing is written (the same answer). ``return_to``: where the flow started (the sign-in's authorization
        request), which the "Password changed" page links back to."""
        if self.throttle.requesting_reset(email, address):
            fields = {"email": email, **({"return_to": return_to} if return_to is not None else {})}
            self.requests.enqueue(Mail(RESET_REQUEST, "", fields))

    def deliver(self) -> dict[str, int]:
        """One round of the background worker: the pending reset requests, each mailed a link when its address has
        an account that may sign in (``mail_link``), in the request's order."""
        return self.requests.deliver(self.mail_link)

    def mail_link(self, claimed: Claimed) -> None:
        """A claimed reset request: mail a link to the account of its address, if there is one and it may sign in
        (a disabled user signs in with no password: no link either)."""
        account = self.users.account_id(claimed.mail.params["email"])
        if account is not None:
            user = self.users.get(account)
            if not user.disabled:
                self.send(user, return_to=claimed.mail.params.get("return_to"))

    def send(self, user: User, *, return_to: str | None = None) -> None:
        """Mail ``user`` a new reset link (the link and its mail in one transaction); ``return_to``: where the flow
        started, which the "Password changed" page links back to."""
        with self.outbox.transaction() as connection:
            key = email_key(user.email)
            token = self.links.issue(connection, RESET_PASSWORD, user.id, key, self.lifetime, return_to=return_to)
            link = f"{self.issuer.endpoint('/' + RESET_PASSWORD_PAGE)}?token={token}"
            minutes = int(self.lifetime.total_seconds() // 60)
            params = {"name": user.name, "link": link, "valid_for": f"{minutes} minutes"}
            self.outbox.enqueue(Mail("reset_password", user.email, params), connection)

    def form(self, token: str | None) -> Page:
        """The page a reset link opens: a new-password form carrying the link's token. The token is the form's
        CSRF defence: a page elsewhere cannot post it without knowing it."""
        return _reset_page(self.issuer, token or "")

    def submit(self, pairs: Sequence[tuple[str, str]]) -> Page:
        """The new-password form posted: done, the form again for a password that would be refused, or an
        error page for a spent link."""
        try:
            fields = once_each(pairs)
        except RepeatedField as repeated:
            raise ErrorPage("Invalid form", f"The field {repeated.name} was sent more than once.") from None
        token, password = fields.get("token", ""), fields.get("password", "")
        try:
            followed = self._reset(token, password)
        except WeakPassword as error:
            return _reset_page(self.issuer, token, error=str(error).capitalize() + ".")
        text = "Your password is changed, and you are signed out everywhere."
        if followed.return_to is None:
            return message("Password changed", text + " Sign in again from the application.")
        return message("Password changed", text, onward=Onward(followed.return_to, "Sign in again"))

    def reset(self, token: str, password: str) -> str:
        """Follow a reset link with the new password: the user's id. ``WeakPassword`` (nothing consumed) for a
        password that would be refused; ``ErrorPage`` for a link that is unknown, expired, used, or ended by a
        newer link used or a change of password meanwhile."""
        return self._reset(token, password).user_id

    def _reset(self, token: str, password: str) -> Followed:
        check_strength(password)
        if not self.links.opens(RESET_PASSWORD, token):  # a made-up token costs no Argon2 hash
            raise _spent()
        password_hash = self.users.hash_password(password)  # before the transaction, which stays short
        try:
            with self.users.transaction() as connection:
                followed = self.links.spend(connection, RESET_PASSWORD, token)
                if followed is None:
                    raise _spent()
                verified = followed.credential_version  # the link's; spent only while it is the user's
                told = _replace(connection, self.revoker, followed.user_id, password_hash, verified=verified)
        except CredentialMoved:  # another link, or a change, moved the version on since this link was spent
            raise _spent() from None
        self.revoker.written(told)
        audit.record(audit.PASSWORD_RESET, user_id=followed.user_id)
        return followed


def _spent() -> ErrorPage:
    return ErrorPage(
        "Link expired",
        "This password reset link has expired or was already used. Ask for a new one from the sign-in page.",
    )


def _reset_page(issuer: Issuer, token: str, *, error: str | None = None) -> Page:
    return Page("reset_password", {"action": issuer.page(RESET_PASSWORD_PAGE), "token": token, "error": error})


def replace_password(
    users: UserStore,
    revoker: Revoking,
    user_id: str,
    password: str,
    *,
    reason: str | None = None,
    verified: int | None = None,
) -> None:
    """Set the new password and end every session and token of the user, in one transaction; audited (the command
    line; ``reason="changed"`` from the console's account page). ``verified``: the credential version the current
    password was checked under; ``CredentialMoved`` (nothing changed) when it is no longer the user's."""
    password_hash = users.hash_password(password)  # before the transaction, which stays short
    with users.transaction() as connection:
        told = _replace(connection, revoker, user_id, password_hash, verified=verified)
    revoker.written(told)
    audit.record(audit.PASSWORD_RESET, user_id=user_id, reason=reason)


def _replace(
    connection: Connection, revoker: Revoking, user_id: str, password_hash: str, *, verified: int | None
) -> int:
    """In the caller's transaction: the new hash and credential version, and the end of everything the old
    credential started; the logout tokens written (``Revoking.written`` after the commit)."""
    UserStore.move_credential(connection, user_id, verified=verified, password_hash=password_hash)
    return revoker.revoke_user_in(connection, user_id)
