"""Verified email addresses (identity/accounts/email_verification.py): sign-up mails a single-use link to a real SMTP
server on loopback; following it makes ``email_verified`` true in ID tokens and userinfo."""

from __future__ import annotations

import re
from email.message import EmailMessage
from urllib.parse import urlsplit

import pytest
from starlette.testclient import TestClient

from tests.support.identity_fixtures import Registered
from tests.support.identity_pages import (
    SIGN_UP,
    assert_error_page,
    authorize,
    bearer,
    code_of,
    submit,
    to_page,
    tokens,
    verified,
)
from tests.support.smtp import SmtpServer


def link_in(message: EmailMessage) -> str:
    text = message.get_body(("plain",))
    assert text is not None
    found = re.search(r"https?://\S+/verify-email\?token=\S+", text.get_content())
    assert found, text.get_content()
    return found.group(0)


def local(link: str) -> str:
    parts = urlsplit(link)
    return f"{parts.path}?{parts.query}"


def claims_after_sign_in(
    browser: TestClient, web: Registered, **changes: str
) -> tuple[dict[str, object], dict[str, object]]:
    """Sign up (or in) through the pages: the ID token's claims and userinfo's answer."""
    answer = tokens(
        browser,
        web,
        code_of(
            submit(browser, to_page(authorize(browser, web.id, prompt="create"), "sign-up"), {**SIGN_UP, **changes})
        ),
    )
    userinfo = browser.get("/oauth2/userinfo", headers=bearer(answer["access_token"])).json()
    return verified(browser, answer["id_token"], web.id), userinfo


def test_sign_up_mails_a_link_that_makes_email_verified_true_in_id_tokens_and_userinfo(
    mailing_app: object, web: Registered, smtp: SmtpServer
) -> None:
    with TestClient(mailing_app, follow_redirects=False) as browser:  # type: ignore[arg-type]
        id_token, userinfo = claims_after_sign_in(browser, web)
        assert id_token["email_verified"] is False and userinfo["email_verified"] is False
        [message] = smtp.inbox.wait_for(1)
        assert message["To"] == SIGN_UP["email"] and message["Subject"] == "Confirm your email address"
        assert message.get_body(("html",)) is not None
        page = browser.get(local(link_in(message)))
        assert page.status_code == 200 and "Email address verified" in page.text
    with TestClient(mailing_app, follow_redirects=False) as browser:  # type: ignore[arg-type]
        page = to_page(authorize(browser, web.id), "sign-in")
        answer = tokens(
            browser, web, code_of(submit(browser, page, {"email": SIGN_UP["email"], "password": SIGN_UP["password"]}))
        )
        assert verified(browser, answer["id_token"], web.id)["email_verified"] is True
        userinfo = browser.get("/oauth2/userinfo", headers=bearer(answer["access_token"])).json()
        assert userinfo["email_verified"] is True


def test_a_verification_link_works_once(mailing_app: object, web: Registered, smtp: SmtpServer) -> None:
    with TestClient(mailing_app, follow_redirects=False) as browser:  # type: ignore[arg-type]
        claims_after_sign_in(browser, web)
        link = local(link_in(smtp.inbox.wait_for(1)[0]))
        assert browser.get(link).status_code == 200
        again = browser.get(link)
        assert_error_page(again, status=400)
        assert "expired or was already used" in again.text


@pytest.mark.parametrize("query", ["", "?token=", "?token=made-up", "?token=" + "x" * 100])
def test_an_unknown_link_gives_one_error_page(anonymous: TestClient, query: str) -> None:
    response = anonymous.get("/verify-email" + query)
    assert_error_page(response, status=400)
