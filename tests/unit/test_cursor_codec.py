"""The cursor codec (cursors/codec.py) on its own: what it refuses, with the words a client reads (the menus API
and the member directory put them in their answers), and that a cursor round-trips whatever its bytes."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from cursors.codec import CursorCodec, InvalidCursor
from tests.support.loops import each

KEY = b"k" * 32
CODEC = CursorCodec(KEY)
NOT_OURS = "The cursor is not a cursor of this API."
ALTERED = "The cursor was altered or was not issued by this API."
OTHER_FILTERS = "The cursor was made for other filters; send it with the filters of the page it came from."


def signed(body: bytes, filters: str = "f", version: bytes = b"\x01") -> str:
    """A cursor whose MAC is right for ``body``: what only the key's holder can make."""
    digest = hashlib.sha256(filters.encode()).digest()[:8]
    mac = hmac.new(KEY, digest + body, hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(version + mac + digest + body).rstrip(b"=").decode()


def refused(cursor: str, filters: str = "f") -> str:
    with pytest.raises(InvalidCursor) as raised:
        CODEC.decode(cursor, filters)
    return str(raised.value)


def test_cursors_of_every_length_and_ending_round_trip() -> None:
    """Base64url's last character and padding vary with the length: every one decodes to its position."""
    for n in each(range(300)):
        position = (f"{n:05d}" * (n % 7), f"dish-{'x' * (n % 11)}-{n}")
        assert CODEC.decode(CODEC.encode(position, "f"), "f") == position


def test_a_cursor_is_url_safe_base64_without_padding() -> None:
    """A cursor goes into a query string and a Link header as it is: no ``=``, no ``+`` nor ``/``, and no blank."""
    cursors = [CODEC.encode((f"{n:05d}" * (n % 7), "d" * n), "f") for n in range(12)]
    assert any(len(cursor) % 4 for cursor in cursors)  # lengths base64 would have padded
    for cursor in cursors:
        assert cursor.isascii() and not set(cursor) & set("=+/ \n"), cursor


@pytest.mark.parametrize(
    "cursor",
    ["not base64 !", "A", signed(b"", version=b"\x01")[:30], signed(b'["a","b"]', version=b"\x02")],
    ids=["not-base64", "one-character", "header-only", "other-version"],
)
def test_what_is_not_a_cursor_is_refused_as_not_ours(cursor: str) -> None:
    assert refused(cursor) == NOT_OURS


def test_a_cursor_of_just_its_header_is_not_ours() -> None:
    raw = base64.urlsafe_b64decode(signed(b"x") + "==")[:25]  # version, MAC, digest: no position at all
    assert refused(base64.urlsafe_b64encode(raw).decode()) == NOT_OURS


def test_a_body_changed_under_its_mac_is_altered() -> None:
    cursor = CODEC.encode(("0001", "creme-brulee"), "f")
    raw = bytearray(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    raw[-3] ^= 0x01  # one bit of the position, the MAC kept
    assert refused(base64.urlsafe_b64encode(bytes(raw)).decode()) == ALTERED


def test_a_cursor_for_other_filters_says_so() -> None:
    assert refused(CODEC.encode(("0001", "creme-brulee"), "course=main"), "course=dessert") == OTHER_FILTERS


@pytest.mark.parametrize(
    "position",
    [b"not json", json.dumps(["a"]).encode(), json.dumps(["a", 1]).encode(), json.dumps([1, "b"]).encode()],
    ids=["not-json", "one-member", "slug-not-text", "key-not-text"],
)
def test_a_signed_cursor_whose_position_is_not_two_strings_is_not_ours(position: bytes) -> None:
    assert refused(signed(position)) == NOT_OURS


def test_a_key_shorter_than_32_bytes_is_refused_with_its_reason() -> None:
    with pytest.raises(ValueError) as raised:
        CursorCodec(b"k" * 31)
    assert str(raised.value) == "the cursor key must be at least 32 bytes"
