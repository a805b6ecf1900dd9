"""The console's sign-in callback (service/console_api/relying_party.py) through HTTP: each answer of the
provider that cannot complete a sign-in gives the console's "Sign-in failed" page (400, console.yaml's
BadRequestPage) with its reason, and signs nobody in. The ID token's own checks (key, signature, azp) are
in tests/unit/test_console_relying_party.py, with a provider that answers what this one never would."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from identity.accounts.users import User
from tests.support.console_client import ConsoleBrowser, form_with
from tests.support.identity_fixtures import EMAIL, PASSWORD

CALLBACK = "/console/callback"


@pytest.fixture
def console(app: Any) -> Iterator[ConsoleBrowser]:
    with ConsoleBrowser(app) as browser:
        yield browser


def started(console: ConsoleBrowser) -> str:
    """Click "Sign in": the authorization request the console sends the browser to (its pending cookie set)."""
    answer = console.get("/console/sign-in")
    assert answer.status_code == 303, answer.text
    return str(answer.headers["location"])


def query(url: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


def assert_failed(answer: httpx.Response, reason: str) -> None:
    assert answer.status_code == 400, answer.text
    assert "Sign-in failed" in answer.text and reason in answer.text
    assert "console_session=" not in answer.headers.get("set-cookie", "")  # nobody signed in


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ({"iss": "https://elsewhere.example", "code": "c"}, "The answer came from another issuer."),
        ({"error": "access_denied"}, "The sign-in was cancelled."),
        ({"error": "server_error"}, "The identity provider could not sign you in."),
        ({}, "The answer carries no authorization code."),
        ({"code": ""}, "The answer carries no authorization code."),
        ({"code": "not-a-code-of-ours"}, "The authorization code was refused; please sign in again."),
    ],
    ids=["other-issuer", "cancelled", "provider-error", "no-code", "empty-code", "refused-code"],
)
def test_a_callback_that_cannot_complete_the_sign_in_shows_why(
    console: ConsoleBrowser, answer: dict[str, str], reason: str
) -> None:
    state = query(started(console))["state"]
    assert_failed(console.get(f"{CALLBACK}?{urlencode({'state': state, **answer})}"), reason)


def test_a_callback_of_the_console_issuer_with_its_code_still_signs_in(console: ConsoleBrowser, user: User) -> None:
    """The refusals above are of the answers, not of the callback: RFC 9207's ``iss`` of our own issuer passes."""
    callback = console.sign_in(EMAIL)
    assert query(callback.headers["location"])["iss"] == "http://127.0.0.1:8000"
    home = console.get(callback.headers["location"])
    assert home.status_code == 303 and "console_session=" in home.headers["set-cookie"]


def test_an_id_token_of_another_nonce_is_refused(console: ConsoleBrowser, user: User) -> None:
    """OpenID Connect Core §3.1.3.7 step 11: the ID token must carry the nonce of the console's own request; the
    browser (or an attacker in it) sent the provider another one."""
    authorize = started(console)
    params = {**query(authorize), "nonce": "a-nonce-the-console-never-sent"}
    page = console.get(f"{authorize.split('?')[0]}?{urlencode(params)}")
    assert page.status_code == 302, page.text
    form = form_with(console.get(page.headers["location"]).text, "password")
    signed_in = console.post(form.action, {**form.fields, "email": EMAIL, "password": PASSWORD})
    callback = console.follow(signed_in, CALLBACK)
    assert_failed(console.get(callback.headers["location"]), "The ID token was issued for another sign-in.")
