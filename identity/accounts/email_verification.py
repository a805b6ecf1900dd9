"""Verified email addresses: sign-up mails a single-use link; following it makes ``email_verified`` true.

OpenID Connect Core §5.1: ``email_verified`` is true when "the End-User's e-mail address was verified"
by the provider; here, when a link mailed to that address was followed before it expired. The address
in the link is the one the user had then: a link to a former address verifies nothing.
"""

from __future__ import annotations

from datetime import timedelta

from identity.accounts.users import User, UserStore, email_key
from identity.common import audit
from identity.common.errors import ErrorPage
from identity.common.issuer import Issuer
from identity.common.page_data import Onward, Page, message
from identity.mail.email_links import VERIFY_EMAIL, EmailLinks, Followed
from identity.mail.outbox import Mail, Outbox

VERIFY_EMAIL_PAGE = "verify-email"  # below the issuer: the link's path


class EmailVerification:
    def __init__(
        self, links: EmailLinks, outbox: Outbox, users: UserStore, issuer: Issuer, lifetime: timedelta
    ) -> None:
        self.links = links
        self.outbox = outbox
        self.users = users
        self.issuer = issuer
        self.lifetime = lifetime  # a verification link opens this long (24 h by default)

    def send(self, user: User, interaction_id: str | None = None, *, return_to: str | None = None) -> None:
        """Mail ``user`` a new verification link (the link and its mail are written in one transaction); with
        ``interaction_id``, following it in the browser of that sign-in resumes it; ``return_to``: where the flow
        started, which the "verified" page links back to."""
        with self.outbox.transaction() as connection:
            token = self.links.issue(
                connection, VERIFY_EMAIL, user.id, email_key(user.email), self.lifetime, interaction_id, return_to
            )
            link = f"{self.issuer.endpoint('/' + VERIFY_EMAIL_PAGE)}?token={token}"
            hours = int(self.lifetime.total_seconds() // 3600)
            params = {"name": user.name, "link": link, "valid_for": f"{hours} hours" if hours else "a short while"}
            self.outbox.enqueue(Mail("verify_email", user.email, params), connection)

    def follow(self, token: str | None) -> Page:
        """The page a verification link opens: the address verified, or an error page (400) for a link that is
        unknown, expired or already used (one answer for all)."""
        return verified_page(return_to=self.consume(token).return_to)

    def consume(self, token: str | None) -> Followed:
        """Spend the link and verify its address: whose it was (and the sign-in it resumes); ``ErrorPage``
        (400) for a link that is unknown, expired or already used (one answer for all)."""
        followed = self.links.follow(VERIFY_EMAIL, token or "")
        if followed is None or not self.users.mark_email_verified(followed.user_id, followed.email_key):
            raise ErrorPage(
                "Link expired",
                "This verification link has expired or was already used. An application that needs your address "
                "verified sends a new link when you sign in to it.",
            )
        audit.record(audit.EMAIL_VERIFIED, user_id=followed.user_id)
        return followed


def verified_page(elsewhere: str | None = None, *, return_to: str | None = None) -> Page:
    """The address is verified; ``elsewhere``: the application whose sign-in waits in another browser; ``return_to``:
    where the flow that mailed the link started, linked as the way onward (none for a link sent without one)."""
    if elsewhere is None:
        if return_to is None:
            text = "Thank you: your email address is verified. You may close this page."
            return message("Email address verified", text)
        onward = Onward(return_to, "Continue where you started")
        return message("Email address verified", "Thank you: your email address is verified.", onward=onward)
    text = (
        f"Thank you: your email address is verified. Go back to the browser where you were signing in to "
        f"{elsewhere}: it continues from there."
    )
    if return_to is None:
        return message("Email address verified", text + " You may close this page.")
    return message("Email address verified", text, onward=Onward(return_to, f"Or sign in to {elsewhere} here"))
