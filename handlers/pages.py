"""The sign-in pages: each GET shows its form, each POST acts on it and says where to go next.

The flow runs in a worker thread: signing in and up hashes a password with Argon2 for tens of
milliseconds, which must not hold up the event loop (argon2-cffi releases the GIL while it hashes)."""

from collections.abc import Callable, Sequence

from starlette.responses import Response

from identity.flow import Browser, Outcome, SignInFlow
from service.identity_api.handler_support import current, outcome, provider
from service.web.offload import in_thread
from service.web.request_reading import browser, form_pairs, query_pairs

Show = Callable[[SignInFlow, str | None, Browser], Outcome]  # a page's form: SignInFlow.sign_in_form, …
Act = Callable[[SignInFlow, Sequence[tuple[str, str]], Browser], Outcome]  # its POST: SignInFlow.sign_in, …


async def _show(show: Show) -> Response:
    identity, request = provider(), current()
    interaction = dict(query_pairs(request)).get("interaction")  # query_pairs refuses control characters
    result = await in_thread(show, identity.flow, interaction, browser(request))
    return outcome(result, identity.issuer)


async def _act(act: Act) -> Response:
    identity, request = provider(), current()
    pairs = await form_pairs(request)
    return outcome(await in_thread(act, identity.flow, pairs, browser(request)), identity.issuer)


async def sign_in_form() -> Response:
    return await _show(SignInFlow.sign_in_form)


async def sign_in() -> Response:
    return await _act(SignInFlow.sign_in)


async def sign_up_form() -> Response:
    return await _show(SignInFlow.sign_up_form)


async def sign_up() -> Response:
    return await _act(SignInFlow.sign_up)


async def select_organization_form() -> Response:
    return await _show(SignInFlow.select_organization_form)


async def select_organization() -> Response:
    return await _act(SignInFlow.select_organization)


async def consent_form() -> Response:
    return await _show(SignInFlow.consent_form)


async def consent() -> Response:
    return await _act(SignInFlow.consent)


async def verify_email() -> Response:
    """The email-verification link (identity/email_verification.py); in the browser of a paused sign-in, that
    sign-in goes on (identity/flow.py)."""
    identity, request = provider(), current()
    token = dict(query_pairs(request)).get("token")
    return outcome(await in_thread(identity.flow.verify_email, token, browser(request)), identity.issuer)


async def check_email_form() -> Response:
    return await _show(SignInFlow.check_email_form)


async def check_email() -> Response:
    return await _act(SignInFlow.check_email)


async def forgot_password_form() -> Response:
    return await _show(SignInFlow.forgot_password_form)


async def forgot_password() -> Response:
    return await _act(SignInFlow.forgot_password)


async def reset_password_form() -> Response:
    """The page a password-reset link opens (identity/password_reset.py)."""
    identity, request = provider(), current()
    token = dict(query_pairs(request)).get("token")
    return outcome(Outcome(page=identity.password_reset.form(token)), identity.issuer)


async def reset_password() -> Response:
    identity, request = provider(), current()
    pairs = await form_pairs(request)
    return outcome(Outcome(page=await in_thread(identity.password_reset.submit, pairs)), identity.issuer)
