"""The console's CSRF check in itself (service/console_api/cookies.py): a session's form token matches only that
token, compared in constant time; no token, an empty one or another's does not. The console's pages are checked
through HTTP in tests/api/test_console.py and tests/api/test_console_csrf.py: this guards the rule apart from
them, and apart from the contract's own bound on the field."""

from __future__ import annotations

import pytest

from service.console_api.cookies import ConsoleSession, CookieLifetimes, Cookies


def session(csrf: str = "the-sessions-own-token") -> ConsoleSession:
    return ConsoleSession("usr_1", "org_1", "ses_1", "id.token.here", csrf, "con_1")


@pytest.mark.parametrize("token", [None, "", "another-token", "the-sessions-own-token "], ids=repr)
def test_a_console_form_token_other_than_the_sessions_own_does_not_match(token: str | None) -> None:
    assert not session().csrf_matches(token)


def test_the_sessions_own_token_matches() -> None:
    assert session().csrf_matches("the-sessions-own-token")


def test_each_new_console_session_gets_a_token_of_its_own_sealed_in_its_cookie() -> None:
    cookies = Cookies(b"k" * 32, CookieLifetimes(3600, 600, 120))
    first, sealed = cookies.new_session("usr_1", "org_1", "ses_1", "id.token", "con_1")
    second, _ = cookies.new_session("usr_1", "org_1", "ses_1", "id.token", "con_1")
    assert len(first.csrf_token) >= 32 and first.csrf_token != second.csrf_token
    assert not second.csrf_matches(first.csrf_token)
    opened = cookies.open(sealed, 3600)
    assert opened is not None and opened["c"] == first.csrf_token and first.csrf_token not in sealed
