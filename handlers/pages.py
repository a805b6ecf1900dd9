"""The sign-in pages: each GET shows its form, each POST acts on it and says where to go next.

The pages run in a worker thread: signing in and up hashes a password with Argon2 for tens of
milliseconds, which must not hold up the event loop (argon2-cffi releases the GIL while it hashes)."""

from collections.abc import Callable, Sequence
from typing import Protocol

from starlette.responses import Response

from identity.interaction.browser import Browser, Outcome
from identity.interaction.sign_in_pages import SignInPages
from service.identity_api.handler_support import current, outcome, provider
from service.web.offload import in_thread
from service.web.request_reading import browser, form_pairs, query_pairs


class Page(Protocol):
    """A sign-in page's handler (identity/interaction/): its GET shows the form, its POST acts on it."""

    def show(self, interaction_id: str | None, browser: Browser) -> Outcome: ...

    def post(self, pairs: Sequence[tuple[str, str]], browser: Browser) -> Outcome: ...


Pick = Callable[[SignInPages], Page]  # which page: lambda pages: pages.sign_in, …


async def _show(pick: Pick) -> Response:
    identity, request = provider(), current()
    interaction = dict(query_pairs(request)).get("interaction")  # query_pairs refuses control characters
    result = await in_thread(pick(identity.sign_in_pages).show, interaction, browser(request))
    return outcome(result, identity.issuer)


async def _act(pick: Pick) -> Response:
    identity, request = provider(), current()
    pairs = await form_pairs(request)
    act = pick(identity.sign_in_pages).post
    return outcome(await in_thread(act, pairs, browser(request)), identity.issuer)


async def sign_in_form() -> Response:
    return await _show(lambda pages: pages.sign_in)


async def sign_in() -> Response:
    return await _act(lambda pages: pages.sign_in)


async def sign_up_form() -> Response:
    return await _show(lambda pages: pages.sign_up)


async def sign_up() -> Response:
    return await _act(lambda pages: pages.sign_up)


async def select_organization_form() -> Response:
    return await _show(lambda pages: pages.select_organization)


async def select_organization() -> Response:
    return await _act(lambda pages: pages.select_organization)


async def consent_form() -> Response:
    return await _show(lambda pages: pages.consent)


async def consent() -> Response:
    return await _act(lambda pages: pages.consent)


async def verify_email() -> Response:
    """The email-verification link (identity/accounts/email_verification.py); in the browser of a paused sign-in, that
    sign-in goes on (identity/interaction/verify_email.py)."""
    identity, request = provider(), current()
    token = dict(query_pairs(request)).get("token")
    return outcome(
        await in_thread(identity.sign_in_pages.verify_email.follow, token, browser(request)), identity.issuer
    )


async def check_email_form() -> Response:
    return await _show(lambda pages: pages.check_email)


async def check_email() -> Response:
    return await _act(lambda pages: pages.check_email)


async def forgot_password_form() -> Response:
    return await _show(lambda pages: pages.forgot_password)


async def forgot_password() -> Response:
    return await _act(lambda pages: pages.forgot_password)


async def reset_password_form() -> Response:
    """The page a password-reset link opens (identity/accounts/password_reset.py)."""
    identity, request = provider(), current()
    token = dict(query_pairs(request)).get("token")
    return outcome(Outcome(page=identity.password_reset.form(token)), identity.issuer)


async def reset_password() -> Response:
    identity, request = provider(), current()
    pairs = await form_pairs(request)
    return outcome(Outcome(page=await in_thread(identity.password_reset.submit, pairs)), identity.issuer)
