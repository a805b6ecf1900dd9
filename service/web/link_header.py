"""The ``Link`` header of a cursor page (RFC 8288), the next page's URL as GitHub's API sends it.

RFC 8288 §3: ``Link: <URI-Reference>; rel="next"``. The URL is absolute and built from the deployment's configured
address (``MENUS_BASE_URL``, ``MENUS_ISSUER``), never from the request's ``Host`` header, which a client chooses.
It repeats the request's own parameters (a cursor is bound to its filters) with the page's ``next_cursor``.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import quote, urlencode


def next_link(endpoint: str, parameters: Iterable[tuple[str, object]], cursor: str) -> str:
    """``<endpoint?parameters&cursor=…>; rel="next"``; parameters that are None, and any old cursor, are left out."""
    pairs = [(name, str(value)) for name, value in parameters if value is not None and name != "cursor"]
    query = urlencode([*pairs, ("cursor", cursor)], quote_via=quote)
    return f'<{endpoint}?{query}>; rel="next"'
