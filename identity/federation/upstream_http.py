"""The requests a relying party makes to its provider, as a port the service implements (service/outbound/).

The domain names what to fetch and reads what came back; the transport applies the node's bounds: the outbound
rule (identity/outbound_uris.py: no private, link-local or metadata address; loopback only where the node allows
it), no redirect followed (a 3xx is an answer like any other, refused here), one deadline per request, and an answer
of at most ``MAX_ANSWER`` bytes (a longer one is cut and refused).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from identity.federation.errors import UpstreamUnavailable

MAX_ANSWER = 256 * 1024  # bytes of one answer from a provider (discovery, JWKS, token, userinfo) at most


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    content_type: str  # the media type alone, lower case ("application/json")
    body: bytes


class UpstreamHttp(Protocol):
    def get(self, url: str, *, bearer: str | None = None) -> Answer:
        """GET ``url`` (with ``Authorization: Bearer`` when given); ``UpstreamUnavailable`` when there is no answer
        within the bounds (refused address, no connection, past the deadline, larger than ``MAX_ANSWER``)."""
        ...

    def post_form(self, url: str, form: Mapping[str, str], *, basic: tuple[str, str] | None = None) -> Answer:
        """POST ``form`` (``application/x-www-form-urlencoded``), with HTTP Basic credentials when given (RFC 6749
        §2.3.1: each part form-encoded first); errors as ``get``."""
        ...


def json_object(answer: Answer, what: str, *, statuses: tuple[int, ...] = (200,)) -> dict[str, Any]:
    """The answer's JSON object; ``UpstreamUnavailable`` naming ``what`` for another status, a redirect or a body that
    is not a JSON object."""
    if 300 <= answer.status < 400:
        raise UpstreamUnavailable(
            f"The provider answered its {what} with a redirect, which is not followed.",
            detail=f"{what}: {answer.status}",
        )
    if answer.status not in statuses:
        raise UpstreamUnavailable(
            f"The provider answered its {what} with an error (HTTP {answer.status}).", detail=f"{what}: {answer.status}"
        )
    try:
        document = orjson.loads(answer.body)
    except orjson.JSONDecodeError:
        document = None
    if not isinstance(document, dict):
        raise UpstreamUnavailable(f"The provider's {what} is not a JSON object.", detail=f"{what}: not a JSON object")
    return document


class NoUpstream:
    """The port of a provider built without outbound requests (the command line): every request is refused."""

    def get(self, url: str, *, bearer: str | None = None) -> Answer:
        raise UpstreamUnavailable("This process does not make outbound requests.", detail="no transport")

    def post_form(self, url: str, form: Mapping[str, str], *, basic: tuple[str, str] | None = None) -> Answer:
        raise UpstreamUnavailable("This process does not make outbound requests.", detail="no transport")
