"""The console's forms need the CSRF token of the session that posts them: a token does not outlive its session
(signed in again, the old page's token is refused), and a refused post changes nothing. The second guard
of the rule beside tests/api/test_console.py (a missing, forged or other browser's token) and
tests/unit/test_console_csrf.py (the check itself)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from identity.api_keys.keys import ApiKeyStore
from tests.support.console_client import ConsoleBrowser


@pytest.fixture
def console(app: Any) -> Iterator[ConsoleBrowser]:
    with ConsoleBrowser(app) as browser:
        yield browser


def test_a_token_of_an_ended_session_is_refused_in_the_next_one(console: ConsoleBrowser, keys: ApiKeyStore) -> None:
    console.complete(console.sign_up("ida@example.com", organization="Ida's"))
    old = console.csrf()
    again = console.get("/console/sign-in")  # signed in anew (the provider's session still holds): a new session
    console.complete(console.follow(again, "/console/callback"))
    new = console.csrf()
    assert new != old
    refused = console.post("/console/keys", {"name": "stale form", "csrf_token": old})
    assert refused.status_code == 403 and "Form expired" in refused.text
    assert [key.name for key in keys.list()] == []  # the refused post made no key
    made = console.post("/console/keys", {"name": "fresh form", "csrf_token": new})
    assert made.status_code == 303 and [key.name for key in keys.list()] == ["fresh form"]
