"""Which page the person in the browser is shown, and with what: the domain's side of the sign-in pages.

The domain names a page and gives its data; the identity web edge
(``service/identity_api/page_rendering.py``) renders it as HTML.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Page:
    """A page by name (``sign_in``, ``sign_up``, ``select_organization``, ``consent``, ``end_session``,
    ``message``), its data and its status; ``retry_after`` goes out as a header when set."""

    name: str
    data: Mapping[str, Any] = field(default_factory=dict)
    status: int = 200
    retry_after: int | None = None


@dataclass(frozen=True, slots=True)
class Onward:
    """A message page's way onward: a link, and what it says."""

    url: str
    label: str


def message(
    title: str, text: str, *, status: int = 200, retry_after: int | None = None, onward: Onward | None = None
) -> Page:
    """A page that only says something: a confirmation, or an error that must not redirect; ``onward``: a link to
    go on with (back to where the flow started)."""
    return Page("message", {"title": title, "message": text, "onward": onward}, status, retry_after)
