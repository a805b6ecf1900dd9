"""Forgot password through the pages and a real SMTP server on loopback: mail, link, new password, the tokens of
the old one refused, and the client that held the user's session told by a back-channel logout token."""

from __future__ import annotations

import html
import re
from urllib.parse import urlsplit

from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from identity.accounts.users import User, UserStore
from identity.clients.registry import ClientStore
from tests.support.identity_fixtures import EMAIL, PASSWORD, Registered
from tests.support.identity_pages import (
    assert_error_page,
    authorize,
    code_of,
    hidden_fields,
    refresh,
    sign_in,
    submit,
    to_page,
    tokens,
)
from tests.support.logout_rp import RelyingParty, the_token, verified
from tests.support.passwords import FAST_HASHING
from tests.support.smtp import SmtpServer
from tests.support.token_flows import LOOPBACK_ALLOWED

NEW_PASSWORD = "a brand new kitchen password"


def forgot(browser: TestClient, web: Registered, email: str) -> str:
    sign_in_page = to_page(authorize(browser, web.id, prompt="login"), "sign-in")
    html = browser.get(sign_in_page).text
    found = re.search(r'href="([^"]*/forgot-password\?interaction=[^"]+)"', html)
    assert found, "no Forgot your password? link on the sign-in page"
    page = submit(browser, found.group(1).replace("&amp;", "&"), {"email": email}).text
    return re.sub(r"int_[\w-]+", "int_…", page)  # the page without its interaction id


def test_forgot_password_mails_a_link_whose_new_password_revokes_the_old_tokens_and_logs_the_clients_out(
    mailing_app: object, web: Registered, user: User, engine: Engine, smtp: SmtpServer, relying_party: RelyingParty
) -> None:
    ClientStore(engine, outbound=LOOPBACK_ALLOWED).update(web.id, backchannel_logout_uri=relying_party.uri())
    with TestClient(mailing_app, follow_redirects=False) as browser:  # type: ignore[arg-type]
        offline = authorize(browser, web.id, scope="openid email offline_access")
        before = tokens(browser, web, code_of(sign_in(browser, to_page(offline, "sign-in"))))
        answer = forgot(browser, web, EMAIL.upper())
        assert answer == forgot(browser, web, "nobody@example.com").replace("nobody@example.com", EMAIL.upper())
        [message] = smtp.inbox.wait_for(1)
        assert message["To"] == EMAIL and message["Subject"] == "Reset your password"
        text = message.get_body(("plain",))
        assert text is not None
        link = re.search(r"https?://\S+/reset-password\?token=\S+", text.get_content())
        assert link
        parts = urlsplit(link.group(0))
        form = browser.get(f"{parts.path}?{parts.query}")
        assert form.status_code == 200 and "Choose a new password" in form.text
        token = hidden_fields(form.text)["token"]
        done = browser.post(parts.path, data={"token": token, "password": NEW_PASSWORD})
        assert done.status_code == 200 and "Password changed" in done.text
        # The way onward: the sign-in that asked for the link, again (without its prompt), to the client's code.
        onward = re.search(r'<a href="([^"]+)">Sign in again</a>', done.text)
        assert onward, done.text
        again_url = urlsplit(html.unescape(onward.group(1)))
        assert again_url.path == "/oauth2/authorize" and "prompt" not in again_url.query
        started = browser.get(f"{again_url.path}?{again_url.query}")
        code_of(sign_in(browser, to_page(started, "sign-in"), password=NEW_PASSWORD))  # the same state, to the client
        assert refresh(browser, web, before["refresh_token"]).status_code == 400  # invalid_grant
        [logout] = relying_party.wait_for(1)  # the client that held the session, told through the outbox
        assert verified(browser, the_token(logout), web)["sub"] == user.id
        again = browser.post(parts.path, data={"token": token, "password": "yet another password"})
        assert_error_page(again, status=400)
    users = UserStore(engine, hashing=FAST_HASHING)
    assert users.authenticate(EMAIL, PASSWORD) is None and users.authenticate(EMAIL, NEW_PASSWORD) is not None
    assert len(smtp.inbox.messages) == 1  # the unknown address got nothing
