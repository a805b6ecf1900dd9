"""What the request validation reads of a request, read as Connexion and Starlette read it: the media type and
charset of its ``Content-Type``, a form's ``Content-Length`` and ``Content-Type`` headers (from the scope's raw
pairs, with no ``Headers`` object made for a look or two), and a body read whole from its messages. The validation
made once per operation (``service.web.connexion_adapter``) and the contract's form validator
(``service.web.contract_validators``) read through these; tests/unit/test_connexion_adapter.py holds the first
against Connexion's own reading.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable

from connexion.utils import split_content_type
from starlette.types import Message, Receive

_CONTENT_TYPE = b"content-type"


def content_type(headers: Iterable[tuple[bytes, bytes]], consumes: list[str]) -> tuple[str, str]:
    """The request's media type and charset, as ``RequestValidationOperation.extract_content_type`` works them out
    (the first ``Content-Type``; without one, the operation's first media type; UTF-8 by default)."""
    sent = next((value.decode("latin-1") for key, value in headers if key.lower() == _CONTENT_TYPE), None)
    mime_type, encoding = split_content_type(sent)
    if mime_type is None:
        mime_type = consumes[0] if consumes else "application/octet-stream"
    return mime_type, encoding or "utf-8"


def form_headers(headers: Iterable[tuple[bytes, bytes]]) -> tuple[str, list[str]]:
    """The request's ``Content-Length`` (its first, stripped; "0" without one) and every ``Content-Type``, as
    Starlette's ``Headers(scope=scope)`` reads them (``get``, ``getlist``: names as the server gave them)."""
    length: str | None = None
    content_types = []
    for key, value in headers:
        if key == b"content-length":
            if length is None:
                length = value.decode("latin-1")
        elif key == b"content-type":
            content_types.append(value.decode("latin-1"))
    return ("0" if length is None else length).strip(), content_types


async def once(body: bytes) -> AsyncIterator[bytes]:
    """A body already read, as the stream of chunks Connexion's parsers take."""
    yield body


async def whole_body(receive: Receive) -> tuple[list[Message], bytes]:
    """Every message of the request's body, as received (to hand on to the app), and the body they carry: what
    Connexion's ``AbstractRequestBodyValidator.wrap_receive`` reads, read at once."""
    messages = []
    more = True
    while more:
        message = await receive()
        messages.append(message)
        more = message.get("more_body", False)
    return messages, b"".join([message.get("body", b"") for message in messages])
