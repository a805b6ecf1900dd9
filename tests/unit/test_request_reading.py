"""What the handlers read from a request's headers (service/web/request_reading.py), as Starlette reads them."""

from __future__ import annotations

import pytest
from starlette.datastructures import Headers

from service.web.request_reading import first_headers

NAMES = (b"authorization", b"origin")


@pytest.mark.parametrize(
    "raw",
    [
        [],
        [(b"authorization", b"Basic a"), (b"origin", b"https://a.example")],
        [(b"origin", b"o1"), (b"authorization", b"first"), (b"authorization", b"second"), (b"origin", b"o2")],
        [(b"Authorization", b"as the server gave it"), (b"host", b"h")],  # Starlette matches names as given
        [(b"authorization", b"caf\xe9")],  # Latin-1, as Starlette decodes
    ],
)
def test_first_headers_are_what_starlette_s_headers_get_gives(raw: list[tuple[bytes, bytes]]) -> None:
    expected = [Headers(raw=raw).get(name.decode()) for name in NAMES]
    assert first_headers({"headers": raw}, NAMES) == expected
