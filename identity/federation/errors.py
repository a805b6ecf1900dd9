"""What can go wrong with an upstream provider, said to the person in the browser.

Every failure of the exchange with an organization's provider ends on a page that says what happened (never a 500,
never a redirect to the client): ``title`` and ``description`` are shown, ``detail`` goes to the log only. A
failure of the provider itself (unreachable, a bad answer, a token that does not verify) is a 502; a refusal that
comes from the request (a stale or foreign ``state``, an error the provider sent back) is a 400.
"""

from __future__ import annotations

from identity.common.errors import ErrorPage


class FederationError(ErrorPage):
    """A federated sign-in that cannot go on; the texts are safe to show (an ``ErrorPage``: the identity API's one
    place for errors shows it as a page with its status)."""

    def __init__(self, title: str, description: str, *, status: int = 400, detail: str | None = None) -> None:
        super().__init__(title, description, status, detail=detail)


class UpstreamUnavailable(FederationError):
    """The provider did not answer, or answered what is not a valid answer (502)."""

    def __init__(self, description: str, *, detail: str | None = None) -> None:
        super().__init__("Your organization's sign-in is unavailable", description, status=502, detail=detail)


class UpstreamRefused(FederationError):
    """The provider's answer verifies, but says no, or says what we cannot accept (400)."""

    def __init__(self, description: str, *, detail: str | None = None) -> None:
        super().__init__("Your organization's sign-in failed", description, status=400, detail=detail)
