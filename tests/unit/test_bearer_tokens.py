"""RFC 6750 §2: the one reading of an ``Authorization: Bearer`` header, shared by the identity endpoints and the menus
API's key gate (identity/tokens/bearer_tokens.py)."""

from __future__ import annotations

import pytest

from identity.common.errors import InvalidToken, MalformedBearerRequest
from identity.tokens.bearer_tokens import bearer_credentials, bearer_token, presented_token


@pytest.mark.parametrize(
    ("header", "credentials"),
    [
        ("Bearer abc.def", "abc.def"),
        ("bearer abc", "abc"),
        ("BEARER  abc ", "abc"),
        ("Bearer", ""),
        ("Basic YTpi", None),
        ("Bearerabc", None),
        ("", None),
        (None, None),
    ],
)
def test_the_bearer_scheme_is_case_insensitive_and_any_other_scheme_is_none(
    header: str | None, credentials: str | None
) -> None:
    assert bearer_credentials(header) == credentials


def test_a_bearer_token_must_be_a_b64token() -> None:
    assert bearer_token("Bearer a-b_c~d+e/f==") == "a-b_c~d+e/f=="
    with pytest.raises(MalformedBearerRequest):
        bearer_token("Bearer a b")
    with pytest.raises(InvalidToken):
        bearer_token("Basic YTpi")


def test_a_token_sent_in_the_header_and_the_body_is_refused() -> None:
    assert presented_token(None, [("access_token", "t")]) == "t"
    with pytest.raises(MalformedBearerRequest):
        presented_token("Bearer t", [("access_token", "t")])
    with pytest.raises(MalformedBearerRequest):
        presented_token(None, [("access_token", "t"), ("access_token", "u")])
