"""The sign-in pages: each GET shows its form, each POST acts on it and says where to go next.

The flow runs in a worker thread: signing in and up hashes a password with Argon2 for tens of
milliseconds, which must not hold up the event loop (argon2-cffi releases the GIL while it hashes)."""

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from identity.flow import Outcome
from service.identity_api.responses import browser, current, form_pairs, outcome, provider, query_pairs


async def _show(name: str) -> Response:
    identity, request = provider(), current()
    show = getattr(identity.flow, f"{name}_form")
    interaction = dict(query_pairs(request)).get("interaction")  # query_pairs refuses control characters
    result = await run_in_threadpool(show, interaction, browser(request))
    return outcome(result, identity.issuer)


async def _act(name: str) -> Response:
    identity, request = provider(), current()
    act = getattr(identity.flow, name)
    pairs = await form_pairs(request)
    return outcome(await run_in_threadpool(act, pairs, browser(request)), identity.issuer)


async def sign_in_form() -> Response:
    return await _show("sign_in")


async def sign_in() -> Response:
    return await _act("sign_in")


async def sign_up_form() -> Response:
    return await _show("sign_up")


async def sign_up() -> Response:
    return await _act("sign_up")


async def select_organization_form() -> Response:
    return await _show("select_organization")


async def select_organization() -> Response:
    return await _act("select_organization")


async def consent_form() -> Response:
    return await _show("consent")


async def consent() -> Response:
    return await _act("consent")


async def verify_email() -> Response:
    """The email-verification link (identity/email_verification.py); in the browser of a paused sign-in, that
    sign-in goes on (identity/flow.py)."""
    identity, request = provider(), current()
    token = dict(query_pairs(request)).get("token")
    return outcome(await run_in_threadpool(identity.flow.verify_email, token, browser(request)), identity.issuer)


async def check_email_form() -> Response:
    return await _show("check_email")


async def check_email() -> Response:
    return await _act("check_email")


async def forgot_password_form() -> Response:
    return await _show("forgot_password")


async def forgot_password() -> Response:
    return await _act("forgot_password")


async def reset_password_form() -> Response:
    """The page a password-reset link opens (identity/password_reset.py)."""
    identity, request = provider(), current()
    token = dict(query_pairs(request)).get("token")
    return outcome(Outcome(page=identity.password_reset.form(token)), identity.issuer)


async def reset_password() -> Response:
    identity, request = provider(), current()
    pairs = await form_pairs(request)
    return outcome(Outcome(page=await run_in_threadpool(identity.password_reset.submit, pairs)), identity.issuer)
