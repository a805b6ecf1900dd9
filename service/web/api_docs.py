"""Each API's documentation: its OpenAPI document as written (JSON and YAML) and its Swagger UI pages.

At the edge of an API (``service/web/edge.py``), ``Documentation`` answers ``{prefix}/openapi.json`` and
``{prefix}/openapi.yaml`` itself, from bytes made once at start-up (``service.web.served_documents.ServedDocument``),
with a strong ``ETag`` and 304 on ``If-None-Match``. The Swagger UI pages under ``{prefix}/ui/`` stay
Connexion's, with a Content Security Policy that allows only the page's own scripts and styles and forbids
framing (the pages share their origin with the sign-in pages). ``{prefix}/ui`` without its slash is 404, never a
redirect, and so is any other path of the API that ends in a slash.
With the documentation switched off (``MENUS_DOCS=off``), every one of these paths is 404.
"""

from __future__ import annotations

import base64
import hashlib
import re

from starlette.types import Message, Receive, Scope, Send

from service.web.edge import Exchange
from service.web.etags import none_match
from service.web.problems import Problem, nothing_here, send_problem
from service.web.served_documents import Representation, ServedDocument

DOCUMENT_CACHE_CONTROL = b"no-cache"  # any cache may keep a document, but revalidates it (cheap: a 304)
_INLINE = re.compile(rb"<(script|style)>(.*?)</\1>", re.DOTALL)
# The headers of every Swagger UI response; the page's CSP adds the digests of its inline script and style.
UI_HEADERS = [
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]
UI_POLICY = (
    "default-src 'none'; script-src 'self'{script}; style-src 'self'{style}; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'{connect}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


class Documentation:
    """The edge's step (``service/web/edge.py``) that serves ``document`` at ``{prefix}/openapi.json|yaml`` and
    guards the Swagger UI; every other request goes on to the API."""

    def __init__(
        self,
        *,
        prefix: str,
        document: ServedDocument,
        enabled: bool = True,
        api_origin: str = "",
        pages_end_in_slash: bool = False,
    ) -> None:
        self.pages_end_in_slash = pages_end_in_slash  # the console's home is {prefix}/: its own app answers slashes
        self.enabled = enabled
        self.documents = {f"{prefix}/openapi.json": document.json, f"{prefix}/openapi.yaml": document.yaml}
        self.ui = f"{prefix}/ui"
        self.api_origin = api_origin  # where "Try it out" sends requests, when not the page's own origin

    async def __call__(self, scope: Scope, receive: Receive, exchange: Exchange) -> tuple[Scope, Receive] | None:
        path = scope["path"]
        representation = self.documents.get(path)
        if representation is not None:
            await self._document(scope, exchange, representation)
        elif path == self.ui or (path.startswith(self.ui + "/") and not self.enabled):
            await send_problem(exchange, nothing_here())
        elif path.startswith(self.ui + "/"):
            exchange.filter = _Guarded(self.api_origin)
            return scope, receive
        elif path.endswith("/") and not self.pages_end_in_slash:
            # One URL per resource: no redirect to the path without its slash (Starlette's would be built from Host).
            await send_problem(exchange, nothing_here())
        else:
            return scope, receive
        return None

    async def _document(self, scope: Scope, send: Send, representation: Representation) -> None:
        if not self.enabled:
            await send_problem(send, nothing_here())
            return
        if scope["method"] not in ("GET", "HEAD"):
            allow = "GET, HEAD"
            problem = Problem(405, "method_not_allowed", f"This path supports {allow} only.", headers={"Allow": allow})
            await send_problem(send, problem)
            return
        validators = [(b"etag", representation.etag), (b"cache-control", DOCUMENT_CACHE_CONTROL)]
        if_none_match = dict(scope["headers"]).get(b"if-none-match")
        if if_none_match is not None and none_match(if_none_match, representation.etag):
            await send({"type": "http.response.start", "status": 304, "headers": validators})
            await send({"type": "http.response.body", "body": b""})
            return
        headers = [
            (b"content-type", representation.media_type.encode()),
            (b"content-length", str(len(representation.body)).encode()),
            *validators,
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else representation.body})


class _Guarded:
    """The exchange's filter for a Swagger UI response: adds the security headers; an HTML page gets a CSP naming
    its inline code (the page is held until its body is known)."""

    def __init__(self, api_origin: str) -> None:
        self.api_origin = api_origin
        self.start: Message | None = None
        self.body: list[bytes] = []

    def __call__(self, message: Message) -> list[Message]:
        if message["type"] == "http.response.start":
            headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"content-length"]
            if any(k.lower() == b"content-type" and v.startswith(b"text/html") for k, v in headers):
                self.start = {**message, "headers": headers}  # the page: held until its body is known
                return []
            message = {**message, "headers": [*message.get("headers", []), *UI_HEADERS, _policy(b"", "")]}
        elif message["type"] == "http.response.body" and self.start is not None:
            self.body.append(message.get("body", b""))
            if message.get("more_body", False):
                return []
            body = b"".join(self.body)
            headers = [*self.start["headers"], (b"content-length", str(len(body)).encode()), *UI_HEADERS]
            start = {**self.start, "headers": [*headers, _policy(body, self.api_origin)]}
            return [start, {"type": "http.response.body", "body": body}]
        return [message]


def _policy(page: bytes, api_origin: str) -> tuple[bytes, bytes]:
    """CSP Level 3: each inline ``<script>`` and ``<style>`` of ``page`` is allowed by its SHA-256 digest alone."""
    digests: dict[bytes, list[str]] = {b"script": [], b"style": []}
    for kind, content in _INLINE.findall(page):
        digests[kind].append(f" 'sha256-{base64.b64encode(hashlib.sha256(content).digest()).decode()}'")
    policy = UI_POLICY.format(
        script="".join(digests[b"script"]),
        style="".join(digests[b"style"]),
        connect=f" {api_origin}" if api_origin else "",
    )
    return b"content-security-policy", policy.encode()
