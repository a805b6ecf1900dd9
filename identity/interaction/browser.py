"""What a sign-in page reads from the browser and answers it: cookies, the form post, the outcome, the refusal
of the throttle.

An interaction is bound to the browser that started it by a cookie of its own; the browser session is another
cookie (identity/sessions/sessions.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from identity.common.errors import ErrorPage, Throttled
from identity.common.page_data import Page, message

# Binds an interaction to the browser that started it: one cookie per interaction (its name carries the
# interaction's id), so that starting a sign-in never disturbs another one pending in the same browser.
INTERACTION_COOKIE_PREFIX = "rm_ia_"
SESSION_COOKIE = "rm_session"  # the browser session's secret
EXPIRED = datetime(1970, 1, 1, tzinfo=UTC)  # a cookie set to expire then is deleted
FIELDS = ("interaction", "csrf_token", "email", "password", "name", "organization", "org_id", "decision", "action")


@dataclass(frozen=True, slots=True)
class Browser:
    """What the request tells about the browser: its cookies and its address."""

    bindings: Mapping[str, str] = field(default_factory=dict)  # interaction cookies, by name
    session: str | None = None
    address: str = "unknown"
    device: str | None = None  # the device cookie (identity/accounts/device_cookies.py), as sent

    def binding(self, interaction_id: str) -> str | None:
        return self.bindings.get(interaction_cookie(interaction_id))


def interaction_cookie(interaction_id: str) -> str:
    return INTERACTION_COOKIE_PREFIX + interaction_id


@dataclass(frozen=True, slots=True)
class SetCookie:
    name: str
    value: str
    expires: datetime | None = None  # None: a browser-session cookie


@dataclass(frozen=True, slots=True)
class Outcome:
    """A page to show or a place to redirect to, and cookies to set on the way."""

    page: Page | None = None
    location: str | None = None
    cookies: tuple[SetCookie, ...] = field(default=())

    def with_cookies(self, *cookies: SetCookie) -> Outcome:
        return Outcome(self.page, self.location, self.cookies + cookies)


@dataclass(frozen=True, slots=True)
class Form:
    """A form post's fields; a field sent twice makes the whole post malformed."""

    fields: dict[str, str]

    @classmethod
    def parse(cls, pairs: Sequence[tuple[str, str]]) -> Form:
        fields: dict[str, str] = {}
        for name, value in pairs:
            if name in FIELDS and name in fields:
                raise ErrorPage("Invalid form", f"The field {name} was sent more than once.")
            fields.setdefault(name, value)
        return cls(fields)

    def get(self, name: str) -> str:
        return self.fields.get(name, "")


def throttled(error: Throttled) -> Page:
    """The page of a refusal by the throttle (429, with ``Retry-After``)."""
    minutes = max(1, round(error.retry_after / 60))
    text = f"Too many failed sign-ins. Try again in about {minutes} minute{'s' if minutes > 1 else ''}."
    return message("Too many attempts", text, status=429, retry_after=error.retry_after)
