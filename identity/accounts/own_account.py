"""What a signed-in user does to their own account from the developer console: change their password, and have
a new email-verification link sent.

Changing the password asks for the current one, checked under the sign-in throttle (per account and per
network, identity/accounts/throttle.py), so a console session left open is no way to guess it. The new password is
checked for strength before anything is counted. Then, as a reset does, the password changes, the credential
version moves on, every browser session of the user ends and every refresh and access token is revoked, in one
transaction (RFC 9700 §4.14), the console's own session with them; a ``password_reset`` audit line says
``reason: changed``. The change is made only from the credential version the current password was checked under:
a reset or another change in between wins, and this one is refused as a wrong current password.

A new verification link is bounded per account (with the check-your-email page's) and per network; the
answer is the same whatever happened.
"""

from __future__ import annotations

from identity.accounts.email_verification import EmailVerification
from identity.accounts.ending import Revoking
from identity.accounts.password_reset import replace_password
from identity.accounts.passwords import check_strength
from identity.accounts.throttle import SignInThrottle
from identity.accounts.users import CredentialMoved, User, UserStore
from identity.common.errors import Throttled


class WrongPassword(ValueError):
    """The current password given to change it is not the user's."""


class OwnAccount:
    def __init__(
        self, users: UserStore, revoker: Revoking, throttle: SignInThrottle, verification: EmailVerification
    ) -> None:
        self._users = users
        self._revoker = revoker
        self._throttle = throttle
        self._verification = verification

    def user(self, user_id: str) -> User:
        return self._users.get(user_id)

    def change_password(self, user_id: str, current: str, new: str, address: str) -> None:
        """Replace the password and end every session and token of the user. ``WeakPassword`` for a new
        password that would be refused (nothing counted), ``Throttled`` past the sign-in bounds,
        ``WrongPassword`` for a wrong current one (counted as a failed sign-in)."""
        check_strength(new)
        email = self._users.get(user_id).email
        self._throttle.attempt(email, address)
        checked = self._users.authenticate(email, current) if len(current) <= 1024 else None
        if checked is None:
            self._throttle.failed(email)
            raise WrongPassword("the current password is wrong")
        self._throttle.succeeded(email, address)
        try:
            replace_password(
                self._users, self._revoker, user_id, new, reason="changed", verified=checked.credential_version
            )
        except CredentialMoved:  # reset or changed since it was checked: the password given is not current now
            raise WrongPassword("the current password was changed meanwhile") from None

    def send_verification(self, user_id: str, address: str, return_to: str | None = None) -> None:
        """Mail a new verification link when the address is not verified and the bounds allow; the same outcome
        whatever happened. ``return_to``: the page the "verified" page links back to (the console's account)."""
        user = self._users.get(user_id)
        try:
            may_send = self._throttle.requesting_verification(user.email, address)
        except Throttled:
            return
        if may_send and not user.email_verified:
            self._verification.send(user, return_to=return_to)
