"""Password reset by a single-use mailed link (30 minutes), and what a new password ends.

Asking for a link gives the same answer for every address, known or not (no account enumeration); it is
throttled per network like a sign-in and per account (``SignInThrottle.requesting_reset``), so nobody can
flood a mailbox. A reset (or ``users reset-password``, or the console's change) replaces the password, moves
the user's credential version on, ends every browser session and revokes every refresh and access token of the
user, all in one transaction (RFC 9700 §4.14: tokens obtained with the old credential must not outlive it), and
is audited. A reset link is spent in that same transaction, and only while the credential version it was issued
under is current: the first link used ends every other (identity/email_links.py). A sign-in with the old password
racing the reset gets no session, or one, and codes and tokens, that stop working at the commit
(identity/users.py, docs/identity.md "Credential versions").
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from sqlalchemy.engine import Connection

from identity import audit
from identity.email_links import RESET_PASSWORD, EmailLinks
from identity.errors import ErrorPage
from identity.fields import RepeatedField, once_each
from identity.issuer import Issuer
from identity.outbox import Mail, Outbox
from identity.page_data import Page, message
from identity.passwords import WeakPassword, check_strength, hash_password
from identity.revoked_grants import Revoker
from identity.throttle import SignInThrottle
from identity.users import CredentialMoved, User, UserStore, email_key

RESET_PASSWORD_PAGE = "reset-password"  # below the issuer: the link's path


class PasswordReset:
    def __init__(
        self,
        links: EmailLinks,
        outbox: Outbox,
        users: UserStore,
        revoker: Revoker,
        throttle: SignInThrottle,
        issuer: Issuer,
        lifetime: timedelta,
    ) -> None:
        self.links = links
        self.outbox = outbox
        self.users = users
        self.revoker = revoker
        self.throttle = throttle
        self.issuer = issuer
        self.lifetime = lifetime  # a reset link opens this long (30 minutes by default)

    def request(self, email: str, address: str) -> None:
        """Mail a reset link when ``email`` has an account and its bound allows; the same outcome either way.
        ``Throttled`` when the network is over its bound (whatever the address)."""
        may_send = self.throttle.requesting_reset(email, address)
        account = self.users.account_id(email)
        if account is not None and may_send:
            user = self.users.get(account)
            if not user.disabled:  # a disabled user signs in with no password: no link either
                self.send(user)

    def send(self, user: User) -> None:
        """Mail ``user`` a new reset link (the link and its mail in one transaction)."""
        with self.outbox.transaction() as connection:
            token = self.links.issue(connection, RESET_PASSWORD, user.id, email_key(user.email), self.lifetime)
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
            self.reset(token, password)
        except WeakPassword as error:
            return _reset_page(self.issuer, token, error=str(error).capitalize() + ".")
        return message(
            "Password changed",
            "Your password is changed, and you are signed out everywhere. Sign in again from the application.",
        )

    def reset(self, token: str, password: str) -> str:
        """Follow a reset link with the new password: the user's id. ``WeakPassword`` (nothing consumed) for a
        password that would be refused; ``ErrorPage`` for a link that is unknown, expired, used, or ended by a
        newer link used or a change of password meanwhile."""
        check_strength(password)
        if not self.links.opens(RESET_PASSWORD, token):  # a made-up token costs no Argon2 hash
            raise _spent()
        password_hash = hash_password(password)  # before the transaction, which stays short
        try:
            with self.users.transaction() as connection:
                followed = self.links.spend(connection, RESET_PASSWORD, token)
                if followed is None:
                    raise _spent()
                verified = followed.credential_version  # the link's; spent only while it is the user's
                _replace(connection, self.revoker, followed.user_id, password_hash, verified=verified)
        except CredentialMoved:  # another link, or a change, moved the version on since this link was spent
            raise _spent() from None
        audit.record(audit.PASSWORD_RESET, user_id=followed.user_id)
        return followed.user_id


def _spent() -> ErrorPage:
    return ErrorPage(
        "Link expired",
        "This password reset link has expired or was already used. Ask for a new one from the sign-in page.",
    )


def _reset_page(issuer: Issuer, token: str, *, error: str | None = None) -> Page:
    return Page("reset_password", {"action": issuer.page(RESET_PASSWORD_PAGE), "token": token, "error": error})


def replace_password(
    users: UserStore,
    revoker: Revoker,
    user_id: str,
    password: str,
    *,
    reason: str | None = None,
    verified: int | None = None,
) -> None:
    """Set the new password and end every session and token of the user, in one transaction; audited (the command
    line; ``reason="changed"`` from the console's account page). ``verified``: the credential version the current
    password was checked under; ``CredentialMoved`` (nothing changed) when it is no longer the user's."""
    password_hash = hash_password(password)  # before the transaction, which stays short
    with users.transaction() as connection:
        _replace(connection, revoker, user_id, password_hash, verified=verified)
    audit.record(audit.PASSWORD_RESET, user_id=user_id, reason=reason)


def _replace(
    connection: Connection, revoker: Revoker, user_id: str, password_hash: str, *, verified: int | None
) -> None:
    """In the caller's transaction: the new hash and credential version, and the end of everything the old
    credential started."""
    UserStore.move_credential(connection, user_id, verified=verified, password_hash=password_hash)
    revoker.revoke_user_in(connection, user_id)
